//! The backend and PMC traits: hwpmc's verbs.

use crate::alloc::{Allocation, Target};
use crate::error::{Error, ErrorKind, Op, Result};
use crate::event::EventSpec;
use crate::members::GroupReading;
use crate::reading::Reading;
use crate::summary::SamplingSummary;

/// Where a backend writes its sample log: any byte sink. The backend wraps
/// it in a `pmc_log` writer (or, on FreeBSD, converts hwpmc's own stream
/// into one).
pub type LogSink = Box<dyn std::io::Write + Send>;

/// The life-cycle state of a PMC (hwpmc's `PMC_STATE_*`, less FREE and
/// DELETED, which Rust ownership makes unobservable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum State {
    /// Allocated, never started (or stopped and never restarted).
    Allocated,
    /// Counting.
    Running,
    /// Started once, now stopped.
    Stopped,
}

/// What one part of a PMC counted: a CPU (system scope) or a target
/// process (process scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Instance {
    /// A CPU, for system-scope PMCs.
    Cpu(u32),
    /// A target process, for process-scope PMCs.
    Target(Target),
}

/// A [`Reading`] of one [`Instance`] of a PMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct InstanceReading {
    /// What was counted.
    pub instance: Instance,
    /// Its reading.
    pub reading: Reading,
}

/// The readings of every member of a [`Group`] on one [`Instance`], in
/// allocation order (leader first): what
/// [`Group::read_instances`] returns, one per CPU or target.
///
/// ```
/// use pmc::{GroupInstanceReading, Instance, Reading};
///
/// let i = GroupInstanceReading {
///     instance: Instance::Cpu(1),
///     readings: vec![Reading::new(2_000, 10, 10), Reading::new(500, 10, 10)],
/// };
/// // Instructions per cycle on CPU 1, if the leader counted cycles.
/// let ipc = i.readings[1].value as f64 / i.readings[0].value as f64;
/// assert_eq!(ipc, 0.25);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupInstanceReading {
    /// What was counted.
    pub instance: Instance,
    /// One reading per member, leader first.
    pub readings: Vec<Reading>,
}

/// One field of the native configuration a backend opened, for `pmcstat -v`
/// (on Linux, the non-zero `perf_event_attr` fields, by name).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NativeField {
    /// The field's native name (`config`, `sample_type`, `pm_ev`...).
    pub name: String,
    /// Its value, formatted as the native tool would.
    pub value: String,
}

/// A source of PMCs: the Linux perf_event backend, the FreeBSD hwpmc
/// backend, or a simulation of one.
///
/// Each backend crate exports a `Backend` struct, named after this trait,
/// with an inherent `Backend::open() -> Result<Backend>`: `pmc_linux::Backend`
/// and `pmc_freebsd::Backend`. The `pmc` facade names the native one
/// `pmc::Native`, so the implementation listed below as `impl Backend for
/// Backend` is this trait for that struct. Call the trait's methods on a
/// `pmc::Native` with the trait in scope:
///
/// ```
/// use pmc::Backend; // the trait: allocate, configure_log, list_events...
///
/// let backend = pmc::Native::open()?; // the struct's own constructor
/// println!("{}", backend.name());
/// # Ok::<(), pmc::Error>(())
/// ```
pub trait Backend: Send + Sync {
    /// The PMC type this backend allocates.
    type Pmc: Pmc;
    /// The group type this backend allocates.
    type Group: Group;

    /// A short name: `"linux-perf"`, `"freebsd-hwpmc"`.
    fn name(&self) -> &'static str;

