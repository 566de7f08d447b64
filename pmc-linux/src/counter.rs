//! Counting PMCs on perf_event: the hwpmc verbs emulated over fds.
//!
//! One `Counters` value holds a PMC or a group: its members, and for each
//! instance (a CPU for system scope, a target for process scope) one set of
//! fds per thread, leader first. A single PMC is a group of one.
//!
//! # Where Linux emulates hwpmc
//!
//! * **Deferred open.** perf_event_open needs the target at open time, so a
//!   process-scope allocation opens nothing but a disabled probe on the
//!   calling thread (to report a bad event at allocate time, as hwpmc does);
//!   each [`attach`](pmc_core::Pmc::attach) opens one fd per thread of the
//!   target.
//! * **Process targets.** Another process ([`Target::Pid`], [`Target::Exec`])
//!   is counted whole, as hwpmc counts a process: every thread present at
//!   attach time, and the threads it creates later (`inherit` with
//!   `inherit_thread`, Linux 5.13+; older kernels get the threads present at
//!   attach time only). With [`Flags::DESCENDANTS`](pmc_core::Flags::DESCENDANTS)
//!   (plain `inherit`) its child processes too. [`Target::Current`] is every
//!   thread of the calling process at attach time, without inheritance (so
//!   its fds can be mapped, e.g. for rdpmc); threads created later need
//!   `DESCENDANTS`.
//! * **write / set_count** on counting PMCs: `PERF_EVENT_IOC_RESET` plus a
//!   kept base value; on sampling PMCs set_count is `PERF_EVENT_IOC_PERIOD`.
//! * **detach** reads the target's final counts into a kept total, then
//!   closes its fds.
//! * **Exec targets** ([`Target::Exec`], a command launched paused before
//!   its exec) are opened with `enable_on_exec`, so that a PMC started before
//!   the exec counts the command from its first instruction, as `perf stat`
//!   does. The counting window is still hwpmc's, from `start` to `stop`: an
//!   instance whose exec came before the first `start` reads as zero until
//!   then, and `start` reopens it (as a [`Target::Pid`] is opened, its
//!   mappings synthesized into the log) without what the kernel counted
//!   since the exec; a `stop` before the exec reopens it without
//!   `enable_on_exec`, so the exec cannot start it again. (In-process
//!   sampling keeps its rings at such a `stop`: its samples from a later
//!   exec are not removed.)
//!
//! # Sampling PMCs
//!
//! A sampling PMC's events carry `sample_id_all`, `PERF_SAMPLE_IDENTIFIER`,
//! `use_clockid` with `CLOCK_MONOTONIC`, a wakeup watermark of a quarter ring,
//! and, on each fd set's leader, the tracking bits (`mmap`/`mmap2`, `comm`,
//! `comm_exec`, `task`). At start their ring buffers are mapped ([`crate::sampler`]):
//!
//! * system scope: one ring per CPU;
//! * the calling process without descendants: one ring per thread (`cpu = -1`);
//! * another process, or descendants (`inherit`): the kernel will not map an
//!   inherited per-task event, so, as `perf record` does, one fd set per
//!   (thread, CPU) and one ring per CPU;
//! * group members and the other events of a CPU write into the first ring of
//!   that CPU (or thread) through `PERF_EVENT_IOC_SET_OUTPUT`.
//!
//! The rings feed the backend's log ([`Backend::configure_log`](pmc_core::Backend::configure_log);
//! without one, start fails with [`ErrorKind::LogRequired`]) or, after
//! [`LinuxPmc::sample_in_process`], the owner's [`LinuxPmc::samples`]. Stop
//! drains the PMC's rings into the log, so what was sampled before `stop`
//! returns is in it; dropping the PMC drains them a last time.
//! `Flags::LOG_PROCEXIT` (process scope) logs each process's count at its
//! exit (see [`crate::sampler`]): for a sampling PMC the sum of its sample
//! periods; for a counting PMC the kernel's count, the PMC being opened as
//! `perf record -s` opens its events (one inherited event per CPU, with
//! `inherit_stat`, `task` and a ring for the `PERF_RECORD_READ` the kernel
//! writes at each inherited task's exit). Give such a counting PMC the target
//! alone: with `inherit_stat` the kernel swaps the counts of a parent's and a
//! child's events by list position when it swaps their contexts, which mixes
//! the counts of different events on the same task;
//! `Flags::LOG_PROCCSW` (process scope, counting or sampling) logs the counts
//! of each time slice at every context switch of the targets, through a
//! switch group: a `context-switches` sampler with `PERF_SAMPLE_READ` over
//! copies of the PMC's events (see `Counters::switch_group`). The slice that
//! ends at a task's exit is not logged: the kernel detaches the task's events
//! before its final switch.

use crate::errmap::{self, Facts, OpenContext};
use crate::record::ParseConfig;
use crate::resolve::{self, Resolved};
use crate::sampler::{self, Hub, LocalRings, OwnedSample, RingSource, SamplingSummary, Synth};
use crate::sys::{self, Ioctl, Sys};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::{
    Allocation, Error, ErrorKind, GroupInstanceReading, Instance, InstanceReading, LogSink, Mode,
    NativeField, Op, Rate, Reading, Result, Scope, State, Target,
};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

/// The most members a group may have (the read buffer lives on the stack).
pub const MAX_GROUP_MEMBERS: usize = 32;
const READ_WORDS: usize = 3 + 2 * MAX_GROUP_MEMBERS;

struct Shared {
    /// The system calls and `/proc` facts: the kernel, or a fake in tests.
    sys: Arc<dyn Sys>,
    /// The sample log and its drain thread.
    hub: Arc<Hub>,
    /// Ring data pages for PMCs allocated from now on (0: the default).
    ring_pages: AtomicUsize,
    /// The next PMC id in the log.
    next_pmc_id: AtomicU32,
    /// The machine's facts (paranoid level, capabilities, limits), probed
    /// at most once a second: they decide attr defaults on the hot
    /// allocate path. Error messages re-probe, so they report the values
    /// at the time of the failure.
    facts: std::sync::Mutex<Option<(std::time::Instant, Facts)>>,
}

impl Shared {
    fn new(sys: Arc<dyn Sys>) -> Shared {
        Shared {
            sys,
            hub: Arc::default(),
            ring_pages: AtomicUsize::new(0),
            next_pmc_id: AtomicU32::new(0),
            facts: std::sync::Mutex::new(None),
        }
    }

    fn facts(&self) -> Facts {
        const FRESH: std::time::Duration = std::time::Duration::from_secs(1);
        let Ok(mut cached) = self.facts.lock() else {
            return self.sys.facts();
        };
        match *cached {
            Some((at, f)) if at.elapsed() < FRESH => f,
            _ => {
                let f = self.sys.facts();
                *cached = Some((std::time::Instant::now(), f));
                f
            }
        }
    }
}

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
#[derive(Clone)]
pub struct Backend {
    shared: Arc<Shared>,
}

impl Default for Backend {
    /// The real kernel, as [`Backend::open`] (without its check for Linux).
    fn default() -> Backend {
        Backend::with_sys(Arc::new(sys::RealSys))
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("pmc_linux::Backend").finish_non_exhaustive()
    }
}

impl Backend {
    /// Opens the backend. Nothing is opened in the kernel until a PMC is
    /// allocated.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unsupported`] on systems other than Linux.
    pub fn open() -> Result<Backend> {
        if !sys::HAVE_PERF_EVENT {
            return Err(Error::new(
                ErrorKind::Unsupported,
                Op::Open,
                "the perf_event backend needs Linux",
            ));
        }
        Ok(Backend::with_sys(Arc::new(sys::RealSys)))
    }

    /// A backend over another implementation of the system calls: a fake kernel in tests (see
    /// the `fake-kernel` feature). [`Backend::open`] is `with_sys` of the real kernel.
    #[doc(hidden)]
    pub fn with_sys(sys: Arc<dyn Sys>) -> Backend {
        Backend {
            shared: Arc::new(Shared::new(sys)),
        }
    }

    /// The error that failed this backend's log, if one did (a full disk, a closed pipe):
    /// `ErrorKind::Os` with the errno, and the `std::io::Error` (its `kind()`, e.g.
    /// `StorageFull`) as its source. It is here within [`DRAIN_PERIOD`](crate::sampler::DRAIN_PERIOD)
    /// of the failing write, so a caller polling it learns of the failure at once rather than
    /// at [`close_log`](pmc_core::Backend::close_log).
    ///
    /// After the first write error the log takes nothing more (nothing written later could
    /// then hide what came before; the file ends with the block that was being written, cut
    /// where the error struck). Sampling goes on: the drain thread keeps emptying the rings
    /// (so the kernel does not start dropping and the process's memory stays flat) and counts
    /// every record it could not log in [`SamplingSummary::log_dropped`]. The library does not
    /// stop the PMCs itself because they belong to the caller, who may still be reading their
    /// counts; stopping is the caller's decision (pmcstat stops sampling and exits non-zero).
    /// A new [`configure_log`](pmc_core::Backend::configure_log) starts a fresh log.
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
    pub fn sampling_details(&self) -> SamplingSummary {
        self.shared.hub.summary()
    }

