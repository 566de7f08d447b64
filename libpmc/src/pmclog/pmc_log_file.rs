//! pmc-log files through pmc-log's streaming reader: each record kind as
//! its hwpmc counterpart in `pmclog_ev`'s union, one function per kind,
//! dispatched from one match (kinds with none, such as `Comm` or interval
//! counters, are skipped).

use std::ffi::CString;

use pmc_log::hwpmc::SharedQueue;
use pmc_log::record::{self as log, CounterKind, Mode as LogMode, Record};
use pmc_log::StreamReader;

use super::{copy_str, keep_name, malformed, ts, Step};
use crate::abi::*;
use crate::names;
use crate::state::CError;

/// A pmc-log input: its bytes queued for the streaming reader.
pub(super) struct PmcLog {
    pub(super) queue: SharedQueue,
    reader: Option<StreamReader<SharedQueue>>,
    /// Damaged regions the reader reported so far (each is an error here).
    skipped: usize,
    /// `end_of_input` was told.
    ended: bool,
}

impl PmcLog {
    /// A pmc-log input whose first bytes are `head`.
    pub(super) fn new(head: &[u8]) -> PmcLog {
        let queue = SharedQueue::default();
        queue.push(head);
        PmcLog {
            queue,
            reader: None,
            skipped: 0,
            ended: false,
        }
    }

    pub(super) fn step(
        &mut self,
        ev: &mut pmclog_ev,
        names: &mut Vec<CString>,
    ) -> Result<Step, CError> {
        if self.reader.is_none() {
            if self.queue.len() < pmc_log::format::PREAMBLE_LEN && !self.ended {
                return Ok(Step::NeedMore);
            }
            let mut r = StreamReader::new(self.queue.clone())
                .map_err(|e| malformed(0, format!("not a pmc-log file: {e}")))?;
            if self.ended {
                r.end_of_input();
            }
            self.reader = Some(r);
        }
        let Some(reader) = self.reader.as_mut() else {
            return Ok(Step::NeedMore);
        };
        loop {
            let got = match reader.next_record() {
                Ok(Some(rec)) => Some((convert(names, &rec, ev), rec.time())),
                Ok(None) => None,
                Err(e) => return Err(CError::new(libc::EIO, format!("pmclog_read: {e}"))),
            };
            let skipped = &reader.report().skipped;
            if skipped.len() > self.skipped {
                let s = &skipped[self.skipped];
                self.skipped = skipped.len();
                return Err(malformed(
                    s.offset,
                    format!("{} bytes skipped: {:?}", s.len, s.reason),
                ));
            }
            let Some((kind, time)) = got else {
                return Ok(Step::NeedMore);
            };
            let Some(t) = kind else {
                continue;
            };
            ev.pl_type = t;
            ev.pl_ts = ts(time);
            ev.pl_offset = libc::off_t::try_from(reader.position()).unwrap_or(libc::off_t::MAX);
            ev.pl_data = std::ptr::null_mut();
            ev.pl_len = 0;
            if t == PMCLOG_TYPE_CLOSELOG {
                return Ok(Step::Closed);
            }
            return Ok(Step::Event);
        }
    }

    pub(super) fn end(&mut self) {
        self.ended = true;
        if let Some(r) = &mut self.reader {
            r.end_of_input();
        }
    }
}

