//! What sampling produced, in backend-neutral terms: [`SamplingSummary`].

use std::collections::BTreeMap;

/// Samples and losses of one CPU, in a [`SamplingSummary`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuSampling {
    /// Samples read.
    pub samples: u64,
    /// Samples the kernel dropped (its buffers were full).
    pub lost: u64,
    /// Times the kernel throttled an event for interrupting too often.
    pub throttled: u64,
}

impl CpuSampling {
    /// Counts for one CPU.
    ///
    /// ```
    /// let c = pmc::CpuSampling::new(100, 2, 1);
    /// assert_eq!((c.samples, c.lost, c.throttled), (100, 2, 1));
    /// ```
    pub fn new(samples: u64, lost: u64, throttled: u64) -> CpuSampling {
        CpuSampling {
            samples,
            lost,
            throttled,
        }
    }
}

/// What the sampling PMCs feeding a backend's log have produced so far:
/// samples read, samples lost (in total and per CPU), the log's own record
/// counts, and how DWARF unwinding went. Returned by
/// [`Backend::sampling_summary`](crate::Backend::sampling_summary) on the
/// backends that count these (Linux); the others return
/// [`ErrorKind::NotSupported`](crate::ErrorKind::NotSupported).
///
/// ```
/// use pmc::{Backend, ErrorKind};
///
/// /// "N samples, M lost", or nothing where the backend does not count them.
/// fn status(backend: &impl Backend) -> Option<String> {
///     match backend.sampling_summary() {
///         Ok(s) => Some(format!("{} samples, {} lost", s.samples, s.lost)),
///         Err(e) if e.kind() == ErrorKind::NotSupported => None,
///         Err(e) => Some(format!("no summary: {e}")),
///     }
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SamplingSummary {
    /// Samples read.
    pub samples: u64,
    /// Samples the kernel reported as lost because a buffer was full.
    pub lost: u64,
    /// Of `lost`, samples the kernel counted as lost but never reported
    /// with a loss record: lost while the log's reader was held up (its
    /// writer blocked on a slow pipe, socket or disk, or the process
    /// stopped), with the PMCs stopped before reading resumed.
    pub lost_unreported: u64,
    /// The count of lost samples may be incomplete: the kernel cannot say
    /// how many it dropped while the reader was held up (Linux before
    /// 6.0, without `PERF_FORMAT_LOST`).
    pub lost_count_incomplete: bool,
    /// Of `lost`, samples read but dropped because writing the log fell
    /// too far behind (the backend keeps a bounded amount in memory for a
    /// slow log reader or disk, then drops, and counts what it dropped).
    pub lost_spool: u64,
    /// Throttle events (the kernel lowered the sample rate; those samples
    /// are gone too).
    pub throttled: u64,
    /// Per CPU (samples without a CPU are not in here).
    pub by_cpu: BTreeMap<u32, CpuSampling>,
    /// Records written to the log (its header included).
    pub log_records: u64,
    /// Records that could not be written because the log failed (see
    /// [`Backend::log_error`](crate::Backend::log_error)).
    pub log_dropped: u64,
    /// Samples whose user callchain was unwound from a captured stack
    /// ([`CallGraph::Dwarf`](crate::CallGraph::Dwarf)).
    pub unwound: u64,
    /// Of those, unwinds that stopped before the stack's root.
    pub unwind_truncated: u64,
    /// Objects whose unwind tables could not be used, one `path: reason`
    /// line each.
    pub unwind_refused: Vec<String>,
}

impl SamplingSummary {
    /// An empty summary, for a backend to fill in field by field.
    ///
    /// ```
    /// let mut s = pmc::SamplingSummary::new();
    /// s.samples = 10;
    /// s.by_cpu.insert(0, pmc::CpuSampling::new(10, 0, 0));
    /// assert_eq!(s.lost, 0);
    /// ```
    pub fn new() -> SamplingSummary {
        SamplingSummary::default()
    }

    /// Adds another summary's counts into this one, per CPU too (`log_records` are the
    /// log's own and are not summed).
    ///
    /// ```
    /// let mut a = pmc::SamplingSummary::new();
    /// a.samples = 2;
    /// a.by_cpu.insert(0, pmc::CpuSampling::new(2, 0, 0));
    /// let mut b = pmc::SamplingSummary::new();
    /// b.samples = 3;
    /// b.lost = 1;
    /// b.by_cpu.insert(0, pmc::CpuSampling::new(3, 1, 0));
    /// a.merge(&b);
    /// assert_eq!((a.samples, a.lost, a.by_cpu[&0].samples), (5, 1, 5));
    /// ```
    pub fn merge(&mut self, other: &SamplingSummary) {
        self.samples += other.samples;
        self.lost += other.lost;
        self.lost_unreported += other.lost_unreported;
        self.lost_count_incomplete |= other.lost_count_incomplete;
        self.lost_spool += other.lost_spool;
        self.throttled += other.throttled;
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
