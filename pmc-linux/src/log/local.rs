//! In-process sampling: rings read by the PMC's owner, decoded into [`OwnedSample`]s.

use super::source::{drain_ring, kernel_lost, Drained, RingSource};
use super::SamplingDetails;
use crate::record::{self, Record};

/// One decoded sample, owning its callchain: pmc-core's neutral [`pmc_core::Sample`], what
/// [`Pmc::samples`](pmc_core::Pmc::samples) returns.
pub type OwnedSample = pmc_core::Sample;

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

/// Rings read by the PMC's owner instead of a log (in-process sampling).
#[derive(Debug, Default)]
pub(crate) struct LocalRings {
    pub(crate) rings: Vec<RingSource>,
    pub(crate) summary: SamplingDetails,
    /// Samples drained before the owner asked for them (see [`LocalRings::hold`]).
    held: Vec<OwnedSample>,
}

impl LocalRings {
    /// Drains every ring now, keeping the samples for the next [`LocalRings::drain`]: before
    /// a change of period, so that the samples taken at the old one get the old one (they do
    /// not carry it: `RingSource::fixed_periods`). Bounded by the rings' size.
    pub(crate) fn hold(&mut self) {
        let mut now = self.drain();
        self.held.append(&mut now);
    }

    /// Drains every ring into decoded samples (after those held).
    pub(crate) fn drain(&mut self) -> Vec<OwnedSample> {
        let mut out = std::mem::take(&mut self.held);
        for ring in &mut self.rings {
            // Losses to corruption are counted in the summary's `errors`.
            drain_ring(ring, &mut self.summary, false, &mut |meta, r| {
                if let Drained::Record(Record::Sample(s)) = r {
                    if let Some(o) = to_owned_sample(s, meta.cpu) {
                        out.push(o);
                    }
                }
            });
        }
        out
    }

    /// The kernel's lost counts of the events, `(event id, lost)` (`PERF_FORMAT_LOST`), read
    /// after a drain: what they show beyond the rings' `PERF_RECORD_LOST`s is counted in the
    /// summary (see `Hub::kernel_lost`).
    pub(crate) fn kernel_lost(&mut self, counts: &[(u64, u64)], complete: bool) {
        if !complete {
            self.summary.lost_count_incomplete = true;
        }
        for ring in &mut self.rings {
            let k: u64 = counts
                .iter()
                .filter(|(id, _)| ring.ids.iter().any(|(i, _)| i == id))
                .fold(0u64, |a, (_, n)| a.saturating_add(*n));
            kernel_lost(ring, k, &mut self.summary);
        }
    }
}
