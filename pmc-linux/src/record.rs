//! Decoding of the records the kernel writes into a perf_event ring buffer.
//!
//! Every record starts with `struct perf_event_header { u32 type; u16 misc; u16 size; }`
//! followed by a body whose layout depends on `type` and, for most types, on three fields of the
//! `perf_event_attr` the event was opened with: `sample_type`, `read_format` and
//! `sample_id_all`. [`ParseConfig`] carries those three; [`ParseConfig::parse`] turns one record
//! (header included, as handed out by [`crate::ring`]) into a [`Record`].
//!
//! # Properties
//!
//! * **Bounded:** every read goes through a cursor that checks the remaining length; a record that
//!   is too short for what its header and the config promise is a
//!   [`ParseError::UnexpectedEof`], never a panic. Counts taken from the record (callchain
//!   `nr`, group `nr`, raw `size`) are checked against the bytes actually present before use.
//! * **Borrowed:** file names, comm strings, callchains, raw data and group read values are views
//!   into the record bytes; parsing allocates nothing.
//! * **Native endian:** the ring buffer is written by the running kernel in the CPU's byte order.
//! * **Unknown types** become [`Record::Unknown`]; [`ParseStats`] counts them.
//!
//! # Layouts
//!
//! The layouts follow `include/uapi/linux/perf_event.h`. For `PERF_RECORD_SAMPLE` the fields
//! appear in this order, each only if its `sample_type` bit is set: `IDENTIFIER`, `IP`, `TID`,
//! `TIME`, `ADDR`, `ID`, `STREAM_ID`, `CPU`, `PERIOD`, `READ`, `CALLCHAIN`, `RAW`,
//! `BRANCH_STACK`, `REGS_USER`, `STACK_USER` and later fields. `BRANCH_STACK` and what follows
//! the decoded fields are not decoded: their bytes are kept in [`Sample::unparsed`] (with
//! `BRANCH_STACK` set, `REGS_USER` and `STACK_USER` stay there too). Every other record type carries, when `sample_id_all` is set, a
//! `struct sample_id` trailer at its end (`TID`, `TIME`, `ID`, `STREAM_ID`, `CPU`, `IDENTIFIER`),
//! decoded into [`SampleId`].
//!
//! # References
//!
//! perf_event_open(2), section "MMAP layout"; `include/uapi/linux/perf_event.h`.

use perf_event_open_sys::bindings as b;
use pmc_log::bytes::{cstr, ByteCursor, Short};
use thiserror::Error;

// The constants below are perf-event-open-sys's (`bindings::PERF_*`, generated from
// `include/uapi/linux/perf_event.h`), given the types of the fields they are compared with:
// `u32` for `perf_event_header.type`, `u64` for `sample_type`/`read_format` and callchain
// entries, `u16` for `perf_event_header.misc`. No value is written here.

/// `PERF_RECORD_*`: values of `perf_event_header.type`.
pub mod record_type {
    use super::b;
    /// `PERF_RECORD_MMAP`
    pub const MMAP: u32 = b::PERF_RECORD_MMAP;
    /// `PERF_RECORD_LOST`
    pub const LOST: u32 = b::PERF_RECORD_LOST;
    /// `PERF_RECORD_COMM`
    pub const COMM: u32 = b::PERF_RECORD_COMM;
    /// `PERF_RECORD_EXIT`
    pub const EXIT: u32 = b::PERF_RECORD_EXIT;
    /// `PERF_RECORD_THROTTLE`
    pub const THROTTLE: u32 = b::PERF_RECORD_THROTTLE;
    /// `PERF_RECORD_UNTHROTTLE`
    pub const UNTHROTTLE: u32 = b::PERF_RECORD_UNTHROTTLE;
    /// `PERF_RECORD_FORK`
    pub const FORK: u32 = b::PERF_RECORD_FORK;
    /// `PERF_RECORD_READ`
    pub const READ: u32 = b::PERF_RECORD_READ;
    /// `PERF_RECORD_SAMPLE`
    pub const SAMPLE: u32 = b::PERF_RECORD_SAMPLE;
    /// `PERF_RECORD_MMAP2`
    pub const MMAP2: u32 = b::PERF_RECORD_MMAP2;
    /// `PERF_RECORD_LOST_SAMPLES`
    pub const LOST_SAMPLES: u32 = b::PERF_RECORD_LOST_SAMPLES;
    /// `PERF_RECORD_SWITCH`
    pub const SWITCH: u32 = b::PERF_RECORD_SWITCH;
    /// `PERF_RECORD_SWITCH_CPU_WIDE`
    pub const SWITCH_CPU_WIDE: u32 = b::PERF_RECORD_SWITCH_CPU_WIDE;
}

