//! A mapped ring buffer with its metadata ([`RingSource`]), and the loop that drains it.

use super::summary::{tally, SampleTally};
use super::{MmapRing, SamplingDetails};
use crate::errno;
use crate::record::{record_type, ParseConfig, Record, SampleFields};
use crate::ring::RingReader;
use crate::sys::{facts, Rlimit, Sys};
use pmc_core::{Error, ErrorKind, Op, Result};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a PMC's rings carry: each post-processor says which of these it wants
/// ([`PostProcessor::wants`](super::post::PostProcessor::wants)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RingPurpose {
    /// Samples (a sampling PMC).
    Samples,
    /// The `PERF_RECORD_READ`s of a counting PMC with log-procexit (`inherit_stat`): the
    /// counts of its tasks at their exits (see [`ExitReads`](super::procexit::ExitReads)).
    ExitReads,
    /// A log-proccsw switch group's context-switch samples, carrying the group's counts:
    /// logged as counter records rather than samples.
    SwitchCounts,
}

/// A mapped ring buffer and what its records mean.
pub(crate) struct RingSource {
    pub(super) reader: RingReader<MmapRing>,
    /// A duplicate of the ring owner's fd, for `poll(2)` from the drain thread.
    pub(super) poll_fd: Arc<OwnedFd>,
    pub(super) cfg: ParseConfig,
    /// Kernel event id to log PMC id, for every event writing into this ring.
    pub(super) ids: Vec<(u64, u32)>,
    /// PMC id for records without an identifier.
    pub(super) default_pmc: u32,
    /// The CPU of a per-CPU ring.
    pub(super) cpu: Option<u32>,
    /// The PMC owning this ring (its first member's log id).
    pub(crate) token: u32,
    /// The event hung up (its task exited): drained, no longer polled.
    pub(super) hung_up: bool,
    /// What its records are.
    pub(crate) purpose: RingPurpose,
    /// The PMC keeps its samples' user stacks in the log (`CallGraph::DwarfRaw`) instead of
    /// unwinding them.
    pub(crate) raw_stacks: bool,
    /// The PMC's events are inherited by child processes (descendants).
    pub(crate) cfg_inherit: bool,
    /// The ring is a system-wide PMC's (its events count every task on its CPU).
    pub(crate) system_wide: bool,
    /// The callchains of samples taken in the kernel keep their user frames
    /// (`Flags::USERCALLCHAIN`); otherwise they are cut after the kernel's, as hwpmc's.
    pub(crate) user_in_kernel: bool,
    /// The losses counted in the summary for this ring so far: its `PERF_RECORD_LOST`s, plus
    /// what the kernel's own count (`PERF_FORMAT_LOST`) showed beyond them.
    pub(super) lost_accounted: u64,
    /// Of those, counted from the kernel's count with no `PERF_RECORD_LOST` yet: a record
    /// that reports them later (the kernel writes it at the ring's next output, e.g. after
    /// a restart) is not counted twice.
    pub(super) lost_unreported: u64,
    /// The most the ring can have held between the last drain pass's snapshot of
    /// `data_head` and its new `data_tail`: that pass's batch plus what the kernel wrote
    /// while the pass read it.
    pub(super) last_peak: u64,
    /// The ring may have been full since the drain pass before the last one: the kernel may
    /// have lost records into it, and its lost count is worth a `read(2)` (see
    /// [`drain_ring`]).
    pub(super) may_have_lost: bool,
    /// Kernel event id to the fixed sampling period of the events whose samples do not carry
    /// their period (`PERF_SAMPLE_PERIOD` is asked for with a frequency only): the drain
    /// fills it in. Shared with the PMC, which changes it at `set_count`.
    pub(super) fixed_periods: Vec<(u64, Arc<AtomicU64>)>,
    /// log-procexit of a counting PMC: the targets' events writing into this ring, for
    /// telling their records apart and learning when each target is gone.
    pub(super) exit_fds: Vec<ExitFd>,
}

