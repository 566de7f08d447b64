//! One conversion per kernel event type that needs no importer state: the
//! pmc-log record of an [`Event`](super::Event)'s fields. The whole table
//! (the importer's conversions with state included):
//!
//! | hwpmc | pmc-log |
//! |---|---|
//! | INITIALIZE | [`Header`]: clock TSC, `ticks_per_second = pl_tsc_freq`, wall time from `pl_ts`, `cpuid` from `pl_cpuid` |
//! | PMCALLOCATE(DYN) | [`PmcDescriptor`]: mode and CPU from the PMC id (newest id layout), flags mapped to `FLAG_*` (`map_flags`; the record's own event code and `PMC_F_*` kept, [`imported_allocation`](super::imported_allocation)) |
//! | CALLCHAIN | [`Sample`]: CPU from `pl_cpuflags >> 16`; `kernel_frames` = 0 if `PMC_CC_F_USERSPACE`, else all; `period` = the PMC's rate; multipart: the CALLCHAIN part becomes the callchain, the 8-byte part header plus the other parts go to `raw` |
//! | PROCCSW / PROCEXIT | [`Counter`] (`ContextSwitch` / `ProcessExit`) |
//! | PROCEXEC | [`Exec`] (legacy layout: `EXEC_LEGACY_ENTRY`) |
//! | MAP_IN / MAP_OUT | [`Map`] (`len` 0: unknown) / [`Unmap`] |
//! | PROCFORK, SYSEXIT, THR_CREATE, THR_EXIT, PROC_CREATE | [`Fork`], [`Exit`], [`ThreadCreate`], [`ThreadExit`], [`ProcessCreate`] |
//! | PROCFORK repeating the last fork of the same child and parent (hwpmc writes one per `PMC_F_DESCENDANTS` PMC) | nothing (noted in the report) |
//! | PMCATTACH / PMCDETACH | [`Attach`] / [`Detach`] |
//! | DROPNOTIFY | [`Lost`] with `count` 0 (unknown) |
//! | USERDATA | [`UserData`] (4 bytes, LE) |
//! | CLOSELOG | [`Close`] |
//!
//! Not representable: `pl_spare` and pad words (always 0), INITIALIZE's
//! `pl_cpu` cputype (kept in `Header::backend` text).

use std::borrow::Cow;

use super::{event_name, EXEC_LEGACY_ENTRY, PMC_CC_F_USERSPACE, PMC_F_USERCALLCHAIN};
use crate::record::*;

/// How many of a CALLCHAIN's leading PCs are kernel frames: none with
/// `PMC_CC_F_USERSPACE`, else all, except that with `PMC_F_USERCALLCHAIN`
/// the kernel appends the user stack to a kernel-mode sample's chain in the
/// same record, USERSPACE clear (hwpmc_mod.c: pmc_capture_user_callchain):
/// the kernel frames are then the leading upper-half (kernel) addresses.
pub(super) fn kernel_frames(pcs: &Callchain<'_>, cpuflags: u32, pmc_flags: u32) -> u32 {
    if cpuflags & PMC_CC_F_USERSPACE != 0 {
        0
    } else if pmc_flags & PMC_F_USERCALLCHAIN != 0 {
        pcs.iter().take_while(|&pc| pc >> 63 == 1).count() as u32
    } else {
        pcs.len() as u32
    }
}

/// PMCALLOCATE's event name: a fixed-code event's, else its code.
pub(super) fn fixed_event_name<'a>(event: u32) -> Cow<'a, str> {
    match event_name(event) {
        Some(n) => n.into(),
        None => format!("event={event:#x}").into(),
    }
}

/// CLOSELOG: the clean-close marker, counting the `records` before it.
pub(super) fn close<'a>(tsc: u64, records: u64) -> Record<'a> {
    Record::Close(Close { time: tsc, records })
}

/// DROPNOTIFY: records lost, how many unknown.
pub(super) fn lost<'a>(tsc: u64) -> Record<'a> {
    Record::Lost(Lost {
        time: tsc,
        pmc_id: None,
        cpu: None,
        count: 0,
    })
}

