//! Counting PMCs on perf_event: the hwpmc verbs emulated over fds.
//!
//! [`LinuxPmc`] (`pmc.rs`) and [`LinuxGroup`] (`group.rs`), over one `Counters`, implement
//! pmc-core's `Pmc` and `Group`. `Counters` (here) has the hwpmc verbs; its `InstanceSet`
//! (`instances/`) opens, reads, enables and reopens the fds. Other submodules: `open`
//! (attrs), `fallback` (the kernel fallbacks of one member's open), `layout` (which fds a
//! target gets), `read` (read(2) and the verbs' reads), `sampling` (what sampling and the log
//! flags add to the verbs), `rings` (sampling rings), `switch` (log-proccsw). Below: where
//! Linux emulates hwpmc, sampling.
//!
//! One `Counters` value holds a PMC or a group: its members, its life cycle,
//! and an `InstanceSet` (`instances/`) with, for each instance (a CPU for
//! system scope, a target for process scope), one set of fds per thread,
//! leader first. `Counters` has the verbs; the `InstanceSet` opens, reads,
//! enables and reopens the fds. A single PMC is a group of one.
//!
//! # Where Linux emulates hwpmc
//!
//! * **Deferred open.** perf_event_open needs the target at open time, so a
//!   process-scope allocation opens nothing but a disabled probe on the
//!   calling thread (to report a bad event at allocate time, as hwpmc does);
//!   each [`attach`](pmc_core::Pmc::attach) opens one fd per thread of the
//!   target.
//! * **Process targets.** A process ([`Target::Current`], [`Target::Pid`],
//!   [`Target::Exec`]) is counted whole, as hwpmc counts a process: every
//!   thread present at attach time, and the threads it creates later
//!   (`inherit` with `inherit_thread`, Linux 5.13+; older kernels cannot
//!   follow threads without child processes, and the attach is refused with
//!   [`ErrorKind::NotSupported`] rather than undercounting). With
//!   [`Flags::DESCENDANTS`](pmc_core::Flags::DESCENDANTS) (plain `inherit`)
//!   its child processes too. [`Target::CurrentThread`] is the calling thread
//!   alone, without inheritance, so that its fd can be mapped for user-space
//!   reads ([`crate::FastReader`]).
//! * **Groups** are the kernel's: members opened enabled under a disabled
//!   leader, as perf opens them, and each `start` enables the members before
//!   the leader, so the group is scheduled in whole (enabling the leader
//!   first lets it run alone until the next reschedule, and members of an
//!   inherited group lost counts that way).
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
//! `use_clockid` with `CLOCK_MONOTONIC`, a wakeup watermark of half a ring,
//! and, on each fd set's leader, the tracking bits (`mmap`/`mmap2`, `comm`,
//! `comm_exec`, `task`). At start their ring buffers are mapped ([`crate::log`]):
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
//! [`Pmc::sample_in_process`](pmc_core::Pmc::sample_in_process), the owner's [`Pmc::samples`](pmc_core::Pmc::samples). Stop
//! drains the PMC's rings into the log, so what was sampled before `stop`
//! returns is in it; dropping the PMC drains them a last time.
//! `Flags::LOG_PROCEXIT` (process scope) logs each process's count at its
//! exit (see [`crate::log`]): for a sampling PMC the sum of its sample
//! periods; for a counting PMC the kernel's count, the PMC being opened as
//! `perf record -s` opens its events (one inherited event per CPU, with
//! `inherit_stat`, `task` and a ring for the `PERF_RECORD_READ` the kernel
//! writes at each inherited task's exit); each target's own count is logged
//! when the kernel hangs up its events (the hub keeps a duplicate of each
//! target's per-CPU fds to poll and read them), so one target's exit is logged
//! whatever the others do, after a stop too. Give such a counting PMC the target
//! alone: with `inherit_stat` the kernel swaps the counts of a parent's and a
//! child's events by list position when it swaps their contexts, which mixes
//! the counts of different events on the same task;
//! `Flags::LOG_PROCCSW` (process scope, counting or sampling) logs the counts
//! of each time slice at every context switch of the targets, through a
//! switch group: a `context-switches` sampler with `PERF_SAMPLE_READ` over
//! copies of the PMC's events (see `SwitchGroup::new`). The slice that
//! ends at a task's exit is not logged: the kernel detaches the task's events
//! before its final switch.