    /// Sets the size of the data area of each sample ring buffer mapped by PMCs allocated from
    /// now on, in pages (a power of two; default [`sampler::DEFAULT_RING_PAGES`]). Larger rings
    /// lose fewer samples in bursts; their memory is locked and counts against
    /// `kernel.perf_event_mlock_kb` and `RLIMIT_MEMLOCK`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] unless `pages` is a power of two.
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

impl pmc_core::Backend for Backend {
    type Pmc = LinuxPmc;
    type Group = LinuxGroup;

    fn name(&self) -> &'static str {
        "linux-perf"
    }

    fn allocate(&self, allocation: &Allocation) -> Result<LinuxPmc> {
        Ok(LinuxPmc {
            c: Counters::new(std::slice::from_ref(allocation), self.shared.clone())?,
        })
    }

    fn allocate_group(&self, allocations: &[Allocation]) -> Result<LinuxGroup> {
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
        let allocs = allocations.to_vec();
        Ok(LinuxGroup {
            c: Counters::new(allocations, self.shared.clone())?,
            allocs,
        })
    }

    fn configure_log(&self, sink: LogSink) -> Result<()> {
        self.shared.hub.configure(sink)
    }

    fn flush_log(&self) -> Result<()> {
        self.shared.hub.flush()
    }

    fn close_log(&self) -> Result<()> {
        self.shared.hub.close()
    }

    fn list_events(&self, tracepoints: bool) -> Vec<pmc_core::info::EventInfo> {
        crate::info::list_events(tracepoints)
    }

    fn diagnose(&self) -> Vec<pmc_core::info::Check> {
        crate::info::diagnose()
    }

    /// As the inherent [`Backend::log_error`].
    fn log_error(&self) -> Option<Error> {
        self.shared.hub.log_error()
    }

    /// The backend-neutral part of [`Backend::sampling_details`]
    /// (which also counts side records, decoding errors and discarded bytes).
    fn sampling_summary(&self) -> Result<pmc_core::SamplingSummary> {
        Ok((&self.shared.hub.summary()).into())
    }

    fn write_log(&self, user_data: u32) -> Result<()> {
        self.shared.hub.write_user(user_data)
    }
}

struct Member {
    alloc: Allocation,
    /// Its id in the sample log.
    pmc_id: u32,
    event: String,
    resolved: Resolved,
    attr: perf_event_attr,
    /// The attr of the most recent successful open (with the per-target
    /// bits, e.g. enable_on_exec), for `native_config`.
    opened: perf_event_attr,
}

impl Member {
    /// The event as counted: an event that named no privilege modes but was
    /// opened with `exclude_kernel` (an unprivileged process at
    /// `perf_event_paranoid` >= 2, see `build_attr`) is user mode only,
    /// `:u`, as perf labels it.
    fn counted_event(&self) -> pmc_core::EventSpec {
        let mut spec = self.alloc.event.clone();
        if !spec.modifiers.is_restricted() && self.attr.exclude_kernel() != 0 {
            spec.modifiers.user = true;
        }
        spec
    }
}

struct InstanceFds {
    instance: Instance,
    /// One fd set per thread (or per CPU for system scope: exactly one), leader first.
    threads: Vec<Vec<OwnedFd>>,
    /// Opened with enable_on_exec and not started by us since (attached while not running):
    /// reads as zero, whatever the kernel counted after an exec.
    pending_exec: bool,
    /// Opened with enable_on_exec and the exec not seen yet: the kernel enables these fds
    /// at the exec, whatever our state.
    exec_armed: bool,
    /// An exec target whose exec came before its first start: reopened as a pid at start,
    /// so its mappings are synthesized like a pid's.
    exec_missed: bool,
    /// The CPU each fd set of `threads` was opened on (-1: any, per task).
    cpus: Vec<i32>,
    /// Sampling: its ring buffers are mapped and feeding the log or the owner.
    mapped: bool,
}

/// What a PMC or a group is made of.
struct Counters {
    members: Vec<Member>,
    state: State,
    instances: Vec<InstanceFds>,
    /// Counts kept from detached targets, per member.
    retired: Vec<Reading>,
    /// Base value set by write/set_count, per member.
    base: Vec<u64>,
    /// A disabled fd set on the allocating thread, opened to validate the
    /// event at allocate time; reused by an attach to [`Target::Current`]
    /// from the same thread.
    probe: Option<(i32, Vec<OwnedFd>)>,
    /// Read each member's fd (no PERF_FORMAT_GROUP): for single PMCs, and for
    /// inherited groups, where the kernel refuses group reads.
    per_member_read: bool,
    _shared: Arc<Shared>,
    /// Sampling PMCs: ring data pages.
    ring_pages: usize,
    /// Sampling with descendants: one fd set per (thread, CPU), so rings can be mapped (the
    /// kernel refuses to map inherited per-task events).
    per_cpu_task: bool,
    /// A counting PMC with log-procexit: per-CPU events with `inherit_stat` and rings for
    /// their `PERF_RECORD_READ`s (see [`sampler`]'s `ExitReads`).
    exit_reads: bool,
    /// In-process sampling: the owner reads the rings ([`LinuxPmc::samples`]).
    local_wanted: bool,
    local: Option<LocalRings>,
    /// log-proccsw: the switch group that logs this PMC's counts at every context switch of
    /// its targets (see [`Counters::switch_group`]).
    csw: Option<Box<Counters>>,
    /// This is a switch group: its leader is the `context-switches` sampler and its members
    /// are copies of the owning PMC's events, logged under the owner's PMC ids.
    switch_group: bool,
}

fn build_attr(
    a: &Allocation,
    r: &Resolved,
    facts: &Facts,
    group_read: bool,
    ring_bytes: usize,
) -> perf_event_attr {
    let mut attr = perf_event_attr {
        type_: r.type_,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: r.config,
        ..Default::default()
    };
    // aarch64: ask for user-space reads (the rdpmc format bit) when they are on (crate::rdpmc).
    attr.__bindgen_anon_3.config1 = r.config1
        | crate::rdpmc::machine_user_read_bits(
            r.type_,
            r.config1,
            a.scope.is_system(),
            a.mode.is_sampling(),
        );
    attr.__bindgen_anon_4.config2 = r.config2;
    attr.read_format = u64::from(
        b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING | b::PERF_FORMAT_ID,
    );
    if group_read {
        attr.read_format |= u64::from(b::PERF_FORMAT_GROUP);
    }
    attr.set_disabled(1);
    let m = &a.event.modifiers;
    // As perf does: an unprivileged process at paranoid >= 2 counts user mode
    // only unless it asked for more (and is then told why it cannot).
    let kernel = if m.is_restricted() {
        m.kernel
    } else {
        facts.privileged || facts.paranoid.is_none_or(|p| p < 2) || a.scope.is_system()
    };
    attr.set_exclude_user(u64::from(!m.counts_user()));
    attr.set_exclude_kernel(u64::from(!kernel));
    attr.set_exclude_hv(u64::from(!m.counts_hv() || !kernel));
    attr.set_precise_ip(u64::from(m.precise.min(3)));
    if a.flags.contains(pmc_core::Flags::DESCENDANTS) && !a.scope.is_system() {
        attr.set_inherit(1);
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT)
        && !a.mode.is_sampling()
        && !a.scope.is_system()
    {
        // log-procexit on a counting PMC, as perf record -s: the kernel writes each inherited
        // task's count to the ring at its exit (PERF_RECORD_READ), and the side-band records
        // say which task and when.
        attr.set_inherit_stat(1);
        attr.sample_type = u64::from(
            b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_IDENTIFIER,
        );
        attr.set_sample_id_all(1);
        attr.set_use_clockid(1);
        attr.clockid = libc::CLOCK_MONOTONIC;
    }
    if let Mode::Sampling(rate) = a.mode {
        match rate {
            Rate::Period(p) => attr.__bindgen_anon_1.sample_period = p,
            Rate::Frequency(f) => {
                attr.set_freq(1);
                attr.__bindgen_anon_1.sample_freq = f;
            }
        }
        attr.sample_type = u64::from(
            b::PERF_SAMPLE_IP
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_PERIOD,
        );
        if a.flags.contains(pmc_core::Flags::CALLCHAIN) {
            attr.sample_type |= u64::from(b::PERF_SAMPLE_CALLCHAIN);
        }
        if let (true, Some(stack_size)) = (crate::unwind::wants_stack(a), a.call_graph.stack_size())
        {
            // As perf record --call-graph dwarf: the user registers and stack with each
            // sample; the kernel's callchain keeps only its kernel part.
            attr.sample_type |= u64::from(b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER);
            attr.sample_regs_user = crate::unwind::REGS_MASK;
            attr.sample_stack_user = stack_size;
            attr.set_exclude_callchain_user(1);
        }
        // Which PMC a record belongs to when several share a ring.
        attr.sample_type |= u64::from(b::PERF_SAMPLE_IDENTIFIER);
        // Side-band records carry pid/tid/time/cpu/id too.
        attr.set_sample_id_all(1);
        // One documented clock for every timestamp in the log.
        attr.set_use_clockid(1);
        attr.clockid = libc::CLOCK_MONOTONIC;
        // Wake the drain thread when a ring is a quarter full.
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark =
            u32::try_from(ring_bytes / 4).unwrap_or(u32::MAX).max(1);
    }
    attr
}

