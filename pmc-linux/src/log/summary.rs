//! The [`SamplingSummary`]: what sampling produced and lost, per CPU.

use crate::record::Record;
use std::collections::BTreeMap;

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
    /// Of `lost`, records the kernel counted as lost (`PERF_FORMAT_LOST`, read when the PMCs
    /// stop) without ever reporting them in a `PERF_RECORD_LOST`: lost while draining was
    /// held up (the log's writer blocked on a slow pipe, socket or disk, or the process was
    /// stopped) and the events stopped before draining resumed. Each such loss is also a log
    /// `Lost` record, written at the stop.
    pub lost_unreported: u64,
    /// The kernel has no `PERF_FORMAT_LOST` (before Linux 6.0): `lost` holds only what its
    /// `PERF_RECORD_LOST`s reported, and may miss records lost while draining was held up.
    pub lost_count_incomplete: bool,
    /// Of `lost`, samples drained but dropped because the log's sink fell more than the
    /// spool's bound behind ([`DEFAULT_SPOOL_BYTES`](super::DEFAULT_SPOOL_BYTES), see
    /// [`Backend::set_log_spool_bytes`](crate::Backend::set_log_spool_bytes)): a pipe to a slow
    /// reader, a slow TCP peer or disk. Each such drop is also a log `Lost` record (no PMC, no
    /// CPU) while the log is open.
    pub lost_spool: u64,
    /// Records (samples and others) the spool dropped at its bound, whole pmc-log blocks at a
    /// time (the log shows them as missing blocks).
    pub spool_dropped: u64,
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
    pub(crate) fn cpu(&mut self, cpu: Option<u32>) -> Option<&mut CpuCounts> {
        cpu.map(|c| self.by_cpu.entry(c).or_default())
    }

    /// Adds another summary's counts into this one.
    pub fn merge(&mut self, other: &SamplingSummary) {
        self.samples += other.samples;
        self.lost += other.lost;
        self.lost_unreported += other.lost_unreported;
        self.lost_count_incomplete |= other.lost_count_incomplete;
        self.lost_spool += other.lost_spool;
        self.spool_dropped += other.spool_dropped;
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
        n.lost_unreported = s.lost_unreported;
        n.lost_count_incomplete = s.lost_count_incomplete;
        n.lost_spool = s.lost_spool;
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

pub(super) fn tally(summary: &mut SamplingSummary, r: &Record<'_>, ring_cpu: Option<u32>) {
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