    /// Allocates one PMC (hwpmc `PMC_OP_PMCALLOCATE`).
    ///
    /// A process-scope PMC is not attached to anything yet: attach it, or
    /// start it to attach it to the caller. A system-scope PMC counts on its
    /// CPUs once started.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoSuchEvent`](crate::ErrorKind::NoSuchEvent) (a PMU,
    /// term or tracepoint this machine lacks) or
    /// [`ErrorKind::NoPmu`](crate::ErrorKind::NoPmu) when the event cannot be
    /// resolved here (an unknown name fails earlier, in the parser, as
    /// [`ErrorKind::Parse`](crate::ErrorKind::Parse)); [`ErrorKind::Permission`](crate::ErrorKind::Permission)
    /// for system scope without the privilege;
    /// [`ErrorKind::NoSuchCpu`](crate::ErrorKind::NoSuchCpu) for an absent
    /// CPU; [`ErrorKind::TooManyOpenFiles`](crate::ErrorKind::TooManyOpenFiles).
    #[doc(alias = "PMC_OP_PMCALLOCATE")]
    #[doc(alias = "perf_event_open")]
    fn allocate(&self, allocation: &Allocation) -> Result<Self::Pmc>;

    /// Allocates PMCs that are scheduled onto the hardware together, so
    /// that ratios between them are meaningful. All members must share the
    /// scope; the first is the leader.
    ///
    /// Takes a [`GroupSpec`](crate::GroupSpec), whose [`Member`](crate::Member)
    /// handles then index the group's [`read_members`](crate::Group::read_members),
    /// or the allocations as a slice, array or `Vec`.
    fn allocate_group<A: AsRef<[Allocation]> + ?Sized>(
        &self,
        allocations: &A,
    ) -> Result<Self::Group>;

    /// Sends samples of sampling PMCs to `sink` (hwpmc
    /// `PMC_OP_CONFIGURELOG`). Replaces any earlier log, after flushing it.
    #[doc(alias = "PMC_OP_CONFIGURELOG")]
    fn configure_log(&self, sink: LogSink) -> Result<()>;

    /// Writes buffered samples out to the log (hwpmc `PMC_OP_FLUSHLOG`).
    #[doc(alias = "PMC_OP_FLUSHLOG")]
    fn flush_log(&self) -> Result<()>;

    /// Flushes and closes the log, writing its clean-close marker (hwpmc
    /// `PMC_OP_CLOSELOG`).
    #[doc(alias = "PMC_OP_CLOSELOG")]
    fn close_log(&self) -> Result<()>;

    /// Appends a user-data record to the log (hwpmc `PMC_OP_WRITELOG`).
    #[doc(alias = "PMC_OP_WRITELOG")]
    fn write_log(&self, user_data: u32) -> Result<()>;

    /// Every event this machine offers, grouped by source, each saying
    /// whether it can be opened here and if not why (`pmcstat -L`).
    /// Tracepoints (possibly thousands) only when `tracepoints` is true.
    fn list_events(&self, tracepoints: bool) -> Vec<crate::info::EventInfo>;

    /// What works here and why not, each "no" with its fix
    /// (`pmcstat --diagnose`).
    fn diagnose(&self) -> Vec<crate::info::Check>;

    /// The error that failed this backend's log, if one did (a full disk, a
    /// closed pipe).
    ///
    /// It is there as soon as the backend meets it: a caller polling this
    /// while sampling learns of the failure at once rather than at
    /// [`close_log`](Backend::close_log). After it the log takes nothing
    /// more; the PMCs keep running until their owner stops them.
    ///
    /// The default, for a backend whose log cannot fail between calls, is
    /// `None`.
    ///
    /// ```
    /// use pmc::Backend;
    ///
    /// /// Stops sampling early when the log has failed.
    /// fn log_still_good(backend: &impl Backend) -> bool {
    ///     match backend.log_error() {
    ///         Some(e) => {
    ///             eprintln!("the log failed: {e}");
    ///             false
    ///         }
    ///         None => true,
    ///     }
    /// }
    /// ```
    fn log_error(&self) -> Option<Error> {
        None
    }

    /// What the sampling PMCs feeding this backend's log have produced so
    /// far: samples read and lost, per CPU, records logged and dropped, DWARF
    /// unwinding (see [`SamplingSummary`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend that does not count
    /// these (the default; FreeBSD's hwpmc keeps no such counts: its losses
    /// are only in the log).
    ///
    /// ```
    /// use pmc::Backend;
    ///
    /// fn losses(backend: &impl Backend) -> Option<u64> {
    ///     backend.sampling_summary().ok().map(|s| s.lost)
    /// }
    /// ```
    fn sampling_summary(&self) -> Result<SamplingSummary> {
        Err(not_supported(
            Op::Log,
            format!(
                "the {} backend does not count samples and losses (Backend::sampling_summary)",
                self.name()
            ),
            "count the Sample and Lost records of the log (pmc_log::Reader) instead",
        ))
    }

