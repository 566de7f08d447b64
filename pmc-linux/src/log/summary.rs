//! [`SamplingDetails`]: pmc-core's [`SamplingSummary`] of what sampling produced and lost,
//! per CPU, with Linux's own counts.

use crate::record::Record;
use pmc_core::{CpuSampling, SamplingSummary};

/// What sampling produced so far: pmc-core's [`SamplingSummary`] (samples read, samples lost,
/// per CPU; this derefs to it) with Linux's own counts (side records, decoding errors,
/// discarded bytes, spool drops). Nothing is dropped silently: every loss is in here and in
/// the log.
///
/// ```
/// let mut d = pmc_linux::SamplingDetails::default();
/// d.samples += 3; // pmc-core's field, through Deref
/// d.errors += 1; // Linux's own
/// assert_eq!((d.summary.samples, d.errors), (3, 1));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingDetails {
    /// The backend-neutral summary ([`pmc_core::Backend::sampling_summary`]).
    pub summary: SamplingSummary,
    /// Records (samples and others) the spool dropped at its bound, whole pmc-log blocks at a
    /// time (the log shows them as missing blocks).
    pub spool_dropped: u64,
    /// Non-sample records converted (mappings, comms, forks, exits, counter values).
    pub side_records: u64,
    /// Records that could not be decoded, or ring corruption events (each also a log `Lost`).
    pub errors: u64,
    /// Bytes of ring data discarded after corruption.
    pub discarded_bytes: u64,
}

impl std::ops::Deref for SamplingDetails {
    type Target = SamplingSummary;
    fn deref(&self) -> &SamplingSummary {
        &self.summary
    }
}

impl std::ops::DerefMut for SamplingDetails {
    fn deref_mut(&mut self) -> &mut SamplingSummary {
        &mut self.summary
    }
}

impl SamplingDetails {
    pub(crate) fn cpu(&mut self, cpu: Option<u32>) -> Option<&mut CpuSampling> {
        cpu.map(|c| self.summary.by_cpu.entry(c).or_default())
    }

    /// `n` samples of `cpu`, counted as read, turned out unreadable (the log's backlog could
    /// not read them back): counted as lost instead.
    pub(crate) fn unread(&mut self, cpu: Option<u32>, n: u64) {
        self.summary.samples = self.summary.samples.saturating_sub(n);
        self.summary.lost = self.summary.lost.saturating_add(n);
        if let Some(c) = self.cpu(cpu) {
            c.samples = c.samples.saturating_sub(n);
            c.lost = c.lost.saturating_add(n);
        }
    }

    /// Adds another summary's counts into this one (the log's `log_records` are not summed).
    pub fn merge(&mut self, other: &SamplingDetails) {
        self.summary.merge(&other.summary);
        self.spool_dropped += other.spool_dropped;
        self.side_records += other.side_records;
        self.errors += other.errors;
        self.discarded_bytes += other.discarded_bytes;
    }
}

/// Counts samples into a summary a run of one CPU's samples at a time (one look-up of the
/// CPU's counts per run, not per sample); [`SampleTally::flush`] puts the last run in.
#[derive(Debug, Default)]
pub(super) struct SampleTally {
    cpu: Option<u32>,
    n: u64,
}

impl SampleTally {
    /// One sample of `cpu`.
    pub(super) fn add(&mut self, summary: &mut SamplingDetails, cpu: Option<u32>) {
        if cpu != self.cpu {
            self.flush(summary);
            self.cpu = cpu;
        }
        self.n += 1;
    }

    /// `n` samples of `cpu`.
    pub(super) fn add_n(&mut self, summary: &mut SamplingDetails, cpu: Option<u32>, n: u64) {
        if cpu != self.cpu {
            self.flush(summary);
            self.cpu = cpu;
        }
        self.n += n;
    }

    /// Puts the samples counted so far into `summary`.
    pub(super) fn flush(&mut self, summary: &mut SamplingDetails) {
        if self.n == 0 {
            return;
        }
        summary.samples += self.n;
        if let Some(c) = summary.cpu(self.cpu) {
            c.samples += self.n;
        }
        self.n = 0;
    }
}

pub(super) fn tally(summary: &mut SamplingDetails, r: &Record<'_>, ring_cpu: Option<u32>) {
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
