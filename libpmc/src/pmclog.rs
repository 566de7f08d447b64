//! pmclog(3): reading a log back, one `struct pmclog_ev` at a time, as
//! FreeBSD's `pmclog_read` fills it.
//!
//! [`Parser`] decodes the stream into [`pmclog_ev`] (its union of `pmclog_ev_*` structs,
//! [`pmclog_type`], [`pmclog_state`]); the C entry points `pmclog_open`/`read`/`feed`/`close`
//! are in [`crate::sys`]. Below: the formats read, how the input is decoded.
//!
//! Both formats are read: pmc-log files
//! (what `pmc_configure_logfile` writes on Linux) and FreeBSD hwpmc logs
//! (converted by pmc-log's importer); the record kinds map to
//! `PMCLOG_TYPE_*` as below, kinds with no hwpmc counterpart (`Comm`,
//! interval counters, user stacks) are skipped.
//!
//! The input is decoded as a stream, once: each `pmclog_read` decodes the
//! next record from where the last one ended, reading the descriptor (or
//! using what `pmclog_feed` gave) only as far as that record needs. An hwpmc
//! log goes through pmc-log's streaming importer on the way. Memory holds the
//! undecoded tail (at most one record block), never the whole log.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void, CString};

use pmc_log::hwpmc::StreamImporter;
use pmc_log::{LogFormat, StreamReader};

use pmc_log::record::{CounterKind, Mode as LogMode, Record};

use crate::abi::{pmc_id_t, pmc_value_t, PMC_NAME_MAX};
use crate::names;

/// `PMC_CALLCHAIN_DEPTH_MAX`: the most frames `pmclog_ev_callchain` holds.
pub const PMC_CALLCHAIN_DEPTH_MAX: usize = 512;
/// The size of the path members: Linux's `PATH_MAX` (FreeBSD's is 1024).
pub const PMCLOG_PATH_MAX: usize = 4096;
/// FreeBSD's `PMCLOG_COMLEN`: the size of the command and thread name
/// members.
pub const PMCLOG_COMLEN: usize = 20;
/// `PMCLOG_FD_NONE`: `pmclog_open`'s "data comes from `pmclog_feed`".
pub const PMCLOG_FD_NONE: i32 = -1;
/// `PMC_CC_F_USERSPACE`: a callchain's `pl_cpuflags` bit for user mode.
pub const PMC_CC_F_USERSPACE: u32 = 0x01;

/// `uintfptr_t`: an instruction address.
pub type uintfptr_t = usize;

/// `enum pmclog_state`: what `pmclog_read` found.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmclog_state {
    /// An event was decoded.
    PMCLOG_OK,
    /// The end of the log.
    PMCLOG_EOF,
    /// `pmclog_feed` more data.
    PMCLOG_REQUIRE_DATA,
    /// The log is damaged or not a log.
    PMCLOG_ERROR,
}

/// `enum pmclog_type`: the record types (`<sys/pmclog.h>`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmclog_type {
    /// Log closed.
    PMCLOG_TYPE_CLOSELOG = 1,
    /// Samples dropped.
    PMCLOG_TYPE_DROPNOTIFY = 2,
    /// The log's first record.
    PMCLOG_TYPE_INITIALIZE = 3,
    /// A PMC allocated.
    PMCLOG_TYPE_PMCALLOCATE = 5,
    /// A PMC attached to a process.
    PMCLOG_TYPE_PMCATTACH = 6,
    /// A PMC detached.
    PMCLOG_TYPE_PMCDETACH = 7,
    /// Counts at a context switch.
    PMCLOG_TYPE_PROCCSW = 8,
    /// A process exec'd.
    PMCLOG_TYPE_PROCEXEC = 9,
    /// Counts at a process exit.
    PMCLOG_TYPE_PROCEXIT = 10,
    /// A process forked.
    PMCLOG_TYPE_PROCFORK = 11,
    /// A process exited.
    PMCLOG_TYPE_SYSEXIT = 12,
    /// `pmc_writelog` data.
    PMCLOG_TYPE_USERDATA = 13,
    /// A mapping added.
    PMCLOG_TYPE_MAP_IN = 14,
    /// A mapping removed.
    PMCLOG_TYPE_MAP_OUT = 15,
    /// A sample with its callchain.
    PMCLOG_TYPE_CALLCHAIN = 16,
    /// A PMC with a dynamic event allocated.
    PMCLOG_TYPE_PMCALLOCATEDYN = 17,
    /// A thread created.
    PMCLOG_TYPE_THR_CREATE = 18,
    /// A thread exited.
    PMCLOG_TYPE_THR_EXIT = 19,
    /// A process (already running) named.
    PMCLOG_TYPE_PROC_CREATE = 20,
}

