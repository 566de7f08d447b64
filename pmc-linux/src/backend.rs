//! The backend: pmc-core's [`Backend`](pmc_core::Backend) over perf_event, generic over the
//! system seam ([`Sys`]) and monomorphised.

use crate::counter::{LinuxGroup, LinuxPmc, MAX_GROUP_MEMBERS};
#[cfg(feature = "sampling")]
use crate::log::SamplingDetails;
#[cfg(not(feature = "sampling"))]
use crate::shared::not_built;
use crate::shared::Shared;
use crate::sys::{RealSys, Sys};
use pmc_core::{Allocation, Error, ErrorKind, LogSink, Op, Result};
#[cfg(feature = "sampling")]
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The Linux perf_event backend.
///
/// ```
/// use pmc_core::{Allocation, Backend as _, Pmc as _};
/// # fn main() -> pmc_core::Result<()> {
/// let backend = pmc_linux::Backend::open()?;
/// let mut pmc = backend.allocate(&Allocation::counting("task-clock".parse()?))?;
/// pmc.start()?;
/// let v: u64 = (0..100_000u64).sum();
/// pmc.stop()?;
/// assert!(v > 0 && pmc.read()?.value > 0);
/// # Ok(()) }
/// ```
///
/// Generic over the system seam and monomorphised: `Backend` is `Backend<RealSys>`, whose
/// reads are direct system calls (no vtable, no dispatch); [`Backend::with_sys`] runs the same
/// code over another [`Sys`] (the fake kernel, feature `fake-kernel`).
pub struct Backend<S: Sys = RealSys> {
    shared: Arc<Shared<S>>,
}

impl<S: Sys> Clone for Backend<S> {
    fn clone(&self) -> Self {
        Backend {
            shared: self.shared.clone(),
        }
    }
}

impl Default for Backend<RealSys> {
    /// The real kernel, as [`Backend::open`] (without its check for Linux).
    fn default() -> Backend {
        Backend::new()
    }
}

impl<S: Sys> std::fmt::Debug for Backend<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("pmc_linux::Backend").finish_non_exhaustive()
    }
}

impl Backend<RealSys> {
    /// The backend over the real kernel (as [`Backend::open`], without its check for Linux:
    /// elsewhere every call fails with `ENOSYS`).
    ///
    /// ```
    /// let backend = pmc_linux::Backend::new();
    /// # let _ = backend;
    /// ```
    pub fn new() -> Backend {
        Backend::on(RealSys)
    }

    /// Opens the backend. Nothing is opened in the kernel until a PMC is
    /// allocated.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unsupported`] on systems other than Linux.
    pub fn open() -> Result<Backend> {
        if !crate::sys::HAVE_PERF_EVENT {
            return Err(Error::new(
                ErrorKind::Unsupported,
                Op::Open,
                "the perf_event backend needs Linux",
            ));
        }
        Ok(Backend::new())
    }
}

impl<S: Sys + Clone> Backend<S> {
    /// A backend over another implementation of the system calls: a fake kernel in tests (see
    /// the `fake-kernel` feature), shared with the test as an `Arc`.
    #[doc(hidden)]
    pub fn with_sys(sys: S) -> Backend<S> {
        Backend::on(sys)
    }

    fn on(sys: S) -> Backend<S> {
        Backend {
            shared: Arc::new(Shared::new(sys)),
        }
    }
}

impl<S: Sys> Backend<S> {
    /// The error that failed this backend's log, if one did (a full disk, a closed pipe):
    /// `ErrorKind::Os` with the errno, and the `std::io::Error` (its `kind()`, e.g.
    /// `StorageFull`) as its source. It is here within [`DRAIN_PERIOD`](crate::log::DRAIN_PERIOD)
    /// of the failing write, so a caller polling it learns of the failure at once rather than
    /// at [`close_log`](pmc_core::Backend::close_log).
    ///
    /// After the first write error the log takes nothing more (nothing written later could
    /// then hide what came before; the file ends with the block that was being written, cut
    /// where the error struck). Sampling goes on: the drain thread keeps emptying the rings
    /// (so the kernel does not start dropping and the process's memory stays flat) and counts
    /// every record it could not log in [`SamplingSummary::log_dropped`](pmc_core::SamplingSummary::log_dropped). The library does not
    /// stop the PMCs itself because they belong to the caller, who may still be reading their
    /// counts; stopping is the caller's decision (pmcstat stops sampling and exits non-zero).
    /// A new [`configure_log`](pmc_core::Backend::configure_log) starts a fresh log.
    #[cfg(feature = "sampling")]
    pub fn log_error(&self) -> Option<Error> {
        self.shared.hub.log_error()
    }

