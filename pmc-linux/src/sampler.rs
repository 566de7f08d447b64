//! Sampling on perf_event: ring buffers, the log drain thread, and in-process samples.
//!
//! # How samples reach the log
//!
//! When a sampling PMC starts, [`crate::counter`] maps one ring buffer per CPU (system scope,
//! or process scope with descendants) or per thread (process scope without descendants) and
//! registers the rings with the backend's log hub. Events that share a CPU (group members, the
//! threads of an inherited process PMC on that CPU) send their records to one ring with
//! `PERF_EVENT_IOC_SET_OUTPUT`. The hub:
//!
//! 1. wrote the log header at [`configure_log`](pmc_core::Backend::configure_log) (host facts
//!    from `/proc`, the clock, the start wall time);
//! 2. writes a [`PmcDescriptor`](pmc_log::record::PmcDescriptor) for each PMC before any of its
//!    samples, then synthesizes, as `perf record` does, the command names (`COMM`) and executable
//!    mappings (`/proc/<pid>/maps`) of processes that were already running (the attached pid,
//!    or every process for system scope), so their samples can be symbolized;
//! 3. runs a drain thread that `poll(2)`s the rings (each ring wakes it when a quarter full:
//!    `watermark`/`wakeup_watermark`), with a [`DRAIN_PERIOD`] timeout so a slow trickle of
//!    samples still reaches the log, parses every record with [`crate::record`], converts it to
//!    a pmc-log record and writes it through one [`pmc_log::Writer`].
//!
//! [`flush_log`](pmc_core::Backend::flush_log) drains every ring and flushes the writer;
//! [`close_log`](pmc_core::Backend::close_log) stops the thread, drains one last time and writes
//! the clean-close marker.
//!
//! # Record mapping
//!
//! | perf record | pmc-log record |
//! |---|---|
//! | `SAMPLE` | [`Sample`](pmc_log::record::Sample) (callchain leaf first, kernel frames first) |
//! | `MMAP2`, `MMAP` (executable only) | [`Map`](pmc_log::record::Map) |
//! | `COMM` (exec flag kept) | [`Comm`](pmc_log::record::Comm) |
//! | `FORK` | [`Fork`](pmc_log::record::Fork), or [`ThreadCreate`](pmc_log::record::ThreadCreate) for a new thread |
//! | `EXIT` | [`Exit`](pmc_log::record::Exit), or [`ThreadExit`](pmc_log::record::ThreadExit) |
//! | `LOST`, `LOST_SAMPLES` | [`Lost`](pmc_log::record::Lost) with the count |
//! | `THROTTLE` | [`Lost`](pmc_log::record::Lost) with count 0 ("some, unknown") |
//! | `EXIT`, for sampling PMCs with log-procexit | also a [`Counter`](pmc_log::record::Counter), kind `ProcessExit` with the sum of the process's sample periods |
//! | `READ` (`inherit_stat`), for counting PMCs with log-procexit | at stop, a [`Counter`](pmc_log::record::Counter), kind `ProcessExit` per process that exited, with its count (its tasks' `READ`s summed; see `ExitReads`) |
//! | `SAMPLE` of a log-proccsw switch group (a context switch, with `PERF_SAMPLE_READ`) | a [`Counter`](pmc_log::record::Counter) per PMC, kind `ContextSwitch`: the counts (and enabled/running times) of the time slice that just ended, per thread |
//!
//! Every loss is also counted in the [`SamplingSummary`] (per CPU), which
//! [`Backend::sampling_details`](crate::Backend::sampling_details) returns.
//!
//! # Timestamps
//!
//! Every event is opened with `use_clockid` and `clockid = CLOCK_MONOTONIC`, so sample times,
//! synthesized records and the header's `start_time` share one clock: nanoseconds of
//! `CLOCK_MONOTONIC` ([`Clock::Monotonic`](pmc_log::record::Clock::Monotonic)).

use crate::record::{self, FileId, ParseConfig, Record};
use crate::ring::RingReader;
use crate::sys;
use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use pmc_log::record as log;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

pub(crate) use crate::ring::MmapRing;

/// The longest the drain thread waits before reading the rings even if none woke it.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(100);

/// The default size of each ring's data area, in pages (256 KiB with 4 KiB pages: about 6000
/// samples with short callchains).
pub const DEFAULT_RING_PAGES: usize = 64;

/// The default ring size for PMCs whose samples carry user stacks (`CallGraph::Dwarf`), when
/// the caller is privileged: 512 KiB with 4 KiB pages, as `perf record` maps (about 60
/// samples of 8 KiB stacks).
pub const DWARF_RING_PAGES: usize = 128;

/// Samples and losses of one CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuCounts {
    /// Samples read.
    pub samples: u64,
    /// Samples the kernel dropped (`PERF_RECORD_LOST`, `PERF_RECORD_LOST_SAMPLES`).
    pub lost: u64,
    /// Times the kernel throttled an event for interrupting too often (`PERF_RECORD_THROTTLE`).
    pub throttled: u64,
}

/// What sampling produced so far: samples read, samples lost, per CPU, and anything that could
/// not be decoded. Nothing is dropped silently: every loss is in here and in the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplingSummary {
    /// Samples read from the rings.
    pub samples: u64,
    /// Samples the kernel reported as lost because a ring was full.
    pub lost: u64,
    /// Throttle events (the kernel lowered the sample rate; those samples are gone too).
    pub throttled: u64,
    /// Per CPU (samples without a CPU field are not in here).
    pub by_cpu: BTreeMap<u32, CpuCounts>,
    /// Non-sample records converted (mappings, comms, forks, exits, counter values).
    pub side_records: u64,
    /// Records that could not be decoded, or ring corruption events (each also a log `Lost`).
    pub errors: u64,
    /// Bytes of ring data discarded after corruption.
    pub discarded_bytes: u64,
    /// Records written to the log (header included), when there is one.
    pub log_records: u64,
    /// Records that could not be written because the log failed (a full disk, a closed
    /// pipe): after the first write error the log takes nothing more, and the drain thread
    /// keeps emptying the rings and counts here what it could not log. The error itself is
    /// [`Backend::log_error`](crate::Backend::log_error).
    pub log_dropped: u64,
    /// Samples whose user callchain was unwound from a captured stack (`CallGraph::Dwarf`).
    pub unwound: u64,
    /// Of those, unwinds that stopped before the stack's root (their callchain ends with
    /// `pmc_log::record::TRUNCATED_FRAME`).
    pub unwind_truncated: u64,
    /// Objects whose unwind tables could not be used, one `path: reason` line each (at most
    /// 64): their frames end an unwind.
    pub unwind_refused: Vec<String>,
}

impl SamplingSummary {
    fn cpu(&mut self, cpu: Option<u32>) -> Option<&mut CpuCounts> {
        cpu.map(|c| self.by_cpu.entry(c).or_default())
    }

    /// Adds another summary's counts into this one.
    pub fn merge(&mut self, other: &SamplingSummary) {
        self.samples += other.samples;
        self.lost += other.lost;
        self.throttled += other.throttled;
        self.side_records += other.side_records;
        self.errors += other.errors;
        self.discarded_bytes += other.discarded_bytes;
        self.log_dropped += other.log_dropped;
        self.unwound += other.unwound;
        self.unwind_truncated += other.unwind_truncated;
        self.unwind_refused
            .extend(other.unwind_refused.iter().cloned());
        for (cpu, c) in &other.by_cpu {
            let e = self.by_cpu.entry(*cpu).or_default();
            e.samples += c.samples;
            e.lost += c.lost;
            e.throttled += c.throttled;
        }
    }
}

impl From<&SamplingSummary> for pmc_core::SamplingSummary {
    /// The backend-neutral fields (`side_records`, `errors` and `discarded_bytes` are Linux's
    /// own).
    fn from(s: &SamplingSummary) -> pmc_core::SamplingSummary {
        let mut n = pmc_core::SamplingSummary::new();
        n.samples = s.samples;
        n.lost = s.lost;
        n.throttled = s.throttled;
        n.by_cpu = s
            .by_cpu
            .iter()
            .map(|(&cpu, c)| {
                (
                    cpu,
                    pmc_core::CpuSampling::new(c.samples, c.lost, c.throttled),
                )
            })
            .collect();
        n.log_records = s.log_records;
        n.log_dropped = s.log_dropped;
        n.unwound = s.unwound;
        n.unwind_truncated = s.unwind_truncated;
        n.unwind_refused = s.unwind_refused.clone();
        n
    }
}

/// One decoded sample, owning its callchain: what [`LinuxPmc::samples`](crate::LinuxPmc::samples)
/// yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSample {
    /// `CLOCK_MONOTONIC` nanoseconds.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The CPU it ran on.
    pub cpu: Option<u32>,
    /// The sampled instruction address.
    pub ip: u64,
    /// Events since the previous sample (the period; varies with a frequency).
    pub period: u64,
    /// Whether `ip` is in the kernel.
    pub kernel: bool,
    /// The callchain, leaf first, context markers removed (empty without callchains).
    pub callchain: Vec<u64>,
    /// How many leading frames of `callchain` are kernel addresses.
    pub kernel_frames: u32,
}