/// `struct timespec`, spelled out for the header (renamed there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timespec {
    /// Seconds.
    pub tv_sec: i64,
    /// Nanoseconds.
    pub tv_nsec: i64,
}

/// `struct pmclog_ev_callchain`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_callchain {
    /// Process.
    pub pl_pid: u32,
    /// Thread.
    pub pl_tid: u32,
    /// The PMC.
    pub pl_pmcid: u32,
    /// CPU in the high 16 bits, `PMC_CC_F_*` in the low.
    pub pl_cpuflags: u32,
    /// More flags (0).
    pub pl_cpuflags2: u32,
    /// Frames in `pl_pc`.
    pub pl_npc: u32,
    /// Frames, leaf first.
    pub pl_pc: [uintfptr_t; PMC_CALLCHAIN_DEPTH_MAX],
}

/// `struct pmclog_ev_initialize`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_initialize {
    /// hwpmc ABI version (`PMC_VERSION`).
    pub pl_version: u32,
    /// `enum pmc_cputype`.
    pub pl_arch: u32,
    /// Timestamp ticks per second.
    pub pl_tsc_freq: u64,
    /// Wall-clock time of the log's start.
    pub pl_ts: Timespec,
    /// The CPU's id string.
    pub pl_cpuid: [c_char; PMCLOG_PATH_MAX],
}

/// `struct pmclog_ev_map_in`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_map_in {
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Start address.
    pub pl_start: uintfptr_t,
    /// The object's path.
    pub pl_pathname: [c_char; PMCLOG_PATH_MAX],
}

/// `struct pmclog_ev_map_out`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_map_out {
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Start address.
    pub pl_start: uintfptr_t,
    /// End address.
    pub pl_end: uintfptr_t,
}

/// `struct pmclog_ev_pmcallocate`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcallocate {
    /// The event's name (valid until `pmclog_close`).
    pub pl_evname: *const c_char,
    /// The sampling rate (reload count), 0 for counting.
    pub pl_rate: u64,
    /// The event code (SOFT codes for FreeBSD's SOFT names, else 0).
    pub pl_event: u32,
    /// `PMC_F_*` flags.
    pub pl_flags: u32,
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
}

/// `struct pmclog_ev_pmcallocatedyn`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcallocatedyn {
    /// The event's name.
    pub pl_evname: [c_char; PMC_NAME_MAX],
    /// The event code.
    pub pl_event: u32,
    /// `PMC_F_*` flags.
    pub pl_flags: u32,
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
}

/// `struct pmclog_ev_pmcattach`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcattach {
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Its executable.
    pub pl_pathname: [c_char; PMCLOG_PATH_MAX],
}

/// `struct pmclog_ev_pmcdetach`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcdetach {
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
    /// Process.
    pub pl_pid: libc::pid_t,
}

/// `struct pmclog_ev_proccsw`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_proccsw {
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Thread.
    pub pl_tid: libc::pid_t,
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
    /// Count over the slice.
    pub pl_value: pmc_value_t,
}

/// `struct pmclog_ev_proccreate`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_proccreate {
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Flags.
    pub pl_flags: u32,
    /// Command name.
    pub pl_pcomm: [c_char; PMCLOG_COMLEN],
}

/// `struct pmclog_ev_procexec`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procexec {
    /// Process.
    pub pl_pid: libc::pid_t,
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
    /// Load base.
    pub pl_baseaddr: usize,
    /// Dynamic linker's base.
    pub pl_dynaddr: usize,
    /// The executable.
    pub pl_pathname: [c_char; PMCLOG_PATH_MAX],
}