    /// Samples read and lost so far by the sampling PMCs feeding this backend's log, per CPU
    /// (PMCs read in-process keep their own: [`LinuxPmc::sample_summary`]), with Linux's own
    /// counts (side records, decoding errors, discarded bytes). The portable subset is
    /// [`pmc_core::Backend::sampling_summary`].
    ///
    /// ```
    /// use pmc_core::Backend as _;
    /// # fn main() -> pmc_core::Result<()> {
    /// let b = pmc_linux::Backend::open()?;
    /// let d = b.sampling_details();
    /// assert_eq!(d.samples, b.sampling_summary()?.samples);
    /// assert_eq!(d.errors, 0);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "sampling")]
    pub fn sampling_details(&self) -> SamplingDetails {
        self.shared.hub.summary()
    }

    /// Sets how far (in bytes) writing the log may fall behind draining the rings, for logs
    /// configured from now on: the drain thread never waits on the log's sink (a pipe to a slow
    /// reader, a TCP peer, a slow disk); it queues sealed blocks in memory up to this bound
    /// (default [`DEFAULT_SPOOL_BYTES`](crate::DEFAULT_SPOOL_BYTES)), then drops whole blocks and counts their
    /// samples as lost ([`SamplingSummary::lost_spool`](pmc_core::SamplingSummary::lost_spool)). 0 restores the default.
    ///
    /// ```
    /// let backend = pmc_linux::Backend::open()?;
    /// backend.set_log_spool_bytes(256 << 20); // a quarter GiB for a slow network peer
    /// # Ok::<(), pmc_core::Error>(())
    /// ```
    #[cfg(feature = "sampling")]
    pub fn set_log_spool_bytes(&self, bytes: usize) {
        self.shared.hub.set_spool_bytes(bytes);
    }

    /// Lets the drain defer decoding the rings of logs configured from now on: while
    /// sampling goes on, each drain pass then only copies its rings' records, and decodes
    /// them into the log once more than `bytes` are held or the oldest copy is older than
    /// `max_age`, and at every [`flush_log`](pmc_core::Backend::flush_log),
    /// [`close_log`](pmc_core::Backend::close_log), stop, `set_count` or record written
    /// into the log. `bytes` of 0 (the default) defers nothing.
    ///
    /// This is `perf record`'s trade: the CPU time billed to the profiler while sampling
    /// goes on is smaller, because the kernel bills the sampling interrupts that land on a
    /// CPU to whatever runs there (without `CONFIG_IRQ_TIME_ACCOUNTING`), and decoding
    /// later runs after sampling stopped. The cost is memory (up to `bytes`) and a log file
    /// that lags the rings by up to `max_age`: a process killed with `SIGKILL` loses what
    /// was held. Samples are counted in [`sampling_details`](Backend::sampling_details) as
    /// they are copied; other records and losses when they are decoded.
    ///
    /// Only passes over the rings of system-wide PMCs whose samples have frame-pointer or no
    /// call chains are deferred (no user stacks, no tracepoint data, no log-procexit or
    /// log-proccsw): with any other ring the drain decodes as it goes. Per process, the
    /// sampling interrupts only the target's threads, and deferring would only add the copy.
    /// The records wait in unnamed temporary files (`O_TMPFILE` in `$TMPDIR`, mode 0600);
    /// where one cannot be created, nothing is deferred.
    ///
    /// ```
    /// let backend = pmc_linux::Backend::open()?;
    /// backend.set_log_backlog(64 << 20, std::time::Duration::from_secs(5));
    /// # Ok::<(), pmc_core::Error>(())
    /// ```
    #[cfg(feature = "sampling")]
    pub fn set_log_backlog(&self, bytes: usize, max_age: std::time::Duration) {
        self.shared.hub.set_backlog(crate::log::BacklogBound {
            bytes,
            age: max_age,
        });
    }

    /// Bounds how long [`flush_log`](pmc_core::Backend::flush_log) and
    /// [`close_log`](pmc_core::Backend::close_log) wait for a log sink that takes nothing (a
    /// FIFO or pipe whose reader stalled, a TCP peer that stopped reading), for the log
    /// configured now and later ones: once the sink has taken no byte for `wait`, the close
    /// gives up with an `Op::Log` error (its source's kind `TimedOut`), the blocks still
    /// queued are not written and their samples are counted as lost
    /// ([`SamplingSummary::lost_spool`](pmc_core::SamplingSummary::lost_spool)). `None` (the
    /// default) waits as long as the sink takes: a slow reader still gets everything. A
    /// program stopping on a signal sets it so that a stalled reader cannot hold its exit.
    ///
    /// ```
    /// let backend = pmc_linux::Backend::open()?;
    /// backend.set_log_close_wait(Some(std::time::Duration::from_secs(2)));
    /// # Ok::<(), pmc_core::Error>(())
    /// ```
    #[cfg(feature = "sampling")]
    pub fn set_log_close_wait(&self, wait: Option<std::time::Duration>) {
        self.shared.hub.set_close_wait(wait);
    }