    /// Sets the size of each sample buffer mapped by sampling PMCs allocated from now on,
    /// in pages (a power of two): perf's `--mmap-pages`.
    ///
    /// Larger buffers lose fewer samples in bursts; smaller ones fit under a lower
    /// locked-memory limit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend whose buffers are not the caller's to size
    /// (the default; FreeBSD's hwpmc sizes its log buffers with the `kern.hwpmc.logbuffersize`
    /// and `kern.hwpmc.nbuffers_pcpu` tunables); [`ErrorKind::InvalidArgument`] for a count
    /// that is not a power of two.
    ///
    /// ```
    /// use pmc::Backend;
    ///
    /// fn small_buffers(backend: &impl Backend) {
    ///     if let Err(e) = backend.set_buffer_pages(16) {
    ///         eprintln!("keeping the default buffer size: {e}");
    ///     }
    /// }
    /// ```
    fn set_buffer_pages(&self, pages: usize) -> Result<()> {
        Err(not_supported(
            Op::Mmap,
            format!(
                "the {} backend does not size sample buffers ({pages} pages asked; \
                 Backend::set_buffer_pages)",
                self.name()
            ),
            "leave the buffer size to the system",
        ))
    }

    /// Whether [`Rate::Frequency`](crate::Rate::Frequency) is the kernel's own (perf's
    /// `sample_freq`: the period adapts to the event's rate as it runs) rather than emulated
    /// by choosing one fixed period up front (the default; FreeBSD's hwpmc has reload
    /// counts only). A caller picking a default rate asks for a frequency where it is native,
    /// as `perf record` does, and for a period of the event otherwise.
    fn native_frequency(&self) -> bool {
        false
    }
}

/// The error of a capability a backend does not have.
fn not_supported(op: Op, message: String, help: &str) -> Error {
    Error::new(ErrorKind::NotSupported, op, message).with_help(help)
}

/// One allocated PMC. Dropping it releases it.
///
/// The semantics are hwpmc(4)'s on every backend:
///
/// * [`start`](Pmc::start) on a process-scope PMC with no target attaches it
///   to the calling process first;
/// * a PMC counts only between [`start`](Pmc::start) and [`stop`](Pmc::stop),
///   for every target kind: a [`Target::Exec`] child that execs before
///   `start` is not counted until `start`, and reads as zero with the state
///   [`State::Allocated`] meanwhile;
/// * [`set_count`](Pmc::set_count) and [`write`](Pmc::write) on a running PMC
///   fail with [`ErrorKind::Busy`](crate::ErrorKind::Busy);
/// * attaching to a target already attached fails with
///   [`ErrorKind::AlreadyAttached`](crate::ErrorKind::AlreadyAttached), and
///   detaching from one that is not with
///   [`ErrorKind::NotAttached`](crate::ErrorKind::NotAttached);
/// * attach and detach are for process scope only
///   ([`ErrorKind::InvalidState`](crate::ErrorKind::InvalidState) otherwise).
pub trait Pmc: Send {
    /// What this PMC was allocated as.
    fn allocation(&self) -> &Allocation;

    /// The event as it is really counted, for labels: the allocated event
    /// with the privilege modes the backend applied. It differs from
    /// `allocation().event` when the backend narrowed an event that named no
    /// modes: on Linux an unprivileged process at `perf_event_paranoid` >= 2
    /// counts user mode only, so `context-switches` is counted, and
    /// displayed, as `context-switches:u` (as `perf stat` labels it). To
    /// count the kernel too, allocate with privileges (CAP_PERFMON, or a
    /// lower `perf_event_paranoid`).
    ///
    /// ```
    /// use pmc::Pmc;
    ///
    /// /// The label a report shows for `pmc`: what was really counted.
    /// fn label(pmc: &impl Pmc) -> String {
    ///     pmc.counted_event().to_string() // e.g. "context-switches:u"
    /// }
    /// ```
    fn counted_event(&self) -> EventSpec {
        self.allocation().event.clone()
    }