/// `struct pmclog_ev_procexit`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procexit {
    /// Process.
    pub pl_pid: u32,
    /// The PMC.
    pub pl_pmcid: pmc_id_t,
    /// Its count for the process.
    pub pl_value: pmc_value_t,
}

/// `struct pmclog_ev_procfork`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procfork {
    /// Parent.
    pub pl_oldpid: libc::pid_t,
    /// Child.
    pub pl_newpid: libc::pid_t,
}

/// `struct pmclog_ev_sysexit`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_sysexit {
    /// Process.
    pub pl_pid: libc::pid_t,
}

/// `struct pmclog_ev_threadcreate`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_threadcreate {
    /// Thread.
    pub pl_tid: libc::pid_t,
    /// Process.
    pub pl_pid: libc::pid_t,
    /// Flags.
    pub pl_flags: u32,
    /// Thread name.
    pub pl_tdname: [c_char; PMCLOG_COMLEN],
}

/// `struct pmclog_ev_threadexit`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_threadexit {
    /// Thread.
    pub pl_tid: libc::pid_t,
}

/// `struct pmclog_ev_userdata`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_userdata {
    /// `pmc_writelog`'s word.
    pub pl_userdata: u32,
}

/// The union `pl_u` of `struct pmclog_ev` (FreeBSD's `pl_cl` and `pl_dn`
/// are empty structs, left out: C has no empty struct).
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmclog_ev_data {
    /// CALLCHAIN.
    pub pl_cc: pmclog_ev_callchain,
    /// INITIALIZE.
    pub pl_i: pmclog_ev_initialize,
    /// MAP_IN.
    pub pl_mi: pmclog_ev_map_in,
    /// MAP_OUT.
    pub pl_mo: pmclog_ev_map_out,
    /// PMCALLOCATE.
    pub pl_a: pmclog_ev_pmcallocate,
    /// PMCALLOCATEDYN.
    pub pl_ad: pmclog_ev_pmcallocatedyn,
    /// PMCATTACH.
    pub pl_t: pmclog_ev_pmcattach,
    /// PMCDETACH.
    pub pl_d: pmclog_ev_pmcdetach,
    /// PROCCSW.
    pub pl_c: pmclog_ev_proccsw,
    /// PROC_CREATE.
    pub pl_pc: pmclog_ev_proccreate,
    /// PROCEXEC.
    pub pl_x: pmclog_ev_procexec,
    /// PROCEXIT.
    pub pl_e: pmclog_ev_procexit,
    /// PROCFORK.
    pub pl_f: pmclog_ev_procfork,
    /// SYSEXIT.
    pub pl_se: pmclog_ev_sysexit,
    /// THR_CREATE.
    pub pl_tc: pmclog_ev_threadcreate,
    /// THR_EXIT.
    pub pl_te: pmclog_ev_threadexit,
    /// USERDATA.
    pub pl_u: pmclog_ev_userdata,
}

/// `struct pmclog_ev`: what `pmclog_read` fills.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev {
    /// The outcome.
    pub pl_state: pmclog_state,
    /// Byte offset of the record in the (pmc-log) stream.
    pub pl_offset: libc::off_t,
    /// Records returned so far, this one included.
    pub pl_count: libc::size_t,
    /// The record's time (the log's clock).
    pub pl_ts: Timespec,
    /// The record's type.
    pub pl_type: pmclog_type,
    /// Unused (NULL).
    pub pl_data: *mut c_void,
    /// Unused (0).
    pub pl_len: c_int,
    /// The record.
    pub pl_u: pmclog_ev_data,
}

/// pmc-log bytes decoded from the input and not yet read: what the importer
/// writes (an hwpmc log) or the input itself (a pmc-log), shared with the
/// reader that drains it.
type Pending = pmc_log::hwpmc::SharedQueue;