    /// Sets the size of the data area of each sample ring buffer mapped by PMCs allocated from
    /// now on, in pages (a power of two; default [`DEFAULT_RING_PAGES`](crate::DEFAULT_RING_PAGES),
    /// [`PERF_RING_PAGES`](crate::PERF_RING_PAGES) without a locked-memory limit). Larger rings
    /// lose fewer samples in bursts; their memory is locked and counts against
    /// `kernel.perf_event_mlock_kb` and `RLIMIT_MEMLOCK`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] unless `pages` is a power of two.
    #[cfg(feature = "sampling")]
    pub fn set_ring_pages(&self, pages: usize) -> Result<()> {
        if !pages.is_power_of_two() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Mmap,
                format!("a ring buffer needs a power-of-two number of pages, got {pages}"),
            ));
        }
        self.shared.ring_pages.store(pages, Ordering::Relaxed);
        Ok(())
    }
}

/// pmc-core's [`Backend`](pmc_core::Backend) trait, implemented by this crate's `Backend`
/// struct (`pmc_linux::Backend`, which the `pmc` facade names `pmc::Native` on Linux): the
/// struct is named after the trait it implements, so this reads `impl Backend for Backend`.
impl<S: Sys> pmc_core::Backend for Backend<S> {
    type Pmc = LinuxPmc<S>;
    type Group = LinuxGroup<S>;

    fn name(&self) -> &'static str {
        "linux-perf"
    }

    fn allocate(&self, allocation: &Allocation) -> Result<LinuxPmc<S>> {
        LinuxPmc::new(std::slice::from_ref(allocation), self.shared.clone())
    }

    fn allocate_group<A: AsRef<[Allocation]> + ?Sized>(
        &self,
        allocations: &A,
    ) -> Result<LinuxGroup<S>> {
        let allocations = allocations.as_ref();
        if allocations.is_empty() || allocations.len() > MAX_GROUP_MEMBERS {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                format!(
                    "a group needs 1 to {MAX_GROUP_MEMBERS} members, got {}",
                    allocations.len()
                ),
            ));
        }
        if allocations.iter().any(|a| a.scope != allocations[0].scope) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "every member of a group must have the same scope",
            ));
        }
        LinuxGroup::new(allocations, self.shared.clone())
    }

    fn configure_log(&self, sink: LogSink) -> Result<()> {
        #[cfg(feature = "sampling")]
        return self.shared.hub.configure(sink);
        #[cfg(not(feature = "sampling"))]
        {
            drop(sink);
            Err(not_built(Op::Log, "the sample log"))
        }
    }

    fn flush_log(&self) -> Result<()> {
        #[cfg(feature = "sampling")]
        return self.shared.hub.flush();
        #[cfg(not(feature = "sampling"))]
        Err(not_built(Op::Log, "the sample log"))
    }

    fn close_log(&self) -> Result<()> {
        #[cfg(feature = "sampling")]
        return self.shared.hub.close();
        #[cfg(not(feature = "sampling"))]
        Err(not_built(Op::Log, "the sample log"))
    }

    fn list_events(&self, tracepoints: bool) -> Vec<pmc_core::info::EventInfo> {
        crate::info::list_events(&self.shared.sys, tracepoints)
    }

    fn diagnose(&self) -> Vec<pmc_core::info::Check> {
        crate::info::diagnose(&self.shared.sys)
    }

    /// As the inherent `Backend::log_error`.
    #[cfg(feature = "sampling")]
    fn log_error(&self) -> Option<Error> {
        self.shared.hub.log_error()
    }

    /// As the inherent `Backend::set_ring_pages`.
    #[cfg(feature = "sampling")]
    fn set_buffer_pages(&self, pages: usize) -> Result<()> {
        self.set_ring_pages(pages)
    }

    /// perf_event's `freq` bit: the kernel adapts each event's period to `sample_freq`.
    fn native_frequency(&self) -> bool {
        true
    }

    /// The backend-neutral part of `Backend::sampling_details`
    /// (which also counts side records, decoding errors and discarded bytes).
    #[cfg(feature = "sampling")]
    fn sampling_summary(&self) -> Result<pmc_core::SamplingSummary> {
        Ok(self.shared.hub.summary().summary)
    }

    fn write_log(&self, user_data: u32) -> Result<()> {
        #[cfg(feature = "sampling")]
        return self.shared.hub.write_user(user_data);
        #[cfg(not(feature = "sampling"))]
        {
            let _ = user_data;
            Err(not_built(Op::Log, "the sample log"))
        }
    }
}
