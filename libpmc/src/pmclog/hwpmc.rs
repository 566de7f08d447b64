//! hwpmc logs as FreeBSD's `lib/libpmc/pmclog.c` reads them: a record
//! assembled across reads and feeds (its header word, then as many bytes as
//! its length says), checked, then decoded by one function per record type
//! into `pmclog_ev`'s union, dispatched from one match.

use std::ffi::{c_char, CString};

use pmc_log::hwpmc::{
    pmclog_header_magic_ok, pmclog_header_type, PMCLOG_HEADER_LEN, PMCLOG_MAX_RECORD,
};

use super::{copy_str, i32_at, keep_name, malformed, u32_at, u64_at, Step};
use crate::abi::*;
use crate::names;
use crate::state::CError;

/// FreeBSD's parse state (`struct pmclog_parse_state`): the record being
/// assembled and the input not looked at yet.
pub(super) struct Hwpmc {
    /// Input not consumed (fed, or read from the descriptor).
    input: Vec<u8>,
    /// How much of `input` was consumed.
    pos: usize,
    /// The record being assembled (`ps_saved`), then the last one decoded.
    pub(super) saved: Vec<u8>,
    /// `saved` holds a complete record already returned.
    saved_done: bool,
    /// Bytes consumed before `input` (the offset of `input[0]`).
    base: u64,
    /// INITIALIZE's cpuid, for `PMC_F_EV_PMU` event names.
    cpuid: Option<String>,
    /// INITIALIZE's version (0: none seen).
    version: u32,
}

/// The smallest length a record of type `ty` can have (its fixed fields),
/// `None` for a type FreeBSD's parser does not know.
fn min_len(ty: u32) -> Option<usize> {
    Some(match ty {
        PMCLOG_TYPE_CLOSELOG | PMCLOG_TYPE_DROPNOTIFY => 16,
        PMCLOG_TYPE_INITIALIZE => 112,
        PMCLOG_TYPE_MAP_IN => 32,
        PMCLOG_TYPE_MAP_OUT => 40,
        PMCLOG_TYPE_PMCALLOCATE => 40,
        PMCLOG_TYPE_PMCALLOCATEDYN => 40,
        PMCLOG_TYPE_PMCATTACH => 24,
        PMCLOG_TYPE_PMCDETACH => 24,
        PMCLOG_TYPE_PROCCSW => 36,
        PMCLOG_TYPE_PROCEXEC => 32,
        PMCLOG_TYPE_PROCEXIT => 32,
        PMCLOG_TYPE_PROCFORK => 24,
        PMCLOG_TYPE_SYSEXIT => 20,
        PMCLOG_TYPE_USERDATA => 20,
        PMCLOG_TYPE_CALLCHAIN => 32,
        PMCLOG_TYPE_THR_CREATE => 52,
        PMCLOG_TYPE_THR_EXIT => 20,
        PMCLOG_TYPE_PROC_CREATE => 44,
        _ => return None,
    })
}

/// A record's length from its header word.
fn record_len(header: u32) -> usize {
    (header & 0xFFFF) as usize
}

/// FreeBSD's header checks, stricter: the magic, and a length of whole
/// 4-byte words from the header's 16 bytes to `sizeof(union pmclog_entry)`.
fn check_header(h: u32, start: u64) -> Result<(), CError> {
    let len = record_len(h);
    if !pmclog_header_magic_ok(h) {
        return Err(malformed(
            start,
            format!("header word {h:#010x} lacks the magic 0xEE"),
        ));
    }
    if !(PMCLOG_HEADER_LEN..=PMCLOG_MAX_RECORD).contains(&len) || len % 4 != 0 {
        return Err(malformed(
            start,
            format!(
                "record length {len} (type {}) is not a whole number of 4-byte words from 16 \
                 to 4128 (sizeof(union pmclog_entry))",
                pmclog_header_type(h)
            ),
        ));
    }
    Ok(())
}

impl Hwpmc {
    pub(super) fn new(first: Vec<u8>) -> Hwpmc {
        Hwpmc {
            input: first,
            pos: 0,
            saved: Vec::with_capacity(PMCLOG_MAX_RECORD),
            saved_done: false,
            base: 0,
            cpuid: None,
            version: 0,
        }
    }

    /// Whether every byte given so far was consumed (pmclog_feed(3)'s
    /// "unnecessary call" check).
    pub(super) fn consumed(&self) -> bool {
        self.pos == self.input.len()
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        if self.consumed() {
            self.base += self.input.len() as u64;
            self.input.clear();
            self.pos = 0;
        }
        self.input.extend_from_slice(data);
    }