/// `PERF_SAMPLE_*`: bits of `perf_event_attr.sample_type`.
pub mod sample_type {
    use super::b;
    /// `PERF_SAMPLE_IP`
    pub const IP: u64 = b::PERF_SAMPLE_IP as u64;
    /// `PERF_SAMPLE_TID`
    pub const TID: u64 = b::PERF_SAMPLE_TID as u64;
    /// `PERF_SAMPLE_TIME`
    pub const TIME: u64 = b::PERF_SAMPLE_TIME as u64;
    /// `PERF_SAMPLE_ADDR`
    pub const ADDR: u64 = b::PERF_SAMPLE_ADDR as u64;
    /// `PERF_SAMPLE_READ`
    pub const READ: u64 = b::PERF_SAMPLE_READ as u64;
    /// `PERF_SAMPLE_CALLCHAIN`
    pub const CALLCHAIN: u64 = b::PERF_SAMPLE_CALLCHAIN as u64;
    /// `PERF_SAMPLE_ID`
    pub const ID: u64 = b::PERF_SAMPLE_ID as u64;
    /// `PERF_SAMPLE_CPU`
    pub const CPU: u64 = b::PERF_SAMPLE_CPU as u64;
    /// `PERF_SAMPLE_PERIOD`
    pub const PERIOD: u64 = b::PERF_SAMPLE_PERIOD as u64;
    /// `PERF_SAMPLE_STREAM_ID`
    pub const STREAM_ID: u64 = b::PERF_SAMPLE_STREAM_ID as u64;
    /// `PERF_SAMPLE_RAW`
    pub const RAW: u64 = b::PERF_SAMPLE_RAW as u64;
    /// `PERF_SAMPLE_BRANCH_STACK`: not decoded; the first field kept in [`super::Sample::unparsed`].
    pub const BRANCH_STACK: u64 = b::PERF_SAMPLE_BRANCH_STACK as u64;
    /// `PERF_SAMPLE_REGS_USER` (decoded when `BRANCH_STACK` is not set).
    pub const REGS_USER: u64 = b::PERF_SAMPLE_REGS_USER as u64;
    /// `PERF_SAMPLE_STACK_USER` (decoded when `BRANCH_STACK` is not set).
    pub const STACK_USER: u64 = b::PERF_SAMPLE_STACK_USER as u64;
    /// `PERF_SAMPLE_IDENTIFIER`
    pub const IDENTIFIER: u64 = b::PERF_SAMPLE_IDENTIFIER as u64;
    /// The bits whose fields this module decodes.
    pub const DECODED: u64 = IP
        | TID
        | TIME
        | ADDR
        | READ
        | CALLCHAIN
        | ID
        | CPU
        | PERIOD
        | STREAM_ID
        | RAW
        | IDENTIFIER;
}

/// `PERF_FORMAT_*`: bits of `perf_event_attr.read_format`.
pub mod read_format {
    use super::b;
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub const TOTAL_TIME_ENABLED: u64 = b::PERF_FORMAT_TOTAL_TIME_ENABLED as u64;
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub const TOTAL_TIME_RUNNING: u64 = b::PERF_FORMAT_TOTAL_TIME_RUNNING as u64;
    /// `PERF_FORMAT_ID`
    pub const ID: u64 = b::PERF_FORMAT_ID as u64;
    /// `PERF_FORMAT_GROUP`
    pub const GROUP: u64 = b::PERF_FORMAT_GROUP as u64;
    /// `PERF_FORMAT_LOST`
    pub const LOST: u64 = b::PERF_FORMAT_LOST as u64;
}

/// `PERF_RECORD_MISC_*`: bits of `perf_event_header.misc` (all below `1 << 16`).
pub mod misc {
    use super::b;
    /// `PERF_RECORD_MISC_CPUMODE_MASK`
    pub const CPUMODE_MASK: u16 = b::PERF_RECORD_MISC_CPUMODE_MASK as u16;
    /// `PERF_RECORD_MISC_KERNEL`
    pub const KERNEL: u16 = b::PERF_RECORD_MISC_KERNEL as u16;
    /// `PERF_RECORD_MISC_USER`
    pub const USER: u16 = b::PERF_RECORD_MISC_USER as u16;
    /// `PERF_RECORD_MISC_HYPERVISOR`
    pub const HYPERVISOR: u16 = b::PERF_RECORD_MISC_HYPERVISOR as u16;
    /// `PERF_RECORD_MISC_GUEST_KERNEL`
    pub const GUEST_KERNEL: u16 = b::PERF_RECORD_MISC_GUEST_KERNEL as u16;
    /// `PERF_RECORD_MISC_GUEST_USER`
    pub const GUEST_USER: u16 = b::PERF_RECORD_MISC_GUEST_USER as u16;
    /// `PERF_RECORD_MISC_COMM_EXEC` (on `PERF_RECORD_COMM`)
    pub const COMM_EXEC: u16 = b::PERF_RECORD_MISC_COMM_EXEC as u16;
    /// `PERF_RECORD_MISC_SWITCH_OUT` (on `PERF_RECORD_SWITCH*`)
    pub const SWITCH_OUT: u16 = b::PERF_RECORD_MISC_SWITCH_OUT as u16;
    /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT` (on `PERF_RECORD_SWITCH*`)
    pub const SWITCH_OUT_PREEMPT: u16 = b::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT as u16;
    /// `PERF_RECORD_MISC_MMAP_BUILD_ID` (on `PERF_RECORD_MMAP2`)
    pub const MMAP_BUILD_ID: u16 = b::PERF_RECORD_MISC_MMAP_BUILD_ID as u16;
}

/// `PERF_CONTEXT_*`: markers inside a callchain, separating kernel, user, ... frames.
pub mod context {
    use super::b;
    /// `PERF_CONTEXT_HV`
    pub const HV: u64 = b::PERF_CONTEXT_HV;
    /// `PERF_CONTEXT_KERNEL`
    pub const KERNEL: u64 = b::PERF_CONTEXT_KERNEL;
    /// `PERF_CONTEXT_USER`
    pub const USER: u64 = b::PERF_CONTEXT_USER;
    /// `PERF_CONTEXT_USER_DEFERRED` (Linux 6.18+: the user part follows in a later record)
    pub const USER_DEFERRED: u64 = b::PERF_CONTEXT_USER_DEFERRED;
    /// `PERF_CONTEXT_GUEST`
    pub const GUEST: u64 = b::PERF_CONTEXT_GUEST;
    /// `PERF_CONTEXT_GUEST_KERNEL`
    pub const GUEST_KERNEL: u64 = b::PERF_CONTEXT_GUEST_KERNEL;
    /// `PERF_CONTEXT_GUEST_USER`
    pub const GUEST_USER: u64 = b::PERF_CONTEXT_GUEST_USER;
    /// `PERF_CONTEXT_MAX`: every callchain entry `>=` this value is a marker, not an address.
    pub const MAX: u64 = b::PERF_CONTEXT_MAX;
}

/// Size of `struct perf_event_header`.
pub const HEADER_LEN: usize = std::mem::size_of::<b::perf_event_header>();

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The record ended before a field the header and the [`ParseConfig`] promise.
    #[error(
        "record truncated: {needed} more bytes needed at offset {offset} of a {len}-byte record"
    )]
    UnexpectedEof {
        /// Offset in the record (header included) where the read started.
        offset: usize,
        /// Bytes the read needed.
        needed: usize,
        /// Length of the record.
        len: usize,
    },
    /// `perf_event_header.size` is below 8 or above the bytes given.
    #[error("record header size {size} is invalid for a buffer of {available} bytes")]
    BadSize {
        /// `perf_event_header.size`.
        size: u16,
        /// Bytes handed to the parser.
        available: usize,
    },
    /// A count read from the record (callchain `nr`, group `nr`, raw `size`, build-id size)
    /// does not fit in the record or its field.
    #[error("{what} of {value} does not fit in the record (offset {offset})")]
    BadCount {
        /// Which field.
        what: &'static str,
        /// The value read.
        value: u64,
        /// Offset of the count field in the record (header included).
        offset: usize,
    },
}

/// The `perf_event_attr` fields that decide record layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseConfig {
    /// `perf_event_attr.sample_type` (`PERF_SAMPLE_*`, see [`sample_type`]).
    pub sample_type: u64,
    /// `perf_event_attr.read_format` (`PERF_FORMAT_*`, see [`read_format`]).
    pub read_format: u64,
    /// `perf_event_attr.sample_id_all`: non-sample records end with a `sample_id` trailer.
    pub sample_id_all: bool,
    /// `perf_event_attr.sample_regs_user`: which user registers `PERF_SAMPLE_REGS_USER`
    /// carries (one u64 each, in bit order).
    pub sample_regs_user: u64,
}

/// `struct perf_event_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordHeader {
    /// `type`: `PERF_RECORD_*` (see [`record_type`]).
    pub kind: u32,
    /// `misc`: `PERF_RECORD_MISC_*` flags (see [`misc`]).
    pub misc: u16,
    /// `size`: length of the whole record, header included.
    pub size: u16,
}

impl RecordHeader {
    /// Decodes a header from its 8 native-endian bytes.
    pub fn from_bytes(b: [u8; HEADER_LEN]) -> Self {
        let [t0, t1, t2, t3, m0, m1, s0, s1] = b;
        Self {
            kind: u32::from_ne_bytes([t0, t1, t2, t3]),
            misc: u16::from_ne_bytes([m0, m1]),
            size: u16::from_ne_bytes([s0, s1]),
        }
    }

