//! The decoded records: [`Record`] and every kind but the sample, with the `sample_id`
//! trailer ([`SampleId`]) and the CPU mode of `misc`.

use super::{misc, ReadValues, RecordHeader, Sample};

/// Where the sampled code ran (`misc & PERF_RECORD_MISC_CPUMODE_MASK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMode {
    /// `PERF_RECORD_MISC_CPUMODE_UNKNOWN` or an undefined value.
    Unknown,
    /// `PERF_RECORD_MISC_KERNEL`
    Kernel,
    /// `PERF_RECORD_MISC_USER`
    User,
    /// `PERF_RECORD_MISC_HYPERVISOR`
    Hypervisor,
    /// `PERF_RECORD_MISC_GUEST_KERNEL`
    GuestKernel,
    /// `PERF_RECORD_MISC_GUEST_USER`
    GuestUser,
}

impl CpuMode {
    /// Decodes the CPU mode bits of a header's `misc`.
    pub fn from_misc(misc: u16) -> Self {
        match misc & misc::CPUMODE_MASK {
            misc::KERNEL => Self::Kernel,
            misc::USER => Self::User,
            misc::HYPERVISOR => Self::Hypervisor,
            misc::GUEST_KERNEL => Self::GuestKernel,
            misc::GUEST_USER => Self::GuestUser,
            _ => Self::Unknown,
        }
    }
}