/// log-procexit of a counting PMC: one target's event on one CPU (a duplicate of its fd).
/// The kernel hangs it up (`POLLHUP`, whether enabled or not) once its task and every task
/// that inherited it have exited; its count then is final, and takes in theirs. See
/// [`ExitReads`](super::procexit::ExitReads).
pub(crate) struct ExitFd {
    /// The target's pid.
    pub(super) target: i32,
    /// The event's kernel id (the id its inherited copies' records carry too).
    pub(super) id: u64,
    pub(super) fd: OwnedFd,
    /// Seen hung up.
    pub(super) hung_up: bool,
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
        sys: &dyn Sys,
        fd: BorrowedFd<'_>,
        data_pages: usize,
        cfg: ParseConfig,
        token: u32,
        cpu: Option<u32>,
    ) -> Result<RingSource> {
        let ring = sys
            .map_ring(fd, data_pages)
            .map_err(|e| mmap_error(sys, &e, data_pages))?;
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
            purpose: RingPurpose::Samples,
            raw_stacks: false,
            cfg_inherit: false,
            system_wide: false,
            user_in_kernel: true,
            lost_accounted: 0,
            lost_unreported: 0,
            last_peak: 0,
            may_have_lost: true,
            fixed_periods: Vec::new(),
            exit_fds: Vec::new(),
        })
    }

    /// log-procexit of a counting PMC: `fd`, kernel id `id`, is target `target`'s event
    /// writing into this ring (see [`ExitFd`]).
    pub(crate) fn add_exit_fd(&mut self, target: i32, id: u64, fd: BorrowedFd<'_>) -> Result<()> {
        let fd = fd.try_clone_to_owned().map_err(|e| {
            let mut err = Error::new(
                ErrorKind::TooManyOpenFiles,
                Op::Mmap,
                format!("cannot duplicate a perf fd to follow its target's exit: {e}"),
            );
            if let Some(n) = e.raw_os_error() {
                err = err.with_errno(n);
            }
            err
        })?;
        self.exit_fds.push(ExitFd {
            target,
            id,
            fd,
            hung_up: false,
        });
        Ok(())
    }

    /// Says that records with kernel id `id` belong to log PMC `pmc_id`.
    pub(crate) fn add_id(&mut self, id: u64, pmc_id: u32) {
        self.ids.push((id, pmc_id));
    }

    /// Says that the samples of kernel id `id` are taken every `period` events (in the
    /// kernel's unit) and do not carry it: the drain gives them that period.
    pub(crate) fn add_fixed_period(&mut self, id: u64, period: Arc<AtomicU64>) {
        self.fixed_periods.push((id, period));
    }
}

/// The period of a sample that does not carry one: its event's fixed period (of `periods`,
/// a ring's [`RingSource::fixed_periods`]), or, for a sample without an identifier, the
/// ring's only fixed period. `None` if unknown.
fn fixed_period(periods: &[(u64, Arc<AtomicU64>)], id: Option<u64>) -> Option<u64> {
    let p = match (id, periods) {
        (Some(id), all) => all.iter().find(|(i, _)| *i == id).map(|(_, p)| p),
        (None, [(_, p)]) => Some(p),
        (None, _) => None,
    };
    p.map(|p| p.load(Ordering::Relaxed)).filter(|p| *p > 0)
}

/// A ring's metadata, detached from its reader while a batch borrows it.
pub(super) struct RingMeta {
    pub(super) ids: Vec<(u64, u32)>,
    pub(super) default_pmc: u32,
    pub(super) cpu: Option<u32>,
    pub(super) purpose: RingPurpose,
    pub(super) raw_stacks: bool,
    /// The ring's events are inherited by child processes (descendants).
    pub(super) inherit: bool,
    /// Kernel samples keep the user part of their callchains.
    pub(super) user_in_kernel: bool,
    /// log-procexit of a counting PMC: kernel event id to the target it counts.
    pub(super) targets: Vec<(u64, i32)>,
}

