//! [`LinuxPmc`]: pmc-core's `Pmc` over one [`Counters`], and what it adds for
//! [`crate::FastReader`] (`self_monitoring`).

#[cfg(feature = "sampling")]
use crate::counter::read::reads_lost;
#[cfg(feature = "sampling")]
use crate::counter::rings::Delivery;
use crate::counter::Counters;
#[cfg(feature = "sampling")]
use crate::log::{OwnedSample, SamplingDetails};
use crate::shared::Shared;
use crate::sys::{RealSys, Sys};
use pmc_core::{
    Allocation, Instance, InstanceReading, NativeField, Reading, Result, State, Target,
};
#[cfg(feature = "sampling")]
use pmc_core::{Error, ErrorKind, Op};
use std::os::fd::AsFd;
use std::sync::Arc;

/// One counting or sampling PMC on Linux.
pub struct LinuxPmc<S: Sys = RealSys> {
    c: Counters<S>,
}

impl<S: Sys> LinuxPmc<S> {
    pub(crate) fn new(allocs: &[Allocation], shared: Arc<Shared<S>>) -> Result<LinuxPmc<S>> {
        Ok(LinuxPmc {
            c: Counters::new(allocs, shared)?,
        })
    }
}

impl<S: Sys> std::fmt::Debug for LinuxPmc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPmc")
            .field("allocation", &self.c.members[0].alloc)
            .field("state", &self.c.life.state())
            .field("instances", &self.c.fds.instances().len())
            .finish()
    }
}

impl<S: Sys> pmc_core::Pmc for LinuxPmc<S> {
    fn allocation(&self) -> &Allocation {
        &self.c.members[0].alloc
    }
    fn counted_event(&self) -> pmc_core::EventSpec {
        self.c.members[0].counted_event()
    }
    fn state(&self) -> State {
        self.c.life.state()
    }
    fn attach(&mut self, target: Target) -> Result<()> {
        self.c.attach(target)
    }
    fn detach(&mut self, target: Target) -> Result<()> {
        self.c.detach(target)
    }
    fn targets(&self) -> Vec<Target> {
        self.c.fds.targets()
    }
    fn start(&mut self) -> Result<()> {
        self.c.start()
    }
    fn stop(&mut self) -> Result<()> {
        self.c.stop()
    }
    fn read(&self) -> Result<Reading> {
        self.c.read_one()
    }
    fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        self.c.read_instances()
    }
    fn write(&mut self, value: u64) -> Result<u64> {
        self.c.write(value)
    }
    fn set_count(&mut self, count: u64) -> Result<()> {
        self.c.set_count(count)
    }
    /// As the inherent `LinuxPmc::log_counts`.
    #[cfg(feature = "sampling")]
    fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }
    fn native_config(&self) -> Vec<NativeField> {
        let m = &self.c.members[0];
        m.native_fields(&m.opened)
    }
    /// Makes this sampling PMC deliver its samples to its owner instead of the log: after
    /// [`start`](pmc_core::Pmc::start), [`samples`](pmc_core::Pmc::samples) drains its rings. Call
    /// before the first start. No log needs to be configured. An example
    /// is at [`Pmc::samples`](pmc_core::Pmc::samples).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] for a counting PMC or one already started with the log.
    #[cfg(feature = "sampling")]
    fn sample_in_process(&mut self) -> Result<()> {
        self.c.set_local()
    }

    /// The samples published since the last call, decoded (non-blocking: drains what the rings
    /// hold now). Losses are counted in `LinuxPmc::sample_summary`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] unless [`sample_in_process`](pmc_core::Pmc::sample_in_process)
    /// was called.
    #[cfg(feature = "sampling")]
    fn samples(&mut self) -> Result<Vec<OwnedSample>> {
        // After the drain, the kernel's own lost counts: losses at the end of a run have no
        // PERF_RECORD_LOST (the kernel writes it at the ring's next output).
        let complete = reads_lost(&self.c.members);
        match self.c.rings.as_mut().map(|r| &mut r.delivery) {
            Some(Delivery::Local(Some(l))) => {
                let out = l.drain();
                let counts = self.c.fds.kernel_lost(&self.c.members).unwrap_or_default();
                if let Some(Delivery::Local(Some(l))) =
                    self.c.rings.as_mut().map(|r| &mut r.delivery)
                {
                    l.kernel_lost(&counts, complete);
                }
                Ok(out)
            }
            Some(Delivery::Local(None)) => Ok(Vec::new()),
            _ => Err(Error::new(
                ErrorKind::InvalidState,
                Op::Read,
                "this PMC's samples go to the log, not to its owner",
            )
            .with_help("call sample_in_process before start")),
        }
    }

    fn release(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl<S: Sys> LinuxPmc<S> {
    /// Writes this PMC's current counts into the backend's log as interval
    /// [`Counter`](pmc_log::record::Counter) records, one per CPU (system scope) or target
    /// (process scope), after its descriptor (`pmcstat -w` with `-O`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] when no log is configured; read errors as
    /// [`read_instances`](pmc_core::Pmc::read_instances).
    #[cfg(feature = "sampling")]
    pub fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }

    /// Samples read and lost so far by the in-process reader (`None` for PMCs feeding the log:
    /// see [`Backend::sampling_details`](crate::Backend::sampling_details)).
    #[cfg(feature = "sampling")]
    pub fn sample_summary(&self) -> Option<SamplingDetails> {
        match self.c.rings.as_ref().map(|r| &r.delivery) {
            Some(Delivery::Local(Some(l))) => Some(l.summary.clone()),
            _ => None,
        }
    }

    /// The raw fd of the first instance's leader, for benchmarks comparing
    /// against a bare `read(2)`.
    #[doc(hidden)]
    pub fn first_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.c
            .fds
            .instances()
            .first()
            .and_then(|i| i.threads.first())
            .and_then(|s| s.first())
            .map(|f| f.as_fd())
    }

    /// For [`crate::FastReader`]: the one fd of a counting PMC that
    /// counts only the calling thread, and what `read` adds to its count;
    /// or why there is no such fd.
    pub(crate) fn self_monitoring(&self) -> std::result::Result<SelfMonitoring<'_>, &'static str> {
        let c = &self.c;
        let a = &c.members[0].alloc;
        if c.members.len() != 1 || a.mode.is_sampling() || a.scope.is_system() {
            return Err("it is not a single process-scope counting PMC");
        }
        if a.flags.contains(pmc_core::Flags::DESCENDANTS) {
            return Err("it also counts descendants");
        }
        let [inst] = c.fds.instances() else {
            return Err("it is not attached to exactly one target (start it first)");
        };
        let [set] = inst.threads.as_slice() else {
            return Err("it counts more than one thread");
        };
        // Only a Target::CurrentThread set counts one thread alone (a process's sets are
        // inherited into its new threads, and the kernel maps no inherited per-task event);
        // the caller must be that thread.
        let sys = &c._shared.sys;
        if inst.instance != Instance::Target(Target::CurrentThread) {
            return Err("it is not attached to Target::CurrentThread");
        }
        if inst.thread != Some(sys.gettid()) {
            return Err("it does not count the calling thread");
        }
        Ok(SelfMonitoring {
            fd: set.first().ok_or("it has no fd")?.as_fd(),
            base: c.base[0],
            retired: c.retired[0],
        })
    }
}

/// See [`LinuxPmc::self_monitoring`].
pub(crate) struct SelfMonitoring<'a> {
    pub fd: std::os::fd::BorrowedFd<'a>,
    pub base: u64,
    pub retired: Reading,
}
