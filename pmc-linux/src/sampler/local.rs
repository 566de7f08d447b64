//! In-process sampling: rings read by the PMC's owner, decoded into [`OwnedSample`]s.

use super::source::{drain_ring, RingSource};
use super::SamplingSummary;
use crate::record::{self, Record};

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
