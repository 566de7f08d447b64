//! pmclog(3): reading a log back, one `struct pmclog_ev` at a time, as
//! FreeBSD's `pmclog_read` fills it, for both formats:
//!
//! - **hwpmc logs** (what FreeBSD's kernel writes), parsed as FreeBSD's
//!   `lib/libpmc/pmclog.c` parses them: its state machine (a record's header
//!   word, then as many bytes as its length says, assembled across reads and
//!   feeds), its record decoding, `PMCLOG_OK`, `PMCLOG_REQUIRE_DATA`,
//!   `PMCLOG_EOF` (CLOSELOG, or the descriptor's end between records) and
//!   `PMCLOG_ERROR` (an error is final: every later read answers it). Stricter
//!   than FreeBSD where FreeBSD reads past what a record holds: a bad magic, a
//!   length of 0, below the 16-byte header, above `sizeof(union
//!   pmclog_entry)` (4128) or not a whole number of 4-byte words, a record
//!   shorter than its type's fields, and a descriptor that ends inside a
//!   record are `PMCLOG_ERROR`, with errno `EINVAL` and the offset and reason
//!   in `pmc_strerror_last()`. `pl_ts.tv_sec` holds the record's timestamp
//!   counter (`pl_tsc`), as FreeBSD's does.
//! - **pmc-log files** (what this library's `pmc_configure_logfile` writes on
//!   Linux), through pmc-log's streaming reader: the same states, each record
//!   kind as its hwpmc counterpart (kinds with none, such as `Comm` or
//!   interval counters, are skipped); a record or block that fails its CRC or
//!   does not fit is `PMCLOG_ERROR`.
//!
//! `pl_offset` is the byte offset in the input just past the event's record
//! (FreeBSD's running total of record lengths), `pl_count` the events
//! returned so far, `pl_data`/`pl_len` the record's bytes (hwpmc logs; valid
//! until the next read). The input's format is told by its first bytes; no
//! record is invented (a log without INITIALIZE starts with its first record).

use std::ffi::{c_char, CString};

use pmc_log::hwpmc::SharedQueue;
use pmc_log::record::{CounterKind, Mode as LogMode, Record};
use pmc_log::StreamReader;

use crate::abi::*;
use crate::names;
use crate::state::CError;

/// `sizeof(union pmclog_entry)`: the longest record (a full callchain).
pub const PMCLOG_ENTRY_MAX: usize = 4128;
/// `sizeof(struct pmclog_header)`: header word, spare word, timestamp.
const HEADER_LEN: usize = 16;
/// How many bytes a parser reading a descriptor reads at a time.
pub(crate) const READ_CHUNK: usize = 64 << 10;

/// The input's format, once its first bytes told it.
enum Format {
    /// Not known yet: the bytes so far.
    Sniff(Vec<u8>),
    Hwpmc(Box<Hwpmc>),
    PmcLog(Box<PmcLog>),
}

/// FreeBSD's parse state (`struct pmclog_parse_state`): the record being
/// assembled and the input not looked at yet.
struct Hwpmc {
    /// Input not consumed (fed, or read from the descriptor).
    input: Vec<u8>,
    /// How much of `input` was consumed.
    pos: usize,
    /// The record being assembled (`ps_saved`), then the last one decoded.
    saved: Vec<u8>,
    /// `saved` holds a complete record already returned.
    saved_done: bool,
    /// Bytes consumed before `input` (the offset of `input[0]`).
    base: u64,
    /// INITIALIZE's cpuid, for `PMC_F_EV_PMU` event names.
    cpuid: Option<String>,
    /// INITIALIZE's version (0: none seen).
    version: u32,
}

/// A pmc-log input: its bytes queued for the streaming reader.
struct PmcLog {
    queue: SharedQueue,
    reader: Option<StreamReader<SharedQueue>>,
    /// Damaged regions the reader reported so far (each is an error here).
    skipped: usize,
    /// `end_of_input` was told.
    ended: bool,
}

/// The state behind a `pmclog_open` cookie.
pub struct Parser {
    /// The descriptor to read from, or `PMCLOG_FD_NONE`.
    pub fd: i32,
    format: Format,
    /// The error every later read answers (FreeBSD's `PL_STATE_ERROR`).
    error: Option<CError>,
    /// The descriptor reached its end.
    eof: bool,
    /// Events returned.
    count: usize,
    /// Event names `pl_evname` points into (one per distinct name, for the
    /// parser's life).
    names: Vec<CString>,
}