fn mmap_error(sys: &dyn Sys, e: &std::io::Error, pages: usize) -> Error {
    let errno = e.raw_os_error();
    let kib = pages * sys.page_size() / 1024;
    let mut err = match errno {
        Some(errno::EPERM) => {
            let mlock =
                facts::mlock_kb(sys).map_or_else(|| "unknown".to_owned(), |v| format!("{v} KiB"));
            let rlimit = sys
                .rlimit_soft(Rlimit::MemLock)
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
                fitting_pages(sys, pages)
            ))
        }
        Some(errno::ENOMEM) => Error::new(
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
fn fitting_pages(sys: &dyn Sys, pages: usize) -> usize {
    let page = sys.page_size() as u64;
    let budget = facts::mlock_kb(sys).map_or(516 * 1024, |kb| kb.saturating_mul(1024));
    let fit = (budget.saturating_sub(page) / page).max(1);
    let pow = 1u64 << (63 - fit.leading_zeros());
    usize::try_from(pow).unwrap_or(1).min((pages / 2).max(1))
}

/// A record as [`drain_ring`] hands it on.
pub(super) enum Drained<'r, 'a> {
    /// Decoded by the general parser.
    Record(&'r Record<'a>),
    /// A sample decoded on the fast path (see [`drain_ring`]).
    Sample(&'r SampleFields<'a>),
}

/// The largest record the kernel writes into a ring (`perf_event_header.size` is a `u16`).
const MAX_RECORD: u64 = 1 << 16;

/// Drains `ring`, handing each decoded record, with the ring's metadata, to `f`. Returns how
/// many records could not be read (ring corruption, undecodable records): their contents are
/// lost, and the caller reports it.
///
/// Sets [`RingSource::may_have_lost`]: whether the kernel may have lost records into this
/// ring since the previous pass's snapshot of `data_head`. It loses a record only when the
/// ring has no room for it (`perf_output_begin`; pmc never pauses a ring). Between the
/// previous pass's snapshot and its new `data_tail` the ring held at most that pass's batch
/// plus what the kernel wrote while the pass read it ([`RingSource::last_peak`]); from
/// then to this pass's snapshot, at most this batch. With at least a record's worth
/// ([`MAX_RECORD`]) of room to spare at both peaks, nothing was lost, and the caller can
/// skip reading the kernel's lost count, a `read(2)` that costs a cross-CPU interrupt when
/// the event runs on another CPU.
///
/// With `fast_samples` (no post-processor looks at this ring's samples as drained), samples
/// of a fixed-word layout ([`SampleLayout`](crate::record::SampleLayout): every
/// frame-pointer sampling PMC's) are decoded without the general parser and handed to `f`
/// as [`Drained::Sample`]; every other record as [`Drained::Record`].
pub(super) fn drain_ring(
    ring: &mut RingSource,
    summary: &mut SamplingDetails,
    fast_samples: bool,
    f: &mut dyn FnMut(&RingMeta, Drained<'_, '_>),
) -> u64 {
    let before = ring.reader.stats();
    let mut d = Decoder::new(ring, fast_samples, true);
    {
        let periods = &ring.fixed_periods;
        let size = ring.reader.data_size() as u64;
        let mut batch = ring.reader.batch();
        ring.may_have_lost = may_lose(batch.remaining(), ring.last_peak, size);
        ring.last_peak = batch.remaining();
        while let Some(rec) = batch.next_record() {
            let Ok(rec) = rec else { continue };
            d.record(rec.bytes, periods, summary, f);
        }
    }
    // The batch is committed: what the kernel wrote while it was read is pending now.
    ring.last_peak = ring.last_peak.saturating_add(ring.reader.pending());
    let mut bad = d.finish(ring, summary);
    let after = ring.reader.stats();
    bad += after.errors.saturating_sub(before.errors);
    summary.errors += bad;
    summary.discarded_bytes += after.discarded_bytes.saturating_sub(before.discarded_bytes);
    bad
}

/// Whether a ring of `size` bytes may have lost records: its fill reached `span` (this
/// batch) or `last_peak` (the pass before's), without a record's worth of room left.
fn may_lose(span: u64, last_peak: u64, size: u64) -> bool {
    span.max(last_peak).saturating_add(MAX_RECORD) > size
}

/// What [`copy_ring`] copied of a ring.
#[derive(Debug, Clone, Copy)]
pub(super) struct Copied {
    /// The length of the records copied, whole and back to back.
    pub(super) len: usize,
    /// Records that could not be read (ring corruption): counted, their contents lost.
    pub(super) bad: u64,
    /// The ring may have lost records (see [`RingSource::may_have_lost`]).
    pub(super) may_have_lost: bool,
    /// The samples among the records (counted in the summary at the copy).
    pub(super) samples: u64,
}

/// Drains `ring` without decoding it: hands its records, whole and back to back, to `keep`
/// (in at most two slices: the ring's data area wraps), to be decoded later by
/// [`replay_ring`] (the hub's backlog). Counts its samples (by their headers) into the
/// summary now, so that the counts of a deferred log stay current; everything else is
/// counted at the replay. `None`, with nothing consumed, if `keep` could not keep them.
pub(super) fn copy_ring(
    ring: &mut RingSource,
    summary: &mut SamplingDetails,
    keep: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Option<Copied> {
    let before = ring.reader.stats();
    let counted = ring.purpose == RingPurpose::Samples;
    let mut samples = 0u64;
    let (len, peak) = {
        let size = ring.reader.data_size() as u64;
        let mut batch = ring.reader.batch();
        let span = batch.remaining();
        let from = batch.mark();
        let (a, b) = batch.take_all(&mut |h| {
            samples += u64::from(counted && h.kind == record_type::SAMPLE);
        });
        let len = a.len() + b.len();
        if !keep(a, b) {
            batch.rewind(from);
            return None;
        }
        (len, (span, may_lose(span, ring.last_peak, size)))
    };
    (ring.last_peak, ring.may_have_lost) = peak;
    ring.last_peak = ring.last_peak.saturating_add(ring.reader.pending());
    let mut tally = SampleTally::default();
    tally.add_n(summary, ring.cpu, samples);
    tally.flush(summary);
    let after = ring.reader.stats();
    let bad = after.errors.saturating_sub(before.errors);
    summary.errors += bad;
    summary.discarded_bytes += after.discarded_bytes.saturating_sub(before.discarded_bytes);
    Some(Copied {
        len,
        bad,
        may_have_lost: ring.may_have_lost,
        samples,
    })
}

/// Decodes the records [`copy_ring`] copied from `ring` (`bytes`), as [`drain_ring`] would
/// have then, handing each to `f`; their samples were counted at the copy. Returns how many
/// could not be decoded.
pub(super) fn replay_ring(
    ring: &mut RingSource,
    bytes: &[u8],
    summary: &mut SamplingDetails,
    fast_samples: bool,
    f: &mut dyn FnMut(&RingMeta, Drained<'_, '_>),
) -> u64 {
    let mut d = Decoder::new(ring, fast_samples, false);
    let mut rest = bytes;
    let mut cut = 0u64;
    while let Some(h) = rest.get(..8) {
        let size = usize::from(u16::from_ne_bytes([h[6], h[7]]));
        let Some((rec, tail)) = rest.split_at_checked(size).filter(|_| size >= 8) else {
            // Not what copy_ring wrote: the rest cannot be cut into records.
            cut = 1;
            break;
        };
        d.record(rec, &ring.fixed_periods, summary, f);
        rest = tail;
    }
    let bad = d.finish(ring, summary) + cut;
    summary.errors += bad;
    bad
}

/// One ring's records decoded, one after another: the per-record work of [`drain_ring`] and
/// [`replay_ring`], with the ring's metadata detached while it runs.
struct Decoder {
    cfg: ParseConfig,
    layout: Option<crate::record::SampleLayout>,
    meta: RingMeta,
    samples: SampleTally,
    /// Samples are counted here (not already at the copy).
    count_samples: bool,
    accounted: u64,
    unreported: u64,
    bad: u64,
}

impl Decoder {
    fn new(ring: &mut RingSource, fast_samples: bool, count_samples: bool) -> Decoder {
        let cfg = ring.cfg;
        Decoder {
            cfg,
            layout: fast_samples.then(|| cfg.sample_layout()).flatten(),
            meta: RingMeta {
                ids: std::mem::take(&mut ring.ids),
                default_pmc: ring.default_pmc,
                cpu: ring.cpu,
                purpose: ring.purpose,
                raw_stacks: ring.raw_stacks,
                inherit: ring.cfg_inherit,
                user_in_kernel: ring.user_in_kernel,
                targets: ring.exit_fds.iter().map(|e| (e.id, e.target)).collect(),
            },
            samples: SampleTally::default(),
            count_samples,
            accounted: ring.lost_accounted,
            unreported: ring.lost_unreported,
            bad: 0,
        }
    }

    /// One record's bytes, header included. Inlined into each loop (the drain's hot path:
    /// as a call of its own, the sample's fields were zeroed by a `memset` call per record,
    /// ~90 instructions a sample under callgrind).
    #[inline(always)]
    fn record(
        &mut self,
        bytes: &[u8],
        periods: &[(u64, Arc<AtomicU64>)],
        summary: &mut SamplingDetails,
        f: &mut dyn FnMut(&RingMeta, Drained<'_, '_>),
    ) {
        let meta = &self.meta;
        let mut s = crate::record::SampleFields::default();
        if self
            .layout
            .as_ref()
            .is_some_and(|l| l.decode_into(bytes, &mut s))
        {
            if s.period.is_none() {
                s.period = fixed_period(periods, s.identifier.or(s.id));
            }
            if self.count_samples {
                self.samples.add(summary, s.cpu.or(meta.cpu));
            }
            f(meta, Drained::Sample(&s));
            return;
        }
        match self.cfg.parse(bytes) {
            Ok(mut r) => {
                if let Record::Sample(s) = &mut r {
                    if s.period.is_none() {
                        s.period = fixed_period(periods, s.identifier.or(s.id));
                    }
                }
                if let Record::Lost(l) = &mut r {
                    // Losses already counted from the kernel's count are not counted
                    // (nor logged) again.
                    let known = l.lost.min(self.unreported);
                    self.unreported -= known;
                    l.lost -= known;
                    self.accounted = self.accounted.saturating_add(l.lost);
                    if l.lost == 0 {
                        return;
                    }
                }
                // A switch group's samples are counter readings, not samples.
                match &r {
                    Record::Sample(_) if meta.purpose == RingPurpose::SwitchCounts => {}
                    Record::Sample(s) => {
                        if self.count_samples {
                            self.samples.add(summary, s.cpu.or(meta.cpu));
                        }
                    }
                    r => tally(summary, r, meta.cpu),
                }
                f(meta, Drained::Record(&r));
            }
            Err(_) => self.bad += 1,
        }
    }

    /// Gives the ring its metadata back, with the losses accounted; returns how many records
    /// could not be decoded.
    fn finish(mut self, ring: &mut RingSource, summary: &mut SamplingDetails) -> u64 {
        self.samples.flush(summary);
        ring.ids = self.meta.ids;
        (ring.lost_accounted, ring.lost_unreported) = (self.accounted, self.unreported);
        self.bad
    }
}

/// The kernel's count of `ring`'s lost records (`PERF_FORMAT_LOST`, summed over the events
/// writing into it) is `kernel`: counts what it shows beyond the losses already counted
/// into `summary`, and returns that many (0 if none).
pub(super) fn kernel_lost(
    ring: &mut RingSource,
    kernel: u64,
    summary: &mut SamplingDetails,
) -> u64 {
    let extra = kernel.saturating_sub(ring.lost_accounted);
    if extra == 0 {
        return 0;
    }
    ring.lost_accounted += extra;
    ring.lost_unreported += extra;
    summary.lost += extra;
    summary.lost_unreported += extra;
    if let Some(c) = summary.cpu(ring.cpu) {
        c.lost += extra;
    }
    extra
}

impl RingMeta {
    pub(super) fn pmc_of(&self, id: Option<u64>) -> u32 {
        id.and_then(|id| self.ids.iter().find(|(i, _)| *i == id).map(|(_, p)| *p))
            .unwrap_or(self.default_pmc)
    }

    /// The target whose events wrote a record carrying kernel id `id` (log-procexit of a
    /// counting PMC): the ring's only target when the id is unknown, else 0 (unknown).
    pub(super) fn target_of(&self, id: Option<u64>) -> i32 {
        let by_id = id.and_then(|id| self.targets.iter().find(|(i, _)| *i == id));
        match (by_id, self.targets.as_slice()) {
            (Some(&(_, t)), _) => t,
            (None, [(_, t), rest @ ..]) if rest.iter().all(|(_, o)| o == t) => *t,
            _ => 0,
        }
    }
}