    /// Decodes the header at the start of `bytes`, if there are 8 bytes.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        bytes
            .first_chunk::<HEADER_LEN>()
            .map(|b| Self::from_bytes(*b))
    }

    /// The CPU mode bits of `misc`.
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

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
    /// A type this module does not decode; skipped, and counted by [`ParseStats`].
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

/// `PERF_RECORD_SAMPLE`. Each field is `Some` when its `sample_type` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample<'a> {
    /// `perf_event_header.misc` (CPU mode, `PERF_RECORD_MISC_EXACT_IP`).
    pub misc: u16,
    /// `PERF_SAMPLE_IDENTIFIER`
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`
    pub period: Option<u64>,
    /// `PERF_SAMPLE_READ`
    pub read: Option<ReadValues<'a>>,
    /// `PERF_SAMPLE_CALLCHAIN`
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_RAW`: the `data[size]` bytes (the u32 size and the padding excluded).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_REGS_USER`: `abi` (`PERF_SAMPLE_REGS_ABI_*`; 0 when the sampled task had
    /// no user context, e.g. a kernel thread) and the registers of
    /// [`ParseConfig::sample_regs_user`] in bit order (empty with abi 0).
    pub regs_user: Option<RegsUser<'a>>,
    /// `PERF_SAMPLE_STACK_USER`: the user stack copied from the user stack pointer up, cut to
    /// `dyn_size` (the bytes the kernel really copied; empty without a user context).
    pub stack_user: Option<&'a [u8]>,
    /// Bytes after the decoded fields (`PERF_SAMPLE_BRANCH_STACK` and later), undecoded.
    pub unparsed: &'a [u8],
}

/// `PERF_SAMPLE_REGS_USER`'s `{ u64 abi; u64 regs[weight(mask)]; }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegsUser<'a> {
    /// `PERF_SAMPLE_REGS_ABI_NONE` (0), `_32` (1) or `_64` (2).
    pub abi: u64,
    /// The registers, native-endian u64s, in the order of the mask's bits.
    pub regs: &'a [u8],
}

impl RegsUser<'_> {
    /// The `i`-th register present (in mask bit order).
    pub fn get(&self, i: usize) -> Option<u64> {
        ByteCursor::ne(self.regs).u64_at(i.checked_mul(8)?).ok()
    }
}

impl Sample<'_> {
    /// The CPU mode bits of [`Sample::misc`].
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

/// `struct read_format`, as found in `PERF_SAMPLE_READ` and `PERF_RECORD_READ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadValues<'a> {
    /// Without `PERF_FORMAT_GROUP`: one counter.
    Single(ReadSingle),
    /// With `PERF_FORMAT_GROUP`: all counters of the group.
    Group(ReadGroup<'a>),
}

/// `struct read_format` without `PERF_FORMAT_GROUP`:
/// `{ value; time_enabled?; time_running?; id?; lost? }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadSingle {
    /// The counter value.
    pub value: u64,
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    /// `PERF_FORMAT_ID`
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`
    pub lost: Option<u64>,
}

/// `struct read_format` with `PERF_FORMAT_GROUP`:
/// `{ nr; time_enabled?; time_running?; { value; id?; lost? } cntr[nr] }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadGroup<'a> {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    has_id: bool,
    has_lost: bool,
    entries: &'a [u8],
}