    /// The offset of the record in `saved` (the next byte after it once complete).
    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// What the log's end inside a record says: the record was cut (`None`
    /// when it ends between records).
    pub(super) fn cut_record(&self) -> Option<CError> {
        if self.saved.is_empty() || self.saved_done {
            return None;
        }
        let at = self.offset() - self.saved.len() as u64;
        let want = if self.saved.len() >= 4 {
            record_len(u32_at(&self.saved, 0)).to_string()
        } else {
            "a header word's 4".into()
        };
        Some(malformed(
            at,
            format!(
                "the log ends inside a record ({} of {want} bytes): it was cut",
                self.saved.len()
            ),
        ))
    }

    /// FreeBSD's `pmclog_get_record` then `pmclog_get_event`: assembles the
    /// next record from the input and decodes it into `ev`.
    pub(super) fn step(
        &mut self,
        ev: &mut pmclog_ev,
        names: &mut Vec<CString>,
    ) -> Result<Step, CError> {
        if self.saved_done {
            self.saved.clear();
            self.saved_done = false;
        }
        let start = self.offset() - self.saved.len() as u64;
        if !self.assemble(start)? {
            return Ok(Step::NeedMore);
        }
        self.saved_done = true;
        self.decode(start, ev, names)
    }

    /// Moves input into `saved` until it holds the header word and then the
    /// whole record: `Ok(false)` when the input runs out first.
    fn assemble(&mut self, start: u64) -> Result<bool, CError> {
        loop {
            let need = if self.saved.len() < 4 {
                4
            } else {
                record_len(u32_at(&self.saved, 0))
            };
            let avail = &self.input[self.pos..];
            let take = (need - self.saved.len()).min(avail.len());
            self.saved.extend_from_slice(&avail[..take]);
            self.pos += take;
            if self.saved.len() < need {
                return Ok(false);
            }
            if need > 4 {
                return Ok(true);
            }
            check_header(u32_at(&self.saved, 0), start)?;
        }
    }

    /// The whole record in `saved`, starting at byte `start`, into `ev`.
    fn decode(
        &mut self,
        start: u64,
        ev: &mut pmclog_ev,
        names: &mut Vec<CString>,
    ) -> Result<Step, CError> {
        let r = &self.saved;
        let ty = pmclog_header_type(u32_at(r, 0));
        let len = r.len();
        let Some(min) = min_len(ty) else {
            return Err(malformed(
                start,
                format!("record type {ty} is not a pmclog type"),
            ));
        };
        if len < min {
            return Err(malformed(
                start,
                format!("a type {ty} record of {len} bytes: its fields need {min}"),
            ));
        }
        ev.pl_ts = timespec {
            tv_sec: u64_at(r, 8) as i64,
            tv_nsec: 0,
        };
        ev.pl_type = ty;
        let u = &mut ev.pl_u;
        match ty {
            PMCLOG_TYPE_CLOSELOG => return Ok(Step::Closed),
            PMCLOG_TYPE_DROPNOTIFY => {}
            PMCLOG_TYPE_CALLCHAIN => u.pl_cc = callchain(r),
            PMCLOG_TYPE_INITIALIZE => {
                let (i, cpuid) = initialize(r);
                self.cpuid = Some(cpuid);
                self.version = i.pl_version;
                u.pl_i = i;
            }
            PMCLOG_TYPE_MAP_IN => u.pl_mi = map_in(r),
            PMCLOG_TYPE_MAP_OUT => u.pl_mo = map_out(r),
            PMCLOG_TYPE_PMCALLOCATE => u.pl_a = pmc_allocate(r, self.cpuid.as_deref(), names),
            PMCLOG_TYPE_PMCALLOCATEDYN => u.pl_ad = pmc_allocate_dyn(r),
            PMCLOG_TYPE_PMCATTACH => u.pl_t = pmc_attach(r),
            PMCLOG_TYPE_PMCDETACH => u.pl_d = pmc_detach(r),
            PMCLOG_TYPE_PROCCSW => u.pl_c = proc_csw(r),
            PMCLOG_TYPE_PROCEXEC => u.pl_x = proc_exec(r, self.version, start)?,
            PMCLOG_TYPE_PROCEXIT => u.pl_e = proc_exit(r),
            PMCLOG_TYPE_PROCFORK => u.pl_f = proc_fork(r),
            PMCLOG_TYPE_SYSEXIT => u.pl_se = sys_exit(r),
            PMCLOG_TYPE_USERDATA => u.pl_u = user_data(r),
            PMCLOG_TYPE_THR_CREATE => u.pl_tc = thread_create(r),
            PMCLOG_TYPE_THR_EXIT => u.pl_te = thread_exit(r),
            PMCLOG_TYPE_PROC_CREATE => u.pl_pc = proc_create(r),
            _ => {
                return Err(malformed(
                    start,
                    format!("record type {ty} is not a pmclog type"),
                ))
            }
        }
        let end = start + len as u64;
        ev.pl_offset = libc::off_t::try_from(end).unwrap_or(libc::off_t::MAX);
        ev.pl_len = i32::try_from(len).unwrap_or(0);
        Ok(Step::Event)
    }
}