/// The pmclog event of a pmc-log record, into `ev.pl_u`: its
/// `PMCLOG_TYPE_*`, `None` for kinds hwpmc has no record for.
fn convert(names: &mut Vec<CString>, rec: &Record<'_>, ev: &mut pmclog_ev) -> Option<u32> {
    let u = &mut ev.pl_u;
    Some(match rec {
        Record::Header(h) => {
            u.pl_i = initialize(h);
            PMCLOG_TYPE_INITIALIZE
        }
        Record::Pmc(p) => allocation(names, p, u),
        Record::Sample(s) => {
            u.pl_cc = callchain(s);
            PMCLOG_TYPE_CALLCHAIN
        }
        Record::Exec(x) => {
            u.pl_x = proc_exec(x);
            PMCLOG_TYPE_PROCEXEC
        }
        Record::Fork(f) if f.child_pid != f.parent_pid => {
            u.pl_f = pmclog_ev_procfork {
                pl_oldpid: f.parent_pid,
                pl_newpid: f.child_pid,
            };
            PMCLOG_TYPE_PROCFORK
        }
        Record::Exit(e) => {
            u.pl_se = pmclog_ev_sysexit { pl_pid: e.pid };
            PMCLOG_TYPE_SYSEXIT
        }
        Record::ThreadCreate(t) => {
            u.pl_tc = thread_create(t);
            PMCLOG_TYPE_THR_CREATE
        }
        Record::ThreadExit(t) => {
            u.pl_te = pmclog_ev_threadexit { pl_tid: t.tid };
            PMCLOG_TYPE_THR_EXIT
        }
        Record::ProcessCreate(p) => {
            u.pl_pc = proc_create(p);
            PMCLOG_TYPE_PROC_CREATE
        }
        Record::Map(m) => {
            u.pl_mi = map_in(m);
            PMCLOG_TYPE_MAP_IN
        }
        Record::Unmap(m) => {
            u.pl_mo = pmclog_ev_map_out {
                pl_pid: m.pid,
                pl_start: usize::try_from(m.start).unwrap_or(0),
                pl_end: usize::try_from(m.end).unwrap_or(0),
            };
            PMCLOG_TYPE_MAP_OUT
        }
        Record::Attach(a) => {
            u.pl_t = pmc_attach(a);
            PMCLOG_TYPE_PMCATTACH
        }
        Record::Detach(d) => {
            u.pl_d = pmclog_ev_pmcdetach {
                pl_pmcid: d.pmc_id,
                pl_pid: d.pid,
            };
            PMCLOG_TYPE_PMCDETACH
        }
        Record::Counter(c) => return counter(c, u),
        Record::Lost(_) => PMCLOG_TYPE_DROPNOTIFY,
        Record::UserData(d) => {
            u.pl_u = user_data(d);
            PMCLOG_TYPE_USERDATA
        }
        Record::Close(_) => PMCLOG_TYPE_CLOSELOG,
        _ => return None,
    })
}

/// A `key=value` of a descriptor's native configuration.
fn native<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.split(',').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
    })
}

fn initialize(h: &log::Header<'_>) -> pmclog_ev_initialize {
    let mut i = pmclog_ev_initialize {
        pl_version: PMC_VERSION,
        pl_arch: PMC_CPU_GENERIC,
        pl_tsc_freq: h.ticks_per_second,
        pl_ts: ts(u64::try_from(h.start_wall_ns).unwrap_or(0)),
        pl_cpuid: [0; PATH_MAX],
    };
    copy_str(&mut i.pl_cpuid, h.cpuid.as_bytes());
    i
}

/// A PMC's descriptor as PMCALLOCATE, or PMCALLOCATEDYN when an imported
/// hwpmc log says so. An hwpmc log imported into pmc-log keeps the kernel's
/// event code and flags in its native configuration; this library's logs
/// give the event's name, whose code pmc_pmcinfo reports.
fn allocation(names: &mut Vec<CString>, p: &log::PmcDescriptor<'_>, u: &mut pmclog_ev_u) -> u32 {
    let config = &*p.native_config;
    let hw = pmc_log::hwpmc::imported_allocation(p);
    // What pmcstat -R prints for the same PMC (one mapping).
    let flags = pmc_log::hwpmc::pl_flags(p);
    if native(config, "record") == Some("allocatedyn") {
        let event = hw.map_or(0, |(e, _)| e);
        let mut a = pmclog_ev_pmcallocatedyn {
            pl_evname: [0; PMC_NAME_MAX as usize],
            pl_event: event,
            pl_flags: flags,
            pl_pmcid: p.pmc_id,
        };
        copy_str(&mut a.pl_evname, p.event_spec.as_bytes());
        u.pl_ad = a;
        return PMCLOG_TYPE_PMCALLOCATEDYN;
    }
    let event = hw.map_or_else(|| names::event_code(&p.event_spec), |(e, _)| e);
    // The importer names a code it does not know `event=0x...`: this
    // library's name for it, where it has one.
    let name = match names::fixed_event(event) {
        Some(n) if hw.is_some() && p.event_spec.starts_with("event=") => n.to_bytes(),
        _ => p.event_spec.as_bytes(),
    };
    let rate = native(config, "rate").and_then(|r| r.parse().ok());
    u.pl_a = pmclog_ev_pmcallocate {
        pl_evname: keep_name(names, name),
        pl_rate: rate.unwrap_or(match p.mode {
            LogMode::SamplingPeriod(n) | LogMode::SamplingFrequency(n) => n,
            _ => 0,
        }),
        pl_event: event,
        pl_flags: flags,
        pl_pmcid: p.pmc_id,
    };
    PMCLOG_TYPE_PMCALLOCATE
}

