//! One decoder per kernel record type: the fields of a record whose type
//! and length the parser checked, at their `sys/sys/pmclog.h`
//! offsets, as an [`Event`].

use super::{split_multipart, Event, PMC_CC_F_MULTIPART};
use crate::bytes::{cstr, ByteCursor};
use crate::record::Callchain;

/// A kernel record's fields by offset (`sys/sys/pmclog.h`), each `None`
/// when the record does not hold it.
pub(super) struct Fields<'a> {
    r: &'a [u8],
    c: ByteCursor<'a>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(r: &'a [u8]) -> Self {
        Fields {
            r,
            c: ByteCursor::le(r),
        }
    }
    pub(super) fn u32(&self, off: usize) -> Option<u32> {
        self.c.u32_at(off).ok()
    }
    pub(super) fn i32(&self, off: usize) -> Option<i32> {
        self.c.i32_at(off).ok()
    }
    pub(super) fn u64(&self, off: usize) -> Option<u64> {
        self.c.u64_at(off).ok()
    }
    pub(super) fn i64(&self, off: usize) -> Option<i64> {
        self.c.i64_at(off).ok()
    }
    /// A NUL-terminated field at `off`, bounded by the record (and by
    /// `end`, the field's end, for the fixed-size ones).
    pub(super) fn cstr(&self, off: usize, end: Option<usize>) -> &'a [u8] {
        let r = self.r;
        cstr(
            r.get(..end.unwrap_or(r.len()))
                .unwrap_or(r)
                .get(off..)
                .unwrap_or_default(),
        )
    }
}

pub(super) fn decode_pmc_allocate<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::PmcAllocate {
        tsc,
        pmcid: f.u32(16)?,
        event: f.u32(20)?,
        flags: f.u32(24)?,
        rate: f.u64(32)?,
    })
}

/// hwpmc_logging.c:pmclog_process_pmcallocate writes pad@28,
/// PMCLOG_EMIT64(pm_reloadcount)@32, then the name from 40 (cut by the
/// 96-byte reservation), whatever the struct declares.
pub(super) fn decode_pmc_allocate_dyn<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::PmcAllocateDyn {
        tsc,
        pmcid: f.u32(16)?,
        event: f.u32(20)?,
        flags: f.u32(24)?,
        rate: f.u64(32)?,
        evname: f.cstr(40, None),
    })
}

pub(super) fn decode_pmc_attach<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::PmcAttach {
        tsc,
        pmcid: f.u32(16)?,
        pid: f.i32(20)?,
        path: f.cstr(24, None),
    })
}

pub(super) fn decode_pmc_detach<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::PmcDetach {
        tsc,
        pmcid: f.u32(16)?,
        pid: f.i32(20)?,
    })
}

pub(super) fn decode_proc_csw<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ProcCsw {
        tsc,
        value: f.u64(16)?,
        pmcid: f.u32(24)?,
        pid: f.i32(28)?,
        tid: f.i32(32)?,
    })
}

/// PROCEXEC in either layout: legacy (`pl_start`, path at 32) or current
/// (`pl_dynaddr` at 32, path at 40).
pub(super) fn decode_proc_exec<'a>(f: &Fields<'a>, tsc: u64, legacy: bool) -> Option<Event<'a>> {
    let (dyn_base, path) = if legacy {
        (0, f.cstr(32, None))
    } else {
        (f.u64(32)?, f.cstr(40, None))
    };
    Some(Event::ProcExec {
        tsc,
        pid: f.i32(16)?,
        pmcid: f.u32(20)?,
        base: f.u64(24)?,
        dyn_base,
        path,
        legacy,
    })
}

pub(super) fn decode_proc_exit<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ProcExit {
        tsc,
        pmcid: f.u32(16)?,
        pid: f.i32(20)?,
        value: f.u64(24)?,
    })
}

pub(super) fn decode_proc_fork<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ProcFork {
        tsc,
        oldpid: f.i32(16)?,
        newpid: f.i32(20)?,
    })
}

pub(super) fn decode_sys_exit<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::SysExit {
        tsc,
        pid: f.i32(16)?,
    })
}

pub(super) fn decode_user_data<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::UserData {
        tsc,
        userdata: f.u32(16)?,
    })
}

pub(super) fn decode_map_in<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::MapIn {
        tsc,
        pid: f.i32(16)?,
        start: f.u64(24)?,
        path: f.cstr(32, None),
    })
}

pub(super) fn decode_map_out<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::MapOut {
        tsc,
        pid: f.i32(16)?,
        start: f.u64(24)?,
        end: f.u64(32)?,
    })
}

/// CALLCHAIN: the PCs from 32 (whole words); for a multipart record the
/// CALLCHAIN part, the part header and the other parts going to `extra`.
pub(super) fn decode_callchain<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    let cpuflags = f.u32(28)?;
    let area = f.r.get(32..)?;
    let area = area.get(..area.len() / 8 * 8)?;
    let (pcs, extra): (&[u8], &[u8]) = if cpuflags & PMC_CC_F_MULTIPART != 0 {
        split_multipart(area)?
    } else {
        (area, &[])
    };
    Some(Event::Callchain {
        tsc,
        pid: f.i32(16)?,
        tid: f.i32(20)?,
        pmcid: f.u32(24)?,
        cpuflags,
        pcs: Callchain::from_le_bytes(pcs),
        extra,
    })
}

pub(super) fn decode_thr_create<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ThrCreate {
        tsc,
        tid: f.i32(16)?,
        pid: f.i32(20)?,
        flags: f.u32(24)?,
        tdname: f.cstr(32, Some(52)),
    })
}

pub(super) fn decode_thr_exit<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ThrExit {
        tsc,
        tid: f.i32(16)?,
    })
}

pub(super) fn decode_proc_create<'a>(f: &Fields<'a>, tsc: u64) -> Option<Event<'a>> {
    Some(Event::ProcCreate {
        tsc,
        pid: f.i32(16)?,
        flags: f.u32(20)?,
        pcomm: f.cstr(24, Some(44)),
    })
}