/// A mapped ring buffer and what its records mean.
pub(crate) struct RingSource {
    reader: RingReader<MmapRing>,
    /// A duplicate of the ring owner's fd, for `poll(2)` from the drain thread.
    poll_fd: Arc<OwnedFd>,
    cfg: ParseConfig,
    /// Kernel event id to log PMC id, for every event writing into this ring.
    ids: Vec<(u64, u32)>,
    /// PMC id for records without an identifier.
    default_pmc: u32,
    /// The CPU of a per-CPU ring.
    cpu: Option<u32>,
    /// The PMC owning this ring (its first member's log id).
    pub(crate) token: u32,
    /// The event hung up (its task exited): drained, no longer polled.
    hung_up: bool,
    /// A log-proccsw switch group's ring: its samples are context switches carrying the
    /// group's counts, logged as counter records rather than samples.
    pub(crate) switch_counts: bool,
    /// The PMC keeps its samples' user stacks in the log (`CallGraph::DwarfRaw`) instead of
    /// unwinding them.
    pub(crate) raw_stacks: bool,
    /// A counting PMC with log-procexit: its `PERF_RECORD_READ`s (`inherit_stat`) are the
    /// counts of its tasks at their exits (see [`ExitReads`]).
    pub(crate) exit_reads: bool,
    /// The PMC's events are inherited by child processes (descendants).
    pub(crate) cfg_inherit: bool,
    /// The callchains of samples taken in the kernel keep their user frames
    /// (`Flags::USERCALLCHAIN`); otherwise they are cut after the kernel's, as hwpmc's.
    pub(crate) user_in_kernel: bool,
}

impl std::fmt::Debug for RingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSource")
            .field("token", &self.token)
            .field("cpu", &self.cpu)
            .field("data_size", &self.reader.data_size())
            .finish_non_exhaustive()
    }
}

impl RingSource {
    /// Maps `data_pages` pages of ring for `fd` (the first fd writing into it).
    pub(crate) fn map(
        sys: &dyn sys::Sys,
        fd: BorrowedFd<'_>,
        data_pages: usize,
        cfg: ParseConfig,
        token: u32,
        cpu: Option<u32>,
    ) -> Result<RingSource> {
        let ring = sys
            .map_ring(fd, data_pages)
            .map_err(|e| mmap_error(&e, data_pages))?;
        let reader = RingReader::new(ring).map_err(|e| {
            Error::new(
                ErrorKind::Os,
                Op::Mmap,
                format!("the kernel gave an unusable ring buffer: {e}"),
            )
        })?;
        let poll_fd = fd.try_clone_to_owned().map_err(|e| {
            let mut err = Error::new(
                ErrorKind::TooManyOpenFiles,
                Op::Mmap,
                format!("cannot duplicate a perf fd for polling: {e}"),
            );
            if let Some(n) = e.raw_os_error() {
                err = err.with_errno(n);
            }
            err
        })?;
        Ok(RingSource {
            reader,
            poll_fd: Arc::new(poll_fd),
            cfg,
            ids: Vec::new(),
            default_pmc: token,
            cpu,
            token,
            hung_up: false,
            switch_counts: false,
            raw_stacks: false,
            exit_reads: false,
            cfg_inherit: false,
            user_in_kernel: true,
        })
    }

    /// Says that records with kernel id `id` belong to log PMC `pmc_id`.
    pub(crate) fn add_id(&mut self, id: u64, pmc_id: u32) {
        self.ids.push((id, pmc_id));
    }
}

/// A ring's metadata, detached from its reader while a batch borrows it.
struct RingMeta {
    ids: Vec<(u64, u32)>,
    default_pmc: u32,
    cpu: Option<u32>,
    switch_counts: bool,
    raw_stacks: bool,
    exit_reads: bool,
    /// The ring's events are inherited by child processes (descendants).
    inherit: bool,
    /// Kernel samples keep the user part of their callchains.
    user_in_kernel: bool,
}

fn tally(summary: &mut SamplingSummary, r: &Record<'_>, ring_cpu: Option<u32>) {
    match r {
        Record::Sample(s) => {
            summary.samples += 1;
            if let Some(c) = summary.cpu(s.cpu.or(ring_cpu)) {
                c.samples += 1;
            }
        }
        Record::Lost(l) => {
            summary.lost += l.lost;
            if let Some(c) = summary.cpu(l.sample_id.cpu.or(ring_cpu)) {
                c.lost += l.lost;
            }
        }
        Record::LostSamples(l) => {
            summary.lost += l.lost;
            if let Some(c) = summary.cpu(l.sample_id.cpu.or(ring_cpu)) {
                c.lost += l.lost;
            }
        }
        Record::Throttle(t) => {
            summary.throttled += 1;
            if let Some(c) = summary.cpu(t.sample_id.cpu.or(ring_cpu)) {
                c.throttled += 1;
            }
        }
        Record::Unthrottle(_) | Record::Unknown { .. } => {}
        _ => summary.side_records += 1,
    }
}

fn mmap_error(e: &std::io::Error, pages: usize) -> Error {
    let errno = e.raw_os_error();
    let kib = pages * sys::page_size() / 1024;
    let mut err = match errno {
        Some(libc::EPERM) => {
            let mlock =
                crate::env::mlock_kb().map_or_else(|| "unknown".to_owned(), |v| format!("{v} KiB"));
            let rlimit = crate::env::memlock_limit()
                .map_or_else(|| "unlimited".to_owned(), |v| format!("{} KiB", v / 1024));
            Error::new(
                ErrorKind::MlockLimit,
                Op::Mmap,
                format!(
                    "cannot lock a {kib} KiB sample buffer: over kernel.perf_event_mlock_kb = \
                     {mlock} per CPU and RLIMIT_MEMLOCK = {rlimit}"
                ),
            )
            .with_help(format!(
                "use a smaller buffer (Backend::set_ring_pages({})), fewer threads or CPUs, \
                 raise the limit (sysctl -w kernel.perf_event_mlock_kb=2048; ulimit -l), or run \
                 with CAP_IPC_LOCK",
                fitting_pages(pages)
            ))
        }
        Some(libc::ENOMEM) => Error::new(
            ErrorKind::Os,
            Op::Mmap,
            format!("no memory for a {kib} KiB sample buffer"),
        )
        .with_help("use a smaller buffer (Backend::set_ring_pages)"),
        _ => Error::new(
            ErrorKind::Os,
            Op::Mmap,
            format!("cannot map a {kib} KiB sample buffer: {e}"),
        ),
    };
    if let Some(n) = errno {
        err = err.with_errno(n);
    }
    err
}

/// The largest power-of-two ring (in data pages, below `pages`) that fits in one CPU's share of
/// `perf_event_mlock_kb`, counting the control page.
fn fitting_pages(pages: usize) -> usize {
    let page = sys::page_size() as u64;
    let budget = crate::env::mlock_kb().map_or(516 * 1024, |kb| kb.saturating_mul(1024));
    let fit = (budget.saturating_sub(page) / page).max(1);
    let pow = 1u64 << (63 - fit.leading_zeros());
    usize::try_from(pow).unwrap_or(1).min((pages / 2).max(1))
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock of every timestamp in the log.
pub(crate) fn now() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

/// The log header for this host.
pub(crate) fn host_header() -> log::Header<'static> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| -> String {
        cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_owned())
            })
            .unwrap_or_default()
    };
    let model = field("model name");
    let cpuid = {
        let (vendor, family, model_no, stepping) = (
            field("vendor_id"),
            field("cpu family"),
            field("model"),
            field("stepping"),
        );
        if vendor.is_empty() {
            String::new()
        } else {
            let model_no = model_no
                .parse::<u32>()
                .map_or(model_no.clone(), |m| format!("{m:X}"));
            format!("{vendor}-{family}-{model_no}-{stepping}")
                .replace("--", "-")
                .trim_end_matches('-')
                .to_owned()
        }
    };
    let wall = sys::clock_ns(libc::CLOCK_REALTIME);
    let mono = now();
    log::Header {
        os: Cow::Borrowed("Linux"),
        kernel_release: Cow::Owned(
            crate::env::read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
        ),
        arch: Cow::Borrowed(std::env::consts::ARCH),
        cpu_model: Cow::Owned(model),
        cpuid: Cow::Owned(cpuid),
        cpu_count: crate::env::online_cpus().len() as u32,
        page_size: sys::page_size() as u32,
        clock: log::Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        start_wall_ns: i64::try_from(wall).unwrap_or(i64::MAX),
        start_time: mono,
        backend: Cow::Borrowed("linux-perf"),
    }
}

fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(-1)
}

/// Converts one perf record into a pmc-log record (None for records the log does not carry).
/// hwpmc's callchains without `PMC_F_USERCALLCHAIN`: a sample taken in the kernel has the
/// kernel's frames only (perf's callchain goes on into user space). Always `Some`.
fn kernel_chain_only<'a>(rec: log::Record<'a>, meta: &RingMeta) -> Option<log::Record<'a>> {
    match rec {
        log::Record::Sample(mut s)
            if !meta.user_in_kernel
                && s.kernel_frames > 0
                && s.callchain.len() > s.kernel_frames as usize =>
        {
            let kept: Vec<u64> = s.callchain.iter().take(s.kernel_frames as usize).collect();
            s.callchain = log::Callchain::from_vec(kept);
            Some(log::Record::Sample(s))
        }
        r => Some(r),
    }
}

