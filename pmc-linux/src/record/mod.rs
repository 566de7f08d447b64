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
//!
//! # Files
//!
//! `config.rs` ([`ParseConfig`], [`RecordHeader`], [`ParseError`], [`ParseStats`] and the
//! dispatch of [`ParseConfig::parse`]); `kinds.rs` ([`Record`] and the non-sample kinds);
//! `sample.rs` ([`Sample`] and its views, the general sample decoder); `decode.rs` (the
//! bounded cursor, the table of kinds, the non-sample decoders); `fast.rs` (the fixed-word fast
//! path, [`SampleLayout`]).

use perf_event_open_sys::bindings as b;

mod config;
mod decode;
mod fast;
mod kinds;
mod sample;

pub use config::{ParseConfig, ParseError, ParseStats, RecordHeader};
pub use fast::{SampleFields, SampleLayout};
pub use kinds::{
    Comm, CpuMode, FileId, Lost, LostSamples, Mmap, Mmap2, ReadRecord, Record, SampleId, Switch,
    SwitchCpuWide, TaskEvent, Throttle,
};
pub use sample::{
    Callchain, Frame, FrameContext, Frames, GroupEntries, GroupEntry, ReadGroup, ReadSingle,
    ReadValues, RegsUser, Sample,
};

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