fn u32_at(r: &[u8], off: usize) -> u32 {
    r.get(off..off + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(r: &[u8], off: usize) -> u64 {
    r.get(off..off + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn i32_at(r: &[u8], off: usize) -> i32 {
    u32_at(r, off) as i32
}

/// strlcpy: the bytes up to the first NUL (or `src`'s end), cut to fit with
/// their NUL.
fn copy_str(dst: &mut [c_char], src: &[u8]) {
    let src = src.split(|&b| b == 0).next().unwrap_or_default();
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    if let Some(d) = dst.get_mut(n) {
        *d = 0;
    }
}

fn ts(ns: u64) -> timespec {
    timespec {
        tv_sec: i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
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

/// A `pmclog_ev`, everything zero.
pub fn empty_event() -> pmclog_ev {
    pmclog_ev {
        pl_state: PMCLOG_OK,
        pl_offset: 0,
        pl_count: 0,
        pl_ts: timespec::default(),
        pl_type: 0,
        pl_data: std::ptr::null_mut(),
        pl_len: 0,
        pl_u: pmclog_ev_u {
            pl_u: pmclog_ev_userdata { pl_userdata: 0 },
        },
    }
}

/// What one step of a parser found.
enum Step {
    /// An event is in `ev`.
    Event,
    /// CLOSELOG: `PMCLOG_EOF`.
    Closed,
    /// The input holds no complete record.
    NeedMore,
}

fn malformed(offset: u64, why: String) -> CError {
    CError::new(
        libc::EINVAL,
        format!("pmclog_read: the log is damaged at byte {offset}: {why}"),
    )
}

/// Keeps `name` for the parser's life; the pointer `pl_evname` takes.
fn keep_name(names: &mut Vec<CString>, name: &[u8]) -> *const c_char {
    let name: Vec<u8> = name.iter().copied().filter(|&b| b != 0).collect();
    let name = CString::new(name).unwrap_or_default();
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n.as_ptr();
    }
    names.push(name);
    names.last().map_or(std::ptr::null(), |n| n.as_ptr())
}

impl Hwpmc {
    fn new(first: Vec<u8>) -> Hwpmc {
        Hwpmc {
            input: first,
            pos: 0,
            saved: Vec::with_capacity(PMCLOG_ENTRY_MAX),
            saved_done: false,
            base: 0,
            cpuid: None,
            version: 0,
        }
    }

    /// Whether every byte given so far was consumed (pmclog_feed(3)'s
    /// "unnecessary call" check).
    fn consumed(&self) -> bool {
        self.pos == self.input.len()
    }

    fn push(&mut self, data: &[u8]) {
        if self.consumed() {
            self.base += self.input.len() as u64;
            self.input.clear();
            self.pos = 0;
        }
        self.input.extend_from_slice(data);
    }

    /// The offset of the record in `saved` (the next byte after it once complete).
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// FreeBSD's `pmclog_get_record` then `pmclog_get_event`: assembles the
    /// next record from the input and decodes it into `ev`.
    fn step(&mut self, ev: &mut pmclog_ev, names: &mut Vec<CString>) -> Result<Step, CError> {
        if self.saved_done {
            self.saved.clear();
            self.saved_done = false;
        }
        let start = self.offset() - self.saved.len() as u64;
        // The header word, then the rest of the record.
        loop {
            let need = if self.saved.len() < 4 {
                4
            } else {
                (u32_at(&self.saved, 0) & 0xFFFF) as usize
            };
            let avail = &self.input[self.pos..];
            let take = (need - self.saved.len()).min(avail.len());
            self.saved.extend_from_slice(&avail[..take]);
            self.pos += take;
            if self.saved.len() < need {
                return Ok(Step::NeedMore);
            }
            if need > 4 {
                break;
            }
            let h = u32_at(&self.saved, 0);
            let len = (h & 0xFFFF) as usize;
            if h >> 24 != PMCLOG_HEADER_MAGIC {
                return Err(malformed(
                    start,
                    format!("header word {h:#010x} lacks the magic 0xEE"),
                ));
            }
            if !(HEADER_LEN..=PMCLOG_ENTRY_MAX).contains(&len) || len % 4 != 0 {
                return Err(malformed(
                    start,
                    format!(
                        "record length {len} (type {}) is not a whole number of 4-byte words \
                         from 16 to 4128 (sizeof(union pmclog_entry))",
                        (h >> 16) & 0xFF
                    ),
                ));
            }
        }
        self.saved_done = true;
        let r = &self.saved;
        let h = u32_at(r, 0);
        let ty = (h >> 16) & 0xFF;
        let len = r.len();
        let end = start + len as u64;
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
        let path = |dst: &mut [c_char], off: usize| copy_str(dst, r.get(off..).unwrap_or_default());
        match ty {
            PMCLOG_TYPE_CLOSELOG => return Ok(Step::Closed),
            PMCLOG_TYPE_DROPNOTIFY => {}
            PMCLOG_TYPE_CALLCHAIN => {
                let npc = (len - 32) / 8;
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
                u.pl_cc = cc;
            }
            PMCLOG_TYPE_INITIALIZE => {
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
                self.cpuid = Some(String::from_utf8_lossy(cpuid).into_owned());
                self.version = i.pl_version;
                u.pl_i = i;
            }
            PMCLOG_TYPE_MAP_IN => {
                let mut m = pmclog_ev_map_in {
                    pl_pid: i32_at(r, 16),
                    pl_start: u64_at(r, 24) as usize,
                    pl_pathname: [0; PATH_MAX],
                };
                path(&mut m.pl_pathname, 32);
                u.pl_mi = m;
            }
            PMCLOG_TYPE_MAP_OUT => {
                u.pl_mo = pmclog_ev_map_out {
                    pl_pid: i32_at(r, 16),
                    pl_start: u64_at(r, 24) as usize,
                    pl_end: u64_at(r, 32) as usize,
                };
            }
            PMCLOG_TYPE_PMCALLOCATE => {
                let (pmcid, event, flags) = (u32_at(r, 16), u32_at(r, 20), u32_at(r, 24));
                let evname = if flags & PMC_F_EV_PMU != 0 {
                    crate::pmu::event_by_idx(self.cpuid.as_deref(), event as i32)
                        .map(|c| c.to_bytes().to_vec())
                } else {
                    names::fixed_event(event).map(|c| c.to_bytes().to_vec())
                }
                // FreeBSD's parser fails on an event its tables lack (a SOFT
                // code of another kernel, an index beyond this table): the
                // code names it here, and the record is read.
                .unwrap_or_else(|| format!("event={event:#x}").into_bytes());
                u.pl_a = pmclog_ev_pmcallocate {
                    pl_evname: keep_name(names, &evname),
                    pl_rate: u64_at(r, 32),
                    pl_event: event,
                    pl_flags: flags,
                    pl_pmcid: pmcid,
                };
            }
            PMCLOG_TYPE_PMCALLOCATEDYN => {
                // The kernel writes the reload count at 32 and the name from
                // 40 (hwpmc_logging.c), whatever the struct declares.
                let mut a = pmclog_ev_pmcallocatedyn {
                    pl_evname: [0; PMC_NAME_MAX as usize],
                    pl_event: u32_at(r, 20),
                    pl_flags: u32_at(r, 24),
                    pl_pmcid: u32_at(r, 16),
                };
                path(&mut a.pl_evname, 40);
                u.pl_ad = a;
            }
            PMCLOG_TYPE_PMCATTACH => {
                let mut t = pmclog_ev_pmcattach {
                    pl_pmcid: u32_at(r, 16),
                    pl_pid: i32_at(r, 20),
                    pl_pathname: [0; PATH_MAX],
                };
                path(&mut t.pl_pathname, 24);
                u.pl_t = t;
            }
            PMCLOG_TYPE_PMCDETACH => {
                u.pl_d = pmclog_ev_pmcdetach {
                    pl_pmcid: u32_at(r, 16),
                    pl_pid: i32_at(r, 20),
                };
            }
            PMCLOG_TYPE_PROCCSW => {
                u.pl_c = pmclog_ev_proccsw {
                    pl_value: u64_at(r, 16),
                    pl_pmcid: u32_at(r, 24),
                    pl_pid: i32_at(r, 28),
                    pl_tid: i32_at(r, 32),
                };
            }
            PMCLOG_TYPE_PROCEXEC => {
                // Version 0x09 kernels wrote the entry address at 24 and the
                // path at 32; 0x0A ones the base at 24, the PIE base at 32.
                let legacy = self.version != 0 && self.version >> 24 < 0x0A;
                let mut x = pmclog_ev_procexec {
                    pl_pid: i32_at(r, 16),
                    pl_pmcid: u32_at(r, 20),
                    pl_baseaddr: u64_at(r, 24) as usize,
                    pl_dynaddr: if legacy { 0 } else { u64_at(r, 32) as usize },
                    pl_pathname: [0; PATH_MAX],
                };
                if !legacy && len < 40 {
                    return Err(malformed(
                        start,
                        format!("a PROCEXEC record of {len} bytes"),
                    ));
                }
                path(&mut x.pl_pathname, if legacy { 32 } else { 40 });
                u.pl_x = x;
            }
            PMCLOG_TYPE_PROCEXIT => {
                u.pl_e = pmclog_ev_procexit {
                    pl_pmcid: u32_at(r, 16),
                    pl_pid: u32_at(r, 20),
                    pl_value: u64_at(r, 24),
                };
            }
            PMCLOG_TYPE_PROCFORK => {
                u.pl_f = pmclog_ev_procfork {
                    pl_oldpid: i32_at(r, 16),
                    pl_newpid: i32_at(r, 20),
                };
            }
            PMCLOG_TYPE_SYSEXIT => {
                u.pl_se = pmclog_ev_sysexit {
                    pl_pid: i32_at(r, 16),
                }
            }
            PMCLOG_TYPE_USERDATA => {
                u.pl_u = pmclog_ev_userdata {
                    pl_userdata: u32_at(r, 16),
                };
            }
            PMCLOG_TYPE_THR_CREATE => {
                let mut t = pmclog_ev_threadcreate {
                    pl_tid: i32_at(r, 16),
                    pl_pid: i32_at(r, 20),
                    pl_flags: u32_at(r, 24),
                    pl_tdname: [0; (MAXCOMLEN + 1) as usize],
                };
                copy_str(&mut t.pl_tdname, r.get(32..52).unwrap_or_default());
                u.pl_tc = t;
            }
            PMCLOG_TYPE_THR_EXIT => {
                u.pl_te = pmclog_ev_threadexit {
                    pl_tid: i32_at(r, 16),
                }
            }
            PMCLOG_TYPE_PROC_CREATE => {
                let mut p = pmclog_ev_proccreate {
                    pl_pid: i32_at(r, 16),
                    pl_flags: u32_at(r, 20),
                    pl_pcomm: [0; (MAXCOMLEN + 1) as usize],
                };
                copy_str(&mut p.pl_pcomm, r.get(24..44).unwrap_or_default());
                u.pl_pc = p;
            }
            _ => {
                return Err(malformed(
                    start,
                    format!("record type {ty} is not a pmclog type"),
                ))
            }
        }
        ev.pl_offset = libc::off_t::try_from(end).unwrap_or(libc::off_t::MAX);
        ev.pl_len = i32::try_from(len).unwrap_or(0);
        Ok(Step::Event)
    }
}

/// pmc-log's `FLAG_*` as `PMC_F_*`.
fn pmc_flags(log: u32) -> u32 {
    use pmc_log::record as l;
    [
        (l::FLAG_DESCENDANTS, PMC_F_DESCENDANTS),
        (l::FLAG_CALLCHAIN, PMC_F_CALLCHAIN),
        (l::FLAG_LOG_PROCEXIT, PMC_F_LOG_PROCEXIT),
        (l::FLAG_LOG_PROCCSW, PMC_F_LOG_PROCCSW),
        (l::FLAG_USERCALLCHAIN, PMC_F_USERCALLCHAIN),
    ]
    .iter()
    .filter(|(b, _)| log & b != 0)
    .fold(0, |f, (_, p)| f | p)
}

/// A `key=value` of a descriptor's native configuration.
fn native<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.split(',').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
    })
}

fn hex(v: &str) -> Option<u32> {
    u32::from_str_radix(v.strip_prefix("0x")?, 16).ok()
}

/// The pmclog event of a pmc-log record, into `ev.pl_u`; `None` for kinds
/// hwpmc has no record for.
fn convert(names: &mut Vec<CString>, rec: &Record<'_>, ev: &mut pmclog_ev) -> Option<u32> {
    let u = &mut ev.pl_u;
    let pid = |p: i32| p;
    Some(match rec {
        Record::Header(h) => {
            let mut i = pmclog_ev_initialize {
                pl_version: PMC_VERSION,
                pl_arch: PMC_CPU_GENERIC,
                pl_tsc_freq: h.ticks_per_second,
                pl_ts: ts(u64::try_from(h.start_wall_ns).unwrap_or(0)),
                pl_cpuid: [0; PATH_MAX],
            };
            copy_str(&mut i.pl_cpuid, h.cpuid.as_bytes());
            u.pl_i = i;
            PMCLOG_TYPE_INITIALIZE
        }
        Record::Pmc(p) => {
            // An hwpmc log imported into pmc-log keeps the kernel's event
            // code and flags in its native configuration; this library's
            // logs give the event's name, whose code pmc_pmcinfo reports.
            let config = &*p.native_config;
            let hw = native(config, "event")
                .and_then(hex)
                .zip(native(config, "flags").and_then(hex));
            if native(config, "record") == Some("allocatedyn") {
                let (event, flags) = hw.unwrap_or((0, pmc_flags(p.flags)));
                let mut a = pmclog_ev_pmcallocatedyn {
                    pl_evname: [0; PMC_NAME_MAX as usize],
                    pl_event: event,
                    pl_flags: flags,
                    pl_pmcid: p.pmc_id,
                };
                copy_str(&mut a.pl_evname, p.event_spec.as_bytes());
                u.pl_ad = a;
                return Some(PMCLOG_TYPE_PMCALLOCATEDYN);
            }
            let (event, flags) =
                hw.unwrap_or_else(|| (names::event_code(&p.event_spec), pmc_flags(p.flags)));
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
        Record::Sample(s) => {
            let mut cc = pmclog_ev_callchain {
                pl_pid: s.pid as u32,
                pl_tid: s.tid as u32,
                pl_pmcid: s.pmc_id,
                pl_cpuflags: (s.cpu.unwrap_or(0xFFFF) & 0xFFFF) << 16
                    | if s.kernel_frames == 0 {
                        PMC_CC_F_USERSPACE
                    } else {
                        0
                    },
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
            u.pl_cc = cc;
            PMCLOG_TYPE_CALLCHAIN
        }
        Record::Exec(x) => {
            let mut e = pmclog_ev_procexec {
                pl_pid: pid(x.pid),
                pl_pmcid: x.pmc_id.unwrap_or(0),
                pl_baseaddr: usize::try_from(x.base).unwrap_or(0),
                pl_dynaddr: usize::try_from(x.dyn_base).unwrap_or(0),
                pl_pathname: [0; PATH_MAX],
            };
            copy_str(&mut e.pl_pathname, &x.path.0);
            u.pl_x = e;
            PMCLOG_TYPE_PROCEXEC
        }
        Record::Fork(f) if f.child_pid != f.parent_pid => {
            u.pl_f = pmclog_ev_procfork {
                pl_oldpid: pid(f.parent_pid),
                pl_newpid: pid(f.child_pid),
            };
            PMCLOG_TYPE_PROCFORK
        }
        Record::Exit(e) => {
            u.pl_se = pmclog_ev_sysexit { pl_pid: pid(e.pid) };
            PMCLOG_TYPE_SYSEXIT
        }
        Record::ThreadCreate(t) => {
            let mut c = pmclog_ev_threadcreate {
                pl_tid: pid(t.tid),
                pl_pid: pid(t.pid),
                pl_flags: t.flags,
                pl_tdname: [0; (MAXCOMLEN + 1) as usize],
            };
            copy_str(&mut c.pl_tdname, &t.name.0);
            u.pl_tc = c;
            PMCLOG_TYPE_THR_CREATE
        }
        Record::ThreadExit(t) => {
            u.pl_te = pmclog_ev_threadexit { pl_tid: pid(t.tid) };
            PMCLOG_TYPE_THR_EXIT
        }
        Record::ProcessCreate(p) => {
            let mut c = pmclog_ev_proccreate {
                pl_pid: pid(p.pid),
                pl_flags: p.flags,
                pl_pcomm: [0; (MAXCOMLEN + 1) as usize],
            };
            copy_str(&mut c.pl_pcomm, &p.comm.0);
            u.pl_pc = c;
            PMCLOG_TYPE_PROC_CREATE
        }
        Record::Map(m) => {
            let mut c = pmclog_ev_map_in {
                pl_pid: pid(m.pid),
                pl_start: usize::try_from(m.start).unwrap_or(0),
                pl_pathname: [0; PATH_MAX],
            };
            copy_str(&mut c.pl_pathname, &m.path.0);
            u.pl_mi = c;
            PMCLOG_TYPE_MAP_IN
        }
        Record::Unmap(m) => {
            u.pl_mo = pmclog_ev_map_out {
                pl_pid: pid(m.pid),
                pl_start: usize::try_from(m.start).unwrap_or(0),
                pl_end: usize::try_from(m.end).unwrap_or(0),
            };
            PMCLOG_TYPE_MAP_OUT
        }
        Record::Attach(a) => {
            let mut c = pmclog_ev_pmcattach {
                pl_pmcid: a.pmc_id,
                pl_pid: pid(a.pid),
                pl_pathname: [0; PATH_MAX],
            };
            copy_str(&mut c.pl_pathname, &a.path.0);
            u.pl_t = c;
            PMCLOG_TYPE_PMCATTACH
        }
        Record::Detach(d) => {
            u.pl_d = pmclog_ev_pmcdetach {
                pl_pmcid: d.pmc_id,
                pl_pid: pid(d.pid),
            };
            PMCLOG_TYPE_PMCDETACH
        }
        Record::Counter(c) if c.kind == CounterKind::ProcessExit => {
            u.pl_e = pmclog_ev_procexit {
                pl_pid: c.pid as u32,
                pl_pmcid: c.pmc_id,
                pl_value: c.value,
            };
            PMCLOG_TYPE_PROCEXIT
        }
        Record::Counter(c) if c.kind == CounterKind::ContextSwitch => {
            u.pl_c = pmclog_ev_proccsw {
                pl_pid: pid(c.pid),
                pl_tid: pid(c.tid),
                pl_pmcid: c.pmc_id,
                pl_value: c.value,
            };
            PMCLOG_TYPE_PROCCSW
        }
        Record::Lost(_) => PMCLOG_TYPE_DROPNOTIFY,
        Record::UserData(d) => {
            let mut w = [0u8; 4];
            for (a, b) in w.iter_mut().zip(d.data.0.iter()) {
                *a = *b;
            }
            u.pl_u = pmclog_ev_userdata {
                pl_userdata: u32::from_le_bytes(w),
            };
            PMCLOG_TYPE_USERDATA
        }
        Record::Close(_) => PMCLOG_TYPE_CLOSELOG,
        _ => return None,
    })
}

impl PmcLog {
    fn step(&mut self, ev: &mut pmclog_ev, names: &mut Vec<CString>) -> Result<Step, CError> {
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

    fn end(&mut self) {
        self.ended = true;
        if let Some(r) = &mut self.reader {
            r.end_of_input();
        }
    }
}

impl Parser {
    /// A parser over `fd`, or over fed data for `PMCLOG_FD_NONE`.
    pub fn new(fd: i32) -> Parser {
        Parser {
            fd,
            format: Format::Sniff(Vec::new()),
            error: None,
            eof: false,
            count: 0,
            names: Vec::new(),
        }
    }

    /// A `pmclog_ev` to fill.
    pub fn empty_event() -> pmclog_ev {
        empty_event()
    }

    /// `pmclog_feed`: more input. pmclog_feed(3) and FreeBSD's parser
    /// refuse data while what was fed before is not consumed (a read has not
    /// asked for more).
    ///
    /// # Errors
    /// `EINVAL` for a parser reading a descriptor, or data not consumed.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), CError> {
        if self.fd != PMCLOG_FD_NONE {
            return Err(CError::new(
                libc::EINVAL,
                "this parser reads a descriptor: pmclog_feed is for pmclog_open(PMCLOG_FD_NONE)",
            ));
        }
        if let Format::Hwpmc(h) = &self.format {
            if !h.consumed() {
                return Err(CError::new(
                    libc::EINVAL,
                    "pmclog_feed: the data fed before is not consumed yet: pmclog_read until it \
                     answers PMCLOG_REQUIRE_DATA",
                ));
            }
        }
        self.give(data);
        Ok(())
    }

    /// Input for the format's parser (telling the format first).
    fn give(&mut self, data: &[u8]) {
        match &mut self.format {
            Format::Sniff(head) => {
                head.extend_from_slice(data);
                self.decide(false);
            }
            Format::Hwpmc(h) => h.push(data),
            Format::PmcLog(p) => p.queue.push(data),
        }
    }

    /// Tells the format by the first bytes: an hwpmc record's header word
    /// has the magic 0xEE in its top byte, a pmc-log file starts with
    /// "\x89PMCLOG\n". `end`: no more input will come.
    fn decide(&mut self, end: bool) {
        let Format::Sniff(head) = &mut self.format else {
            return;
        };
        let magic = pmc_log::format::MAGIC;
        let hwpmc = head.len() >= 4 && u32_at(head, 0) >> 24 == PMCLOG_HEADER_MAGIC;
        let pmclog = head.len() >= magic.len() && head.starts_with(&magic);
        let maybe_pmclog = head.len() < magic.len() && magic.starts_with(head);
        if hwpmc {
            let first = std::mem::take(head);
            self.format = Format::Hwpmc(Box::new(Hwpmc::new(first)));
        } else if pmclog {
            let queue = SharedQueue::default();
            queue.push(head);
            self.format = Format::PmcLog(Box::new(PmcLog {
                queue,
                reader: None,
                skipped: 0,
                ended: false,
            }));
        } else if head.len() >= 4 && !maybe_pmclog || (end && !head.is_empty()) {
            let first: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
            self.error = Some(CError::new(
                libc::EINVAL,
                format!(
                    "pmclog_read: not a log: it starts with {} (an hwpmc log's first word has \
                     0xEE in its top byte; a pmc-log file starts with \"\\x89PMCLOG\\n\")",
                    first.join(" ")
                ),
            ));
        }
    }

    fn step(&mut self, ev: &mut pmclog_ev) -> Result<Step, CError> {
        let names = &mut self.names;
        match &mut self.format {
            Format::Sniff(_) => Ok(Step::NeedMore),
            Format::Hwpmc(h) => h.step(ev, names),
            Format::PmcLog(p) => p.step(ev, names),
        }
    }

    /// The input's end (a descriptor's): what it reveals.
    fn end_of_input(&mut self) -> Result<(), CError> {
        self.eof = true;
        self.decide(true);
        match &mut self.format {
            Format::PmcLog(p) => p.end(),
            Format::Hwpmc(h) if !h.saved.is_empty() && !h.saved_done => {
                let at = h.offset() - h.saved.len() as u64;
                let want = if h.saved.len() >= 4 {
                    (u32_at(&h.saved, 0) & 0xFFFF).to_string()
                } else {
                    "a header word's 4".into()
                };
                return Err(malformed(
                    at,
                    format!(
                        "the log ends inside a record ({} of {want} bytes): it was cut",
                        h.saved.len()
                    ),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// `pmclog_read`: fills `ev`; true for an event (`PMCLOG_OK`), false for
    /// `PMCLOG_EOF` or `PMCLOG_REQUIRE_DATA` (in `ev.pl_state`). `read_more`
    /// reads the descriptor (`Ok(0)` at its end, `EAGAIN` for "nothing now");
    /// it is not called for a parser fed by `pmclog_feed`.
    ///
    /// # Errors
    /// `PMCLOG_ERROR` (set in `ev.pl_state`): a damaged log or not a log
    /// (`EINVAL`), or `read_more`'s error; every later call answers the same.
    pub(crate) fn next(
        &mut self,
        ev: &mut pmclog_ev,
        read_more: &mut dyn FnMut(&mut [u8]) -> Result<usize, CError>,
    ) -> Result<bool, CError> {
        let feeding = self.fd == PMCLOG_FD_NONE;
        let mut chunk = Vec::new();
        loop {
            if let Some(e) = &self.error {
                ev.pl_state = PMCLOG_ERROR;
                return Err(e.clone());
            }
            match self.step(ev) {
                Err(e) => {
                    self.error = Some(e);
                    continue;
                }
                Ok(Step::Event) => {
                    self.count += 1;
                    ev.pl_count = self.count;
                    ev.pl_state = PMCLOG_OK;
                    if let Format::Hwpmc(h) = &mut self.format {
                        ev.pl_data = h.saved.as_mut_ptr().cast();
                    }
                    return Ok(true);
                }
                Ok(Step::Closed) => {
                    ev.pl_state = PMCLOG_EOF;
                    return Ok(false);
                }
                Ok(Step::NeedMore) if feeding => {
                    ev.pl_state = PMCLOG_REQUIRE_DATA;
                    return Ok(false);
                }
                Ok(Step::NeedMore) if self.eof => {
                    ev.pl_state = PMCLOG_EOF;
                    return Ok(false);
                }
                Ok(Step::NeedMore) => {
                    chunk.resize(READ_CHUNK, 0);
                    match read_more(&mut chunk) {
                        Ok(0) => {
                            if let Err(e) = self.end_of_input() {
                                self.error = Some(e);
                            }
                        }
                        Ok(n) => self.give(chunk.get(..n).unwrap_or_default()),
                        Err(e) if e.errno == libc::EAGAIN => {
                            ev.pl_state = PMCLOG_REQUIRE_DATA;
                            return Ok(false);
                        }
                        Err(e) => {
                            self.error = Some(e);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_log::record::{Header, UserData};

    const N: u32 = 20_000;

    /// A pmc-log of `N` userdata records, closed.
    fn pmc_log_file() -> Vec<u8> {
        let mut w = pmc_log::Writer::new(Vec::new(), &Header::default()).expect("writer");
        for i in 0..N {
            let data = i.to_le_bytes();
            w.write(&Record::UserData(UserData {
                time: u64::from(i),
                pid: 1,
                data: data[..].into(),
            }))
            .expect("write");
        }
        w.finish().expect("finish")
    }

    /// An hwpmc log of `N` userdata records, closed.
    fn hwpmc_file() -> Vec<u8> {
        let mut e = pmc_log::hwpmc::Encoder::new(Vec::new());
        e.initialize(0, 0x0A01_0000, 0, 1_000_000_000, 0, 0, "")
            .expect("encode");
        for i in 0..N {
            e.userdata(u64::from(i) * 1_000_000_000, i).expect("encode");
        }
        e.closelog(u64::from(N) + 1).expect("encode");
        e.into_inner()
    }

    fn no_read(_: &mut [u8]) -> Result<usize, CError> {
        Err(CError::new(libc::EBADF, "no descriptor"))
    }

    /// Reads every event: the USERDATA times (seconds for hwpmc's counter in
    /// `tv_sec`, nanoseconds for pmc-log's) and the final state. Between
    /// reads, `more` is asked for input while the parser wants it.
    fn read_all(
        p: &mut Parser,
        more: &mut dyn FnMut(&mut Parser) -> bool,
        read: &mut dyn FnMut(&mut [u8]) -> Result<usize, CError>,
    ) -> (Vec<u32>, u32) {
        let mut ev = empty_event();
        let mut values = Vec::new();
        loop {
            match p.next(&mut ev, read) {
                Ok(true) => {
                    if ev.pl_type == PMCLOG_TYPE_USERDATA {
                        let t = if ev.pl_ts.tv_nsec != 0 || ev.pl_ts.tv_sec == 0 {
                            ev.pl_ts.tv_nsec
                        } else {
                            ev.pl_ts.tv_sec / 1_000_000_000
                        };
                        values.push(u32::try_from(t).unwrap_or(u32::MAX));
                    }
                }
                Ok(false) if ev.pl_state == PMCLOG_REQUIRE_DATA && more(p) => {}
                Ok(false) | Err(_) => return (values, ev.pl_state),
            }
        }
    }

    #[test]
    fn fed_by_few_bytes_reads_what_a_descriptor_reads_for_both_formats() {
        let want: Vec<u32> = (0..N).collect();
        for file in [pmc_log_file(), hwpmc_file()] {
            // From a "descriptor", 4 KiB at a time.
            let mut p = Parser::new(3);
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, CError> {
                let n = buf.len().min(4096).min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            let (got, state) = read_all(&mut p, &mut |_| false, &mut read);
            assert_eq!(state, PMCLOG_EOF);
            assert_eq!(got, want);
            // Fed 7 bytes at a time.
            let mut p = Parser::new(PMCLOG_FD_NONE);
            let mut fed = 0;
            let mut more = |p: &mut Parser| {
                if fed == file.len() {
                    return false;
                }
                let n = 7.min(file.len() - fed);
                p.feed(&file[fed..fed + n]).expect("feed");
                fed += n;
                true
            };
            let (got, state) = read_all(&mut p, &mut more, &mut no_read);
            assert_eq!(state, PMCLOG_EOF, "a fed log ends at its CLOSELOG");
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_descriptor_is_read_only_as_far_as_the_next_event_needs() {
        // A log still being written (a pipe from a live pmcstat) gives its
        // first events before its end: the parser does not read to the end.
        for file in [pmc_log_file(), hwpmc_file()] {
            let mut p = Parser::new(3);
            let mut ev = empty_event();
            let mut reads = 0;
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, CError> {
                reads += 1;
                let n = buf.len().min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            for _ in 0..10 {
                assert_eq!(p.next(&mut ev, &mut read), Ok(true));
            }
            assert!(file.len() > 2 * READ_CHUNK, "the log spans several reads");
            assert_eq!(reads, 1, "10 events need one chunk of {} bytes", file.len());
        }
    }

    #[test]
    fn neither_format_is_an_error_not_a_wait() {
        let mut p = Parser::new(PMCLOG_FD_NONE);
        let mut ev = empty_event();
        p.feed(b"GIF89a....").expect("feed");
        assert!(p.next(&mut ev, &mut no_read).is_err());
        assert_eq!(ev.pl_state, PMCLOG_ERROR);
        // Final: every later read answers it.
        assert!(p.next(&mut ev, &mut no_read).is_err());
    }
}