fn to_log<'a>(
    r: &Record<'a>,
    meta: &RingMeta,
    pmc_of: impl Fn(Option<u64>) -> u32,
) -> Option<log::Record<'a>> {
    Some(match r {
        Record::Sample(s) => {
            let mut frames: Vec<u64> = Vec::new();
            let mut kernel_frames = 0u32;
            if let Some(chain) = &s.callchain {
                let mut leading_kernel = true;
                for f in chain.frames() {
                    if leading_kernel && f.context.is_kernel() {
                        kernel_frames += 1;
                    } else {
                        leading_kernel = false;
                    }
                    frames.push(f.addr);
                }
            }
            if frames.is_empty() {
                if let Some(ip) = s.ip {
                    frames.push(ip);
                    kernel_frames = u32::from(s.cpu_mode() == record::CpuMode::Kernel);
                }
            }
            log::Record::Sample(log::Sample {
                time: s.time.unwrap_or(0),
                pmc_id: pmc_of(s.identifier.or(s.id)),
                pid: s.pid.map_or(-1, to_i32),
                tid: s.tid.map_or(-1, to_i32),
                cpu: s.cpu.or(meta.cpu),
                period: s.period.unwrap_or(0),
                callchain: log::Callchain::from_vec(frames),
                kernel_frames,
                raw: log::Bytes::borrowed(s.raw.unwrap_or_default()),
            })
        }
        Record::Mmap2(m) => {
            if m.prot & libc::PROT_EXEC as u32 == 0 {
                return None;
            }
            log::Record::Map(log::Map {
                time: m.sample_id.time.unwrap_or(0),
                pid: to_i32(m.pid),
                start: m.addr,
                len: m.len,
                pgoff: m.pgoff,
                build_id: match m.file_id {
                    FileId::BuildId(b) => log::Bytes::borrowed(b),
                    FileId::Inode { .. } => log::Bytes::default(),
                },
                path: log::Bytes::borrowed(m.filename),
            })
        }
        Record::Mmap(m) => log::Record::Map(log::Map {
            time: m.sample_id.time.unwrap_or(0),
            pid: to_i32(m.pid),
            start: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            build_id: log::Bytes::default(),
            path: log::Bytes::borrowed(m.filename),
        }),
        Record::Comm(c) => log::Record::Comm(log::Comm {
            time: c.sample_id.time.unwrap_or(0),
            pid: to_i32(c.pid),
            tid: to_i32(c.tid),
            exec: c.is_exec(),
            comm: log::Bytes::borrowed(c.comm),
        }),
        Record::Fork(t) if t.pid == t.ppid => log::Record::ThreadCreate(log::ThreadCreate {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
            flags: 0,
            name: log::Bytes::default(),
        }),
        Record::Fork(t) => log::Record::Fork(log::Fork {
            time: t.time,
            parent_pid: to_i32(t.ppid),
            parent_tid: to_i32(t.ptid),
            child_pid: to_i32(t.pid),
            child_tid: to_i32(t.tid),
        }),
        Record::Exit(t) if t.pid != t.tid => log::Record::ThreadExit(log::ThreadExit {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
        }),
        Record::Exit(t) => log::Record::Exit(log::Exit {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
        }),
        Record::Lost(l) => log::Record::Lost(log::Lost {
            time: l.sample_id.time.unwrap_or_else(now),
            pmc_id: Some(pmc_of(Some(l.id))),
            cpu: l.sample_id.cpu.or(meta.cpu),
            count: l.lost,
        }),
        Record::LostSamples(l) => log::Record::Lost(log::Lost {
            time: l.sample_id.time.unwrap_or_else(now),
            pmc_id: Some(pmc_of(l.sample_id.identifier.or(l.sample_id.id))),
            cpu: l.sample_id.cpu.or(meta.cpu),
            count: l.lost,
        }),
        Record::Throttle(t) => log::Record::Lost(log::Lost {
            time: t.time,
            pmc_id: Some(pmc_of(Some(t.id))),
            cpu: t.sample_id.cpu.or(meta.cpu),
            count: 0,
        }),
        _ => return None,
    })
}

fn to_owned_sample(s: &record::Sample<'_>, ring_cpu: Option<u32>) -> Option<OwnedSample> {
    let ip = s.ip?;
    let mut callchain = Vec::new();
    let mut kernel_frames = 0u32;
    if let Some(chain) = &s.callchain {
        let mut leading = true;
        for f in chain.frames() {
            if leading && f.context.is_kernel() {
                kernel_frames += 1;
            } else {
                leading = false;
            }
            callchain.push(f.addr);
        }
    }
    Some(OwnedSample {
        time: s.time.unwrap_or(0),
        pid: s.pid.unwrap_or(0),
        tid: s.tid.unwrap_or(0),
        cpu: s.cpu.or(ring_cpu),
        ip,
        period: s.period.unwrap_or(0),
        kernel: s.cpu_mode() == record::CpuMode::Kernel,
        callchain,
        kernel_frames,
    })
}

/// Drains `ring`, handing each decoded record, with the ring's metadata, to `f`. Returns how
/// many records could not be read (ring corruption, undecodable records): their contents are
/// lost, and the caller reports it.
fn drain_ring(
    ring: &mut RingSource,
    summary: &mut SamplingSummary,
    f: &mut dyn FnMut(&RingMeta, &Record<'_>),
) -> u64 {
    let mut bad = 0u64;
    let before = ring.reader.stats();
    let cfg = ring.cfg;
    let meta = RingMeta {
        ids: std::mem::take(&mut ring.ids),
        default_pmc: ring.default_pmc,
        cpu: ring.cpu,
        switch_counts: ring.switch_counts,
        raw_stacks: ring.raw_stacks,
        exit_reads: ring.exit_reads,
        inherit: ring.cfg_inherit,
        user_in_kernel: ring.user_in_kernel,
    };
    {
        let mut batch = ring.reader.batch();
        while let Some(rec) = batch.next_record() {
            let Ok(rec) = rec else { continue };
            match cfg.parse(rec.bytes) {
                Ok(r) => {
                    // A switch group's samples are counter readings, not samples.
                    if !(meta.switch_counts && matches!(r, Record::Sample(_))) {
                        tally(summary, &r, meta.cpu);
                    }
                    f(&meta, &r);
                }
                Err(_) => bad += 1,
            }
        }
    }
    ring.ids = meta.ids;
    let after = ring.reader.stats();
    bad += after.errors.saturating_sub(before.errors);
    summary.errors += bad;
    summary.discarded_bytes += after.discarded_bytes.saturating_sub(before.discarded_bytes);
    bad
}

impl RingMeta {
    fn pmc_of(&self, id: Option<u64>) -> u32 {
        id.and_then(|id| self.ids.iter().find(|(i, _)| *i == id).map(|(_, p)| *p))
            .unwrap_or(self.default_pmc)
    }
}

/// Rings read by the PMC's owner instead of a log (in-process sampling).
#[derive(Debug, Default)]
pub(crate) struct LocalRings {
    pub(crate) rings: Vec<RingSource>,
    pub(crate) summary: SamplingSummary,
}

impl LocalRings {
    /// Drains every ring into decoded samples.
    pub(crate) fn drain(&mut self) -> Vec<OwnedSample> {
        let mut out = Vec::new();
        for ring in &mut self.rings {
            // Losses to corruption are counted in the summary's `errors`.
            drain_ring(ring, &mut self.summary, &mut |meta, r| {
                if let Record::Sample(s) = r {
                    if let Some(o) = to_owned_sample(s, meta.cpu) {
                        out.push(o);
                    }
                }
            });
        }
        out
    }
}

/// The executable mappings of `pid` from `/proc/<pid>/maps`, and its command name, as log
/// records stamped `time`.
fn synthesize(pid: u32, time: u64, out: &mut Vec<log::Record<'static>>) {
    let Ok(comm) = std::fs::read(format!("/proc/{pid}/comm")) else {
        return; // gone
    };
    let comm: Vec<u8> = comm.strip_suffix(b"\n").unwrap_or(&comm).to_vec();
    let p = to_i32(pid);
    out.push(log::Record::Comm(log::Comm {
        time,
        pid: p,
        tid: p,
        exec: false,
        comm: log::Bytes::from(comm),
    }));
    let Ok(maps) = std::fs::read(format!("/proc/{pid}/maps")) else {
        return;
    };
    for line in maps.split(|b| *b == b'\n') {
        if let Some(m) = parse_maps_line(line, p, time) {
            out.push(log::Record::Map(m));
        }
    }
}

/// One line of `/proc/<pid>/maps`: `start-end perms offset dev inode   path`; executable
/// mappings only.
fn parse_maps_line(line: &[u8], pid: i32, time: u64) -> Option<log::Map<'static>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut it = text.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?;
    let offset = it.next()?;
    let _dev = it.next()?;
    let _inode = it.next()?;
    let path = it.next().unwrap_or("").trim_start();
    if !perms.contains('x') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let start = u64::from_str_radix(a, 16).ok()?;
    let end = u64::from_str_radix(b, 16).ok()?;
    let pgoff = u64::from_str_radix(offset, 16).ok()?;
    Some(log::Map {
        time,
        pid,
        start,
        len: end.checked_sub(start)?,
        pgoff,
        build_id: log::Bytes::default(),
        path: log::Bytes::from(path.to_owned()),
    })
}

/// The kernel as a mapping of pid -1 (`[kernel.kallsyms]`), as perf synthesizes it: from
/// `_stext` (an early line of `/proc/kallsyms`, so the 100k-line file is not read to its end)
/// to the top of the address space, which also covers the modules (symbolize kernel addresses
/// with `/proc/kallsyms`). `None` when the addresses are hidden (`kernel.kptr_restrict`) or
/// unreadable.
fn kernel_map(time: u64) -> Option<log::Map<'static>> {
    use std::io::BufRead;
    let file = std::fs::File::open("/proc/kallsyms").ok()?;
    let start = std::io::BufReader::new(file)
        .lines()
        .map_while(|l| l.ok())
        .find_map(|line| {
            let mut f = line.split_whitespace();
            let (addr, _, name) = (f.next()?, f.next()?, f.next()?);
            (name == "_stext").then(|| u64::from_str_radix(addr, 16).ok())?
        })
        .filter(|a| *a != 0)?;
    Some(log::Map {
        time,
        pid: -1,
        start,
        len: 0u64.wrapping_sub(start),
        pgoff: start,
        build_id: log::Bytes::default(),
        path: log::Bytes::from("[kernel.kallsyms]"),
    })
}

/// What to synthesize when a PMC registers.
#[derive(Debug, Clone)]
pub(crate) enum Synth {
    /// Nothing (a command launched with the PMC: the kernel reports its exec and mappings).
    Nothing,
    /// These processes.
    Pids(Vec<u32>),
    /// Every process (system scope).
    All,
}