/// A NUL-terminated field from `off` to the record's end into `dst`.
fn path(dst: &mut [c_char], r: &[u8], off: usize) {
    copy_str(dst, r.get(off..).unwrap_or_default());
}

fn callchain(r: &[u8]) -> pmclog_ev_callchain {
    let npc = (r.len() - 32) / 8;
    let mut cc = pmclog_ev_callchain {
        pl_pid: u32_at(r, 16),
        pl_tid: u32_at(r, 20),
        pl_pmcid: u32_at(r, 24),
        pl_cpuflags: u32_at(r, 28),
        pl_cpuflags2: 0,
        pl_npc: u32::try_from(npc).unwrap_or(0),
        pl_pc: [0; PMC_CALLCHAIN_DEPTH_MAX as usize],
    };
    for (i, pc) in cc.pl_pc.iter_mut().enumerate().take(npc) {
        *pc = usize::try_from(u64_at(r, 32 + 8 * i)).unwrap_or(usize::MAX);
    }
    cc
}

/// INITIALIZE, and its cpuid as text (for `PMC_F_EV_PMU` event names).
fn initialize(r: &[u8]) -> (pmclog_ev_initialize, String) {
    let mut i = pmclog_ev_initialize {
        pl_version: u32_at(r, 16),
        pl_arch: u32_at(r, 20),
        pl_tsc_freq: u64_at(r, 24),
        pl_ts: timespec {
            tv_sec: u64_at(r, 32) as i64,
            tv_nsec: u64_at(r, 40) as i64,
        },
        pl_cpuid: [0; PATH_MAX],
    };
    let cpuid = r.get(48..112).unwrap_or_default();
    copy_str(&mut i.pl_cpuid, cpuid);
    let cpuid = cpuid.split(|&b| b == 0).next().unwrap_or_default();
    (i, String::from_utf8_lossy(cpuid).into_owned())
}

fn map_in(r: &[u8]) -> pmclog_ev_map_in {
    let mut m = pmclog_ev_map_in {
        pl_pid: i32_at(r, 16),
        pl_start: u64_at(r, 24) as usize,
        pl_pathname: [0; PATH_MAX],
    };
    path(&mut m.pl_pathname, r, 32);
    m
}

fn map_out(r: &[u8]) -> pmclog_ev_map_out {
    pmclog_ev_map_out {
        pl_pid: i32_at(r, 16),
        pl_start: u64_at(r, 24) as usize,
        pl_end: u64_at(r, 32) as usize,
    }
}

/// PMCALLOCATE, its event named by INITIALIZE's table (`PMC_F_EV_PMU`) or
/// FreeBSD's fixed codes.
fn pmc_allocate(r: &[u8], cpuid: Option<&str>, names: &mut Vec<CString>) -> pmclog_ev_pmcallocate {
    let (pmcid, event, flags) = (u32_at(r, 16), u32_at(r, 20), u32_at(r, 24));
    let evname = if flags & PMC_F_EV_PMU != 0 {
        crate::pmu::event_by_idx(cpuid, event as i32).map(|c| c.to_bytes().to_vec())
    } else {
        names::fixed_event(event).map(|c| c.to_bytes().to_vec())
    }
    // FreeBSD's parser fails on an event its tables lack (a SOFT code of
    // another kernel, an index beyond this table): the code names it here,
    // and the record is read.
    .unwrap_or_else(|| format!("event={event:#x}").into_bytes());
    pmclog_ev_pmcallocate {
        pl_evname: keep_name(names, &evname),
        pl_rate: u64_at(r, 32),
        pl_event: event,
        pl_flags: flags,
        pl_pmcid: pmcid,
    }
}