fn callchain(s: &log::Sample<'_>) -> pmclog_ev_callchain {
    let user = if s.kernel_frames == 0 {
        PMC_CC_F_USERSPACE
    } else {
        0
    };
    let mut cc = pmclog_ev_callchain {
        pl_pid: s.pid as u32,
        pl_tid: s.tid as u32,
        pl_pmcid: s.pmc_id,
        pl_cpuflags: (s.cpu.unwrap_or(0xFFFF) & 0xFFFF) << 16 | user,
        pl_cpuflags2: 0,
        pl_npc: 0,
        pl_pc: [0; PMC_CALLCHAIN_DEPTH_MAX as usize],
    };
    let mut n = 0;
    for (d, pc) in cc.pl_pc.iter_mut().zip(s.callchain.iter()) {
        *d = usize::try_from(pc).unwrap_or(usize::MAX);
        n += 1;
    }
    cc.pl_npc = n;
    cc
}

fn proc_exec(x: &log::Exec<'_>) -> pmclog_ev_procexec {
    let mut e = pmclog_ev_procexec {
        pl_pid: x.pid,
        pl_pmcid: x.pmc_id.unwrap_or(0),
        pl_baseaddr: usize::try_from(x.base).unwrap_or(0),
        pl_dynaddr: usize::try_from(x.dyn_base).unwrap_or(0),
        pl_pathname: [0; PATH_MAX],
    };
    copy_str(&mut e.pl_pathname, &x.path.0);
    e
}

fn thread_create(t: &log::ThreadCreate<'_>) -> pmclog_ev_threadcreate {
    let mut c = pmclog_ev_threadcreate {
        pl_tid: t.tid,
        pl_pid: t.pid,
        pl_flags: t.flags,
        pl_tdname: [0; (MAXCOMLEN + 1) as usize],
    };
    copy_str(&mut c.pl_tdname, &t.name.0);
    c
}

fn proc_create(p: &log::ProcessCreate<'_>) -> pmclog_ev_proccreate {
    let mut c = pmclog_ev_proccreate {
        pl_pid: p.pid,
        pl_flags: p.flags,
        pl_pcomm: [0; (MAXCOMLEN + 1) as usize],
    };
    copy_str(&mut c.pl_pcomm, &p.comm.0);
    c
}

fn map_in(m: &log::Map<'_>) -> pmclog_ev_map_in {
    let mut c = pmclog_ev_map_in {
        pl_pid: m.pid,
        pl_start: usize::try_from(m.start).unwrap_or(0),
        pl_pathname: [0; PATH_MAX],
    };
    copy_str(&mut c.pl_pathname, &m.path.0);
    c
}

fn pmc_attach(a: &log::Attach<'_>) -> pmclog_ev_pmcattach {
    let mut c = pmclog_ev_pmcattach {
        pl_pmcid: a.pmc_id,
        pl_pid: a.pid,
        pl_pathname: [0; PATH_MAX],
    };
    copy_str(&mut c.pl_pathname, &a.path.0);
    c
}

/// A process's count at its exit (PROCEXIT) or at a context switch
/// (PROCCSW); `None` for the counter kinds hwpmc has no record for.
fn counter(c: &log::Counter, u: &mut pmclog_ev_u) -> Option<u32> {
    match c.kind {
        CounterKind::ProcessExit => {
            u.pl_e = pmclog_ev_procexit {
                pl_pid: c.pid as u32,
                pl_pmcid: c.pmc_id,
                pl_value: c.value,
            };
            Some(PMCLOG_TYPE_PROCEXIT)
        }
        CounterKind::ContextSwitch => {
            u.pl_c = pmclog_ev_proccsw {
                pl_pid: c.pid,
                pl_tid: c.tid,
                pl_pmcid: c.pmc_id,
                pl_value: c.value,
            };
            Some(PMCLOG_TYPE_PROCCSW)
        }
        _ => None,
    }
}

/// USERDATA: the record's first 4 bytes, little-endian.
fn user_data(d: &log::UserData<'_>) -> pmclog_ev_userdata {
    let mut w = [0u8; 4];
    for (a, b) in w.iter_mut().zip(d.data.0.iter()) {
        *a = *b;
    }
    pmclog_ev_userdata {
        pl_userdata: u32::from_le_bytes(w),
    }
}