fn all_pids() -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    v.sort_unstable();
    v
}

/// The backend's log: the writer, the registered rings, and the drain thread.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
}

#[derive(Default)]
struct HubState {
    writer: Option<pmc_log::Writer<LogSink>>,
    rings: Vec<RingSource>,
    /// Descriptors of registered PMCs, written again at the start of a replacement log.
    descriptors: Vec<log::PmcDescriptor<'static>>,
    synthesized: HashSet<u32>,
    /// What each registered PMC (by token) had synthesized, to repeat in a replacement log.
    bookkeeping: Vec<(u32, Synth, bool)>,
    summary: SamplingSummary,
    thread: Option<std::thread::JoinHandle<()>>,
    stop: Option<Arc<AtomicBool>>,
    /// Write end of the drain thread's wake-up socket.
    waker: Option<UnixStream>,
    /// The first error writing the log; the log takes nothing more after it. Reported by
    /// `log_error` (as soon as the drain thread meets it), flush_log and close_log.
    error: Option<LogFailure>,
    /// log-procexit bookkeeping.
    procexit: ProcExit,
    /// log-procexit of counting PMCs: the kernel's counts at task exits.
    exit_reads: ExitReads,
    /// log-proccsw bookkeeping.
    proccsw: ProcCsw,
    /// Records drained but not yet written, for time order across rings (see [`Reorder`]).
    reorder: Reorder,
    /// DWARF unwinding of samples that carry user stacks (see [`crate::unwind`]).
    stage: crate::unwind::Stage,
}

/// How far behind a drain pass's start a record's time must be before it is written. A
/// record is stamped before the kernel commits it to its ring; the slack covers that gap.
const REORDER_SLACK_NS: u64 = 10_000_000;

/// Puts the records of several rings into time order before they reach the log, as perf's
/// `ordered_events` does for `perf report`.
///
/// Rings are drained one after another, so without it a record of one CPU can reach the
/// log before an older record of another: a sample of a process just exec'd on CPU 1
/// before its `MMAP2` from CPU 0, which then resolves to no mapping. A pass drains every
/// ring, then writes, in time order, every record stamped before the pass began (less
/// [`REORDER_SLACK_NS`]): each of those was in its ring when the pass read it. Later ones
/// wait for the next pass (or flush_log/close_log, or a record written directly, such as
/// user data, which follows everything drained before it). Memory stays bounded by what the
/// rings hold plus that slack's worth of records.
///
/// A sample with a captured user stack ([`crate::unwind`]) waits here with its stack, and is
/// unwound as it is written: by then every earlier record, its process's maps among them,
/// has passed through the unwinding stage.
#[derive(Default)]
struct Reorder {
    /// (time, arrival order, record, the sample's user stack).
    pending: Vec<Pending>,
    seq: u64,
}

type Pending = (
    u64,
    u64,
    log::Record<'static>,
    Option<Box<crate::unwind::UserStack>>,
);

impl Reorder {
    fn push(&mut self, rec: log::Record<'_>) {
        self.push_with(rec, None);
    }

    fn push_with(&mut self, rec: log::Record<'_>, stack: Option<Box<crate::unwind::UserStack>>) {
        self.seq += 1;
        self.pending
            .push((rec.time(), self.seq, rec.into_owned(), stack));
    }

    /// Writes, in time order, the records stamped at or before `upto` (all with `u64::MAX`),
    /// each through the unwinding stage.
    fn flush(
        &mut self,
        upto: u64,
        writer: &mut Option<pmc_log::Writer<LogSink>>,
        error: &mut Option<LogFailure>,
        stage: &mut crate::unwind::Stage,
        procexit: &mut ProcExit,
    ) {
        if self.pending.is_empty() {
            return;
        }
        self.pending
            .sort_unstable_by_key(|&(t, seq, _, _)| (t, seq));
        let n = self.pending.partition_point(|&(t, _, _, _)| t <= upto);
        for (_, _, mut rec, stack) in self.pending.drain(..n) {
            stage.observe(&rec);
            if let (log::Record::Sample(s), Some(u)) = (&mut rec, stack) {
                stage.complete(s, &u);
            }
            let exits = procexit.observe(&rec);
            if let Some(w) = writer.as_mut() {
                for r in std::iter::once(&rec).chain(exits.iter()) {
                    if let Err(e) = w.write(r) {
                        LogFailure::note(error, &e);
                    }
                }
            }
        }
    }
}

/// log-proccsw: the previous cumulative reading of each counter, so each context switch logs
/// the counts of the time slice that just ended. Entries go when the thread exits.
///
/// A counter is a (PMC, thread, switch event) triple: with descendants the switch group is
/// opened once per CPU, and each CPU's copy counts only the thread's time on that CPU, so a
/// thread that migrates has one cumulative count per CPU. The switch event's id (the
/// sample's identifier; an inherited event reports its parent's) tells them apart.
///
/// Rings are drained one after another, not in time order, so a thread's `EXIT` (in the ring
/// of the CPU it exited on) can be read before its last switch on another CPU. Its entries
/// are therefore dropped only after the next complete pass over every ring, which reads past
/// everything written before the `EXIT` was seen.
#[derive(Default)]
struct ProcCsw {
    /// (pmc id, tid, switch event id) -> (value, time_enabled, time_running) at the previous
    /// switch.
    last: BTreeMap<(u32, i32, u64), (u64, u64, u64)>,
    /// Threads seen exiting, with the pass they were seen in.
    exited: Vec<(i32, u64)>,
    /// Complete passes over every ring so far.
    pass: u64,
}

impl ProcCsw {
    /// The counter records for one switch sample of a switch group: one per member (the
    /// group's leader, the switch event itself, is left out), each the difference from the
    /// thread's previous switch.
    fn counters(&mut self, s: &record::Sample<'_>, meta: &RingMeta, out: &mut Vec<log::Counter>) {
        let Some(record::ReadValues::Group(g)) = &s.read else {
            return;
        };
        let pid = s.pid.map_or(-1, to_i32);
        let tid = s.tid.map_or(-1, to_i32);
        let event = s.identifier.or(s.id).unwrap_or(0);
        let (en, run) = (g.time_enabled.unwrap_or(0), g.time_running.unwrap_or(0));
        for e in g.iter() {
            let pmc = meta.pmc_of(e.id);
            if pmc == meta.default_pmc {
                continue; // the context-switch event
            }
            let prev = self.last.insert((pmc, tid, event), (e.value, en, run));
            let (v0, e0, r0) = prev.unwrap_or((0, 0, 0));
            out.push(log::Counter {
                time: s.time.unwrap_or(0),
                pmc_id: pmc,
                pid,
                tid,
                cpu: s.cpu.or(meta.cpu),
                kind: log::CounterKind::ContextSwitch,
                value: e.value.saturating_sub(v0),
                time_enabled: en.saturating_sub(e0),
                time_running: run.saturating_sub(r0),
            });
        }
    }

    /// Notes a thread that exited: forgotten after the next complete pass.
    fn exited(&mut self, tid: i32) {
        if !self.last.is_empty() {
            self.exited.push((tid, self.pass));
        }
    }

    /// A complete pass over every ring ended: forgets the threads that exited before it began.
    fn end_pass(&mut self) {
        let pass = self.pass;
        self.pass += 1;
        if !self.exited.iter().any(|(_, p)| *p < pass) {
            return;
        }
        let gone: HashSet<i32> = self
            .exited
            .iter()
            .filter(|(_, p)| *p < pass)
            .map(|(t, _)| *t)
            .collect();
        self.exited.retain(|(_, p)| *p >= pass);
        self.last.retain(|(_, t, _), _| !gone.contains(t));
    }

    /// Forgets the counters of PMCs that went away.
    fn forget(&mut self, pmcs: &HashSet<u32>) {
        self.last.retain(|(p, _, _), _| !pmcs.contains(p));
    }
}

/// log-procexit for counting PMCs: the kernel's own per-task counts at exit.
///
/// A counting PMC with log-procexit is opened as `perf record -s` opens its events: one
/// event per CPU on the target (`inherit`, so that a ring can be mapped), with
/// `inherit_stat` and `task`. When a task that inherited the events exits, the kernel writes a
/// `PERF_RECORD_READ` (`sync_child_event`) to each CPU event's ring with that task's count
/// on that CPU; summed over the CPUs and the process's threads, that is the process's count at
/// its exit. (Checked on Linux 6.18: a process forking three children that touch 1000, 2000
/// and 3000 pages got `READ`s of 1018, 2018 and 3018 page faults, after each child's `EXIT`,
/// as `perf record -s`'s perf.data shows them.)
///
/// One task's exit has no `READ`: the task that holds the original (not inherited) context
/// when it exits. That is the target itself, unless the scheduler swapped the contexts of the
/// target and a child (`perf_event_context_sched_out`: equivalent contexts are swapped rather
/// than switched, and `inherit_stat` swaps their counts too, so each task keeps its own), in
/// which case it is that child and the target gets a `READ`. Its count is the PMC's total less
/// every `READ`, known once the PMC is stopped ([`HubState::finish_exit_reads`]): exact when
/// every task exited by then; left out when a task the PMC followed is still running (its
/// count would be mixed in).
#[derive(Default)]
struct ExitReads {
    /// (pmc id, pid) -> the sums of its `READ`s: value, time enabled, time running.
    sums: BTreeMap<(u32, i32), (u64, u64, u64)>,
    /// (pmc id, tid) of every `READ`.
    read_tids: HashSet<(u32, i32)>,
    /// Exits, in order: (pmc id, time, pid, tid, cpu). Each PMC's ring has its own.
    exits: Vec<(u32, u64, i32, i32, Option<u32>)>,
    /// (pmc id, tid) of the tasks seen forking: those without an exit are still running.
    /// (Not removed at their exit: a fork and its exit come through different CPUs' rings,
    /// and a pass can drain the exit first.)
    forks: HashSet<(u32, i32)>,
}