#[cfg(all(test, feature = "sampling"))]
mod backlog_tests;
mod fallback;
mod group;
mod instances;
mod layout;
mod open;
mod pmc;
mod read;
#[cfg(feature = "sampling")]
mod rings;
#[cfg(feature = "sampling")]
mod sampling;
#[cfg(feature = "sampling")]
mod switch;
#[cfg(all(test, feature = "sampling"))]
mod tests;

pub use group::LinuxGroup;
pub use pmc::LinuxPmc;

use instances::InstanceSet;
use layout::ReadLayout;
use open::{check_log_flags, ring_pages_for};
#[cfg(feature = "sampling")]
use rings::{Delivery, Rings};
#[cfg(feature = "sampling")]
use switch::SwitchGroup;

use crate::errno;
use crate::events::{self, Resolved};
#[cfg(feature = "sampling")]
use crate::log::RingPurpose;
use crate::shared::Shared;
use crate::sys::Sys;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::lifecycle::Lifecycle;
use pmc_core::{
    Allocation, Error, ErrorKind, Mode, NativeField, Op, Rate, Reading, Result, Scope, Target,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The most members a group may have (the read buffer lives on the stack).
pub const MAX_GROUP_MEMBERS: usize = 32;

/// Linux's `CLOCK_MONOTONIC` (`uapi/linux/time.h`), the clock of the samples' `time`
/// (`perf_event_attr.clockid`): fixed, not the host libc's (macOS has 6), as the errno
/// values are (`errno.rs`).
const CLOCK_MONOTONIC: i32 = 1;
/// A group read's words: nr, time_enabled, time_running, then value, id and (sampling PMCs
/// with `PERF_FORMAT_LOST`) lost per member.
const READ_WORDS: usize = 3 + 3 * MAX_GROUP_MEMBERS;

struct Member {
    alloc: Allocation,
    /// Its id in the sample log.
    #[cfg(feature = "sampling")]
    pmc_id: u32,
    event: String,
    resolved: Resolved,
    attr: perf_event_attr,
    /// The attr of the most recent successful open (with the per-target
    /// bits, e.g. enable_on_exec), for `native_config`.
    opened: perf_event_attr,
    /// A sampling member at a fixed period: that period in the kernel's unit, which its
    /// samples do not carry (`open::set_sampling_bits`) and the drain fills in. Shared with
    /// the rings, so that `set_count` changes it for samples taken after it. 0 otherwise.
    fixed_period: Arc<AtomicU64>,
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

    /// `attr`'s fields by their C names, then, for a cgroup PMC, `cgroup=NAME` (the
    /// cgroup is the fd passed as perf_event_open's pid, which no attr field holds);
    /// `,`, `=` and `%` in the name are %-escaped, as the log's `key=value,...` needs.
    fn native_fields(&self, attr: &perf_event_attr) -> Vec<NativeField> {
        let mut v = crate::describe::attr_fields(attr);
        if let Some(cg) = &self.alloc.cgroup {
            v.push(NativeField {
                name: "cgroup".to_owned(),
                value: cg
                    .replace('%', "%25")
                    .replace(',', "%2C")
                    .replace('=', "%3D"),
            });
        }
        v
    }
}

/// What a PMC or a group is made of, and the hwpmc verbs over it. The fds of its instances
/// are an [`InstanceSet`]'s.
struct Counters<S: Sys> {
    members: Vec<Member>,
    /// hwpmc's life cycle: the state, the attached targets, the rules of each verb.
    life: Lifecycle,
    /// The fd sets of its CPUs or targets, and the probe opened at allocate.
    fds: InstanceSet<S>,
    /// Counts kept from detached targets, per member.
    retired: Vec<Reading>,
    /// Base value set by write/set_count, per member.
    base: Vec<u64>,
    _shared: Arc<Shared<S>>,
    /// The sampling set: the rings of a sampling PMC, a switch group, or a counting PMC with
    /// log-procexit.
    #[cfg(feature = "sampling")]
    rings: Option<Rings>,
    /// log-proccsw: the switch group that logs this PMC's counts at every context switch of
    /// its targets (see [`SwitchGroup`]).
    #[cfg(feature = "sampling")]
    csw: Option<Box<SwitchGroup<S>>>,
}

impl<S: Sys> Counters<S> {
    fn new(allocs: &[Allocation], shared: Arc<Shared<S>>) -> Result<Counters<S>> {
        let facts = shared.facts();
        let inherit = allocs
            .iter()
            .any(|a| a.flags.contains(pmc_core::Flags::DESCENDANTS));
        let read = if allocs.len() == 1 || inherit {
            ReadLayout::PerMember
        } else {
            ReadLayout::Group
        };
        let ring_pages = ring_pages_for(allocs, &shared, &facts);
        let sampling = allocs.iter().any(|a| a.mode.is_sampling());
        if sampling && allocs.iter().any(|a| !a.mode.is_sampling()) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "a group mixes sampling and counting members",
            )
            .with_help("allocate the counting PMCs in a group of their own"));
        }
        let ring_bytes = ring_pages.saturating_mul(shared.sys.page_size());
        let mut members = Vec::with_capacity(allocs.len());
        for a in allocs {
            check_log_flags(a, allocs.len())?;
            let grouped = read == ReadLayout::Group;
            members.push(Member::new(a, &facts, grouped, ring_bytes, &shared)?);
        }
        // One ring holds the group's samples, decoded by the leader's layout.
        if sampling
            && members
                .iter()
                .any(|m| m.attr.sample_type != members[0].attr.sample_type)
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "the members of a sampling group record different sample fields (a call \
                 graph on some only, or a frequency on some and a period on others)",
            )
            .with_help(
                "give every member of a sampling group the same flags, call graph and kind of \
                 rate, or allocate them as separate PMCs",
            ));
        }
        // log-procexit counting: perf record -s's layout (one inherited event per CPU, with a
        // ring for its PERF_RECORD_READs at task exits; see log::procexit::ExitReads).
        let exit_reads = !sampling
            && allocs
                .iter()
                .any(|a| a.flags.contains(pmc_core::Flags::LOG_PROCEXIT));
        let read = if exit_reads {
            ReadLayout::PerCpuTotals
        } else {
            read
        };
        let mut c = Counters::unopened(members, shared, read);
        #[cfg(feature = "sampling")]
        {
            c.rings = match (sampling, exit_reads) {
                (true, _) => Some(Rings::new(ring_pages, RingPurpose::Samples)),
                (false, true) => Some(Rings::new(ring_pages, RingPurpose::ExitReads)),
                (false, false) => None,
            };
        }
        #[cfg(feature = "sampling")]
        if allocs
            .iter()
            .any(|a| a.flags.contains(pmc_core::Flags::LOG_PROCCSW))
        {
            c.csw = Some(Box::new(SwitchGroup::new(
                &c.members,
                inherit,
                ring_pages,
                &facts,
                c._shared.clone(),
            )?));
        }
        if let Some(name) = &allocs[0].cgroup {
            if allocs.iter().any(|a| a.cgroup != allocs[0].cgroup) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::Allocate,
                    "every member of a group must count the same cgroup",
                )
                .with_help("allocate the PMCs of each cgroup in a group of their own"));
            }
            c.fds.set_cgroup(crate::cgroup::open(&c._shared.sys, name)?);
        }
        c.fds
            .open_instances(&mut c.members, c.life.is_running(), &allocs[0].scope)?;
        Ok(c)
    }

    /// A PMC or group with nothing opened yet: allocated, no targets, no counts kept.
    pub(super) fn unopened(
        members: Vec<Member>,
        shared: Arc<Shared<S>>,
        read: ReadLayout,
    ) -> Counters<S> {
        let n = members.len();
        let scope = members.first().map_or(&Scope::Process, |m| &m.alloc.scope);
        let life = Lifecycle::new(scope, shared.sys.getpid());
        Counters {
            members,
            life,
            fds: InstanceSet::new(read, shared.clone()),
            retired: vec![Reading::default(); n],
            base: vec![0; n],
            _shared: shared,
            #[cfg(feature = "sampling")]
            rings: None,
            #[cfg(feature = "sampling")]
            csw: None,
        }
    }

    /// Attaching is allowed while running (perf_event opens enabled fds; hwpmc refuses with
    /// EBUSY): the process-scope and already-attached rules of [`Lifecycle`] only.
    fn attach(&mut self, target: Target) -> Result<()> {
        self.life.check_process_scope(Op::Attach)?;
        self.life.check_not_attached(target)?;
        self.fds
            .open_target(&mut self.members, self.life.is_running(), target)?;
        #[cfg(feature = "sampling")]
        if self.life.is_running() && self.is_sampling() {
            // A target added while sampling: map its rings now.
            if let Err(e) = self.map_unmapped() {
                self.fds.pop();
                return Err(e);
            }
        }
        #[cfg(feature = "sampling")]
        if let Some(sw) = self.csw.as_mut() {
            if let Err(e) = sw.attach(target) {
                self.fds.pop();
                return Err(e);
            }
        }
        self.life.record_attach(target);
        #[cfg(feature = "sampling")]
        self.log_target(target, true);
        Ok(())
    }

    fn detach(&mut self, target: Target) -> Result<()> {
        self.life.check_process_scope(Op::Detach)?;
        let Some(pos) = self.fds.position(target) else {
            return Err(Error::new(
                ErrorKind::NotAttached,
                Op::Detach,
                format!("the PMC is not attached to {target}"),
            )
            .with_errno(errno::EINVAL));
        };
        let mut last = vec![Reading::default(); self.members.len()];
        self.fds
            .read_instance(&self.members, &self.fds.instances()[pos], &mut last)?;
        #[cfg(feature = "sampling")]
        if self.is_sampling() && self.fds.rings_mapped(pos) {
            // Its rings stay with the log until the PMC goes (the drain thread holds their
            // fds): stop the events now, and log what they sampled.
            self.fds.disable_instance(pos, Op::Detach)?;
            if !self.local_wanted() {
                self._shared.hub.drain_token(self.token());
                self.report_kernel_lost();
            }
        }
        for (kept, r) in self.retired.iter_mut().zip(&last) {
            kept.accumulate(r);
        }
        #[cfg(feature = "sampling")]
        if self.exit_reads() {
            // No exit of a process detached is logged (hwpmc's pmc_detach_process).
            let pid = self.fds.target_pid(&self.fds.instances()[pos].instance);
            self._shared.hub.exit_target_closed(self.token(), pid);
        }
        self.fds.remove(pos);
        self.life.record_detach(target);
        #[cfg(feature = "sampling")]
        self.log_target(target, false);
        #[cfg(feature = "sampling")]
        if let Some(sw) = self.csw.as_mut() {
            sw.detach(target)?;
        }
        Ok(())
    }

    fn start(&mut self) -> Result<()> {
        #[cfg(feature = "sampling")]
        self.check_log_for_start()?;
        if !self.life.start_needed() {
            return Ok(());
        }
        if self.life.start_attaches_owner() {
            self.attach(Target::Current)?;
        }
        self.fds
            .reopen_missed_exec(&mut self.members, self.life.is_running())?;
        #[cfg(feature = "sampling")]
        if self.rings.is_some() {
            if !self.local_wanted() && !self._shared.hub.has_rings(self.token()) {
                // Never mapped, or the log was closed (which released the rings).
                self.fds.forget_rings();
            }
            self.map_unmapped()?;
        }
        self.life.record_start();
        let group = self.members.len() > 1;
        // The members first, then the leader: see InstanceSet::enable_all.
        let r = self.fds.enable_all();
        // The switch group starts after the PMC and stops before it, so the counts it logs
        // lie inside the PMC's own.
        #[cfg(feature = "sampling")]
        let r = r.and_then(|()| match self.csw.as_mut() {
            Some(sw) => sw.start(),
            None => Ok(()),
        });
        if r.is_err() {
            self.life.record_stop();
            let _ = self.fds.disable_all(group, Op::Stop);
        }
        r
    }

    fn stop(&mut self) -> Result<()> {
        if !self.life.stop_needed() {
            return Ok(());
        }
        #[cfg(feature = "sampling")]
        if let Some(sw) = self.csw.as_mut() {
            sw.stop()?;
        }
        let group = self.members.len() > 1;
        self.fds.disable_all(group, Op::Stop)?;
        self.life.record_stop();
        #[cfg(feature = "sampling")]
        if self.is_sampling() && !self.local_wanted() {
            // Everything sampled before the stop is in the log once stop returns.
            self._shared.hub.drain_token(self.token());
            self.report_kernel_lost();
        }
        #[cfg(feature = "sampling")]
        if self.exit_reads() {
            self.finish_exit_reads();
        }
        // An exec target whose exec has not come yet would be enabled by it
        // (`enable_on_exec` overrides a disable), counting after the stop: reopen it without.
        let armed = self.fds.armed_exec(&self.members)?;
        if armed.is_empty() {
            return Ok(());
        }
        #[cfg(feature = "sampling")]
        if self.is_sampling() && self.local_wanted() {
            return Ok(());
        }
        #[cfg(feature = "sampling")]
        if self.is_sampling() && self._shared.hub.has_rings(self.token()) {
            // The log's rings map the old fds and keep their events alive: drop them all
            // (drained first); the next start maps every instance again.
            self._shared.hub.unregister(self.token());
            self.fds.forget_rings();
        }
        self.fds
            .disarm_exec(&mut self.members, self.life.is_running(), armed)
    }

    fn write(&mut self, value: u64) -> Result<u64> {
        self.life.check_stopped(Op::Write)?;
        let mut now = vec![Reading::default(); self.members.len()];
        self.read_into(&mut now)?;
        let old = now[0].value;
        let group = self.members.len() > 1;
        self.fds.reset_all(group)?;
        for r in &mut self.retired {
            *r = Reading::new(0, r.time_enabled, r.time_running);
        }
        self.base[0] = value;
        Ok(old)
    }

    fn set_count(&mut self, count: u64) -> Result<()> {
        self.life.check_stopped(Op::SetCount)?;
        if self.members[0].alloc.mode.is_sampling() {
            if count == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    Op::SetCount,
                    "a sampling period must be at least 1",
                ));
            }
            // PERF_EVENT_IOC_PERIOD on an event sampling at a frequency sets its frequency, not
            // a period (core.c perf_event_period(): `if (event->attr.freq) {
            // event->attr.sample_freq = value; } else { event->attr.sample_period = value; }`),
            // and its samples would still carry periods asked for with the frequency.
            if self
                .members
                .iter()
                .any(|m| matches!(m.alloc.mode, Mode::Sampling(Rate::Frequency(_))))
            {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    Op::SetCount,
                    "set_count sets a sampling period, and this PMC samples at a frequency \
                     (the kernel would take the count as a new frequency)",
                )
                .with_help(
                    "allocate it with Rate::Period(n) to sample every n events and change n \
                     with set_count, or release it and allocate one at the new frequency",
                ));
            }
            // The samples taken at the old period are drained first: theirs is filled in
            // from the PMC's period at the drain (RingSource::fixed_periods).
            #[cfg(feature = "sampling")]
            match self.rings.as_mut().map(|r| &mut r.delivery) {
                Some(Delivery::Local(Some(l))) => l.hold(),
                Some(Delivery::Log) => self._shared.hub.drain_token(self.token()),
                _ => {}
            }
            let kernel = events::soft_clock_period(&self.members[0].alloc.event, count);
            self.fds.set_period(kernel)?;
            for m in &mut self.members {
                m.attr.set_freq(0);
                m.attr.__bindgen_anon_1.sample_period = kernel;
                m.fixed_period.store(kernel, Ordering::Relaxed);
                m.alloc.mode = Mode::Sampling(Rate::Period(count));
            }
            return Ok(());
        }
        self.write(count).map(|_| ())
    }
}