/// PMCALLOCATEDYN: the kernel writes the reload count at 32 and the name
/// from 40 (hwpmc_logging.c), whatever the struct declares.
fn pmc_allocate_dyn(r: &[u8]) -> pmclog_ev_pmcallocatedyn {
    let mut a = pmclog_ev_pmcallocatedyn {
        pl_evname: [0; PMC_NAME_MAX as usize],
        pl_event: u32_at(r, 20),
        pl_flags: u32_at(r, 24),
        pl_pmcid: u32_at(r, 16),
    };
    path(&mut a.pl_evname, r, 40);
    a
}

fn pmc_attach(r: &[u8]) -> pmclog_ev_pmcattach {
    let mut t = pmclog_ev_pmcattach {
        pl_pmcid: u32_at(r, 16),
        pl_pid: i32_at(r, 20),
        pl_pathname: [0; PATH_MAX],
    };
    path(&mut t.pl_pathname, r, 24);
    t
}

fn pmc_detach(r: &[u8]) -> pmclog_ev_pmcdetach {
    pmclog_ev_pmcdetach {
        pl_pmcid: u32_at(r, 16),
        pl_pid: i32_at(r, 20),
    }
}

fn proc_csw(r: &[u8]) -> pmclog_ev_proccsw {
    pmclog_ev_proccsw {
        pl_value: u64_at(r, 16),
        pl_pmcid: u32_at(r, 24),
        pl_pid: i32_at(r, 28),
        pl_tid: i32_at(r, 32),
    }
}

/// PROCEXEC in the layout of the log's version: 0x09 kernels wrote the
/// entry address at 24 and the path at 32; 0x0A ones the base at 24, the
/// PIE base at 32, the path at 40.
fn proc_exec(r: &[u8], version: u32, start: u64) -> Result<pmclog_ev_procexec, CError> {
    let legacy = version != 0 && version >> 24 < 0x0A;
    let len = r.len();
    if !legacy && len < 40 {
        return Err(malformed(
            start,
            format!("a PROCEXEC record of {len} bytes"),
        ));
    }
    let mut x = pmclog_ev_procexec {
        pl_pid: i32_at(r, 16),
        pl_pmcid: u32_at(r, 20),
        pl_baseaddr: u64_at(r, 24) as usize,
        pl_dynaddr: if legacy { 0 } else { u64_at(r, 32) as usize },
        pl_pathname: [0; PATH_MAX],
    };
    path(&mut x.pl_pathname, r, if legacy { 32 } else { 40 });
    Ok(x)
}

fn proc_exit(r: &[u8]) -> pmclog_ev_procexit {
    pmclog_ev_procexit {
        pl_pmcid: u32_at(r, 16),
        pl_pid: u32_at(r, 20),
        pl_value: u64_at(r, 24),
    }
}

fn proc_fork(r: &[u8]) -> pmclog_ev_procfork {
    pmclog_ev_procfork {
        pl_oldpid: i32_at(r, 16),
        pl_newpid: i32_at(r, 20),
    }
}

fn sys_exit(r: &[u8]) -> pmclog_ev_sysexit {
    pmclog_ev_sysexit {
        pl_pid: i32_at(r, 16),
    }
}

fn user_data(r: &[u8]) -> pmclog_ev_userdata {
    pmclog_ev_userdata {
        pl_userdata: u32_at(r, 16),
    }
}

fn thread_create(r: &[u8]) -> pmclog_ev_threadcreate {
    let mut t = pmclog_ev_threadcreate {
        pl_tid: i32_at(r, 16),
        pl_pid: i32_at(r, 20),
        pl_flags: u32_at(r, 24),
        pl_tdname: [0; (MAXCOMLEN + 1) as usize],
    };
    copy_str(&mut t.pl_tdname, r.get(32..52).unwrap_or_default());
    t
}

fn thread_exit(r: &[u8]) -> pmclog_ev_threadexit {
    pmclog_ev_threadexit {
        pl_tid: i32_at(r, 16),
    }
}

fn proc_create(r: &[u8]) -> pmclog_ev_proccreate {
    let mut p = pmclog_ev_proccreate {
        pl_pid: i32_at(r, 16),
        pl_flags: u32_at(r, 20),
        pl_pcomm: [0; (MAXCOMLEN + 1) as usize],
    };
    copy_str(&mut p.pl_pcomm, r.get(24..44).unwrap_or_default());
    p
}