/// One decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record<'a> {
    /// `PERF_RECORD_SAMPLE`
    Sample(Sample<'a>),
    /// `PERF_RECORD_MMAP`
    Mmap(Mmap<'a>),
    /// `PERF_RECORD_MMAP2`
    Mmap2(Mmap2<'a>),
    /// `PERF_RECORD_COMM`
    Comm(Comm<'a>),
    /// `PERF_RECORD_FORK`
    Fork(TaskEvent),
    /// `PERF_RECORD_EXIT`
    Exit(TaskEvent),
    /// `PERF_RECORD_LOST`: the kernel dropped records because the ring was full.
    Lost(Lost),
    /// `PERF_RECORD_LOST_SAMPLES`
    LostSamples(LostSamples),
    /// `PERF_RECORD_THROTTLE`
    Throttle(Throttle),
    /// `PERF_RECORD_UNTHROTTLE`
    Unthrottle(Throttle),
    /// `PERF_RECORD_SWITCH`
    Switch(Switch),
    /// `PERF_RECORD_SWITCH_CPU_WIDE`
    SwitchCpuWide(SwitchCpuWide),
    /// `PERF_RECORD_READ`
    Read(ReadRecord<'a>),
    /// A type this module does not decode; skipped, and counted by [`ParseStats`](super::ParseStats).
    Unknown {
        /// The header.
        header: RecordHeader,
        /// The body (record without its header).
        body: &'a [u8],
    },
}

/// The `struct sample_id` trailer of non-sample records (present with `sample_id_all`).
///
/// Each field is `Some` when its `sample_type` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleId {
    /// `pid` (`PERF_SAMPLE_TID`).
    pub pid: Option<u32>,
    /// `tid` (`PERF_SAMPLE_TID`).
    pub tid: Option<u32>,
    /// `time` (`PERF_SAMPLE_TIME`).
    pub time: Option<u64>,
    /// `id` (`PERF_SAMPLE_ID`).
    pub id: Option<u64>,
    /// `stream_id` (`PERF_SAMPLE_STREAM_ID`).
    pub stream_id: Option<u64>,
    /// `cpu` (`PERF_SAMPLE_CPU`).
    pub cpu: Option<u32>,
    /// `id` (`PERF_SAMPLE_IDENTIFIER`).
    pub identifier: Option<u64>,
}

/// `PERF_RECORD_MMAP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// `perf_event_header.misc` (CPU mode, `PERF_RECORD_MISC_MMAP_DATA`).
    pub misc: u16,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address of the mapping.
    pub addr: u64,
    /// Length of the mapping.
    pub len: u64,
    /// File offset of the mapping.
    pub pgoff: u64,
    /// Path of the mapped file, up to its NUL (padding removed).
    pub filename: &'a [u8],
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// How a `PERF_RECORD_MMAP2` identifies its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileId<'a> {
    /// Device and inode (without `PERF_RECORD_MISC_MMAP_BUILD_ID`).
    Inode {
        /// Device major number.
        maj: u32,
        /// Device minor number.
        min: u32,
        /// Inode number.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// Build id (with `PERF_RECORD_MISC_MMAP_BUILD_ID`): `build_id[..build_id_size]`.
    BuildId(&'a [u8]),
}

/// `PERF_RECORD_MMAP2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap2<'a> {
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address of the mapping.
    pub addr: u64,
    /// Length of the mapping.
    pub len: u64,
    /// File offset of the mapping.
    pub pgoff: u64,
    /// Inode or build id.
    pub file_id: FileId<'a>,
    /// `PROT_*` flags.
    pub prot: u32,
    /// `MAP_*` flags.
    pub flags: u32,
    /// Path of the mapped file, up to its NUL (padding removed).
    pub filename: &'a [u8],
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_COMM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm<'a> {
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The new command name, up to its NUL.
    pub comm: &'a [u8],
    /// The sample_id trailer.
    pub sample_id: SampleId,
}

impl Comm<'_> {
    /// True if the name changed because of an `exec` (`PERF_RECORD_MISC_COMM_EXEC`).
    pub fn is_exec(&self) -> bool {
        self.misc & misc::COMM_EXEC != 0
    }
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`: `{ pid, ppid, tid, ptid, time }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskEvent {
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// Timestamp.
    pub time: u64,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_LOST`: `{ id, lost }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lost {
    /// Id of the event whose records were lost.
    pub id: u64,
    /// Number of records lost.
    pub lost: u64,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_LOST_SAMPLES`: `{ lost }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LostSamples {
    /// Number of samples lost.
    pub lost: u64,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_THROTTLE` and `PERF_RECORD_UNTHROTTLE`: `{ time, id, stream_id }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Throttle {
    /// Timestamp.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Event stream id.
    pub stream_id: u64,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_SWITCH`: a context switch of the monitored task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Switch {
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// `PERF_RECORD_SWITCH_CPU_WIDE`: `{ next_prev_pid, next_prev_tid }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchCpuWide {
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// Pid of the task switched to (on switch-out) or from (on switch-in).
    pub next_prev_pid: u32,
    /// Tid of the task switched to (on switch-out) or from (on switch-in).
    pub next_prev_tid: u32,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}

/// Switch direction helpers, shared by [`Switch`] and [`SwitchCpuWide`].
fn switch_out(misc_bits: u16) -> bool {
    misc_bits & misc::SWITCH_OUT != 0
}

fn switch_preempt(misc_bits: u16) -> bool {
    misc_bits & misc::SWITCH_OUT_PREEMPT != 0
}

impl Switch {
    /// True for a switch out of the task (`PERF_RECORD_MISC_SWITCH_OUT`), false for a switch in.
    pub fn is_out(&self) -> bool {
        switch_out(self.misc)
    }
    /// True if the task was preempted while runnable (`PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`).
    pub fn is_preempt(&self) -> bool {
        switch_preempt(self.misc)
    }
}

impl SwitchCpuWide {
    /// True for a switch out of the task (`PERF_RECORD_MISC_SWITCH_OUT`), false for a switch in.
    pub fn is_out(&self) -> bool {
        switch_out(self.misc)
    }
    /// True if the task was preempted while runnable (`PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`).
    pub fn is_preempt(&self) -> bool {
        switch_preempt(self.misc)
    }
}

/// `PERF_RECORD_READ`: `{ pid, tid, struct read_format values }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRecord<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The counter values.
    pub values: ReadValues<'a>,
    /// The `sample_id` trailer.
    pub sample_id: SampleId,
}