/// How far the input's format is known.
enum Stage {
    /// The first bytes, until there are enough to tell the format by.
    Sniff(Vec<u8>),
    /// pmc-log: the input goes to the reader as it is.
    PmcLog,
    /// An hwpmc log: the input goes through the importer (`None` once it was
    /// finished at the end of the input).
    Hwpmc(Option<Box<StreamImporter<Pending>>>),
    /// Neither format, or the importer stopped: every read is an error.
    Failed,
}

/// The bytes that tell the formats apart: pmc-log's magic is 8 bytes, an
/// hwpmc log's first word 4.
const SNIFF_LEN: usize = 8;

/// The state behind a `pmclog_open` cookie.
pub struct Parser {
    /// The descriptor to read from, or `PMCLOG_FD_NONE`.
    pub fd: i32,
    /// Whether the input reached its end (a descriptor's end of file; never
    /// for fed data, whose end is the log's CLOSELOG).
    eof: bool,
    stage: Stage,
    pending: Pending,
    /// The pmc-log reader, once the pending bytes hold its preamble.
    reader: Option<StreamReader<Pending>>,
    returned: usize,
    finished: bool,
    /// Event names that `pl_evname` points into (one per distinct name).
    names: Vec<CString>,
}

/// How many bytes a parser reading a descriptor reads at a time.
pub(crate) const READ_CHUNK: usize = 64 << 10;

fn copy_str(dst: &mut [c_char], src: &[u8]) {
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    if let Some(d) = dst.get_mut(n) {
        *d = 0;
    }
}

fn ts(ns: u64) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

fn pid(p: i32) -> libc::pid_t {
    p
}

impl Parser {
    /// A parser over `fd`, or over fed data for `PMCLOG_FD_NONE`.
    pub fn new(fd: i32) -> Parser {
        Parser {
            fd,
            eof: false,
            stage: Stage::Sniff(Vec::new()),
            pending: Pending::default(),
            reader: None,
            returned: 0,
            finished: false,
            names: Vec::new(),
        }
    }

    /// `pmclog_feed`, and each chunk read from the descriptor: more input.
    pub fn feed(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        match &mut self.stage {
            Stage::Sniff(head) => {
                head.extend_from_slice(data);
                if head.len() >= SNIFF_LEN {
                    self.decide();
                }
            }
            Stage::PmcLog => self.pending.push(data),
            Stage::Hwpmc(Some(imp)) => {
                // Flushed at once, so a fed record is readable at the next
                // pmclog_read (the importer seals blocks when they fill).
                if imp.feed(data).and_then(|()| imp.flush()).is_err() {
                    self.stage = Stage::Failed;
                }
            }
            Stage::Hwpmc(None) | Stage::Failed => {}
        }
    }

    /// Tells the format by the sniffed bytes and passes them on.
    fn decide(&mut self) {
        let Stage::Sniff(head) = std::mem::replace(&mut self.stage, Stage::Failed) else {
            return;
        };
        match pmc_log::detect(&head) {
            Some(LogFormat::PmcLog) => {
                self.stage = Stage::PmcLog;
                self.feed(&head);
            }
            Some(LogFormat::Hwpmc) => {
                self.stage =
                    Stage::Hwpmc(Some(Box::new(StreamImporter::new(self.pending.clone()))));
                self.feed(&head);
            }
            _ => self.stage = Stage::Failed,
        }
    }

    /// The input ended: what the end reveals (a short input's format, the
    /// importer's last records, the reader's last block) becomes readable.
    pub fn end_of_input(&mut self) {
        self.eof = true;
        if matches!(self.stage, Stage::Sniff(_)) {
            self.decide();
        }
        if let Stage::Hwpmc(imp) = &mut self.stage {
            if let Some(imp) = imp.take() {
                if imp.finish().is_err() {
                    self.stage = Stage::Failed;
                }
            }
        }
        if let Some(r) = &mut self.reader {
            r.end_of_input();
        }
    }

