//! The record model shared by every backend and frontend.
//!
//! [`Record`] is one enum over every kind: [`Header`], [`PmcDescriptor`], [`Sample`], [`Comm`],
//! [`Exec`], [`Map`], [`Fork`], ...; [`Callchain`] and [`Bytes`] borrow or own their bytes;
//! `FLAG_*` are a descriptor's flags, [`TRUNCATED_FRAME`] ends a cut chain. Details follow.
//!
//! One [`Record`] type serves both the zero-copy reader (fields borrow the
//! input through [`Cow::Borrowed`], [`Bytes`] and [`Callchain`]) and owned
//! use (`Record<'static>`, obtained with [`Record::into_owned`]). All types
//! derive serde `Serialize`/`Deserialize`; deserializing always produces the
//! owned form.
//!
//! Timestamps (`time`) are in the unit given by the file's [`Header`]
//! (`clock` and `ticks_per_second`). Process and thread ids are `i32`, with
//! `-1` meaning "unknown / not applicable" (the kernel on FreeBSD, for
//! example). Optional CPU numbers and PMC ids are `Option<u32>`.
//!
//! ```
//! use pmc_log::record::{Record, Sample, Callchain};
//! let frames = [0xffff_ffff_8100_0000u64, 0x40_1000, 0x40_2000];
//! let s = Record::Sample(Sample {
//!     time: 1, pmc_id: 0, pid: 42, tid: 42, cpu: Some(0), period: 65536,
//!     callchain: Callchain::from_frames(&frames), kernel_frames: 1,
//!     raw: Default::default(),
//! });
//! assert_eq!(s.time(), 1);
//! let owned: Record<'static> = s.clone().into_owned();
//! assert_eq!(owned, s);
//! ```
//!
//! # Files
//!
//! `mod.rs` holds the `FLAG_*` constants and [`Record`] itself; `bytes.rs` [`Bytes`],
//! `callchain.rs` [`Callchain`], `header.rs` [`Header`] and [`PmcDescriptor`], `kinds.rs`
//! the struct of every other kind.

use std::borrow::Cow;

mod bytes;
mod callchain;
mod header;
mod kinds;

pub use bytes::Bytes;
pub use callchain::{Callchain, CallchainIter};
pub use header::{Clock, Header, Mode, PmcDescriptor, Scope};
pub use kinds::{
    Attach, Close, Comm, Counter, CounterKind, Detach, Exec, Exit, Fork, Lost, Map, ProcessCreate,
    Sample, ThreadCreate, ThreadExit, Unmap, UserData, UserStack, ARCH_AARCH64, ARCH_NATIVE,
    ARCH_X86_64,
};

/// Flag bit of [`PmcDescriptor::flags`]: the PMC follows descendants of the
/// target process (hwpmc `PMC_F_DESCENDANTS`, perf `inherit`).
pub const FLAG_DESCENDANTS: u32 = 1;
/// Flag bit of [`PmcDescriptor::flags`]: samples carry callchains
/// (hwpmc `PMC_F_CALLCHAIN`, perf `PERF_SAMPLE_CALLCHAIN`).
pub const FLAG_CALLCHAIN: u32 = 2;
/// Flag bit of [`PmcDescriptor::flags`]: log the count when a process exits
/// (hwpmc `PMC_F_LOG_PROCEXIT`, `pmcstat -E`).
pub const FLAG_LOG_PROCEXIT: u32 = 4;
/// Flag bit of [`PmcDescriptor::flags`]: log the count at each context switch
/// (hwpmc `PMC_F_LOG_PROCCSW`, `pmcstat -W`).
pub const FLAG_LOG_PROCCSW: u32 = 8;
/// Flag bit of [`PmcDescriptor::flags`]: the user part of each callchain was unwound from a
/// captured user stack with DWARF call-frame information (pmc's `CallGraph::Dwarf`, perf's
/// `--call-graph dwarf`), not by following frame pointers.
pub const FLAG_DWARF_CALLCHAIN: u32 = 16;
/// Flag bit of [`PmcDescriptor::flags`]: callchains of samples taken in the kernel go on
/// into user space (hwpmc `PMC_F_USERCALLCHAIN`, `pmcstat -U`); without it they hold the
/// kernel's frames only.
pub const FLAG_USERCALLCHAIN: u32 = 32;