    /// Its state.
    fn state(&self) -> State;

    /// Attaches a process-scope PMC to a target (hwpmc `PMC_OP_PMCATTACH`).
    #[doc(alias = "PMC_OP_PMCATTACH")]
    fn attach(&mut self, target: Target) -> Result<()>;

    /// Detaches it from a target (hwpmc `PMC_OP_PMCDETACH`). What the target
    /// counted so far stays in the PMC's total.
    #[doc(alias = "PMC_OP_PMCDETACH")]
    fn detach(&mut self, target: Target) -> Result<()>;

    /// The targets currently attached.
    fn targets(&self) -> Vec<Target>;

    /// Starts counting (hwpmc `PMC_OP_PMCSTART`; perf `PERF_EVENT_IOC_ENABLE`).
    #[doc(alias = "PMC_OP_PMCSTART")]
    fn start(&mut self) -> Result<()>;

    /// Stops counting (hwpmc `PMC_OP_PMCSTOP`; perf `PERF_EVENT_IOC_DISABLE`).
    #[doc(alias = "PMC_OP_PMCSTOP")]
    fn stop(&mut self) -> Result<()>;

    /// Reads the total over every instance (hwpmc `PMC_OP_PMCRW` with
    /// `PMC_F_OLDVALUE`). Allowed while running.
    #[doc(alias = "PMC_OP_PMCRW")]
    fn read(&self) -> Result<Reading>;

    /// Reads each instance separately: per CPU for system scope, per target
    /// for process scope.
    fn read_instances(&self) -> Result<Vec<InstanceReading>>;

    /// Sets the count to `value`, returning the previous count (hwpmc
    /// `PMC_OP_PMCRW` with `PMC_F_NEWVALUE | PMC_F_OLDVALUE`). The PMC must
    /// be stopped.
    #[doc(alias = "pmc_rw")]
    fn write(&mut self, value: u64) -> Result<u64>;

    /// Sets the reload count: the sampling period for sampling PMCs, the
    /// starting count for counting PMCs (hwpmc `PMC_OP_PMCSETCOUNT`). The PMC
    /// must be stopped.
    #[doc(alias = "setcount")]
    #[doc(alias = "PMC_OP_PMCSETCOUNT")]
    fn set_count(&mut self, count: u64) -> Result<()>;

    /// The native configuration this PMC opened, field by field.
    fn native_config(&self) -> Vec<NativeField>;

    /// Writes this PMC's current counts into the backend's log as interval
    /// counter records, one per CPU (system scope) or target (process scope)
    /// (`pmcstat -w` with `-O`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend that cannot (the default;
    /// FreeBSD: hwpmc's log has no such record);
    /// [`ErrorKind::InvalidState`] when no log is configured; read errors as
    /// [`read_instances`](Pmc::read_instances).
    ///
    /// ```
    /// use pmc::{ErrorKind, Pmc};
    ///
    /// /// Logs the counts where the backend can; elsewhere reads them.
    /// fn checkpoint(pmc: &impl Pmc) -> pmc::Result<()> {
    ///     match pmc.log_counts() {
    ///         Err(e) if e.kind() == ErrorKind::NotSupported => {
    ///             println!("{:?}", pmc.read_instances()?);
    ///             Ok(())
    ///         }
    ///         r => r,
    ///     }
    /// }
    /// ```
    fn log_counts(&self) -> Result<()> {
        Err(not_supported(
            Op::Log,
            "this backend cannot write a PMC's counts into its log (Pmc::log_counts)".into(),
            "read them with Pmc::read_instances",
        ))
    }