    /// A `pmclog_ev` to fill (type CLOSELOG, everything zero).
    pub fn empty_event() -> pmclog_ev {
        pmclog_ev {
            pl_state: pmclog_state::PMCLOG_OK,
            pl_offset: 0,
            pl_count: 0,
            pl_ts: Timespec::default(),
            pl_type: pmclog_type::PMCLOG_TYPE_CLOSELOG,
            pl_data: std::ptr::null_mut(),
            pl_len: 0,
            pl_u: pmclog_ev_data {
                pl_u: pmclog_ev_userdata { pl_userdata: 0 },
            },
        }
    }

    /// `pmclog_read`'s decoding: fills `ev`, true for an event. `read_more`
    /// reads the descriptor (`Ok(0)` at its end); it is not called for a
    /// parser fed by `pmclog_feed`.
    ///
    /// # Errors
    /// What `read_more` returned; `ev.pl_state` is then `PMCLOG_ERROR`.
    pub fn next<E>(
        &mut self,
        ev: &mut pmclog_ev,
        read_more: &mut dyn FnMut(&mut [u8]) -> Result<usize, E>,
    ) -> Result<bool, E> {
        ev.pl_data = std::ptr::null_mut();
        ev.pl_len = 0;
        let feeding = self.fd == PMCLOG_FD_NONE;
        let mut chunk = Vec::new();
        loop {
            if self.finished {
                ev.pl_state = pmclog_state::PMCLOG_EOF;
                return Ok(false);
            }
            if matches!(self.stage, Stage::Failed) {
                ev.pl_state = pmclog_state::PMCLOG_ERROR;
                return Ok(false);
            }
            match self.step(ev) {
                Step::Event => return Ok(true),
                Step::Closed => {
                    self.finished = true;
                    ev.pl_state = pmclog_state::PMCLOG_EOF;
                    return Ok(false);
                }
                Step::Error => {
                    self.stage = Stage::Failed;
                    continue;
                }
                Step::NeedMore if feeding && self.hwpmc_closed() => {
                    // A fed hwpmc log has no end but its CLOSELOG, whose
                    // record the importer writes when finished.
                    self.end_of_input();
                }
                Step::NeedMore if feeding => {
                    ev.pl_state = pmclog_state::PMCLOG_REQUIRE_DATA;
                    return Ok(false);
                }
                Step::NeedMore if self.eof => {
                    // Nothing more will come: a log with no CLOSELOG (cut
                    // short, or still being written) ends here.
                    self.finished = true;
                    ev.pl_state = pmclog_state::PMCLOG_EOF;
                    return Ok(false);
                }
                Step::NeedMore => {
                    chunk.resize(READ_CHUNK, 0);
                    let n = match read_more(&mut chunk) {
                        Ok(n) => n,
                        Err(e) => {
                            ev.pl_state = pmclog_state::PMCLOG_ERROR;
                            return Err(e);
                        }
                    };
                    if n == 0 {
                        self.end_of_input();
                    } else {
                        self.feed(chunk.get(..n).unwrap_or_default());
                    }
                }
            }
        }
    }

    /// Whether an hwpmc log's importer has seen its CLOSELOG, with nothing
    /// after it waiting to be decoded.
    fn hwpmc_closed(&self) -> bool {
        match &self.stage {
            Stage::Hwpmc(Some(imp)) => imp.closelog_time().is_some() && imp.buffered() == 0,
            _ => false,
        }
    }

    /// The next record the pending bytes hold, into `ev`.
    fn step(&mut self, ev: &mut pmclog_ev) -> Step {
        if self.reader.is_none() {
            if self.pending.len() < pmc_log::format::PREAMBLE_LEN {
                return Step::NeedMore;
            }
            match StreamReader::new(self.pending.clone()) {
                Ok(mut r) => {
                    if self.eof {
                        r.end_of_input();
                    }
                    self.reader = Some(r);
                }
                Err(_) => return Step::Error,
            }
        }
        let Some(reader) = self.reader.as_mut() else {
            return Step::NeedMore;
        };
        loop {
            let rec = match reader.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => return Step::NeedMore,
                Err(_) => return Step::Error,
            };
            let Some(t) = convert(&mut self.names, &rec, ev) else {
                continue;
            };
            self.returned += 1;
            ev.pl_type = t;
            ev.pl_count = self.returned;
            ev.pl_ts = ts(rec.time());
            ev.pl_offset = libc::off_t::try_from(reader.position()).unwrap_or(libc::off_t::MAX);
            if t == pmclog_type::PMCLOG_TYPE_CLOSELOG {
                return Step::Closed;
            }
            ev.pl_state = pmclog_state::PMCLOG_OK;
            return Step::Event;
        }
    }
}

