//! One struct per record kind but the header and the descriptor: [`Sample`], [`Comm`],
//! [`Exec`], the process and thread events, [`Map`], [`Counter`], [`Lost`], [`UserData`],
//! [`UserStack`] (and its `ARCH_*`), [`Close`].

use super::{Bytes, Callchain};

/// One sample.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sample<'a> {
    /// Timestamp.
    pub time: u64,
    /// The PMC that fired.
    pub pmc_id: u32,
    /// Process id (-1 when unknown, e.g. the kernel).
    pub pid: i32,
    /// Thread id (-1 when unknown).
    pub tid: i32,
    /// CPU, when known.
    pub cpu: Option<u32>,
    /// Sampling period (events since the last sample), or weight. 0 if unknown.
    pub period: u64,
    /// Instruction addresses, leaf first.
    pub callchain: Callchain<'a>,
    /// The first `kernel_frames` frames are kernel addresses; the rest are user.
    pub kernel_frames: u32,
    /// Extra raw data (perf `PERF_SAMPLE_RAW`, hwpmc multipart IBS words), usually empty.
    pub raw: Bytes<'a>,
}

impl Sample<'_> {
    /// The same sample owning its callchain and raw data.
    pub fn into_owned(self) -> Sample<'static> {
        Sample {
            time: self.time,
            pmc_id: self.pmc_id,
            pid: self.pid,
            tid: self.tid,
            cpu: self.cpu,
            period: self.period,
            callchain: self.callchain.into_owned(),
            kernel_frames: self.kernel_frames,
            raw: self.raw.into_owned(),
        }
    }
}

/// A command name change, or an exec seen as a new command name (perf `COMM`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Comm<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// True when the name changed because of an exec.
    pub exec: bool,
    /// The new command name.
    pub comm: Bytes<'a>,
}

/// A process exec'd a new image (hwpmc `PROCEXEC`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Exec<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// The PMC that logged it, if any.
    pub pmc_id: Option<u32>,
    /// Runtime linker load address (hwpmc `pl_base`, AT_BASE); with
    /// [`EXEC_LEGACY_ENTRY`](super::EXEC_LEGACY_ENTRY) set, the entry address instead.
    pub base: u64,
    /// Load base of a PIE executable (hwpmc `pl_dyn`), 0 if not PIE/unknown.
    pub dyn_base: u64,
    /// `EXEC_*` bits.
    pub flags: u32,
    /// Path of the new image.
    pub path: Bytes<'a>,
}

/// A process forked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Fork {
    /// Timestamp.
    pub time: u64,
    /// Parent process id.
    pub parent_pid: i32,
    /// Parent thread id (-1 if unknown).
    pub parent_tid: i32,
    /// Child process id.
    pub child_pid: i32,
    /// Child thread id (-1 if unknown).
    pub child_tid: i32,
}

/// A process exited (hwpmc `SYSEXIT`, perf `EXIT` of the main thread).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Exit {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id (-1 if unknown).
    pub tid: i32,
}

/// A thread was created, or existed when the log started (hwpmc `THR_CREATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThreadCreate<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 if unknown).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Backend flags (hwpmc `pl_flags`).
    pub flags: u32,
    /// Thread name.
    pub name: Bytes<'a>,
}

/// A thread exited.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThreadExit {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 if unknown).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
}

/// A process was created, or existed when the log started (hwpmc `PROC_CREATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProcessCreate<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Backend flags (hwpmc `pl_flags`).
    pub flags: u32,
    /// Command name.
    pub comm: Bytes<'a>,
}

/// An executable mapping appeared (perf `MMAP2`, hwpmc `MAP_IN`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Map<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// Start address.
    pub start: u64,
    /// Length in bytes, 0 when unknown (hwpmc `MAP_IN` has no length).
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Build id, empty when unknown.
    pub build_id: Bytes<'a>,
    /// Path of the mapped file.
    pub path: Bytes<'a>,
}