pub(super) fn attach(tsc: u64, pmcid: u32, pid: i32, path: &[u8]) -> Record<'_> {
    Record::Attach(Attach {
        time: tsc,
        pmc_id: pmcid,
        pid,
        path: path.into(),
    })
}

pub(super) fn detach<'a>(tsc: u64, pmcid: u32, pid: i32) -> Record<'a> {
    Record::Detach(Detach {
        time: tsc,
        pmc_id: pmcid,
        pid,
    })
}

/// PROCCSW (`tid` known) and PROCEXIT (`tid` -1): a counter value.
pub(super) fn counter<'a>(
    tsc: u64,
    pmcid: u32,
    pid: i32,
    tid: i32,
    kind: CounterKind,
    value: u64,
) -> Record<'a> {
    Record::Counter(Counter {
        time: tsc,
        pmc_id: pmcid,
        pid,
        tid,
        cpu: None,
        kind,
        value,
        time_enabled: 0,
        time_running: 0,
    })
}

/// PROCEXEC: a PMC id of `u32::MAX` is none; the legacy layout's base is
/// the entry point (`EXEC_LEGACY_ENTRY`).
pub(super) fn proc_exec(
    tsc: u64,
    pid: i32,
    pmcid: u32,
    base: u64,
    dyn_base: u64,
    path: &[u8],
    legacy: bool,
) -> Record<'_> {
    Record::Exec(Exec {
        time: tsc,
        pid,
        pmc_id: Some(pmcid).filter(|&p| p != u32::MAX),
        base,
        dyn_base,
        flags: if legacy { EXEC_LEGACY_ENTRY } else { 0 },
        path: path.into(),
    })
}

/// PROCFORK: processes only (tids -1).
pub(super) fn fork<'a>(tsc: u64, oldpid: i32, newpid: i32) -> Record<'a> {
    Record::Fork(Fork {
        time: tsc,
        parent_pid: oldpid,
        parent_tid: -1,
        child_pid: newpid,
        child_tid: -1,
    })
}

/// SYSEXIT: a process exit (tid -1).
pub(super) fn exit<'a>(tsc: u64, pid: i32) -> Record<'a> {
    Record::Exit(Exit {
        time: tsc,
        pid,
        tid: -1,
    })
}

/// USERDATA: the 32-bit word, little-endian, of an unknown process.
pub(super) fn user_data<'a>(tsc: u64, userdata: u32) -> Record<'a> {
    Record::UserData(UserData {
        time: tsc,
        pid: -1,
        data: Bytes::from(userdata.to_le_bytes().to_vec()),
    })
}

/// MAP_IN: the mapping's length and file offset are unknown (0).
pub(super) fn map_in(tsc: u64, pid: i32, start: u64, path: &[u8]) -> Record<'_> {
    Record::Map(Map {
        time: tsc,
        pid,
        start,
        len: 0,
        pgoff: 0,
        build_id: Bytes::default(),
        path: path.into(),
    })
}

pub(super) fn map_out<'a>(tsc: u64, pid: i32, start: u64, end: u64) -> Record<'a> {
    Record::Unmap(Unmap {
        time: tsc,
        pid,
        start,
        end,
    })
}

pub(super) fn thr_create(tsc: u64, pid: i32, tid: i32, flags: u32, tdname: &[u8]) -> Record<'_> {
    Record::ThreadCreate(ThreadCreate {
        time: tsc,
        pid,
        tid,
        flags,
        name: tdname.into(),
    })
}

/// THR_EXIT: a thread of an unknown process (pid -1).
pub(super) fn thr_exit<'a>(tsc: u64, tid: i32) -> Record<'a> {
    Record::ThreadExit(ThreadExit {
        time: tsc,
        pid: -1,
        tid,
    })
}

pub(super) fn proc_create(tsc: u64, pid: i32, flags: u32, pcomm: &[u8]) -> Record<'_> {
    Record::ProcessCreate(ProcessCreate {
        time: tsc,
        pid,
        flags,
        comm: pcomm.into(),
    })
}