impl Counters {
    fn new(allocs: &[Allocation], shared: Arc<Shared>) -> Result<Counters> {
        let facts = shared.facts();
        let inherit = allocs
            .iter()
            .any(|a| a.flags.contains(pmc_core::Flags::DESCENDANTS));
        let per_member_read = allocs.len() == 1 || inherit;
        let ring_pages = match shared.ring_pages.load(Ordering::Relaxed) {
            // Samples with user stacks are kilobytes each: a privileged caller gets perf's
            // 512 KiB rings (an unprivileged one stays within perf_event_mlock_kb).
            0 if facts.privileged && allocs.iter().any(crate::unwind::wants_stack) => {
                sampler::DWARF_RING_PAGES
            }
            0 => sampler::DEFAULT_RING_PAGES,
            n => n,
        };
        let sampling = allocs.iter().any(|a| a.mode.is_sampling());
        if sampling && allocs.iter().any(|a| !a.mode.is_sampling()) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "a group mixes sampling and counting members",
            )
            .with_help("allocate the counting PMCs in a group of their own"));
        }
        let mut members = Vec::with_capacity(allocs.len());
        for a in allocs {
            if a.flags.contains(pmc_core::Flags::LOG_PROCCSW) && a.scope.is_system() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::Allocate,
                    "log-proccsw needs a process-scope PMC: it logs the counts of the target \
                     processes at their context switches",
                )
                .with_errno(libc::EINVAL)
                .with_help(
                    "allocate it with process scope and attach it to the processes to watch",
                ));
            }
            if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) && a.scope.is_system() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::Allocate,
                    "log-procexit needs a process-scope PMC: it logs the counts of the target \
                     processes at their exits",
                )
                .with_errno(libc::EINVAL)
                .with_help(
                    "allocate it with process scope and attach it to the processes to watch",
                ));
            }
            if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT)
                && !a.mode.is_sampling()
                && allocs.len() > 1
            {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    Op::Allocate,
                    "log-procexit on a counting group: each counting PMC with log-procexit \
                     has its events of its own on Linux",
                )
                .with_help("allocate the PMC alone"));
            }
            crate::unwind::check(a)?;
            let resolved = resolve::resolve(&a.event)?;
            if let Mode::Sampling(Rate::Frequency(f)) = a.mode {
                if let Some(max) = facts.max_sample_rate.filter(|m| f > *m) {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        Op::Allocate,
                        format!("sampling frequency {f} Hz is above kernel.perf_event_max_sample_rate = {max}"),
                    )
                    .with_help("use a lower frequency, or raise the limit: sysctl -w kernel.perf_event_max_sample_rate=<hz>"));
                }
            }
            let ring_bytes = ring_pages.saturating_mul(shared.sys.page_size());
            let attr = build_attr(a, &resolved, &facts, !per_member_read, ring_bytes);
            let pmc_id = shared.next_pmc_id.fetch_add(1, Ordering::Relaxed);
            members.push(Member {
                alloc: a.clone(),
                pmc_id,
                event: a.event.to_string(),
                resolved,
                attr,
                opened: attr,
            });
        }
        let mut c = Counters::unopened(members, shared, ring_pages, per_member_read);
        // log-procexit counting: perf record -s's layout (one inherited event per CPU, with a
        // ring for its PERF_RECORD_READs at task exits; see sampler::ExitReads).
        c.exit_reads = !sampling
            && allocs
                .iter()
                .any(|a| a.flags.contains(pmc_core::Flags::LOG_PROCEXIT));
        c.per_cpu_task = (sampling && inherit) || c.exit_reads;
        if allocs
            .iter()
            .any(|a| a.flags.contains(pmc_core::Flags::LOG_PROCCSW))
        {
            c.csw = Some(Box::new(Counters::switch_group(
                &c.members,
                inherit,
                ring_pages,
                &facts,
                c._shared.clone(),
            )?));
        }
        match &allocs[0].scope {
            Scope::System { cpu } => {
                let cpus = match cpu {
                    pmc_core::Cpus::All => c._shared.sys.online_cpus(),
                    pmc_core::Cpus::One(c) => vec![*c],
                    pmc_core::Cpus::List(l) => l.clone(),
                };
                if cpus.is_empty() {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        Op::Allocate,
                        "an empty CPU list",
                    ));
                }
                for cpu in cpus {
                    let cpu_i = i32::try_from(cpu).map_err(|_| {
                        Error::new(
                            ErrorKind::NoSuchCpu,
                            Op::Allocate,
                            format!("CPU {cpu} is out of range"),
                        )
                    })?;
                    let fds = c.open_set(-1, cpu_i, false, false)?;
                    c.instances.push(InstanceFds {
                        instance: Instance::Cpu(cpu),
                        threads: vec![fds],
                        pending_exec: false,
                        exec_armed: false,
                        exec_missed: false,
                        cpus: vec![cpu_i],
                        mapped: false,
                    });
                }
            }
            Scope::Process => {
                let tid = c._shared.sys.gettid();
                c.probe = Some((tid, c.open_set(0, -1, false, false)?));
            }
        }
        Ok(c)
    }

    /// A PMC or group with nothing opened yet: allocated, no targets, no counts kept.
    fn unopened(
        members: Vec<Member>,
        shared: Arc<Shared>,
        ring_pages: usize,
        per_member_read: bool,
    ) -> Counters {
        let n = members.len();
        Counters {
            members,
            state: State::Allocated,
            instances: Vec::new(),
            retired: vec![Reading::default(); n],
            base: vec![0; n],
            probe: None,
            per_member_read,
            _shared: shared,
            ring_pages,
            per_cpu_task: false,
            local_wanted: false,
            local: None,
            csw: None,
            switch_group: false,
            exit_reads: false,
        }
    }

    /// The switch group of a PMC with log-proccsw (hwpmc's `PMC_F_LOG_PROCCSW`).
    ///
    /// perf_event has no "log the counts at every context switch" bit, but it gives enough to
    /// build one: a `context-switches` software event sampling every switch (period 1) with
    /// `PERF_SAMPLE_READ` of its group, whose members are copies of the PMC's events. The
    /// context-switch event fires while the outgoing task's events are still scheduled, so each
    /// sample carries the task's cumulative counts at the moment it leaves the CPU; the drain
    /// thread logs the difference from the previous one as a
    /// [`CounterKind::ContextSwitch`](pmc_log::record::CounterKind::ContextSwitch) record (the
    /// counts of that time slice, as hwpmc's `PROCCSW`) under the PMC's own ids. The copies
    /// count alongside the PMC's events (twice the counters, which matters only for hardware
    /// events), and writes and set_count on the PMC do not touch them. The switch event fires
    /// in the kernel, so this needs kernel-mode counting: CAP_PERFMON or
    /// `perf_event_paranoid` <= 1.
    fn switch_group(
        owner: &[Member],
        inherit: bool,
        ring_pages: usize,
        facts: &Facts,
        shared: Arc<Shared>,
    ) -> Result<Counters> {
        let cs = pmc_core::EventSpec::portable(pmc_core::PortableEvent::ContextSwitches);
        let mut lead_alloc = Allocation::sampling(cs, Rate::Period(1));
        if inherit {
            lead_alloc = lead_alloc.flags(pmc_core::Flags::DESCENDANTS);
        }
        let lead_resolved = resolve::resolve(&lead_alloc.event)?;
        let ring_bytes = ring_pages.saturating_mul(shared.sys.page_size());
        let mut lead = build_attr(&lead_alloc, &lead_resolved, facts, true, ring_bytes);
        lead.sample_type = u64::from(
            b::PERF_SAMPLE_IDENTIFIER
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_READ,
        );
        // The switch happens in the kernel: excluding it would silence the sampler.
        lead.set_exclude_kernel(0);
        lead.set_exclude_user(0);
        let mut members = vec![Member {
            event: lead_alloc.event.to_string(),
            alloc: lead_alloc,
            pmc_id: shared.next_pmc_id.fetch_add(1, Ordering::Relaxed),
            resolved: lead_resolved,
            attr: lead,
            opened: lead,
        }];
        for m in owner {
            let mut alloc = m.alloc.clone();
            alloc.mode = Mode::Counting;
            let mut attr = build_attr(&alloc, &m.resolved, facts, true, ring_bytes);
            // A group has one clock (the kernel refuses members with another).
            attr.set_use_clockid(1);
            attr.clockid = libc::CLOCK_MONOTONIC;
            members.push(Member {
                alloc,
                pmc_id: m.pmc_id,
                event: m.event.clone(),
                resolved: m.resolved.clone(),
                attr,
                opened: attr,
            });
        }
        let mut c = Counters::unopened(members, shared, ring_pages, false);
        c.per_cpu_task = inherit;
        c.switch_group = true;
        let tid = c._shared.sys.gettid();
        match c.open_set(0, -1, false, false) {
            Ok(fds) => c.probe = Some((tid, fds)),
            Err(e) if e.kind() == ErrorKind::Permission => {
                return Err(Error::permission(
                    Op::Allocate,
                    "log counts at context switches (log-proccsw samples the kernel's \
                     context-switch event)",
                    pmc_core::PermissionReason::PerfEventParanoid {
                        level: c._shared.sys.facts().paranoid,
                        needed: 1,
                    },
                )
                .with_errno(e.errno().unwrap_or(libc::EACCES)));
            }
            Err(e) if e.errno() == Some(libc::EINVAL) && inherit => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    Op::Allocate,
                    "log-proccsw with descendants needs PERF_SAMPLE_READ on inherited events, \
                     which this kernel refuses (Linux 6.12 or later has it)",
                )
                .with_errno(libc::EINVAL)
                .with_help("drop descendants, or attach to each process"));
            }
            Err(e) => return Err(e),
        }
        Ok(c)
    }

    /// Opens one fd per member for `(pid, cpu)`, leader first. With `follow_threads`, the
    /// events are inherited by the threads the target creates later (`inherit` +
    /// `inherit_thread`), but not by its child processes: a hwpmc process PMC counts the
    /// whole process. Kernels before 5.13 lack `inherit_thread`; there the fds are reopened
    /// without it (threads that exist at attach time only).
    fn open_set(
        &mut self,
        pid: i32,
        cpu: i32,
        exec: bool,
        follow_threads: bool,
    ) -> Result<Vec<OwnedFd>> {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(self.members.len());
        let enabled = self.state == State::Running && !exec;
        let grouped = !self.per_member_read;
        let sys = &*self._shared.sys;
        for m in &mut self.members {
            let mut attr = m.attr;
            // perf_event_open(2): only the leader of a group starts disabled;
            // members follow it (a disabled member stays off with some
            // leaders, e.g. task-clock).
            let leader = fds.is_empty();
            attr.set_disabled(u64::from(!enabled && (leader || !grouped)));
            attr.set_enable_on_exec(u64::from(exec));
            if leader && !m.alloc.mode.is_sampling() && self.exit_reads {
                // log-procexit: the exits, forks and command names of the tasks.
                attr.set_comm(1);
                attr.set_comm_exec(1);
                attr.set_task(1);
            }
            if leader && m.alloc.mode.is_sampling() {
                // Bookkeeping, as perf record's tracking event: new executable mappings,
                // command names (and execs), forks and exits.
                // (mmap2 needs mmap too: the kernel counts mmap listeners by `mmap`.)
                attr.set_mmap(1);
                attr.set_mmap2(1);
                attr.set_comm(1);
                attr.set_comm_exec(1);
                attr.set_task(1);
            }
            let group = fds.first().map(|f| f.as_fd());
            if follow_threads && attr.inherit() == 0 {
                attr.set_inherit(1);
                attr.set_inherit_thread(1);
            }
            let opened = match sys.perf_event_open(&mut attr, pid, cpu, group, 0) {
                Err(libc::EINVAL) if attr.inherit_thread() == 1 => {
                    // No inherit_thread (Linux < 5.13): the threads there are now.
                    attr.set_inherit(0);
                    attr.set_inherit_thread(0);
                    sys.perf_event_open(&mut attr, pid, cpu, group, 0)
                }
                r => r,
            };
            let fd = opened.map_err(|errno| {
                // A member whose leader was just opened on a thread that is now exiting fails
                // with ENODEV, not ESRCH (the leader's context is torn down). Report it as the
                // vanished thread it is, so attach skips it like any thread that exited.
                let errno = if errno == libc::ENODEV && !leader && pid > 0 && sys.thread_exiting(pid) {
                    libc::ESRCH
                } else {
                    errno
                };
                let freq = match m.alloc.mode {
                    Mode::Sampling(Rate::Frequency(f)) => Some(f),
                    Mode::Sampling(Rate::Period(_)) => Some(0),
                    Mode::Counting => None,
                };
                let ctx = OpenContext {
                    event: &m.event,
                    resolved: &m.resolved,
                    pid,
                    cpu,
                    counts_kernel: attr.exclude_kernel() == 0,
                    sample_freq: freq,
                };
                if errno == libc::EINVAL && grouped && !leader && m.resolved.is_hardware() {
                    // The PMU drivers validate a group against their counters when a
                    // member joins (armv8/x86 validate_group): EINVAL here means the
                    // group no longer fits, not a bad event (the leader, same kind, opened).
                    let n = fds.len() + 1;
                    return pmc_core::Error::new(
                        ErrorKind::NotSupported,
                        Op::Allocate,
                        format!(
                            "a group of {n} or more hardware events does not fit on this PMU's counters: the kernel refused member {n} (`{}`) with EINVAL",
                            m.event
                        ),
                    )
                    .with_errno(errno)
                    .with_help("use smaller groups (a group is scheduled all at once), or allocate the events separately so the kernel multiplexes them");
                }
                errmap::open_error(errno, &ctx, &sys.facts())
            })?;
            m.opened = attr;
            fds.push(fd);
        }
        Ok(fds)
    }

    fn check_process(&self, op: Op) -> Result<()> {
        if self.members[0].alloc.scope.is_system() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                op,
                format!("cannot {op} a system-scope PMC: it counts every process on its CPUs"),
            ));
        }
        Ok(())
    }

    fn attach(&mut self, target: Target) -> Result<()> {
        self.check_process(Op::Attach)?;
        let me = self._shared.sys.getpid();
        let pid_of = |t: &Target| t.pid().unwrap_or(me);
        if self
            .instances
            .iter()
            .any(|i| matches!(&i.instance, Instance::Target(t) if pid_of(t) == pid_of(&target)))
        {
            return Err(Error::new(
                ErrorKind::AlreadyAttached,
                Op::Attach,
                format!("the PMC is already attached to {target}"),
            )
            .with_errno(libc::EEXIST));
        }
        // Another process (a pid or a launched command) is counted whole: its threads created
        // later inherit the events (without descendants, its child processes do not).
        let follow_threads = matches!(target, Target::Pid(_) | Target::Exec(_))
            && !self.members[0].alloc.scope.is_system();
        // Sampling inherited events: one fd set per (thread, CPU), as perf record does, since
        // the kernel refuses to map the ring of an inherited per-task event.
        let per_cpu = self.task_cpus(follow_threads);
        let mut threads = Vec::new();
        let mut cpus = Vec::new();
        let pending_exec = match target {
            Target::Current => {
                let tids = thread_ids(&*self._shared.sys, None)?;
                let probe = self.probe.take().filter(|_| !self.per_cpu_task);
                for tid in tids {
                    if matches!(&probe, Some((ptid, _)) if *ptid == tid) {
                        continue;
                    }
                    for &cpu in &per_cpu {
                        match self.open_set(tid, cpu, false, false) {
                            Ok(s) => {
                                threads.push(s);
                                cpus.push(cpu);
                            }
                            Err(e) if e.kind() == ErrorKind::NoSuchProcess => {} // thread exited meanwhile
                            Err(e) => return Err(e),
                        }
                    }
                }
                if let Some((_, fds)) = probe {
                    if self.state == State::Running {
                        if let Some(fd) = fds.first() {
                            self._shared
                                .sys
                                .ioctl(fd.as_fd(), Ioctl::Enable(true))
                                .map_err(|e| errmap::op_error(Op::Attach, e))?;
                        }
                    }
                    threads.insert(0, fds);
                    cpus.insert(0, -1);
                }
                false
            }
            Target::Pid(pid) => {
                (threads, cpus) = self.open_pid(pid, &per_cpu, follow_threads)?;
                false
            }
            Target::Exec(pid) => {
                let p = pid_i32(pid)?;
                for &cpu in &per_cpu {
                    threads.push(self.open_set(p, cpu, true, follow_threads)?);
                    cpus.push(cpu);
                }
                true
            }
        };
        self.probe = None;
        // Attached while running, an exec target starts at its exec: started by us.
        let exec_armed = pending_exec;
        let pending_exec = pending_exec && self.state != State::Running;
        self.instances.push(InstanceFds {
            instance: Instance::Target(target),
            threads,
            pending_exec,
            exec_armed,
            exec_missed: false,
            cpus,
            mapped: false,
        });
        if self.state == State::Running && self.is_sampling() {
            // A target added while sampling: map its rings now.
            if let Err(e) = self.map_unmapped() {
                self.instances.pop();
                return Err(e);
            }
        }
        if let Some(sw) = self.csw.as_mut() {
            if let Err(e) = sw.attach(target) {
                self.instances.pop();
                return Err(e);
            }
        }
        Ok(())
    }

    /// The CPUs a per-task fd set is opened on: every online CPU when the rings must be per
    /// CPU (sampling an inherited event), else `-1` (any).
    fn task_cpus(&self, follow_threads: bool) -> Vec<i32> {
        if self.per_cpu_task || (follow_threads && self.is_sampling()) {
            self._shared
                .sys
                .online_cpus()
                .into_iter()
                .filter_map(|c| i32::try_from(c).ok())
                .collect()
        } else {
            vec![-1]
        }
    }

    /// One fd set per (thread of `pid`, CPU of `per_cpu`); a thread other than the main one
    /// that exits meanwhile is skipped.
    #[allow(clippy::type_complexity)]
    fn open_pid(
        &mut self,
        pid: u32,
        per_cpu: &[i32],
        follow_threads: bool,
    ) -> Result<(Vec<Vec<OwnedFd>>, Vec<i32>)> {
        let p = pid_i32(pid)?;
        let (mut threads, mut cpus) = (Vec::new(), Vec::new());
        for tid in thread_ids(&*self._shared.sys, Some(pid))? {
            for &cpu in per_cpu {
                match self.open_set(tid, cpu, false, follow_threads) {
                    Ok(s) => {
                        threads.push(s);
                        cpus.push(cpu);
                    }
                    Err(e) if e.kind() == ErrorKind::NoSuchProcess && tid != p => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok((threads, cpus))
    }

    /// Whether the kernel has enabled the exec target `self.instances[i]` (its exec
    /// happened): an fd opened disabled has run for some time since.
    fn exec_seen(&self, i: usize) -> Result<bool> {
        let mut r = vec![Reading::default(); self.members.len()];
        self.read_instance_fds(&self.instances[i], &mut r)?;
        Ok(r.iter().any(|r| r.time_enabled > 0))
    }

    /// Replaces the fds of the exec target `self.instances[i]` by fds without
    /// `enable_on_exec`, opened as a pid's (every thread), disabled unless running.
    fn reopen_exec(&mut self, i: usize) -> Result<()> {
        let Instance::Target(Target::Exec(pid)) = self.instances[i].instance else {
            return Ok(());
        };
        let follow_threads = !self.members[0].alloc.scope.is_system();
        let per_cpu = self.task_cpus(follow_threads);
        let (threads, cpus) = match self.open_pid(pid, &per_cpu, follow_threads) {
            Ok(sets) => sets,
            // Gone (its exec failed, or it exited before the start): nothing more to count.
            Err(e) if e.kind() == ErrorKind::NoSuchProcess => (Vec::new(), Vec::new()),
            Err(e) => return Err(e),
        };
        let inst = &mut self.instances[i];
        inst.threads = threads;
        inst.cpus = cpus;
        inst.exec_armed = false;
        inst.mapped = false;
        Ok(())
    }

    fn detach(&mut self, target: Target) -> Result<()> {
        self.check_process(Op::Detach)?;
        let Some(pos) = self
            .instances
            .iter()
            .position(|i| i.instance == Instance::Target(target))
        else {
            return Err(Error::new(
                ErrorKind::NotAttached,
                Op::Detach,
                format!("the PMC is not attached to {target}"),
            )
            .with_errno(libc::EINVAL));
        };
        let mut last = vec![Reading::default(); self.members.len()];
        self.read_instance(&self.instances[pos], &mut last)?;
        if self.is_sampling() && self.instances[pos].mapped {
            // Its rings stay with the log until the PMC goes (the drain thread holds their
            // fds): stop the events now, and log what they sampled.
            for set in &self.instances[pos].threads {
                for fd in set {
                    self._shared
                        .sys
                        .ioctl(fd.as_fd(), Ioctl::Disable(false))
                        .map_err(|e| errmap::op_error(Op::Detach, e))?;
                }
            }
            if !self.local_wanted {
                self._shared.hub.drain_token(self.token());
            }
        }
        for (kept, r) in self.retired.iter_mut().zip(&last) {
            kept.accumulate(r);
        }
        self.instances.remove(pos);
        if let Some(sw) = self.csw.as_mut() {
            sw.detach(target)?;
        }
        Ok(())
    }

    fn set_local(&mut self) -> Result<()> {
        if !self.is_sampling() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "only sampling PMCs have samples to read",
            ));
        }
        if self.state != State::Allocated && !self.local_wanted {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "this PMC already sends its samples to the log",
            )
            .with_help("call sample_in_process before the first start"));
        }
        self.local_wanted = true;
        Ok(())
    }

    fn is_sampling(&self) -> bool {
        self.members[0].alloc.mode.is_sampling()
    }

    /// log-procexit of a counting PMC, once stopped: the hub logs each exited process's
    /// count from the kernel's `PERF_RECORD_READ`s and the PMC's total (the task without a
    /// `READ` gets the rest when every target has exited).
    fn finish_exit_reads(&self) {
        let mut r = vec![Reading::default(); self.members.len()];
        if self.read_into(&mut r).is_err() {
            return;
        }
        let totals: Vec<(u32, u64)> = self
            .members
            .iter()
            .zip(&r)
            .zip(&self.base)
            .map(|((m, r), base)| (m.pmc_id, r.value.wrapping_sub(*base)))
            .collect();
        let targets_gone = self.instances.iter().all(|i| match &i.instance {
            Instance::Target(Target::Pid(p) | Target::Exec(p)) => {
                !self._shared.sys.process_alive(*p)
            }
            Instance::Target(Target::Current) => false,
            Instance::Cpu(_) => true,
        });
        self._shared
            .hub
            .finish_exit_reads(self.token(), &totals, targets_gone);
    }

    /// The log id of this PMC's first member: its rings' token at the hub.
    fn token(&self) -> u32 {
        self.members[0].pmc_id
    }

    fn start(&mut self) -> Result<()> {
        if (self.csw.is_some() || self.switch_group) && !self._shared.hub.has_log() {
            return Err(Error::new(
                ErrorKind::LogRequired,
                Op::Start,
                "a PMC with log-proccsw needs a log for its counts at context switches \
                 (hwpmc's EDOOFUS)",
            )
            .with_help("call `Backend::configure_log` first"));
        }
        if self.exit_reads && !self._shared.hub.has_log() {
            return Err(Error::new(
                ErrorKind::LogRequired,
                Op::Start,
                "a PMC with log-procexit needs a log for its counts at process exits \
                 (hwpmc's EDOOFUS)",
            )
            .with_help("call `Backend::configure_log` first"));
        }
        if self.is_sampling() && !self.local_wanted && !self._shared.hub.has_log() {
            return Err(Error::new(
                ErrorKind::LogRequired,
                Op::Start,
                "a sampling PMC needs a log to write its samples to (hwpmc's EDOOFUS)",
            )
            .with_help(
                "call `Backend::configure_log` first, or read the samples in-process \
                 with LinuxPmc::sample_in_process before starting",
            ));
        }
        if self.state == State::Running {
            return Ok(());
        }
        if self.instances.is_empty() && !self.members[0].alloc.scope.is_system() {
            self.attach(Target::Current)?;
        }
        // An exec target that exec'd before this start has counted since (the kernel's
        // enable_on_exec): start it afresh, as a pid, without those counts.
        for i in 0..self.instances.len() {
            if self.instances[i].pending_exec && self.exec_seen(i)? {
                self.reopen_exec(i)?;
                self.instances[i].pending_exec = false;
                self.instances[i].exec_missed = true;
            }
        }
        if self.is_sampling() || self.exit_reads {
            if !self.local_wanted && !self._shared.hub.has_rings(self.token()) {
                // Never mapped, or the log was closed (which released the rings).
                for i in &mut self.instances {
                    i.mapped = false;
                }
            }
            self.map_unmapped()?;
        }
        self.state = State::Running;
        let group = self.members.len() > 1;
        let sys = self._shared.sys.clone();
        let r = self.for_each_leader(|inst, fd| {
            if inst.pending_exec {
                return Ok(()); // enable_on_exec starts it
            }
            sys.ioctl(fd, Ioctl::Enable(group))
                .map_err(|e| errmap::op_error(Op::Start, e))
        });
        for i in &mut self.instances {
            i.pending_exec = false;
        }
        // The switch group starts after the PMC and stops before it, so the counts it logs
        // lie inside the PMC's own.
        let r = r.and_then(|()| match self.csw.as_mut() {
            Some(sw) => sw.start(),
            None => Ok(()),
        });
        if r.is_err() {
            self.state = State::Stopped;
            let _ = self.for_each_leader(|_, fd| {
                sys.ioctl(fd, Ioctl::Disable(group))
                    .map_err(|e| errmap::op_error(Op::Stop, e))
            });
        }
        r
    }

    fn stop(&mut self) -> Result<()> {
        if self.state != State::Running {
            return Ok(());
        }
        if let Some(sw) = self.csw.as_mut() {
            sw.stop()?;
        }
        let group = self.members.len() > 1;
        let sys = self._shared.sys.clone();
        self.for_each_leader(|_, fd| {
            sys.ioctl(fd, Ioctl::Disable(group))
                .map_err(|e| errmap::op_error(Op::Stop, e))
        })?;
        self.state = State::Stopped;
        if self.is_sampling() && !self.local_wanted {
            // Everything sampled before the stop is in the log once stop returns.
            self._shared.hub.drain_token(self.token());
        }
        if self.exit_reads {
            self.finish_exit_reads();
        }
        self.disarm_exec()
    }

    /// After a stop: an exec target whose exec has not come yet would be enabled by it
    /// (`enable_on_exec` overrides a disable), counting after the stop. Reopen it without.
    fn disarm_exec(&mut self) -> Result<()> {
        let mut armed = Vec::new();
        for i in 0..self.instances.len() {
            if self.instances[i].exec_armed {
                if self.exec_seen(i)? {
                    self.instances[i].exec_armed = false;
                } else {
                    armed.push(i);
                }
            }
        }
        if armed.is_empty() || (self.is_sampling() && self.local_wanted) {
            return Ok(());
        }
        if self.is_sampling() && self._shared.hub.has_rings(self.token()) {
            // The log's rings map the old fds and keep their events alive: drop them all
            // (drained first); the next start maps every instance again.
            self._shared.hub.unregister(self.token());
            for inst in &mut self.instances {
                inst.mapped = false;
            }
        }
        for i in armed {
            self.reopen_exec(i)?;
        }
        Ok(())
    }

    /// Maps the rings of `self.instances[range]` and hands them to the log's drain thread (or
    /// keeps them for the in-process reader).
    /// Maps the rings of every instance not mapped yet.
    fn map_unmapped(&mut self) -> Result<()> {
        let todo: Vec<usize> = (0..self.instances.len())
            .filter(|i| !self.instances[*i].mapped)
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        self.map_rings(&todo)?;
        for i in todo {
            self.instances[i].mapped = true;
        }
        Ok(())
    }

    fn map_rings(&mut self, which: &[usize]) -> Result<()> {
        let rings = self.build_rings(which)?;
        if self.local_wanted {
            self.local
                .get_or_insert_with(LocalRings::default)
                .rings
                .extend(rings);
            return Ok(());
        }
        let mut pids = Vec::new();
        let mut all = false;
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            match inst.instance {
                Instance::Cpu(_) => all = true,
                Instance::Target(Target::Current) => pids.push(self._shared.sys.getpid()),
                Instance::Target(Target::Pid(p)) => pids.push(p),
                // Its exec came before the start: its mappings are there already.
                Instance::Target(Target::Exec(p)) if inst.exec_missed => pids.push(p),
                // The kernel reports the exec and its mappings (enable_on_exec precedes them).
                Instance::Target(Target::Exec(_)) => {}
            }
        }
        let synth = if all {
            Synth::All
        } else if pids.is_empty() {
            Synth::Nothing
        } else {
            Synth::Pids(pids)
        };
        let descriptors = self.descriptors();
        let kernel = self.members.iter().any(|m| m.attr.exclude_kernel() == 0);
        self._shared.hub.register(descriptors, rings, synth, kernel)
    }

    /// One ring per CPU (events on one CPU share it through `PERF_EVENT_IOC_SET_OUTPUT`) or,
    /// for per-task events, one per thread (shared by the group's members).
    fn build_rings(&self, which: &[usize]) -> Result<Vec<RingSource>> {
        let leader = &self.members[0];
        let cfg = ParseConfig::new(leader.attr.sample_type, leader.attr.read_format, true)
            .with_regs_user(leader.attr.sample_regs_user);
        let token = self.token();
        let mut rings: Vec<RingSource> = Vec::new();
        // (cpu, ring index, owner fd)
        let mut by_cpu: Vec<(i32, usize, i32)> = Vec::new();
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            for (set, &cpu) in inst.threads.iter().zip(&inst.cpus) {
                let Some(first) = set.first() else { continue };
                let shared = (cpu >= 0)
                    .then(|| by_cpu.iter().find(|(c, _, _)| *c == cpu))
                    .flatten()
                    .map(|(_, i, fd)| (*i, *fd));
                let (ri, owner) = match shared {
                    Some(x) => x,
                    None => {
                        let ring_cpu = u32::try_from(cpu).ok();
                        let mut ring = RingSource::map(
                            &*self._shared.sys,
                            first.as_fd(),
                            self.ring_pages,
                            cfg,
                            token,
                            ring_cpu,
                        )?;
                        ring.switch_counts = self.switch_group;
                        ring.exit_reads = self.exit_reads;
                        ring.user_in_kernel =
                            leader.alloc.flags.contains(pmc_core::Flags::USERCALLCHAIN);
                        ring.cfg_inherit = leader.attr.inherit() == 1
                            && leader.alloc.flags.contains(pmc_core::Flags::DESCENDANTS);
                        ring.raw_stacks = matches!(
                            leader.alloc.call_graph,
                            pmc_core::CallGraph::DwarfRaw { .. }
                        );
                        rings.push(ring);
                        let x = (rings.len() - 1, first.as_raw_fd());
                        if cpu >= 0 {
                            by_cpu.push((cpu, x.0, x.1));
                        }
                        x
                    }
                };
                for (m, fd) in self.members.iter().zip(set) {
                    if fd.as_raw_fd() != owner {
                        self._shared.sys.ioctl(fd.as_fd(), Ioctl::SetOutput(owner)).map_err(|e| {
                            errmap::op_error(Op::Mmap, e).with_help(
                                "the kernel refused to share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)",
                            )
                        })?;
                    }
                    let id = self._shared.sys.event_id(fd.as_fd());
                    if let (Ok(id), Some(ring)) = (id, rings.get_mut(ri)) {
                        ring.add_id(id, m.pmc_id);
                    }
                }
            }
        }
        Ok(rings)
    }

    /// Writes the current counts to the log as interval `Counter` records: one per instance
    /// (CPU or target) for a single PMC, one total per member for a group.
    fn log_counts(&self) -> Result<()> {
        use pmc_log::record as log;
        let time = sampler::now();
        let mut counters = Vec::new();
        let counter = |pmc_id, pid, cpu, r: &Reading| log::Counter {
            time,
            pmc_id,
            pid,
            tid: -1,
            cpu,
            kind: log::CounterKind::Interval,
            value: r.value,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
        };
        if self.members.len() == 1 {
            for ir in self.read_instances()? {
                let (pid, cpu) = match ir.instance {
                    Instance::Cpu(c) => (-1, Some(c)),
                    Instance::Target(t) => {
                        let pid = t.pid().unwrap_or_else(|| self._shared.sys.getpid());
                        (i32::try_from(pid).unwrap_or(-1), None)
                    }
                };
                counters.push(counter(self.members[0].pmc_id, pid, cpu, &ir.reading));
            }
        } else {
            let mut out = vec![Reading::default(); self.members.len()];
            self.read_into(&mut out)?;
            for (m, r) in self.members.iter().zip(&out) {
                counters.push(counter(m.pmc_id, -1, None, r));
            }
        }
        self._shared
            .hub
            .write_counters(self.descriptors(), &counters)
    }

    /// The log descriptors of the members.
    fn descriptors(&self) -> Vec<pmc_log::record::PmcDescriptor<'static>> {
        use pmc_log::record as log;
        let time = sampler::now();
        // A switch group's leader is internal: its samples become the owner's counter records.
        self.members
            .iter()
            .skip(usize::from(self.switch_group))
            .map(|m| {
                let cpu = match &m.alloc.scope {
                    Scope::System {
                        cpu: pmc_core::Cpus::One(c),
                    } => Some(*c),
                    _ => None,
                };
                let mode = match m.alloc.mode {
                    Mode::Counting => log::Mode::Counting,
                    Mode::Sampling(Rate::Period(p)) => log::Mode::SamplingPeriod(p),
                    Mode::Sampling(Rate::Frequency(f)) => log::Mode::SamplingFrequency(f),
                };
                let native = crate::describe::attr_fields(&m.opened)
                    .into_iter()
                    .map(|f| format!("{}={}", f.name, f.value))
                    .collect::<Vec<_>>()
                    .join(",");
                log::PmcDescriptor {
                    time,
                    pmc_id: m.pmc_id,
                    event_spec: m.event.clone().into(),
                    canonical_name: m.event.clone().into(),
                    scope: if m.alloc.scope.is_system() {
                        log::Scope::System
                    } else {
                        log::Scope::Process
                    },
                    cpu,
                    mode,
                    flags: m.alloc.flags.bits()
                        | if crate::unwind::wants_stack(&m.alloc) {
                            log::FLAG_DWARF_CALLCHAIN
                        } else {
                            0
                        },
                    native_config: native.into(),
                }
            })
            .collect()
    }

    fn for_each_leader(
        &self,
        mut f: impl FnMut(&InstanceFds, std::os::fd::BorrowedFd<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut first_err = None;
        for inst in &self.instances {
            for set in &inst.threads {
                if self.per_member_read {
                    for fd in set {
                        if let Err(e) = f(inst, fd.as_fd()) {
                            first_err.get_or_insert(e);
                        }
                    }
                } else if let Some(leader) = set.first() {
                    if let Err(e) = f(inst, leader.as_fd()) {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Adds one instance's readings (summed over its threads) into `out`.
    fn read_instance(&self, inst: &InstanceFds, out: &mut [Reading]) -> Result<()> {
        if inst.pending_exec {
            return Ok(()); // not started since attach: whatever an exec enabled is not ours
        }
        self.read_instance_fds(inst, out)
    }

    /// [`read_instance`](Counters::read_instance) whether started or not.
    fn read_instance_fds(&self, inst: &InstanceFds, out: &mut [Reading]) -> Result<()> {
        if self.exit_reads {
            // One event per CPU on the same tasks: each is enabled while the task runs
            // anywhere but counts only while it runs on its CPU, so the counts and running
            // times add up across the CPUs and the enabled time is one CPU's (summing it
            // would read as multiplexing and scale the count up).
            let mut sum = vec![(0u64, 0u64, 0u64); out.len()];
            for set in &inst.threads {
                for (fd, acc) in set.iter().zip(sum.iter_mut()) {
                    let mut words = [0u64; 4];
                    let n = read_words(&*self._shared.sys, fd, &mut words)?;
                    if n != 4 {
                        return Err(short_read(n, 4));
                    }
                    acc.0 = acc.0.saturating_add(words[0]);
                    acc.1 = acc.1.max(words[1]);
                    acc.2 = acc.2.saturating_add(words[2]);
                }
            }
            for (slot, (v, en, run)) in out.iter_mut().zip(sum) {
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
            return Ok(());
        }
        for set in &inst.threads {
            if self.per_member_read {
                for (fd, slot) in set.iter().zip(out.iter_mut()) {
                    // Small buffers: the read path zeroes 32 bytes, not 1 KiB.
                    let mut words = [0u64; 4];
                    let n = read_words(&*self._shared.sys, fd, &mut words)?;
                    if n != 4 {
                        return Err(short_read(n, 4));
                    }
                    slot.accumulate(&Reading::new(words[0], words[1], words[2]));
                }
            } else if let Some(leader) = set.first() {
                let want = 3 + 2 * self.members.len();
                // Groups of up to 4: 88-byte buffers, not 536-byte ones.
                let mut small = [0u64; 11];
                let mut big;
                let words: &mut [u64] = if want <= small.len() {
                    &mut small[..want]
                } else {
                    big = [0u64; READ_WORDS];
                    &mut big[..want]
                };
                let n = read_words(&*self._shared.sys, leader, words)?;
                if n != want || words[0] as usize != self.members.len() {
                    return Err(short_read(n, want));
                }
                let (en, run) = (words[1], words[2]);
                for (i, slot) in out.iter_mut().enumerate() {
                    slot.accumulate(&Reading::new(words[3 + 2 * i], en, run));
                }
            }
        }
        Ok(())
    }

    fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        if out.len() != self.members.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Read,
                format!(
                    "read_into needs {} slots, got {}",
                    self.members.len(),
                    out.len()
                ),
            ));
        }
        // The common group case, one leader fd (one thread or one CPU): one
        // read(2), decoded straight from the buffer in a single pass.
        if let ([inst], false) = (self.instances.as_slice(), self.per_member_read) {
            if let (false, [set]) = (inst.pending_exec, inst.threads.as_slice()) {
                if let Some(leader) = set.first() {
                    let mut b = [0u8; READ_WORDS * 8];
                    let want = 3 + 2 * out.len();
                    let n = (self._shared.sys)
                        .read(leader.as_fd(), &mut b[..want * 8])
                        .map_err(|e| errmap::op_error(Op::Read, e))?;
                    let w = |i: usize| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(&b[i * 8..i * 8 + 8]);
                        u64::from_ne_bytes(a)
                    };
                    if n != want * 8 || w(0) != out.len() as u64 {
                        return Err(short_read(n / 8, want));
                    }
                    let (en, run) = (w(1), w(2));
                    for (i, slot) in out.iter_mut().enumerate() {
                        let mut r = self.retired[i];
                        r.accumulate(&Reading::new(w(3 + 2 * i), en, run));
                        r.value = r.value.wrapping_add(self.base[i]);
                        *slot = r;
                    }
                    return Ok(());
                }
            }
        }
        out.copy_from_slice(&self.retired);
        for inst in &self.instances {
            self.read_instance(inst, out)?;
        }
        for (slot, base) in out.iter_mut().zip(&self.base) {
            slot.value = slot.value.wrapping_add(*base);
        }
        Ok(())
    }

    fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        let mut v = Vec::with_capacity(self.instances.len());
        let mut one = vec![Reading::default(); self.members.len()];
        for inst in &self.instances {
            one.fill(Reading::default());
            self.read_instance(inst, &mut one)?;
            v.push(InstanceReading {
                instance: inst.instance,
                reading: one[0],
            });
        }
        Ok(v)
    }

    /// Every member on each instance (a group's [`read_instances`](pmc_core::Group::read_instances)).
    fn read_group_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        let mut v = Vec::with_capacity(self.instances.len());
        for inst in &self.instances {
            let mut readings = vec![Reading::default(); self.members.len()];
            self.read_instance(inst, &mut readings)?;
            v.push(GroupInstanceReading {
                instance: inst.instance,
                readings,
            });
        }
        Ok(v)
    }

    fn write(&mut self, value: u64) -> Result<u64> {
        if self.state == State::Running {
            return Err(busy(Op::Write));
        }
        let mut now = vec![Reading::default(); self.members.len()];
        self.read_into(&mut now)?;
        let old = now[0].value;
        let group = self.members.len() > 1;
        let sys = self._shared.sys.clone();
        self.for_each_leader(|_, fd| {
            sys.ioctl(fd, Ioctl::Reset(group))
                .map_err(|e| errmap::op_error(Op::Write, e))
        })?;
        for r in &mut self.retired {
            *r = Reading::new(0, r.time_enabled, r.time_running);
        }
        self.base[0] = value;
        Ok(old)
    }

    fn set_count(&mut self, count: u64) -> Result<()> {
        if self.state == State::Running {
            return Err(busy(Op::SetCount));
        }
        if self.members[0].alloc.mode.is_sampling() {
            if count == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::SetCount,
                    "a sampling period must be at least 1",
                ));
            }
            let sys = self._shared.sys.clone();
            self.for_each_leader(|_, fd| {
                sys.ioctl(fd, Ioctl::Period(count))
                    .map_err(|e| errmap::op_error(Op::SetCount, e))
            })?;
            for m in &mut self.members {
                m.attr.set_freq(0);
                m.attr.__bindgen_anon_1.sample_period = count;
                m.alloc.mode = Mode::Sampling(Rate::Period(count));
            }
            return Ok(());
        }
        self.write(count).map(|_| ())
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        if self.is_sampling() && !self.local_wanted {
            // Whatever the rings still hold goes to the log before the fds close.
            self._shared.hub.unregister(self.token());
        }
    }
}