/// A callchain entry that is not an address: the unwinder stopped before the stack's root
/// (no unwind information, the captured stack ended, a frame did not check out), so frames
/// beyond it are unknown. It is only ever the last entry. Readers that do not know it see an
/// address that resolves to nothing.
///
/// ```
/// assert_eq!(pmc_log::record::TRUNCATED_FRAME, u64::MAX);
/// ```
pub const TRUNCATED_FRAME: u64 = u64::MAX;

/// Flag bit of [`Exec::flags`]: the record came from a legacy hwpmc
/// PROCEXEC layout; `base` holds the entry address and `dyn_base` is 0.
pub const EXEC_LEGACY_ENTRY: u32 = 1;

/// A record of the log. See `FORMAT.md` for the on-disk encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Record<'a> {
    /// File header (kind 1).
    Header(Header<'a>),
    /// PMC descriptor (kind 2).
    Pmc(PmcDescriptor<'a>),
    /// Sample (kind 3).
    Sample(Sample<'a>),
    /// Command name (kind 4).
    Comm(Comm<'a>),
    /// Exec (kind 5).
    Exec(Exec<'a>),
    /// Fork (kind 6).
    Fork(Fork),
    /// Process exit (kind 7).
    Exit(Exit),
    /// Thread creation (kind 8).
    ThreadCreate(ThreadCreate<'a>),
    /// Thread exit (kind 9).
    ThreadExit(ThreadExit),
    /// Process creation (kind 10).
    ProcessCreate(ProcessCreate<'a>),
    /// Executable mapping (kind 11).
    Map(Map<'a>),
    /// Mapping removal (kind 12).
    Unmap(Unmap),
    /// PMC attached to a process (kind 13).
    Attach(Attach<'a>),
    /// PMC detached from a process (kind 14).
    Detach(Detach),
    /// Counter value (kind 15).
    Counter(Counter),
    /// Lost samples (kind 16).
    Lost(Lost),
    /// User data (kind 17).
    UserData(UserData<'a>),
    /// A sample's user registers and stack, for unwinding when read.
    UserStack(UserStack<'a>),
    /// Clean-close marker (kind 18).
    Close(Close),
}

pub(super) fn own(c: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(c.into_owned())
}

impl Record<'_> {
    /// The record's timestamp (`start_time` for the header).
    pub fn time(&self) -> u64 {
        match self {
            Record::Header(r) => r.start_time,
            Record::Pmc(r) => r.time,
            Record::Sample(r) => r.time,
            Record::Comm(r) => r.time,
            Record::Exec(r) => r.time,
            Record::Fork(r) => r.time,
            Record::Exit(r) => r.time,
            Record::ThreadCreate(r) => r.time,
            Record::ThreadExit(r) => r.time,
            Record::ProcessCreate(r) => r.time,
            Record::Map(r) => r.time,
            Record::Unmap(r) => r.time,
            Record::Attach(r) => r.time,
            Record::Detach(r) => r.time,
            Record::Counter(r) => r.time,
            Record::Lost(r) => r.time,
            Record::UserData(r) => r.time,
            Record::UserStack(r) => r.time,
            Record::Close(r) => r.time,
        }
    }

    /// The on-disk kind code (see [`crate::format::kind`]).
    pub fn kind(&self) -> u16 {
        use crate::format::kind;
        match self {
            Record::Header(_) => kind::HEADER,
            Record::Pmc(_) => kind::PMC,
            Record::Sample(_) => kind::SAMPLE,
            Record::Comm(_) => kind::COMM,
            Record::Exec(_) => kind::EXEC,
            Record::Fork(_) => kind::FORK,
            Record::Exit(_) => kind::EXIT,
            Record::ThreadCreate(_) => kind::THREAD_CREATE,
            Record::ThreadExit(_) => kind::THREAD_EXIT,
            Record::ProcessCreate(_) => kind::PROCESS_CREATE,
            Record::Map(_) => kind::MAP,
            Record::Unmap(_) => kind::UNMAP,
            Record::Attach(_) => kind::ATTACH,
            Record::Detach(_) => kind::DETACH,
            Record::Counter(_) => kind::COUNTER,
            Record::Lost(_) => kind::LOST,
            Record::UserData(_) => kind::USER_DATA,
            Record::UserStack(_) => kind::USER_STACK,
            Record::Close(_) => kind::CLOSE,
        }
    }

    /// Copy every borrowed field, giving a record that owns its data.
    pub fn into_owned(self) -> Record<'static> {
        match self {
            Record::Header(h) => Record::Header(own_header(h)),
            Record::Pmc(p) => Record::Pmc(own_pmc(p)),
            Record::Sample(s) => Record::Sample(s.into_owned()),
            Record::Comm(c) => Record::Comm(Comm {
                comm: c.comm.into_owned(),
                ..c
            }),
            Record::Exec(e) => Record::Exec(Exec {
                path: e.path.into_owned(),
                ..e
            }),
            Record::Fork(f) => Record::Fork(f),
            Record::Exit(e) => Record::Exit(e),
            Record::ThreadCreate(t) => Record::ThreadCreate(ThreadCreate {
                name: t.name.into_owned(),
                ..t
            }),
            Record::ThreadExit(t) => Record::ThreadExit(t),
            Record::ProcessCreate(p) => Record::ProcessCreate(ProcessCreate {
                comm: p.comm.into_owned(),
                ..p
            }),
            Record::Map(m) => Record::Map(own_map(m)),
            Record::Unmap(u) => Record::Unmap(u),
            Record::Attach(a) => Record::Attach(Attach {
                path: a.path.into_owned(),
                ..a
            }),
            Record::Detach(d) => Record::Detach(d),
            Record::Counter(c) => Record::Counter(c),
            Record::Lost(l) => Record::Lost(l),
            Record::UserData(u) => Record::UserData(UserData {
                data: u.data.into_owned(),
                ..u
            }),
            Record::UserStack(u) => Record::UserStack(UserStack {
                stack: u.stack.into_owned(),
                ..u
            }),
            Record::Close(c) => Record::Close(c),
        }
    }
}

fn own_header(h: Header<'_>) -> Header<'static> {
    Header {
        os: own(h.os),
        kernel_release: own(h.kernel_release),
        arch: own(h.arch),
        cpu_model: own(h.cpu_model),
        cpuid: own(h.cpuid),
        cpu_count: h.cpu_count,
        page_size: h.page_size,
        clock: h.clock,
        ticks_per_second: h.ticks_per_second,
        start_wall_ns: h.start_wall_ns,
        start_time: h.start_time,
        backend: own(h.backend),
    }
}

fn own_pmc(p: PmcDescriptor<'_>) -> PmcDescriptor<'static> {
    PmcDescriptor {
        time: p.time,
        pmc_id: p.pmc_id,
        event_spec: own(p.event_spec),
        canonical_name: own(p.canonical_name),
        scope: p.scope,
        cpu: p.cpu,
        mode: p.mode,
        flags: p.flags,
        native_config: own(p.native_config),
    }
}

fn own_map(m: Map<'_>) -> Map<'static> {
    Map {
        time: m.time,
        pid: m.pid,
        start: m.start,
        len: m.len,
        pgoff: m.pgoff,
        build_id: m.build_id.into_owned(),
        path: m.path.into_owned(),
    }
}