/// One counter of a [`ReadGroup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupEntry {
    /// The counter value.
    pub value: u64,
    /// `PERF_FORMAT_ID`
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`
    pub lost: Option<u64>,
}

impl<'a> ReadGroup<'a> {
    fn stride(has_id: bool, has_lost: bool) -> usize {
        8 * (1 + usize::from(has_id) + usize::from(has_lost))
    }

    /// Number of counters (`nr`).
    pub fn len(&self) -> usize {
        self.entries.len() / Self::stride(self.has_id, self.has_lost)
    }

    /// True if the group has no counters.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The counters, in group order (leader first).
    pub fn iter(&self) -> GroupEntries<'a> {
        GroupEntries {
            chunks: self
                .entries
                .chunks_exact(Self::stride(self.has_id, self.has_lost)),
            has_id: self.has_id,
            has_lost: self.has_lost,
        }
    }
}

impl<'a> IntoIterator for &ReadGroup<'a> {
    type Item = GroupEntry;
    type IntoIter = GroupEntries<'a>;
    fn into_iter(self) -> GroupEntries<'a> {
        self.iter()
    }
}

/// Iterator over the counters of a [`ReadGroup`].
#[derive(Debug, Clone)]
pub struct GroupEntries<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    has_id: bool,
    has_lost: bool,
}

impl Iterator for GroupEntries<'_> {
    type Item = GroupEntry;
    fn next(&mut self) -> Option<GroupEntry> {
        let chunk = self.chunks.next()?;
        let mut words = chunk.chunks_exact(8).map(word);
        let value = words.next()?;
        let id = if self.has_id { words.next() } else { None };
        let lost = if self.has_lost { words.next() } else { None };
        Some(GroupEntry { value, id, lost })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

/// `PERF_SAMPLE_CALLCHAIN`: `{ u64 nr; u64 ips[nr]; }`, kept as a view of the `ips` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callchain<'a> {
    ips: &'a [u8],
}

impl<'a> Callchain<'a> {
    /// Number of raw entries (`nr`), context markers included.
    pub fn raw_len(&self) -> usize {
        self.ips.len() / 8
    }

    /// The raw entries, context markers included.
    pub fn raw(&self) -> impl Iterator<Item = u64> + 'a {
        self.ips.chunks_exact(8).map(word)
    }

    /// The frames with the `PERF_CONTEXT_*` markers removed, each tagged with the context the
    /// last marker before it announced.
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            chunks: self.ips.chunks_exact(8),
            context: FrameContext::Unknown,
        }
    }
}

/// Which part of the stack a callchain frame belongs to, from the marker that preceded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameContext {
    /// No marker preceded the frame, or the marker is not one this module knows.
    Unknown,
    /// After `PERF_CONTEXT_KERNEL`.
    Kernel,
    /// After `PERF_CONTEXT_USER` (or `PERF_CONTEXT_USER_DEFERRED`).
    User,
    /// After `PERF_CONTEXT_HV`.
    Hypervisor,
    /// After `PERF_CONTEXT_GUEST`.
    Guest,
    /// After `PERF_CONTEXT_GUEST_KERNEL`.
    GuestKernel,
    /// After `PERF_CONTEXT_GUEST_USER`.
    GuestUser,
}

impl FrameContext {
    /// The context a marker announces, or `None` if `entry` is an address, not a marker.
    pub fn from_marker(entry: u64) -> Option<Self> {
        if entry < context::MAX {
            return None;
        }
        Some(match entry {
            context::KERNEL => Self::Kernel,
            context::USER | context::USER_DEFERRED => Self::User,
            context::HV => Self::Hypervisor,
            context::GUEST => Self::Guest,
            context::GUEST_KERNEL => Self::GuestKernel,
            context::GUEST_USER => Self::GuestUser,
            _ => Self::Unknown,
        })
    }

    /// True for kernel frames, host or guest.
    pub fn is_kernel(self) -> bool {
        matches!(self, Self::Kernel | Self::GuestKernel)
    }

    /// True for user frames, host or guest.
    pub fn is_user(self) -> bool {
        matches!(self, Self::User | Self::GuestUser)
    }
}

/// One callchain frame: an address and the context it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Instruction pointer (a return address for every frame but the first of each context).
    pub addr: u64,
    /// The part of the stack the frame belongs to.
    pub context: FrameContext,
}

/// Iterator over the frames of a [`Callchain`], markers removed.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    context: FrameContext,
}

impl Iterator for Frames<'_> {
    type Item = Frame;
    fn next(&mut self) -> Option<Frame> {
        for chunk in self.chunks.by_ref() {
            let entry = word(chunk);
            match FrameContext::from_marker(entry) {
                Some(ctx) => self.context = ctx,
                None => {
                    return Some(Frame {
                        addr: entry,
                        context: self.context,
                    })
                }
            }
        }
        None
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.chunks.size_hint().1)
    }
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

/// Counts of what a stream of records contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseStats {
    /// Records decoded (unknown ones included).
    pub records: u64,
    /// Records of a type this module does not decode.
    pub unknown: u64,
    /// Records that failed to decode.
    pub errors: u64,
}

impl ParseStats {
    /// Counts one parse result.
    pub fn note(&mut self, result: &Result<Record<'_>, ParseError>) {
        match result {
            Ok(Record::Unknown { .. }) => {
                self.records = self.records.saturating_add(1);
                self.unknown = self.unknown.saturating_add(1);
            }
            Ok(_) => self.records = self.records.saturating_add(1),
            Err(_) => self.errors = self.errors.saturating_add(1),
        }
    }
}

/// Reads a native-endian u64 from an 8-byte chunk (`chunks_exact(8)`; anything shorter reads
/// as 0).
fn word(chunk: &[u8]) -> u64 {
    ByteCursor::ne(chunk).u64_at(0).unwrap_or_default()
}

/// One record being decoded: pmc-log's bounded cursor over it (header included, so offsets
/// are the record's; [`Short`] becomes [`ParseError::UnexpectedEof`]), with what every
/// per-kind decoder may need.
struct Body<'a, 'c> {
    c: ByteCursor<'a>,
    /// `perf_event_header.size`, for the errors.
    record_len: usize,
    cfg: &'c ParseConfig,
    /// `perf_event_header.misc`.
    misc: u16,
    /// The decoded `sample_id` trailer (default for samples).
    sample_id: SampleId,
}

impl<'a, 'c> Body<'a, 'c> {
    /// The bytes `record[start..end]`, read from `start`.
    fn new(cfg: &'c ParseConfig, record: &'a [u8], start: usize, end: usize, misc: u16) -> Self {
        let mut c = ByteCursor::ne(record.get(..end).unwrap_or_default());
        let _ = c.skip(start); // start <= end: the callers check
        Self {
            c,
            record_len: record.len(),
            cfg,
            misc,
            sample_id: SampleId::default(),
        }
    }

    fn eof(&self) -> impl Fn(Short) -> ParseError {
        let len = self.record_len;
        move |s| ParseError::UnexpectedEof {
            offset: s.offset,
            needed: s.needed,
            len,
        }
    }

    fn u32(&mut self) -> Result<u32, ParseError> {
        self.c.u32().map_err(self.eof())
    }

    fn u64(&mut self) -> Result<u64, ParseError> {
        self.c.u64().map_err(self.eof())
    }

    fn u64_if(&mut self, present: bool) -> Result<Option<u64>, ParseError> {
        self.c.u64_if(present).map_err(self.eof())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ParseError> {
        self.c.take(n).map_err(self.eof())
    }

    /// Two `u32`s: `{ pid, tid }`, or `{ cpu, res }`.
    fn pair(&mut self) -> Result<(u32, u32), ParseError> {
        Ok((self.u32()?, self.u32()?))
    }

    /// `count` (read at `at`) items of `item_len` bytes, checked against the record.
    fn counted(
        &mut self,
        what: &'static str,
        count: u64,
        at: usize,
        item_len: usize,
    ) -> Result<&'a [u8], ParseError> {
        let bad = ParseError::BadCount {
            what,
            value: count,
            offset: at,
        };
        self.c.counted(count, item_len).ok_or(bad)
    }

    /// A `u64` count, then the items it counts.
    fn u64_counted(&mut self, what: &'static str, item_len: usize) -> Result<&'a [u8], ParseError> {
        let at = self.c.pos();
        let n = self.u64()?;
        self.counted(what, n, at, item_len)
    }

    fn has(&self, bit: u64) -> bool {
        self.cfg.has(bit)
    }
}

/// Decodes the fields of one record kind (before its `sample_id` trailer).
type Decode = for<'a, 'c> fn(&mut Body<'a, 'c>) -> Result<Record<'a>, ParseError>;

/// What a record kind needs: `PERF_RECORD_SAMPLE` has a layout of its own and no trailer;
/// every other kind is a [`Decode`] followed by the trailer.
#[derive(Clone, Copy)]
enum Decoder {
    Sample,
    WithSampleId(Decode),
}

/// The one list of the record kinds this module decodes.
fn decoder(kind: u32) -> Option<Decoder> {
    use Decoder::WithSampleId as W;
    Some(match kind {
        b::PERF_RECORD_SAMPLE => Decoder::Sample,
        b::PERF_RECORD_MMAP => W(mmap),
        b::PERF_RECORD_MMAP2 => W(mmap2),
        b::PERF_RECORD_COMM => W(comm),
        b::PERF_RECORD_FORK => W(|b| task(b).map(Record::Fork)),
        b::PERF_RECORD_EXIT => W(|b| task(b).map(Record::Exit)),
        b::PERF_RECORD_LOST => W(lost),
        b::PERF_RECORD_LOST_SAMPLES => W(lost_samples),
        b::PERF_RECORD_THROTTLE => W(|b| throttle(b).map(Record::Throttle)),
        b::PERF_RECORD_UNTHROTTLE => W(|b| throttle(b).map(Record::Unthrottle)),
        b::PERF_RECORD_SWITCH => W(switch),
        b::PERF_RECORD_SWITCH_CPU_WIDE => W(switch_cpu_wide),
        b::PERF_RECORD_READ => W(read),
        _ => return None,
    })
}

/// `PERF_RECORD_MMAP`: `{ pid, tid, addr, len, pgoff, filename[] }`.
fn mmap<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Mmap(Mmap {
        misc: b.misc,
        pid,
        tid,
        addr: b.u64()?,
        len: b.u64()?,
        pgoff: b.u64()?,
        filename: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_MMAP2`: `{ pid, tid, addr, len, pgoff, { maj, min, ino, ino_generation } |
/// { build_id_size, __reserved[3], build_id[20] }, prot, flags, filename[] }`.
fn mmap2<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    let (addr, len, pgoff) = (b.u64()?, b.u64()?, b.u64()?);
    let file_id = if b.misc & misc::MMAP_BUILD_ID != 0 {
        let at = b.c.pos();
        let id_size = b.take(4)?.first().copied().unwrap_or_default();
        let id = b.take(20)?;
        let bad = ParseError::BadCount {
            what: "build_id_size",
            value: u64::from(id_size),
            offset: at,
        };
        FileId::BuildId(id.get(..usize::from(id_size)).ok_or(bad)?)
    } else {
        FileId::Inode {
            maj: b.u32()?,
            min: b.u32()?,
            ino: b.u64()?,
            ino_generation: b.u64()?,
        }
    };
    Ok(Record::Mmap2(Mmap2 {
        misc: b.misc,
        pid,
        tid,
        addr,
        len,
        pgoff,
        file_id,
        prot: b.u32()?,
        flags: b.u32()?,
        filename: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_COMM`: `{ pid, tid, comm[] }`.
fn comm<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Comm(Comm {
        misc: b.misc,
        pid,
        tid,
        comm: cstr(b.c.rest()),
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`: `{ pid, ppid, tid, ptid, time }`.
fn task(b: &mut Body<'_, '_>) -> Result<TaskEvent, ParseError> {
    Ok(TaskEvent {
        misc: b.misc,
        pid: b.u32()?,
        ppid: b.u32()?,
        tid: b.u32()?,
        ptid: b.u32()?,
        time: b.u64()?,
        sample_id: b.sample_id,
    })
}

/// `PERF_RECORD_LOST`: `{ id, lost }`.
fn lost<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::Lost(Lost {
        id: b.u64()?,
        lost: b.u64()?,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_LOST_SAMPLES`: `{ lost }`.
fn lost_samples<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::LostSamples(LostSamples {
        lost: b.u64()?,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_THROTTLE` and `PERF_RECORD_UNTHROTTLE`: `{ time, id, stream_id }`.
fn throttle(b: &mut Body<'_, '_>) -> Result<Throttle, ParseError> {
    Ok(Throttle {
        time: b.u64()?,
        id: b.u64()?,
        stream_id: b.u64()?,
        sample_id: b.sample_id,
    })
}

/// `PERF_RECORD_SWITCH`: no fields (the direction is in `misc`).
fn switch<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    Ok(Record::Switch(Switch {
        misc: b.misc,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_SWITCH_CPU_WIDE`: `{ next_prev_pid, next_prev_tid }`.
fn switch_cpu_wide<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (next_prev_pid, next_prev_tid) = b.pair()?;
    Ok(Record::SwitchCpuWide(SwitchCpuWide {
        misc: b.misc,
        next_prev_pid,
        next_prev_tid,
        sample_id: b.sample_id,
    }))
}

/// `PERF_RECORD_READ`: `{ pid, tid, struct read_format values }`.
fn read<'a>(b: &mut Body<'a, '_>) -> Result<Record<'a>, ParseError> {
    let (pid, tid) = b.pair()?;
    Ok(Record::Read(ReadRecord {
        pid,
        tid,
        values: read_values(b)?,
        sample_id: b.sample_id,
    }))
}

/// The `struct sample_id` trailer of every kind but `PERF_RECORD_SAMPLE`.
fn sample_id(b: &mut Body<'_, '_>) -> Result<SampleId, ParseError> {
    let mut id = SampleId::default();
    if !b.cfg.sample_id_all {
        return Ok(id);
    }
    if b.has(sample_type::TID) {
        let (pid, tid) = b.pair()?;
        (id.pid, id.tid) = (Some(pid), Some(tid));
    }
    id.time = b.u64_if(b.has(sample_type::TIME))?;
    id.id = b.u64_if(b.has(sample_type::ID))?;
    id.stream_id = b.u64_if(b.has(sample_type::STREAM_ID))?;
    if b.has(sample_type::CPU) {
        id.cpu = Some(b.pair()?.0); // { cpu, res }
    }
    id.identifier = b.u64_if(b.has(sample_type::IDENTIFIER))?;
    Ok(id)
}

/// `struct read_format`, laid out by `read_format`.
fn read_values<'a>(b: &mut Body<'a, '_>) -> Result<ReadValues<'a>, ParseError> {
    let format = b.cfg.read_format;
    let has = |bit: u64| format & bit != 0;
    let enabled = has(read_format::TOTAL_TIME_ENABLED);
    let running = has(read_format::TOTAL_TIME_RUNNING);
    let (has_id, has_lost) = (has(read_format::ID), has(read_format::LOST));
    if !has(read_format::GROUP) {
        return Ok(ReadValues::Single(ReadSingle {
            value: b.u64()?,
            time_enabled: b.u64_if(enabled)?,
            time_running: b.u64_if(running)?,
            id: b.u64_if(has_id)?,
            lost: b.u64_if(has_lost)?,
        }));
    }
    let nr_offset = b.c.pos();
    let nr = b.u64()?;
    let time_enabled = b.u64_if(enabled)?;
    let time_running = b.u64_if(running)?;
    let stride = ReadGroup::stride(has_id, has_lost);
    Ok(ReadValues::Group(ReadGroup {
        time_enabled,
        time_running,
        has_id,
        has_lost,
        entries: b.counted("group nr", nr, nr_offset, stride)?,
    }))
}

/// `PERF_RECORD_SAMPLE`: each field present when its `sample_type` bit is set, in
/// `perf_event.h`'s order.
fn sample<'a>(b: &mut Body<'a, '_>) -> Result<Sample<'a>, ParseError> {
    let mut s = Sample {
        misc: b.misc,
        ..Sample::default()
    };
    // The fields before READ are one u64 word each: read at once when the body holds them
    // (every sample the drain reads), else one by one for the error's offset.
    let fixed = (b.cfg.sample_type & FIXED_SAMPLE_WORDS).count_ones() as usize * 8;
    if b.c.remaining() >= fixed {
        let words = b.take(fixed)?;
        let f = fixed_sample_fields(b.cfg, words);
        (s.identifier, s.ip, s.pid, s.tid, s.time) = (f.identifier, f.ip, f.pid, f.tid, f.time);
        (s.addr, s.id, s.stream_id, s.cpu, s.period) = (f.addr, f.id, f.stream_id, f.cpu, f.period);
    } else {
        s.identifier = b.u64_if(b.has(sample_type::IDENTIFIER))?;
        s.ip = b.u64_if(b.has(sample_type::IP))?;
        if b.has(sample_type::TID) {
            let (pid, tid) = b.pair()?;
            (s.pid, s.tid) = (Some(pid), Some(tid));
        }
        s.time = b.u64_if(b.has(sample_type::TIME))?;
        s.addr = b.u64_if(b.has(sample_type::ADDR))?;
        s.id = b.u64_if(b.has(sample_type::ID))?;
        s.stream_id = b.u64_if(b.has(sample_type::STREAM_ID))?;
        if b.has(sample_type::CPU) {
            s.cpu = Some(b.pair()?.0); // { cpu, res }
        }
        s.period = b.u64_if(b.has(sample_type::PERIOD))?;
    }
    if b.has(sample_type::READ) {
        s.read = Some(read_values(b)?);
    }
    if b.has(sample_type::CALLCHAIN) {
        let ips = b.u64_counted("callchain nr", 8)?;
        s.callchain = Some(Callchain { ips });
    }
    if b.has(sample_type::RAW) {
        // { u32 size; char data[size]; } padded so that the u32 and data end 8-aligned.
        let size_offset = b.c.pos();
        let size = b.u32()?;
        let data = b.counted("raw size", u64::from(size), size_offset, 1)?;
        let pad = (8 - (4 + data.len()) % 8) % 8;
        b.take(pad.min(b.c.remaining()))?;
        s.raw = Some(data);
    }
    // BRANCH_STACK's length depends on branch_sample_type, which the config does not
    // carry: after it, nothing is decoded.
    if !b.has(sample_type::BRANCH_STACK) {
        if b.has(sample_type::REGS_USER) {
            s.regs_user = Some(regs_user(b)?);
        }
        if b.has(sample_type::STACK_USER) {
            s.stack_user = Some(stack_user(b)?);
        }
    }
    s.unparsed = b.c.rest();
    Ok(s)
}

/// The layout of a ring's samples when every field they carry is one u64 word but the
/// callchain (the `sample_type` bits `IDENTIFIER`, `IP`, `TID`, `TIME`, `ADDR`, `ID`,
/// `STREAM_ID`, `CPU`, `PERIOD` and `CALLCHAIN`, and nothing else): what every frame-pointer
/// sampling PMC's samples are. [`SampleLayout::decode`] reads such a sample without the
/// general parser ([`ParseConfig::parse`]) and without building a [`Sample`]: the drain
/// thread's hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleLayout {
    cfg: ParseConfig,
    /// Bytes of the fixed words.
    fixed: usize,
}

/// The fields of a sample of a [`SampleLayout`]: those of [`Sample`] such a sample can have.
/// Each field is `Some` when its `sample_type` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleFields<'a> {
    /// `perf_event_header.misc` (CPU mode, `PERF_RECORD_MISC_EXACT_IP`).
    pub misc: u16,
    /// `PERF_SAMPLE_IDENTIFIER`
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`
    pub period: Option<u64>,
    /// `PERF_SAMPLE_CALLCHAIN`
    pub callchain: Option<Callchain<'a>>,
}

impl<'a> SampleFields<'a> {
    /// The fields of a sample decoded by the general parser (its other fields left out).
    pub fn of(s: &Sample<'a>) -> SampleFields<'a> {
        SampleFields {
            misc: s.misc,
            identifier: s.identifier,
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            time: s.time,
            addr: s.addr,
            id: s.id,
            stream_id: s.stream_id,
            cpu: s.cpu,
            period: s.period,
            callchain: s.callchain,
        }
    }

    /// The CPU mode bits of [`SampleFields::misc`].
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

impl ParseConfig {
    /// The layout of this config's samples, if they carry nothing but fixed words and a
    /// callchain (see [`SampleLayout`]).
    pub fn sample_layout(&self) -> Option<SampleLayout> {
        (self.sample_type & !(FIXED_SAMPLE_WORDS | sample_type::CALLCHAIN) == 0).then(|| {
            SampleLayout {
                cfg: *self,
                fixed: (self.sample_type & FIXED_SAMPLE_WORDS).count_ones() as usize * 8,
            }
        })
    }
}

impl SampleLayout {
    /// Decodes `record`, a whole `PERF_RECORD_SAMPLE` (header included) of this layout,
    /// into the same fields [`ParseConfig::parse`] gives. `None` when it is not a sample,
    /// or not exactly of this layout (short, with a callchain count that does not end the
    /// record, or with bytes after its fields): the general parser then decodes it or says
    /// what is wrong.
    pub fn decode<'a>(&self, record: &'a [u8]) -> Option<SampleFields<'a>> {
        let header = RecordHeader::parse(record)?;
        if header.kind != record_type::SAMPLE {
            return None;
        }
        let body = record.get(HEADER_LEN..usize::from(header.size))?;
        let (words, rest) = body.split_at_checked(self.fixed)?;
        let mut f = fixed_sample_fields(&self.cfg, words);
        f.misc = header.misc;
        if self.cfg.has(sample_type::CALLCHAIN) {
            let (nr, ips) = rest.split_at_checked(8)?;
            let nr = u64::from_ne_bytes(nr.try_into().ok()?);
            if u64::try_from(ips.len()).ok()? != nr.checked_mul(8)? {
                return None;
            }
            f.callchain = Some(Callchain { ips });
        } else if !rest.is_empty() {
            return None;
        }
        Some(f)
    }
}

/// The `sample_type` bits of the sample fields before `PERF_SAMPLE_READ`: one u64 word each.
const FIXED_SAMPLE_WORDS: u64 = sample_type::IDENTIFIER
    | sample_type::IP
    | sample_type::TID
    | sample_type::TIME
    | sample_type::ADDR
    | sample_type::ID
    | sample_type::STREAM_ID
    | sample_type::CPU
    | sample_type::PERIOD;

/// The sample fields of [`FIXED_SAMPLE_WORDS`] from `words`, which holds one native-endian
/// u64 word per bit set in the config (a short `words` leaves the last fields `None`).
fn fixed_sample_fields(cfg: &ParseConfig, words: &[u8]) -> SampleFields<'static> {
    let mut s = SampleFields::default();
    let mut w = words.chunks_exact(8);
    let mut word = |bit: u64| -> Option<[u8; 8]> {
        if cfg.has(bit) {
            w.next().and_then(|c| c.try_into().ok())
        } else {
            None
        }
    };
    let u64_of = |b: [u8; 8]| u64::from_ne_bytes(b);
    // `{ u32, u32 }` pairs: pid and tid, cpu and res.
    let pair = |b: [u8; 8]| {
        let (x, y) = b.split_at(4);
        let u = |h: &[u8]| u32::from_ne_bytes(h.try_into().unwrap_or_default());
        (u(x), u(y))
    };
    s.identifier = word(sample_type::IDENTIFIER).map(u64_of);
    s.ip = word(sample_type::IP).map(u64_of);
    if let Some((pid, tid)) = word(sample_type::TID).map(pair) {
        (s.pid, s.tid) = (Some(pid), Some(tid));
    }
    s.time = word(sample_type::TIME).map(u64_of);
    s.addr = word(sample_type::ADDR).map(u64_of);
    s.id = word(sample_type::ID).map(u64_of);
    s.stream_id = word(sample_type::STREAM_ID).map(u64_of);
    s.cpu = word(sample_type::CPU).map(|b| pair(b).0);
    s.period = word(sample_type::PERIOD).map(u64_of);
    s
}

/// `PERF_SAMPLE_REGS_USER`: `{ u64 abi; u64 regs[weight(sample_regs_user)]; }` (no
/// registers with abi 0).
fn regs_user<'a>(b: &mut Body<'a, '_>) -> Result<RegsUser<'a>, ParseError> {
    let abi = b.u64()?;
    let n = match abi {
        0 => 0,
        _ => u64::from(b.cfg.sample_regs_user.count_ones()),
    };
    let at = b.c.pos();
    let regs = b.counted("regs_user count", n, at, 8)?;
    Ok(RegsUser { abi, regs })
}

/// `PERF_SAMPLE_STACK_USER`: `{ u64 size; char data[size]; u64 dyn_size; }` (data and
/// dyn_size only when size is not 0), cut to `dyn_size`.
fn stack_user<'a>(b: &mut Body<'a, '_>) -> Result<&'a [u8], ParseError> {
    let size_offset = b.c.pos();
    let size = b.u64()?;
    if size == 0 {
        return Ok(&[]);
    }
    let data = b.counted("stack_user size", size, size_offset, 1)?;
    let dyn_offset = b.c.pos();
    let dyn_size = b.u64()?;
    let bad = ParseError::BadCount {
        what: "stack_user dyn_size",
        value: dyn_size,
        offset: dyn_offset,
    };
    usize::try_from(dyn_size)
        .ok()
        .and_then(|d| data.get(..d))
        .ok_or(bad)
}

impl ParseConfig {
    /// A config for the given `perf_event_attr` fields.
    pub fn new(sample_type: u64, read_format: u64, sample_id_all: bool) -> Self {
        Self {
            sample_type,
            read_format,
            sample_id_all,
            sample_regs_user: 0,
        }
    }

    /// The same, with `perf_event_attr.sample_regs_user` (for `PERF_SAMPLE_REGS_USER`).
    pub fn with_regs_user(mut self, mask: u64) -> Self {
        self.sample_regs_user = mask;
        self
    }

    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Length in bytes of the `sample_id` trailer of non-sample records (0 without
    /// `sample_id_all`).
    pub fn sample_id_len(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        [
            sample_type::TID,
            sample_type::TIME,
            sample_type::ID,
            sample_type::STREAM_ID,
            sample_type::CPU,
            sample_type::IDENTIFIER,
        ]
        .iter()
        .filter(|&&b| self.has(b))
        .count()
            * 8
    }

    /// Decodes one record, header included. `record` must hold at least
    /// `perf_event_header.size` bytes; bytes beyond it are ignored.
    ///
    /// # Errors
    ///
    /// [`ParseError::BadSize`] if the header is missing or its size is below 8 or beyond
    /// `record`; [`ParseError::UnexpectedEof`] or [`ParseError::BadCount`] if the body is
    /// shorter than the config and its own counts say.
    pub fn parse<'a>(&self, record: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let header = RecordHeader::parse(record).ok_or(ParseError::BadSize {
            size: 0,
            available: record.len(),
        })?;
        let size = usize::from(header.size);
        let record = match record.get(..size) {
            Some(r) if size >= HEADER_LEN => r,
            _ => {
                return Err(ParseError::BadSize {
                    size: header.size,
                    available: record.len(),
                })
            }
        };
        let decode = match decoder(header.kind) {
            None => {
                let body = record.get(HEADER_LEN..).unwrap_or_default();
                return Ok(Record::Unknown { header, body });
            }
            Some(Decoder::Sample) => {
                let mut b = Body::new(self, record, HEADER_LEN, size, header.misc);
                return sample(&mut b).map(Record::Sample);
            }
            Some(Decoder::WithSampleId(decode)) => decode,
        };
        // Split off the sample_id trailer from the end: its length is fixed by the config,
        // while the fields before it may be variable (file names, group reads).
        let trailer_len = self.sample_id_len();
        let fields_end = size
            .checked_sub(trailer_len)
            .filter(|&end| end >= HEADER_LEN)
            .ok_or(ParseError::UnexpectedEof {
                offset: HEADER_LEN,
                needed: trailer_len,
                len: size,
            })?;
        let id = sample_id(&mut Body::new(self, record, fields_end, size, header.misc))?;
        let mut b = Body::new(self, record, HEADER_LEN, fields_end, header.misc);
        b.sample_id = id;
        decode(&mut b)
    }
}