impl ExitReads {
    fn read(&mut self, rd: &record::ReadRecord<'_>, meta: &RingMeta) {
        let (pid, tid) = (to_i32(rd.pid), to_i32(rd.tid));
        let mut add = |pmc: u32, value: u64, enabled: u64, running: u64| {
            let e = self.sums.entry((pmc, pid)).or_default();
            e.0 = e.0.saturating_add(value);
            e.1 = e.1.saturating_add(enabled);
            e.2 = e.2.saturating_add(running);
            self.read_tids.insert((pmc, tid));
        };
        match rd.values {
            record::ReadValues::Single(v) => add(
                meta.pmc_of(v.id),
                v.value,
                v.time_enabled.unwrap_or(0),
                v.time_running.unwrap_or(0),
            ),
            record::ReadValues::Group(g) => {
                for e in g.iter() {
                    add(
                        meta.pmc_of(e.id),
                        e.value,
                        g.time_enabled.unwrap_or(0),
                        g.time_running.unwrap_or(0),
                    );
                }
            }
        }
    }

    fn exited(&mut self, x: &record::TaskEvent, meta: &RingMeta) {
        let (pmc, tid) = (meta.default_pmc, to_i32(x.tid));
        if !self.exits.iter().any(|e| e.0 == pmc && e.3 == tid) {
            let cpu = x.sample_id.cpu.or(meta.cpu);
            self.exits.push((pmc, x.time, to_i32(x.pid), tid, cpu));
        }
    }

    /// A new task: followed (until its exit) when the events are inherited by it: a thread,
    /// or with `inherit` (descendants) a process. (A process's fork is reported to its events
    /// whether or not its child inherits them.)
    fn forked(&mut self, f: &record::TaskEvent, meta: &RingMeta) {
        if f.pid == f.ppid || meta.inherit {
            self.forks.insert((meta.default_pmc, to_i32(f.tid)));
        }
    }

    /// The `ProcessExit` counters of PMC `pmc`, whose total over all its tasks is `total`:
    /// one per process that exited, in the order they
    /// exited, and forgets them. `targets_gone`: no target the PMC was attached to is still
    /// running.
    fn finish(&mut self, pmc: u32, total: u64, targets_gone: bool) -> Vec<log::Counter> {
        // The exited tasks without a READ: at most one held the original context.
        let exits: Vec<(u64, i32, i32, Option<u32>)> = self
            .exits
            .iter()
            .filter(|e| e.0 == pmc)
            .map(|e| (e.1, e.2, e.3, e.4))
            .collect();
        let unread: Vec<&(u64, i32, i32, Option<u32>)> = exits
            .iter()
            .filter(|e| !self.read_tids.contains(&(pmc, e.2)))
            .collect();
        let running = self
            .forks
            .iter()
            .any(|&(p, tid)| p == pmc && !exits.iter().any(|e| e.2 == tid));
        let read_sum = self
            .sums
            .range((pmc, i32::MIN)..=(pmc, i32::MAX))
            .fold(0u64, |a, (_, v)| a.saturating_add(v.0));
        let rest = match unread.as_slice() {
            // Its times are not known apart from the others' (0: unknown).
            [one] if targets_gone && !running => {
                Some((one.1, total.saturating_sub(read_sum), 0u64, 0u64))
            }
            _ => None,
        };
        let mut out = Vec::new();
        let mut done: HashSet<i32> = HashSet::new();
        // A process's line at the exit of its last task: its main thread, normally.
        let mut last_exit: BTreeMap<i32, (u64, i32, Option<u32>)> = BTreeMap::new();
        for &(time, pid, tid, cpu) in &exits {
            let e = last_exit.entry(pid).or_insert((time, tid, cpu));
            if tid == pid || time >= e.0 {
                *e = (time, tid, cpu);
            }
        }
        let mut order: Vec<(u64, i32)> = last_exit.iter().map(|(p, e)| (e.0, *p)).collect();
        order.sort_unstable();
        for (_, pid) in order {
            if !done.insert(pid) {
                continue;
            }
            let mut v = self.sums.get(&(pmc, pid)).copied();
            if let Some((_, value, en, run)) = rest.filter(|r| r.0 == pid) {
                let have = v.unwrap_or_default();
                v = Some((
                    have.0.saturating_add(value),
                    have.1.max(en),
                    have.2.max(run),
                ));
            } else if unread.iter().any(|e| e.1 == pid) {
                // Part of this process's count is in the unattributed rest: not logged.
                continue;
            }
            let Some((value, time_enabled, time_running)) = v else {
                continue;
            };
            let (time, tid, cpu) = last_exit[&pid];
            out.push(log::Counter {
                time,
                pmc_id: pmc,
                pid,
                tid,
                cpu,
                kind: log::CounterKind::ProcessExit,
                value,
                time_enabled,
                time_running,
            });
        }
        self.sums.retain(|(p, _), _| *p != pmc);
        self.read_tids.retain(|(p, _)| *p != pmc);
        self.exits.retain(|e| e.0 != pmc);
        self.forks.retain(|(p, _)| *p != pmc);
        out
    }
}

/// log-procexit of sampling PMCs: per-process counts at exit.
///
/// For sampling PMCs with the flag the kernel's own mechanism (`inherit_stat`, see
/// [`ExitReads`], which counting PMCs use) is not used, so that the sampling events stay as
/// perf record opens them. Instead the hub sums
/// the sample periods of each process, and when the process's `EXIT` arrives it logs that sum
/// as the process's count ([`CounterKind::ProcessExit`](log::CounterKind::ProcessExit);
/// `time_enabled`/`time_running` 0: not read from the kernel). The sum is the events counted
/// in the process up to its last sample: exact but for the last, incomplete period.
#[derive(Default)]
struct ProcExit {
    /// PMC ids with log-procexit.
    pmcs: HashSet<u32>,
    /// (pmc id, pid) -> sum of sample periods.
    sums: BTreeMap<(u32, i32), u64>,
}