/// An executable mapping went away (hwpmc `MAP_OUT`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Unmap {
    /// Timestamp.
    pub time: u64,
    /// Process id.
    pub pid: i32,
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
}

/// A PMC was attached to a process (hwpmc `PMCATTACH`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Attach<'a> {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
    /// Executable path of the process.
    pub path: Bytes<'a>,
}

/// A PMC was detached from a process (hwpmc `PMCDETACH`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Detach {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
}

/// When a [`Counter`] value was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CounterKind {
    /// Periodic reading (code 0).
    Interval,
    /// At process exit (code 1; hwpmc `PROCEXIT`, log-procexit).
    ProcessExit,
    /// At a context switch, the delta for the time slice (code 2; hwpmc `PROCCSW`).
    ContextSwitch,
}

/// A counter value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Counter {
    /// Timestamp.
    pub time: u64,
    /// PMC id.
    pub pmc_id: u32,
    /// Process id (-1 if not applicable).
    pub pid: i32,
    /// Thread id (-1 if not applicable).
    pub tid: i32,
    /// CPU, when known.
    pub cpu: Option<u32>,
    /// Why the value was logged.
    pub kind: CounterKind,
    /// The count.
    pub value: u64,
    /// Nanoseconds the counter was enabled (0 if unknown).
    pub time_enabled: u64,
    /// Nanoseconds the counter was actually counting (0 if unknown).
    pub time_running: u64,
}

/// Samples were lost (perf `LOST`, hwpmc `DROPNOTIFY`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Lost {
    /// Timestamp.
    pub time: u64,
    /// The PMC that lost samples, when known.
    pub pmc_id: Option<u32>,
    /// The CPU, when known.
    pub cpu: Option<u32>,
    /// How many were lost; 0 means "some, count unknown" (hwpmc).
    pub count: u64,
}

/// Opaque user data (hwpmc `PMC_OP_WRITELOG`, whose payload is 4 bytes LE).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UserData<'a> {
    /// Timestamp.
    pub time: u64,
    /// Process that wrote it (-1 if unknown).
    pub pid: i32,
    /// The data.
    pub data: Bytes<'a>,
}

/// [`UserStack::arch`]: x86-64 (registers `rip`, `rsp`, `rbp`).
pub const ARCH_X86_64: u16 = 1;
/// [`UserStack::arch`]: AArch64 (registers `pc`, `sp`, `x29`, `x30`).
pub const ARCH_AARCH64: u16 = 2;
/// [`UserStack::arch`] of the machine this is built for ([`ARCH_X86_64`], [`ARCH_AARCH64`],
/// or 0 for an architecture the format has no code for).
pub const ARCH_NATIVE: u16 = if cfg!(target_arch = "aarch64") {
    ARCH_AARCH64
} else if cfg!(target_arch = "x86_64") {
    ARCH_X86_64
} else {
    0
};

/// The user registers and user stack of the sample written just before it (same time, PMC,
/// pid and tid), kept so that the sample's user callchain can be unwound when the log is read
/// (pmc's `CallGraph::DwarfRaw`): the sample itself holds the kernel frames and the user PC.
/// Kilobytes per sample, as in perf.data; the default (`CallGraph::Dwarf`) unwinds while
/// recording and writes no such record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UserStack<'a> {
    /// Timestamp (the sample's).
    pub time: u64,
    /// The PMC that fired.
    pub pmc_id: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// [`ARCH_X86_64`] or [`ARCH_AARCH64`]: which registers `pc`/`sp`/`fp`/`lr` are.
    pub arch: u16,
    /// Program counter.
    pub pc: u64,
    /// Stack pointer: `stack` starts at this address.
    pub sp: u64,
    /// Frame pointer.
    pub fp: u64,
    /// Link register (0 on x86-64).
    pub lr: u64,
    /// The user stack from `sp` up.
    pub stack: Bytes<'a>,
}

/// The clean-close marker: the writer finished normally.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Close {
    /// Timestamp.
    pub time: u64,
    /// Number of records written before this one (the header included).
    pub records: u64,
}