fn busy(op: Op) -> Error {
    Error::new(ErrorKind::Busy, op, format!("cannot {op} a running PMC"))
        .with_errno(libc::EBUSY)
        .with_help("stop it first")
}

fn short_read(n: usize, want: usize) -> Error {
    Error::new(
        ErrorKind::Os,
        Op::Read,
        format!("the kernel returned {n} words for a read_format of {want}"),
    )
}

/// One `read(2)` of up to `words.len()` words; no allocation, and a single
/// counter's read zeroes a 32-byte buffer, not a group's 536.
fn read_words(sys: &dyn Sys, fd: &OwnedFd, words: &mut [u64]) -> Result<usize> {
    if words.len() <= 4 {
        read_words_in::<32>(sys, fd, words)
    } else if words.len() <= 11 {
        read_words_in::<88>(sys, fd, words)
    } else {
        read_words_in::<{ READ_WORDS * 8 }>(sys, fd, words)
    }
}

fn read_words_in<const B: usize>(sys: &dyn Sys, fd: &OwnedFd, words: &mut [u64]) -> Result<usize> {
    let mut bytes = [0u8; B];
    let len = (words.len() * 8).min(B);
    let n = sys
        .read(fd.as_fd(), &mut bytes[..len])
        .map_err(|e| errmap::op_error(Op::Read, e))?;
    for (w, chunk) in words.iter_mut().zip(bytes[..n].chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        *w = u64::from_ne_bytes(a);
    }
    Ok(n / 8)
}