impl ProcExit {
    /// Follows the log in time order (the reorder buffer's output, so a sample read from
    /// another CPU's ring after its process's `EXIT` still counts before it): sums each
    /// process's sample periods, and at its `EXIT` returns the `ProcessExit` counter
    /// records to write after it.
    fn observe(&mut self, rec: &log::Record<'_>) -> Vec<log::Record<'static>> {
        if self.pmcs.is_empty() {
            return Vec::new();
        }
        match rec {
            log::Record::Sample(s) if self.pmcs.contains(&s.pmc_id) => {
                let e = self.sums.entry((s.pmc_id, s.pid)).or_default();
                *e = e.saturating_add(s.period);
                Vec::new()
            }
            log::Record::Exit(x) => {
                let mut pmcs: Vec<u32> = self.pmcs.iter().copied().collect();
                pmcs.sort_unstable();
                pmcs.into_iter()
                    .filter_map(|pmc| {
                        let sum = self.sums.remove(&(pmc, x.pid))?;
                        Some(log::Record::Counter(log::Counter {
                            time: x.time,
                            pmc_id: pmc,
                            pid: x.pid,
                            tid: x.tid,
                            cpu: None,
                            kind: log::CounterKind::ProcessExit,
                            value: sum,
                            time_enabled: 0,
                            time_running: 0,
                        }))
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

impl std::fmt::Debug for HubState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubState")
            .field("log", &self.writer.is_some())
            .field("rings", &self.rings.len())
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

fn poisoned() -> Error {
    Error::new(
        ErrorKind::Os,
        Op::Log,
        "the log lock was poisoned by a panic in another thread",
    )
}

pub(crate) fn no_log() -> Error {
    Error::new(ErrorKind::InvalidState, Op::Log, "no log is configured")
        .with_help("call configure_log first")
}

fn write_error(e: &pmc_log::WriteError) -> Error {
    LogFailure::from(e).to_error()
}

/// The first error writing the log, kept so that it can be reported again (by `log_error`,
/// `flush_log` and `close_log`) with its errno and `io::ErrorKind`.
#[derive(Debug, Clone)]
struct LogFailure {
    message: String,
    errno: Option<i32>,
    kind: Option<std::io::ErrorKind>,
}

impl From<&pmc_log::WriteError> for LogFailure {
    fn from(e: &pmc_log::WriteError) -> Self {
        let (message, errno) = match e {
            // The errno's text follows in the error's display.
            pmc_log::WriteError::Io(io) if io.raw_os_error().is_some() => {
                (String::new(), io.raw_os_error())
            }
            pmc_log::WriteError::Io(io) => (format!(": {io}"), None),
            e => (format!(": {e}"), None),
        };
        LogFailure {
            message,
            errno,
            kind: e.io_kind(),
        }
    }
}

impl LogFailure {
    /// The error: `ErrorKind::Os`, `Op::Log`, the errno, and the `io::Error` (with its kind)
    /// as its source.
    fn to_error(&self) -> Error {
        let mut e = Error::new(
            ErrorKind::Os,
            Op::Log,
            format!("cannot write the sample log{}", self.message),
        );
        if let Some(n) = self.errno {
            e = e.with_errno(n);
        }
        if let Some(k) = self.kind {
            e = e.with_source(std::io::Error::from(k)).with_help(
                "the log takes no more records (samples drained since are counted in \
                     SamplingSummary::log_dropped): stop the PMCs, make room or fix the \
                     output, and start a new log with configure_log",
            );
        }
        e
    }

    /// Keeps the first failure.
    fn note(slot: &mut Option<LogFailure>, e: &pmc_log::WriteError) {
        if slot.is_none() {
            *slot = Some(LogFailure::from(e));
        }
    }
}

impl HubState {
    /// Drains every ring (or only `token`'s) into the writer, in time order (see
    /// [`Reorder`]).
    fn drain(&mut self, token: Option<u32>) {
        let pass_start = now();
        let HubState {
            writer,
            rings,
            summary,
            error,
            procexit,
            exit_reads,
            proccsw,
            reorder,
            stage,
            ..
        } = self;
        for ring in rings.iter_mut() {
            if token.is_some_and(|t| t != ring.token) {
                continue;
            }
            let mut csw = Vec::new();
            let bad = drain_ring(ring, summary, &mut |meta, r| {
                if writer.is_none() {
                    return;
                }
                if meta.exit_reads {
                    match r {
                        Record::Read(rd) => {
                            exit_reads.read(rd, meta);
                            return;
                        }
                        Record::Exit(x) => exit_reads.exited(x, meta),
                        Record::Fork(f) => exit_reads.forked(f, meta),
                        _ => {}
                    }
                }
                if meta.switch_counts {
                    match r {
                        Record::Sample(s) => {
                            csw.clear();
                            proccsw.counters(s, meta, &mut csw);
                            for c in csw.drain(..) {
                                reorder.push(log::Record::Counter(c));
                            }
                            return;
                        }
                        Record::Exit(x) => proccsw.exited(to_i32(x.tid)),
                        _ => {}
                    }
                }
                let Some(rec) = to_log(r, meta, |id| meta.pmc_of(id)) else {
                    return;
                };
                let Some(rec) = kernel_chain_only(rec, meta) else {
                    return;
                };
                let mut stack = match (r, &rec) {
                    // Without user frames for kernel samples: nothing to unwind either.
                    (_, log::Record::Sample(s)) if !meta.user_in_kernel && s.kernel_frames > 0 => {
                        None
                    }
                    (Record::Sample(s), _) => crate::unwind::UserStack::of(s),
                    _ => None,
                };
                // Raw capture: the stack goes into the log after its sample, not unwound.
                let raw = match (&rec, stack.as_deref()) {
                    (log::Record::Sample(s), Some(u)) if meta.raw_stacks => Some(u.to_record(s)),
                    _ => None,
                };
                if raw.is_some() {
                    stack = None;
                }
                reorder.push_with(rec, stack);
                if let Some(u) = raw {
                    reorder.push(log::Record::UserStack(u));
                }
            });
            if bad > 0 && writer.is_some() {
                // Unreadable ring data: say in the log that an unknown number of records
                // (count 0) went missing here.
                reorder.push(log::Record::Lost(log::Lost {
                    time: now(),
                    pmc_id: Some(ring.default_pmc),
                    cpu: ring.cpu,
                    count: 0,
                }));
            }
        }
        reorder.flush(
            pass_start.saturating_sub(REORDER_SLACK_NS),
            writer,
            error,
            stage,
            procexit,
        );
        stage.tally(summary);
        if token.is_none() {
            proccsw.end_pass();
        }
        if let Some(w) = writer.as_ref() {
            summary.log_records = w.records_written();
            summary.log_dropped = w.records_dropped();
        }
    }

    /// Drains every ring and writes every record drained so far, in time order (for
    /// flush_log and close_log).
    fn drain_all(&mut self) {
        self.drain(None);
        let HubState {
            writer,
            error,
            reorder,
            summary,
            stage,
            procexit,
            ..
        } = self;
        reorder.flush(u64::MAX, writer, error, stage, procexit);
        stage.tally(summary);
        if let Some(w) = writer.as_ref() {
            summary.log_records = w.records_written();
            summary.log_dropped = w.records_dropped();
        }
    }

    /// Writes `rec` now, after every record drained so far (records written directly, such
    /// as user data marking a point in the program, follow all that was drained before).
    fn write(&mut self, rec: &log::Record<'_>) -> Result<()> {
        self.reorder.flush(
            u64::MAX,
            &mut self.writer,
            &mut self.error,
            &mut self.stage,
            &mut self.procexit,
        );
        self.stage.observe(rec);
        match self.writer.as_mut() {
            Some(w) => w.write(rec).map_err(|e| {
                LogFailure::note(&mut self.error, &e);
                write_error(&e)
            }),
            None => Err(no_log()),
        }
    }

    /// Writes the comms and executable mappings of already-running processes (once per pid
    /// per log), and the kernel text if `kernel`.
    fn synthesize(&mut self, synth: &Synth, kernel: bool) -> Result<()> {
        let pids = match synth {
            Synth::Nothing => Vec::new(),
            Synth::Pids(p) => p.clone(),
            Synth::All => all_pids(),
        };
        let time = now();
        let mut recs = Vec::new();
        // The kernel text once per log (key u32::MAX), for kernel-mode samples.
        if kernel && self.synthesized.insert(u32::MAX) {
            recs.extend(kernel_map(time).map(log::Record::Map));
        }
        for pid in pids {
            if self.synthesized.insert(pid) {
                synthesize(pid, time, &mut recs);
            }
        }
        for r in &recs {
            self.write(r)?;
        }
        Ok(())
    }

    /// The log's failure, if it failed (it stays failed until a new log is configured).
    fn check_error(&self) -> Result<()> {
        match &self.error {
            Some(f) => Err(f.to_error()),
            None => Ok(()),
        }
    }

    fn stop_thread(&mut self) -> Option<std::thread::JoinHandle<()>> {
        if let Some(s) = self.stop.take() {
            s.store(true, Ordering::Release);
        }
        if let Some(w) = self.waker.take() {
            // Wakes the thread out of poll(2) now rather than at its next timeout. If the
            // write fails, the timeout still ends the wait.
            let _ = (&w).write(&[1]);
        }
        self.thread.take()
    }
}

impl Hub {
    fn lock(&self) -> Result<MutexGuard<'_, HubState>> {
        self.state.lock().map_err(|_| poisoned())
    }

    /// The error that failed the log, if one did: the drain thread meets it within
    /// [`DRAIN_PERIOD`] of the write that failed.
    pub(crate) fn log_error(&self) -> Option<Error> {
        self.lock().ok()?.error.as_ref().map(LogFailure::to_error)
    }

    /// Whether a log is configured.
    pub(crate) fn has_log(&self) -> bool {
        self.lock().is_ok_and(|s| s.writer.is_some())
    }

    /// Starts a log on `sink` (header first), replacing and cleanly closing any earlier one.
    pub(crate) fn configure(self: &Arc<Self>, sink: LogSink) -> Result<()> {
        let header = host_header();
        let mut writer = pmc_log::Writer::new(sink, &header).map_err(|e| write_error(&e))?;
        let mut st = self.lock()?;
        let mut result = Ok(());
        if st.writer.is_some() {
            st.drain_all();
            if let Some(old) = st.writer.take() {
                if let Err(e) = old.finish() {
                    result = Err(write_error(&e));
                }
            }
        }
        for d in &st.descriptors {
            writer
                .write(&log::Record::Pmc(d.clone()))
                .map_err(|e| write_error(&e))?;
        }
        st.synthesized.clear();
        st.writer = Some(writer);
        st.error = None;
        // PMCs still sampling: their processes' bookkeeping again, for the new log.
        let again: Vec<(Synth, bool)> = st
            .bookkeeping
            .iter()
            .map(|(_, s, k)| (s.clone(), *k))
            .collect();
        for (synth, kernel) in again {
            st.synthesize(&synth, kernel)?;
        }
        drop(st);
        self.ensure_thread()?;
        result
    }

    /// Drains every ring into the log and flushes it.
    pub(crate) fn flush(&self) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        st.drain_all();
        st.check_error()?;
        let HubState { writer, error, .. } = &mut *st;
        match writer.as_mut() {
            Some(w) => w.flush().map_err(|e| {
                LogFailure::note(error, &e);
                write_error(&e)
            }),
            None => Err(no_log()),
        }
    }

    /// Stops the drain thread, drains the rings a last time, and closes the log with its
    /// clean-close marker. The rings are released: PMCs still running stop feeding a log until
    /// they are started again with a new one.
    pub(crate) fn close(&self) -> Result<()> {
        let handle = {
            let mut st = self.lock()?;
            if st.writer.is_none() {
                return Err(no_log());
            }
            st.stop_thread()
        };
        if let Some(h) = handle {
            let _ = h.join();
        }
        let mut st = self.lock()?;
        st.drain_all();
        st.rings.clear();
        st.bookkeeping.clear();
        let pending = st.check_error();
        let finished = match st.writer.take() {
            Some(w) => w.finish().map(|_| ()).map_err(|e| write_error(&e)),
            None => Err(no_log()),
        };
        st.error = None;
        pending.and(finished)
    }

    /// Appends counter values (interval readings), after the descriptors of their PMCs.
    pub(crate) fn write_counters(
        &self,
        descriptors: Vec<log::PmcDescriptor<'static>>,
        counters: &[log::Counter],
    ) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        for d in descriptors {
            if !st.descriptors.iter().any(|k| k.pmc_id == d.pmc_id) {
                st.write(&log::Record::Pmc(d.clone()))?;
                st.descriptors.push(d);
            }
        }
        for c in counters {
            st.write(&log::Record::Counter(c.clone()))?;
        }
        Ok(())
    }

    /// Appends a user-data record.
    pub(crate) fn write_user(&self, data: u32) -> Result<()> {
        let mut st = self.lock()?;
        st.write(&log::Record::UserData(log::UserData {
            time: now(),
            pid: to_i32(std::process::id()),
            data: log::Bytes::from(data.to_le_bytes().to_vec()),
        }))
    }

    /// The counts so far.
    pub(crate) fn summary(&self) -> SamplingSummary {
        self.lock().map(|s| s.summary.clone()).unwrap_or_default()
    }

    /// Whether rings of `token` are registered.
    pub(crate) fn has_rings(&self, token: u32) -> bool {
        self.lock()
            .is_ok_and(|s| s.rings.iter().any(|r| r.token == token))
    }

    /// Writes the descriptors (once per PMC id), synthesizes the bookkeeping of running
    /// processes (and, if `kernel` samples are taken, the kernel text mapping), and hands the
    /// rings to the drain thread.
    pub(crate) fn register(
        self: &Arc<Self>,
        descriptors: Vec<log::PmcDescriptor<'static>>,
        rings: Vec<RingSource>,
        synth: Synth,
        kernel: bool,
    ) -> Result<()> {
        let mut st = self.lock()?;
        if st.writer.is_none() {
            return Err(no_log());
        }
        for d in descriptors {
            if st.descriptors.iter().any(|k| k.pmc_id == d.pmc_id) {
                continue;
            }
            st.write(&log::Record::Pmc(d.clone()))?;
            if d.flags & log::FLAG_LOG_PROCEXIT != 0 {
                st.procexit.pmcs.insert(d.pmc_id);
            }
            st.descriptors.push(d);
        }
        st.synthesize(&synth, kernel)?;
        if let Some(token) = rings.first().map(|r| r.token) {
            st.bookkeeping.push((token, synth, kernel));
        }
        st.rings.extend(rings);
        drop(st);
        self.ensure_thread()
    }

    /// log-procexit of a stopped counting PMC: drains `token`'s rings, then logs each
    /// process's count at its exit for each `(pmc id, total)` (see [`ExitReads`]).
    pub(crate) fn finish_exit_reads(&self, token: u32, totals: &[(u32, u64)], targets_gone: bool) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
            let HubState {
                exit_reads,
                reorder,
                writer,
                ..
            } = &mut *st;
            if writer.is_none() {
                return;
            }
            for &(pmc, total) in totals {
                for c in exit_reads.finish(pmc, total, targets_gone) {
                    reorder.push(log::Record::Counter(c));
                }
            }
        }
    }

    /// Drains `token`'s rings now (at stop).
    pub(crate) fn drain_token(&self, token: u32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
        }
    }

    /// Drains and drops `token`'s rings (the PMC is going away).
    pub(crate) fn unregister(&self, token: u32) {
        if let Ok(mut st) = self.lock() {
            st.drain(Some(token));
            let pmcs: HashSet<u32> = st
                .rings
                .iter()
                .filter(|r| r.token == token && r.switch_counts)
                .flat_map(|r| r.ids.iter().map(|(_, p)| *p))
                .collect();
            if !pmcs.is_empty() {
                st.proccsw.forget(&pmcs);
            }
            st.rings.retain(|r| r.token != token);
            st.bookkeeping.retain(|(t, _, _)| *t != token);
        }
    }

    fn ensure_thread(self: &Arc<Self>) -> Result<()> {
        let mut st = self.lock()?;
        if st.thread.is_some() || st.writer.is_none() || st.rings.is_empty() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(self);
        let flag = stop.clone();
        let (waker, wake) = UnixStream::pair().map_err(|e| {
            Error::new(
                ErrorKind::Os,
                Op::Start,
                format!("cannot create the log drain thread's wake-up socket: {e}"),
            )
        })?;
        let handle = std::thread::Builder::new()
            .name("pmc-log-drain".into())
            .spawn(move || drain_loop(&weak, &flag, &wake))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Os,
                    Op::Start,
                    format!("cannot start the log drain thread: {e}"),
                )
            })?;
        st.thread = Some(handle);
        st.stop = Some(stop);
        st.waker = Some(waker);
        Ok(())
    }
}