/// What [`Parser::step`] found.
enum Step {
    Event,
    Closed,
    NeedMore,
    Error,
}

/// The pmclog event of a pmc-log record, into `ev.pl_u`; `None` for kinds
/// hwpmc has no record for. Event names are kept in `names`.
fn convert(names: &mut Vec<CString>, rec: &Record<'_>, ev: &mut pmclog_ev) -> Option<pmclog_type> {
    {
        use pmclog_type::*;
        let u = &mut ev.pl_u;
        Some(match rec {
            Record::Header(h) => {
                let mut i = pmclog_ev_initialize {
                    pl_version: crate::abi::PMC_VERSION,
                    pl_arch: crate::abi::pmc_cputype::PMC_CPU_GENERIC as u32,
                    pl_tsc_freq: h.ticks_per_second,
                    pl_ts: ts(u64::try_from(h.start_wall_ns).unwrap_or(0)),
                    pl_cpuid: [0; PMCLOG_PATH_MAX],
                };
                copy_str(&mut i.pl_cpuid, h.cpuid.as_bytes());
                u.pl_i = i;
                PMCLOG_TYPE_INITIALIZE
            }
            Record::Pmc(p) => {
                let name = CString::new(p.event_spec.replace('\0', "")).unwrap_or_default();
                // An imported hwpmc log names an event it cannot resolve by
                // its code, `event=0x20000`.
                let event = names::soft_code(&p.event_spec)
                    .or_else(|| {
                        let hex = p.event_spec.strip_prefix("event=0x")?;
                        u32::from_str_radix(hex, 16).ok()
                    })
                    .unwrap_or(0);
                // One copy per distinct name: a CString's bytes do not move
                // when the Vec grows, so earlier events' pointers stay valid.
                let evname = match names.iter().find(|n| **n == name) {
                    Some(n) => n.as_ptr(),
                    None => {
                        names.push(name);
                        names.last().map_or(std::ptr::null(), |n| n.as_ptr())
                    }
                };
                u.pl_a = pmclog_ev_pmcallocate {
                    pl_evname: evname,
                    pl_rate: match p.mode {
                        LogMode::SamplingPeriod(n) | LogMode::SamplingFrequency(n) => n,
                        _ => 0,
                    },
                    pl_event: event,
                    pl_flags: p.flags,
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
                    pl_pc: [0; PMC_CALLCHAIN_DEPTH_MAX],
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
                    pl_pathname: [0; PMCLOG_PATH_MAX],
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
                    pl_tdname: [0; PMCLOG_COMLEN],
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
                    pl_pcomm: [0; PMCLOG_COMLEN],
                };
                copy_str(&mut c.pl_pcomm, &p.comm.0);
                u.pl_pc = c;
                PMCLOG_TYPE_PROC_CREATE
            }
            Record::Map(m) => {
                let mut c = pmclog_ev_map_in {
                    pl_pid: pid(m.pid),
                    pl_start: usize::try_from(m.start).unwrap_or(0),
                    pl_pathname: [0; PMCLOG_PATH_MAX],
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
                    pl_pathname: [0; PMCLOG_PATH_MAX],
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
            e.userdata(u64::from(i), i).expect("encode");
        }
        e.closelog(u64::from(N) + 1).expect("encode");
        e.into_inner()
    }

    /// Reads every event: the userdata values and the final state. Between
    /// reads, `more` is asked for input while the parser wants it.
    fn read_all(
        p: &mut Parser,
        more: &mut dyn FnMut(&mut Parser) -> bool,
        read: &mut dyn FnMut(&mut [u8]) -> Result<usize, ()>,
    ) -> (Vec<u32>, pmclog_state) {
        let mut ev = Parser::empty_event();
        let mut values = Vec::new();
        loop {
            match p.next(&mut ev, read) {
                Ok(true) => {
                    // The records' times are their numbers (the union's
                    // value is read by the C suite; unsafe stays in sys/).
                    if ev.pl_type == pmclog_type::PMCLOG_TYPE_USERDATA {
                        values.push(u32::try_from(ev.pl_ts.tv_nsec).unwrap_or(u32::MAX));
                    }
                }
                Ok(false) if ev.pl_state == pmclog_state::PMCLOG_REQUIRE_DATA && more(p) => {}
                Ok(false) | Err(()) => return (values, ev.pl_state),
            }
        }
    }

    #[test]
    fn fed_byte_by_few_bytes_reads_what_a_descriptor_reads_for_both_formats() {
        let want: Vec<u32> = (0..N).collect();
        for file in [pmc_log_file(), hwpmc_file()] {
            // From a "descriptor", 4 KiB at a time.
            let mut p = Parser::new(3);
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, ()> {
                let n = buf.len().min(4096).min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            let (got, state) = read_all(&mut p, &mut |_| false, &mut read);
            assert_eq!(state, pmclog_state::PMCLOG_EOF);
            assert_eq!(got, want);
            // Fed 7 bytes at a time.
            let mut p = Parser::new(PMCLOG_FD_NONE);
            let mut fed = 0;
            let mut more = |p: &mut Parser| {
                if fed == file.len() {
                    return false;
                }
                let n = 7.min(file.len() - fed);
                p.feed(&file[fed..fed + n]);
                fed += n;
                true
            };
            let (got, state) = read_all(&mut p, &mut more, &mut |_| Err(()));
            assert_eq!(
                state,
                pmclog_state::PMCLOG_EOF,
                "a fed log ends at its CLOSELOG"
            );
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_descriptor_is_read_only_as_far_as_the_next_event_needs() {
        // A log still being written (a pipe from a live pmcstat) gives its
        // first events before its end: the parser does not read to the end.
        for file in [pmc_log_file(), hwpmc_file()] {
            let mut p = Parser::new(3);
            let mut ev = Parser::empty_event();
            let mut reads = 0;
            let mut at = 0;
            let mut read = |buf: &mut [u8]| -> Result<usize, ()> {
                reads += 1;
                let n = buf.len().min(file.len() - at);
                buf[..n].copy_from_slice(&file[at..at + n]);
                at += n;
                Ok(n)
            };
            let mut events = 0;
            while events < 10 {
                assert_eq!(p.next(&mut ev, &mut read), Ok(true));
                events += 1;
            }
            assert!(file.len() > 2 * READ_CHUNK, "the log spans several reads");
            assert_eq!(reads, 1, "10 events need one chunk of {} bytes", file.len());
        }
    }

    #[test]
    fn what_is_held_stays_small_while_a_large_log_is_fed() {
        let file = hwpmc_file();
        let mut p = Parser::new(PMCLOG_FD_NONE);
        let mut ev = Parser::empty_event();
        let mut most = 0;
        for chunk in file.chunks(1000) {
            p.feed(chunk);
            while p.next(&mut ev, &mut |_| Err(())) == Ok(true) {}
            let held = p.pending.len()
                + match &p.stage {
                    Stage::Hwpmc(Some(imp)) => imp.buffered(),
                    _ => 0,
                };
            most = most.max(held);
        }
        assert_eq!(ev.pl_state, pmclog_state::PMCLOG_EOF);
        assert!(
            most <= 64 << 10,
            "{most} bytes held while reading a {}-byte log",
            file.len()
        );
    }

    #[test]
    fn neither_format_is_an_error_not_a_wait() {
        let mut p = Parser::new(PMCLOG_FD_NONE);
        let mut ev = Parser::empty_event();
        p.feed(b"GIF89a....");
        assert_eq!(p.next(&mut ev, &mut |_| Err(())), Ok(false));
        assert_eq!(ev.pl_state, pmclog_state::PMCLOG_ERROR);
    }
}