fn pid_i32(pid: u32) -> Result<i32> {
    i32::try_from(pid).ok().filter(|p| *p > 0).ok_or_else(|| {
        Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("{pid} is not a valid pid"),
        )
        .with_errno(libc::EINVAL)
    })
}

/// The thread ids of process `pid` (the calling process for `None`), main thread first, the
/// others in ascending order.
fn thread_ids(sys: &dyn Sys, pid: Option<u32>) -> Result<Vec<i32>> {
    let pid = pid.unwrap_or_else(|| sys.getpid());
    let mut tids = sys.thread_ids(pid).ok_or_else(|| {
        Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("no process with pid {pid}"),
        )
        .with_errno(libc::ESRCH)
    })?;
    tids.sort_unstable();
    let main = i32::try_from(pid).unwrap_or(0);
    if let Some(i) = tids.iter().position(|t| *t == main) {
        tids.swap(0, i);
    }
    Ok(tids)
}

/// One counting or sampling PMC on Linux.
pub struct LinuxPmc {
    c: Counters,
}

impl std::fmt::Debug for LinuxPmc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPmc")
            .field("allocation", &self.c.members[0].alloc)
            .field("state", &self.c.state)
            .field("instances", &self.c.instances.len())
            .finish()
    }
}

impl pmc_core::Pmc for LinuxPmc {
    fn allocation(&self) -> &Allocation {
        &self.c.members[0].alloc
    }
    fn counted_event(&self) -> pmc_core::EventSpec {
        self.c.members[0].counted_event()
    }
    fn state(&self) -> State {
        self.c.state
    }
    fn attach(&mut self, target: Target) -> Result<()> {
        self.c.attach(target)
    }
    fn detach(&mut self, target: Target) -> Result<()> {
        self.c.detach(target)
    }
    fn targets(&self) -> Vec<Target> {
        self.c
            .instances
            .iter()
            .filter_map(|i| match i.instance {
                Instance::Target(t) => Some(t),
                Instance::Cpu(_) => None,
            })
            .collect()
    }
    fn start(&mut self) -> Result<()> {
        self.c.start()
    }
    fn stop(&mut self) -> Result<()> {
        self.c.stop()
    }
    fn read(&self) -> Result<Reading> {
        // The common case, one fd (a PMC on one thread or one CPU): one
        // read(2) and a few instructions, no loops.
        if let [inst] = self.c.instances.as_slice() {
            if let (false, [set]) = (inst.pending_exec, inst.threads.as_slice()) {
                if let [fd] = set.as_slice() {
                    let mut b = [0u8; 32];
                    let n = (self.c._shared.sys)
                        .read(fd.as_fd(), &mut b)
                        .map_err(|e| errmap::op_error(Op::Read, e))?;
                    if n != 32 {
                        return Err(short_read(n / 8, 4));
                    }
                    let w = |i: usize| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(&b[i * 8..i * 8 + 8]);
                        u64::from_ne_bytes(a)
                    };
                    let mut r = self.c.retired[0];
                    r.accumulate(&Reading::new(w(0), w(1), w(2)));
                    r.value = r.value.wrapping_add(self.c.base[0]);
                    return Ok(r);
                }
            }
        }
        let mut r = [Reading::default()];
        self.c.read_into(&mut r)?;
        Ok(r[0])
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
    /// As the inherent [`LinuxPmc::log_counts`].
    fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }
    fn native_config(&self) -> Vec<NativeField> {
        crate::describe::attr_fields(&self.c.members[0].opened)
    }
    fn release(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl LinuxPmc {
    /// Makes this sampling PMC deliver its samples to its owner instead of the log: after
    /// [`start`](pmc_core::Pmc::start), [`samples`](LinuxPmc::samples) drains its rings. Call
    /// before the first start. No log needs to be configured.
    ///
    /// ```no_run
    /// use pmc_core::{Allocation, Backend as _, Pmc as _, Rate};
    /// # fn main() -> pmc_core::Result<()> {
    /// let backend = pmc_linux::Backend::open()?;
    /// let a = Allocation::sampling("cpu-clock".parse()?, Rate::Frequency(1000));
    /// let mut pmc = backend.allocate(&a)?;
    /// pmc.sample_in_process()?;
    /// pmc.start()?; // samples this process
    /// let mut x = 0u64;
    /// for i in 0..50_000_000u64 { x = x.wrapping_mul(31).wrapping_add(i); }
    /// for s in pmc.samples()? {
    ///     println!("{} {:#x} ({} frames)", s.tid, s.ip, s.callchain.len());
    /// }
    /// # assert!(x != 1);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] for a counting PMC or one already started with the log.
    pub fn sample_in_process(&mut self) -> Result<()> {
        self.c.set_local()
    }

    /// The samples published since the last call, decoded (non-blocking: drains what the rings
    /// hold now). Losses are counted in [`sample_summary`](LinuxPmc::sample_summary).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] unless [`sample_in_process`](LinuxPmc::sample_in_process)
    /// was called.
    pub fn samples(&mut self) -> Result<std::vec::IntoIter<OwnedSample>> {
        match self.c.local.as_mut() {
            Some(l) => Ok(l.drain().into_iter()),
            None if self.c.local_wanted => Ok(Vec::new().into_iter()),
            None => Err(Error::new(
                ErrorKind::InvalidState,
                Op::Read,
                "this PMC's samples go to the log, not to its owner",
            )
            .with_help("call sample_in_process before start")),
        }
    }

    /// Writes this PMC's current counts into the backend's log as interval
    /// [`Counter`](pmc_log::record::Counter) records, one per CPU (system scope) or target
    /// (process scope), after its descriptor (`pmcstat -w` with `-O`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] when no log is configured; read errors as
    /// [`read_instances`](pmc_core::Pmc::read_instances).
    pub fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }

    /// Samples read and lost so far by the in-process reader (`None` for PMCs feeding the log:
    /// see [`Backend::sampling_details`]).
    pub fn sample_summary(&self) -> Option<SamplingSummary> {
        self.c.local.as_ref().map(|l| l.summary.clone())
    }

    /// The raw fd of the first instance's leader, for benchmarks comparing
    /// against a bare `read(2)`.
    #[doc(hidden)]
    pub fn first_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.c
            .instances
            .first()
            .and_then(|i| i.threads.first())
            .and_then(|s| s.first())
            .map(|f| f.as_fd())
    }

    /// For [`crate::rdpmc::FastReader`]: the one fd of a counting PMC that
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
        let [inst] = c.instances.as_slice() else {
            return Err("it is not attached to exactly one target (start it first)");
        };
        let [set] = inst.threads.as_slice() else {
            return Err("it counts more than one thread");
        };
        // A Target::Current set in a single-threaded process is the main
        // thread's; the caller must be that thread.
        let sys = &c._shared.sys;
        if inst.instance != Instance::Target(Target::Current)
            || i64::from(sys.gettid()) != i64::from(sys.getpid())
        {
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

/// Several PMCs scheduled together on Linux (a perf event group).
pub struct LinuxGroup {
    c: Counters,
    allocs: Vec<Allocation>,
}

impl std::fmt::Debug for LinuxGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxGroup")
            .field("allocations", &self.allocs)
            .field("state", &self.c.state)
            .finish()
    }
}