    /// Makes a sampling PMC deliver its samples to this process (read them
    /// with [`samples`](Pmc::samples)) instead of the backend's log.
    ///
    /// Call it before [`start`](Pmc::start).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend that cannot (the default;
    /// FreeBSD: hwpmc delivers samples to its log only);
    /// [`ErrorKind::InvalidArgument`] for a counting PMC.
    ///
    /// ```
    /// use pmc::{Backend, ErrorKind, Pmc};
    ///
    /// /// Samples in process where the backend can, else into a log.
    /// fn arm<B: Backend>(backend: &B, pmc: &mut B::Pmc, log: std::fs::File) -> pmc::Result<bool> {
    ///     match pmc.sample_in_process() {
    ///         Ok(()) => Ok(true),
    ///         Err(e) if e.kind() == ErrorKind::NotSupported => {
    ///             backend.configure_log(Box::new(log))?;
    ///             Ok(false)
    ///         }
    ///         Err(e) => Err(e),
    ///     }
    /// }
    /// ```
    fn sample_in_process(&mut self) -> Result<()> {
        Err(not_supported(
            Op::Allocate,
            "this backend delivers samples to its log only (Pmc::sample_in_process)".into(),
            "configure a log with Backend::configure_log and read it with pmc-log",
        ))
    }

    /// The samples delivered since the last call, decoded, in the order the
    /// kernel wrote them (per CPU; sort by [`Sample::time`](crate::Sample)
    /// for one order).
    ///
    /// Allowed while running.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] as for
    /// [`sample_in_process`](Pmc::sample_in_process);
    /// [`ErrorKind::InvalidState`] when `sample_in_process` was not called.
    ///
    /// ```no_run
    /// use pmc::{Allocation, Backend, Pmc, Rate};
    ///
    /// fn main() -> pmc::Result<()> {
    ///     let backend = pmc::Native::open()?;
    ///     // cpu-clock's frequency: about 1000 samples per second of CPU time.
    ///     let a = Allocation::sampling("cpu-clock".parse()?, Rate::Frequency(1000));
    ///     let mut pmc = backend.allocate(&a)?;
    ///     pmc.sample_in_process()?; // Linux; FreeBSD's hwpmc samples into a log only
    ///     pmc.start()?; // samples this process
    ///     let mut x = 0u64;
    ///     for i in 0..50_000_000u64 {
    ///         x = x.wrapping_mul(31).wrapping_add(i);
    ///     }
    ///     for s in pmc.samples()? {
    ///         println!("{} {:#x} ({} frames)", s.tid, s.ip, s.callchain.len());
    ///     }
    ///     println!("{x}");
    ///     Ok(())
    /// }
    /// ```
    fn samples(&mut self) -> Result<Vec<crate::Sample>> {
        Err(not_supported(
            Op::Read,
            "this backend delivers samples to its log only (Pmc::samples)".into(),
            "configure a log with Backend::configure_log and read it with pmc-log",
        ))
    }

    /// Releases the PMC, reporting any error (dropping it releases too, but
    /// silently). hwpmc `PMC_OP_PMCRELEASE`.
    #[doc(alias = "PMC_OP_PMCRELEASE")]
    fn release(self) -> Result<()>
    where
        Self: Sized;
}

/// PMCs scheduled together. Attach, detach, start and stop apply to every
/// member at once; reads return one [`Reading`] per member, in allocation
/// order, taken at the same instant where the backend allows (Linux:
/// `PERF_FORMAT_GROUP`).
pub trait Group: Send {
    /// The members' allocations, leader first, as given to
    /// [`Backend::allocate_group`] (the [`Member`](crate::Member) handles
    /// of [`read_members`](Group::read_members) are bound to them).
    fn allocations(&self) -> &[Allocation];
    /// The group's state.
    fn state(&self) -> State;
    /// Attaches every member to a target.
    fn attach(&mut self, target: Target) -> Result<()>;
    /// Detaches every member from a target.
    fn detach(&mut self, target: Target) -> Result<()>;
    /// Starts every member together.
    fn start(&mut self) -> Result<()>;
    /// Stops every member together.
    fn stop(&mut self) -> Result<()>;
    /// Reads every member, summed over instances, into a new vector.
    fn read(&self) -> Result<Vec<Reading>> {
        let mut out = vec![Reading::default(); self.allocations().len()];
        self.read_into(&mut out)?;
        Ok(out)
    }
    /// Reads every member into `out` (which must have one slot per member),
    /// without allocating.
    fn read_into(&self, out: &mut [Reading]) -> Result<()>;
    /// Reads every member into a [`GroupReading`], indexed by
    /// [`Member`](crate::Member) handles.
    ///
    /// The handles are those of the [`GroupSpec`](crate::GroupSpec) the group
    /// was allocated from; another group's handle finds nothing
    /// ([`GroupReading::get`] is `None`, [`GroupReading::member`] an error).
    ///
    /// ```no_run
    /// use pmc::{Allocation, Backend, Group, GroupSpec, Target};
    ///
    /// fn page_faults_per_cpu_ms<B: Backend>(backend: &B, work: impl FnOnce()) -> pmc::Result<f64> {
    ///     let mut spec = GroupSpec::new();
    ///     let clock = spec.add(Allocation::counting("task-clock".parse()?));
    ///     let faults = spec.add(Allocation::counting("page-faults".parse()?));
    ///     let mut group = backend.allocate_group(&spec)?;
    ///     group.attach(Target::Current)?;
    ///     group.start()?;
    ///     work();
    ///     group.stop()?;
    ///     let r = group.read_members()?;
    ///     Ok(r.ratio(faults, clock).unwrap_or(0.0) * 1e6)
    /// }
    /// ```
    fn read_members(&self) -> Result<GroupReading> {
        self.read()
            .map(|r| GroupReading::for_members(self.allocations(), r))
    }