fn drain_loop(hub: &Weak<Hub>, stop: &AtomicBool, wake: &UnixStream) {
    let timeout = i32::try_from(DRAIN_PERIOD.as_millis()).unwrap_or(100);
    loop {
        let fds: Vec<Arc<OwnedFd>> = {
            let Some(h) = hub.upgrade() else { return };
            let Ok(st) = h.state.lock() else { return };
            st.rings
                .iter()
                .filter(|r| !r.hung_up)
                .map(|r| r.poll_fd.clone())
                .collect()
        };
        // The wake-up socket first, then the rings.
        let borrowed: Vec<BorrowedFd<'_>> = std::iter::once(wake.as_fd())
            .chain(fds.iter().map(|f| f.as_fd()))
            .collect();
        let revents = match sys::poll(&borrowed, timeout) {
            Ok(r) => r.into_iter().skip(1).collect(),
            Err(_) => {
                std::thread::sleep(DRAIN_PERIOD);
                Vec::new()
            }
        };
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(h) = hub.upgrade() else { return };
        let Ok(mut st) = h.state.lock() else { return };
        // An event whose task exited reports POLLHUP forever: stop polling it (its ring is still
        // drained every round).
        for (fd, ev) in fds.iter().zip(&revents) {
            if ev & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                for r in st.rings.iter_mut() {
                    if Arc::ptr_eq(&r.poll_fd, fd) {
                        r.hung_up = true;
                    }
                }
            }
        }
        st.drain(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let l = b"55d0c8a00000-55d0c8a21000 r-xp 00002000 08:01 1234   /usr/bin/foo bar";
        let m = parse_maps_line(l, 7, 5).expect("exec mapping");
        assert_eq!(m.start, 0x55d0c8a00000);
        assert_eq!(m.len, 0x21000);
        assert_eq!(m.pgoff, 0x2000);
        assert_eq!(m.path.as_bytes(), b"/usr/bin/foo bar");
        assert!(parse_maps_line(b"7f00-7f10 rw-p 0 00:00 0", 7, 5).is_none());
        assert!(parse_maps_line(b"garbage", 7, 5).is_none());
        let v = parse_maps_line(
            b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
            1,
            0,
        )
        .expect("vsyscall");
        assert_eq!(v.path.as_bytes(), b"[vsyscall]");
    }

    use crate::record::{context, record_type, sample_type as st};

    const CFG_TYPE: u64 =
        st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::CALLCHAIN;

    fn cfg() -> ParseConfig {
        ParseConfig::new(CFG_TYPE, 0, true)
    }

    fn record(kind: u32, misc: u16, body: &[u64]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len() * 8) as u16).to_ne_bytes());
        for w in body {
            v.extend_from_slice(&w.to_ne_bytes());
        }
        v
    }

    fn pid_tid(pid: u32, tid: u32) -> u64 {
        u64::from(pid) | (u64::from(tid) << 32)
    }

    /// sample_id trailer for CFG_TYPE: tid, time, cpu, identifier.
    fn trailer(pid: u32, tid: u32, time: u64, cpu: u32, id: u64) -> [u64; 4] {
        [pid_tid(pid, tid), time, u64::from(cpu), id]
    }

    fn meta() -> RingMeta {
        RingMeta {
            ids: vec![(77, 3), (78, 4)],
            default_pmc: 3,
            cpu: Some(1),
            switch_counts: false,
            raw_stacks: false,
            exit_reads: false,
            inherit: false,
            user_in_kernel: true,
        }
    }

    /// log-procexit of a counting PMC: the READs give each task's count; the one exited task
    /// without a READ (here a child, 12, that held the original context when it exited: the
    /// kernel swapped the contexts of 10 and 12) gets the PMC's total less the READs, once
    /// every target is gone; with a followed task still running, nothing is guessed.
    #[test]
    fn exit_reads_give_each_process_its_count() {
        let mk = || {
            let mut x = ExitReads {
                // (pmc, time, pid, tid, cpu)
                exits: vec![
                    (3, 100, 11, 11, Some(0)),
                    (3, 200, 12, 12, Some(1)),
                    (3, 250, 10, 13, Some(1)), // a thread of 10
                    (3, 300, 10, 10, Some(0)),
                ],
                ..ExitReads::default()
            };
            x.sums.insert((3, 11), (1000, 5, 5));
            x.sums.insert((3, 10), (500, 9, 9)); // 10 itself and its thread 13
            x.read_tids.extend([(3, 11), (3, 10), (3, 13)]);
            x
        };
        let mut x = mk();
        let out = x.finish(3, 1000 + 500 + 2000, true);
        let got: Vec<(i32, i32, u64, u64)> = out
            .iter()
            .map(|c| (c.pid, c.tid, c.value, c.time))
            .collect();
        assert_eq!(
            got,
            [(11, 11, 1000, 100), (12, 12, 2000, 200), (10, 10, 500, 300)]
        );
        assert!(out.iter().all(|c| c.kind == log::CounterKind::ProcessExit));
        assert!(
            x.exits.is_empty() && x.sums.is_empty(),
            "forgotten once logged"
        );
        // A followed task still running: the rest is not 12's alone.
        let mut x = mk();
        x.forks.extend([(3, 11), (3, 12), (3, 14)]);
        let got: Vec<i32> = x.finish(3, 4000, true).iter().map(|c| c.pid).collect();
        assert_eq!(got, [11, 10]);
        // A target still running: the same.
        let mut x = mk();
        let got: Vec<i32> = x.finish(3, 4000, false).iter().map(|c| c.pid).collect();
        assert_eq!(got, [11, 10]);
        // Another PMC's records are left alone.
        let mut x = mk();
        assert!(x.finish(4, 10, true).is_empty());
        assert_eq!(x.exits.len(), 4);
    }

    /// log-proccsw: each switch sample of a switch group (leader: the context-switch event,
    /// id 77 = PMC 3; member id 78 = PMC 4) becomes one counter record per member with the
    /// slice's counts: the difference from the same counter's previous switch. With
    /// descendants there is one switch group per CPU (here also 87/88), each with its own
    /// cumulative count for the thread.
    #[test]
    fn switch_samples_become_slice_counters() {
        use crate::record::read_format as rf;
        let cfg = ParseConfig::new(
            st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::READ,
            rf::GROUP | rf::ID | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING,
            true,
        );
        let m = RingMeta {
            ids: vec![(77, 3), (78, 4), (87, 3), (88, 4)],
            switch_counts: true,
            ..meta()
        };
        // (switch event, tid, time, cpu, value, time enabled)
        let sample = |lead: u64, tid: u32, time: u64, cpu: u64, value: u64, en: u64| {
            let body = [
                lead,
                pid_tid(10, tid),
                time,
                cpu,
                2,
                en,
                en,
                1,
                lead,
                value,
                lead + 1,
            ];
            record(record_type::SAMPLE, 1, &body)
        };
        let mut csw = ProcCsw::default();
        let mut out = Vec::new();
        for bytes in [
            sample(77, 11, 100, 1, 1_000, 5_000),
            sample(77, 12, 150, 1, 700, 800),
            sample(87, 11, 170, 0, 300, 400),
            sample(77, 11, 200, 1, 1_600, 9_000),
        ] {
            let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
                panic!("a sample")
            };
            csw.counters(&s, &m, &mut out);
        }
        let got: Vec<_> = out
            .iter()
            .map(|c| (c.pmc_id, c.tid, c.time, c.cpu, c.value, c.time_enabled))
            .collect();
        assert_eq!(
            got,
            [
                (4, 11, 100, Some(1), 1_000, 5_000),
                (4, 12, 150, Some(1), 700, 800),
                (4, 11, 170, Some(0), 300, 400),
                (4, 11, 200, Some(1), 600, 4_000),
            ]
        );
        assert!(out
            .iter()
            .all(|c| c.pid == 10 && c.kind == log::CounterKind::ContextSwitch));
        // An exited thread is forgotten only after a complete pass that began after its exit
        // was seen (another CPU's ring may still hold its last switch).
        csw.exited(11);
        csw.end_pass();
        assert_eq!(csw.last.len(), 3, "thread 11 kept for one more pass");
        csw.end_pass();
        assert_eq!(csw.last.len(), 1, "thread 11 forgotten");
        csw.forget(&HashSet::from([4]));
        assert!(csw.last.is_empty());
        // Not a group read: nothing to log.
        let bytes = record(record_type::SAMPLE, 1, &[77, pid_tid(10, 11), 1]);
        let no_read = ParseConfig::new(st::IDENTIFIER | st::TID | st::TIME, 0, true);
        let Ok(Record::Sample(s)) = no_read.parse(&bytes) else {
            panic!("a sample")
        };
        let before = out.len();
        csw.counters(&s, &m, &mut out);
        assert_eq!(out.len(), before);
    }

    fn convert(bytes: &[u8]) -> Option<log::Record<'static>> {
        let m = meta();
        let r = cfg().parse(bytes).expect("parses");
        to_log(&r, &m, |id| m.pmc_of(id)).map(|r| r.into_owned())
    }

    #[test]
    fn sample_with_kernel_and_user_frames() {
        let body = [
            78,               // identifier
            0xffff_8000_1234, // ip
            pid_tid(10, 11),  // pid, tid
            500,              // time
            1,                // cpu, res
            4000,             // period
            6,                // callchain nr
            context::KERNEL,
            0xffff_8000_1234,
            0xffff_8000_5678,
            context::USER,
            0x40_1000,
            0x40_2000,
        ];
        let Some(log::Record::Sample(s)) = convert(&record(record_type::SAMPLE, 1, &body)) else {
            panic!("a sample")
        };
        assert_eq!(s.pmc_id, 4, "identifier 78 is PMC 4");
        assert_eq!(
            (s.pid, s.tid, s.cpu, s.time, s.period),
            (10, 11, Some(1), 500, 4000)
        );
        assert_eq!(
            s.callchain.to_vec(),
            [0xffff_8000_1234, 0xffff_8000_5678, 0x40_1000, 0x40_2000]
        );
        assert_eq!(s.kernel_frames, 2);

        // No callchain frames: the IP alone, kernel by the header's CPU mode.
        let body = [99, 0x40_1234, pid_tid(10, 10), 1, 0, 1, 0];
        let Some(log::Record::Sample(s)) = convert(&record(record_type::SAMPLE, 2, &body)) else {
            panic!("a sample")
        };
        assert_eq!(s.pmc_id, 3, "unknown identifier: the ring's PMC");
        assert_eq!(s.callchain.to_vec(), [0x40_1234]);
        assert_eq!(s.kernel_frames, 0);
    }

    #[test]
    fn task_records() {
        // FORK of a new process, FORK of a thread, EXIT of a thread and of a process.
        let fork = |pid: u32, ppid: u32, tid: u32, ptid: u32| {
            let mut b = vec![pid_tid(pid, ppid), pid_tid(tid, ptid), 9];
            b.extend(trailer(pid, tid, 9, 0, 77));
            b
        };
        match convert(&record(record_type::FORK, 0, &fork(20, 10, 20, 10))) {
            Some(log::Record::Fork(f)) => {
                assert_eq!((f.parent_pid, f.child_pid, f.child_tid), (10, 20, 20))
            }
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::FORK, 0, &fork(20, 20, 21, 20))) {
            Some(log::Record::ThreadCreate(t)) => assert_eq!((t.pid, t.tid), (20, 21)),
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::EXIT, 0, &fork(20, 20, 21, 20))) {
            Some(log::Record::ThreadExit(t)) => assert_eq!((t.pid, t.tid), (20, 21)),
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::EXIT, 0, &fork(20, 10, 20, 10))) {
            Some(log::Record::Exit(e)) => assert_eq!((e.pid, e.tid, e.time), (20, 20, 9)),
            other => panic!("{other:?}"),
        }
    }

    /// A shared in-memory sink.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_of_several_rings_reach_the_log_in_time_order() {
        let buf = Buf::default();
        let sink: LogSink = Box::new(buf.clone());
        let mut writer = Some(pmc_log::Writer::new(sink, &host_header()).unwrap());
        let mut error = None;
        let lost = |time: u64, cpu: u32| {
            log::Record::Lost(log::Lost {
                time,
                pmc_id: Some(1),
                cpu: Some(cpu),
                count: 1,
            })
        };
        let mut r = Reorder::default();
        // One pass: CPU 0's ring, then CPU 1's, each in its own order.
        for (t, cpu) in [(10, 0), (40, 0), (70, 0), (20, 1), (30, 1), (80, 1)] {
            r.push(lost(t, cpu));
        }
        // The pass began at 60: 70 and 80 may still have older company in the rings.
        r.flush(
            60,
            &mut writer,
            &mut error,
            &mut crate::unwind::Stage::default(),
            &mut ProcExit::default(),
        );
        assert_eq!(r.pending.len(), 2);
        // The next pass brings 65 from CPU 1; close flushes everything.
        r.push(lost(65, 1));
        r.flush(
            u64::MAX,
            &mut writer,
            &mut error,
            &mut crate::unwind::Stage::default(),
            &mut ProcExit::default(),
        );
        assert!(r.pending.is_empty() && error.is_none());
        writer.take().unwrap().finish().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        let reader = pmc_log::Reader::new(&bytes[..]).unwrap();
        let times: Vec<u64> = reader
            .records()
            .filter_map(|r| match r {
                log::Record::Lost(l) => Some(l.time),
                _ => None,
            })
            .collect();
        assert_eq!(times, [10, 20, 30, 40, 65, 70, 80]);
    }

    #[test]
    fn losses_become_lost_records() {
        let mut lost = vec![78, 123];
        lost.extend(trailer(0, 0, 7, 1, 78));
        match convert(&record(record_type::LOST, 0, &lost)) {
            Some(log::Record::Lost(l)) => {
                assert_eq!(
                    (l.pmc_id, l.cpu, l.count, l.time),
                    (Some(4), Some(1), 123, 7)
                )
            }
            other => panic!("{other:?}"),
        }
        let mut throttle = vec![8, 77, 0];
        throttle.extend(trailer(0, 0, 8, 0, 77));
        match convert(&record(record_type::THROTTLE, 0, &throttle)) {
            Some(log::Record::Lost(l)) => assert_eq!((l.pmc_id, l.count), (Some(3), 0)),
            other => panic!("{other:?}"),
        }
        let mut summary = SamplingSummary::default();
        let bytes = record(record_type::LOST, 0, &lost);
        let r = cfg().parse(&bytes).expect("parses");
        tally(&mut summary, &r, Some(1));
        assert_eq!(summary.lost, 123);
        assert_eq!(summary.by_cpu[&1].lost, 123);
    }

    #[test]
    fn only_executable_mappings_are_logged() {
        let mmap2 = |prot: u64| {
            let mut b = vec![
                pid_tid(5, 5),
                0x1000,
                0x2000,
                0,
                (8u64 << 32) | 1, // maj, min
                42,               // ino
                0,                // ino generation
                prot | (2 << 32), // prot, flags
            ];
            // "/bin/x\0" padded to 8 bytes
            b.push(u64::from_ne_bytes(*b"/bin/x\0\0"));
            b.extend(trailer(5, 5, 3, 0, 77));
            b
        };
        match convert(&record(record_type::MMAP2, 2, &mmap2(5))) {
            Some(log::Record::Map(m)) => {
                assert_eq!((m.pid, m.start, m.len), (5, 0x1000, 0x2000));
                assert_eq!(m.path.as_bytes(), b"/bin/x");
            }
            other => panic!("{other:?}"),
        }
        assert!(convert(&record(record_type::MMAP2, 2, &mmap2(3))).is_none());
    }

    #[test]
    fn header_has_host_facts() {
        let h = host_header();
        assert_eq!(h.backend, "linux-perf");
        assert_eq!(h.clock, log::Clock::Monotonic);
        assert!(h.page_size >= 4096);
        if crate::sys::HAVE_PERF_EVENT {
            assert!(h.cpu_count >= 1);
            assert!(!h.kernel_release.is_empty());
            assert!(h.start_time > 0 && h.start_wall_ns > 0);
        }
    }
}