impl pmc_core::Group for LinuxGroup {
    fn allocations(&self) -> &[Allocation] {
        &self.allocs
    }
    fn state(&self) -> State {
        self.c.state
    }
    fn attach(&mut self, target: Target) -> Result<()> {
        self.c.attach(target)
    }
    fn detach(&mut self, target: Target) -> Result<()> {
        self.c.detach(target)
    }
    fn start(&mut self) -> Result<()> {
        self.c.start()
    }
    fn stop(&mut self) -> Result<()> {
        self.c.stop()
    }
    /// As the inherent [`LinuxGroup::log_counts`].
    fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }
    fn read_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        self.c.read_group_instances()
    }
    fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        self.c.read_into(out)
    }
}

impl LinuxGroup {
    /// Writes each member's current total into the backend's log as an interval
    /// [`Counter`](pmc_log::record::Counter) record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] when no log is configured; read errors as
    /// [`read_into`](pmc_core::Group::read_into).
    pub fn log_counts(&self) -> Result<()> {
        self.c.log_counts()
    }

    /// The native configuration of each member.
    pub fn native_configs(&self) -> Vec<Vec<NativeField>> {
        self.c
            .members
            .iter()
            .map(|m| crate::describe::attr_fields(&m.attr))
            .collect()
    }
}