    /// Reads every member on each instance separately: per CPU for system
    /// scope, per target for process scope.
    ///
    /// The group counterpart of [`Pmc::read_instances`]. As there, counts kept from detached targets
    /// and a [`write`](Pmc::write) base are in [`read`](Group::read)'s totals
    /// only.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend that cannot (the default;
    /// on FreeBSD, a process-scope group with several targets: hwpmc reads
    /// only their total); read errors as [`read_into`](Group::read_into).
    ///
    /// ```no_run
    /// use pmc::{Allocation, Backend, Cpus, Group, Instance};
    ///
    /// /// Page faults per task-clock millisecond, per CPU.
    /// fn faults_per_ms<B: Backend>(backend: &B) -> pmc::Result<Vec<(u32, f64)>> {
    ///     let system = |e: &str| -> pmc::Result<Allocation> {
    ///         Ok(Allocation::counting(e.parse()?).system(Cpus::All))
    ///     };
    ///     let mut g = backend.allocate_group(&[system("cpu-clock")?, system("page-faults")?])?;
    ///     g.start()?;
    ///     std::thread::sleep(std::time::Duration::from_millis(100));
    ///     g.stop()?;
    ///     Ok(g.read_instances()?
    ///         .into_iter()
    ///         .filter_map(|i| match i.instance {
    ///             Instance::Cpu(cpu) => {
    ///                 let ms = i.readings[0].value as f64 / 1e6;
    ///                 Some((cpu, i.readings[1].value as f64 / ms.max(1e-9)))
    ///             }
    ///             Instance::Target(_) => None,
    ///         })
    ///         .collect())
    /// }
    /// ```
    fn read_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        Err(not_supported(
            Op::Read,
            "this backend cannot read a group per instance (Group::read_instances)".into(),
            "read the totals with Group::read, or allocate one group per CPU or target",
        ))
    }

    /// Writes each member's current total into the backend's log as an
    /// interval counter record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotSupported`] from a backend that cannot (the default);
    /// [`ErrorKind::InvalidState`] when no log is configured; read errors as
    /// [`read_into`](Group::read_into).
    ///
    /// ```
    /// use pmc::Group;
    ///
    /// fn checkpoint(group: &impl Group) -> bool {
    ///     group.log_counts().is_ok()
    /// }
    /// ```
    fn log_counts(&self) -> Result<()> {
        Err(not_supported(
            Op::Log,
            "this backend cannot write a group's counts into its log (Group::log_counts)".into(),
            "read them with Group::read",
        ))
    }

    /// Each member's native configuration, leader first, as
    /// [`Pmc::native_config`] gives one PMC's (Linux: each member's
    /// `perf_event_attr` as opened). Empty where the backend does not say (the
    /// default).
    fn native_configs(&self) -> Vec<Vec<NativeField>> {
        Vec::new()
    }
}
