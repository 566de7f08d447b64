//! The fd sets of a PMC's instances (a CPU for system scope, a target for process scope).
//! [`Counters`](super::Counters) holds one [`InstanceSet`] and says when (the hwpmc verbs);
//! this module says how: here the types, the accessors, enabling, disabling, resetting;
//! `attach.rs` opening the sets per thread and CPU, `exec.rs` exec targets (the reopen of
//! one whose exec came before its first start), `read.rs` reading and summing them,
//! `rings.rs` the rings they map (sampling).

mod attach;
mod exec;
mod read;
#[cfg(feature = "sampling")]
mod rings;

use crate::counter::layout::ReadLayout;
use crate::errno_map;
use crate::shared::Shared;
use crate::sys::{Ioctl, Sys};
use pmc_core::{Instance, Op, Result, Target};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

/// How many times a fd set is opened again after a member lost a race with its thread. A
/// thread that keeps creating threads (the inherited events' contexts swap at each switch to
/// a child) lost it 4 times in a row on a loaded 2-CPU machine (two copies of pmc-linux's
/// `counting` suite side by side: 24 sets needed 1 retry, 2 needed 2, one 3, one 4), and CI
/// once saw 5; each try after the second yields the CPU first. A real refusal repeats and
/// is reported after about a millisecond of tries.
pub(super) const MEMBER_RACE_RETRIES: u32 = 64;

/// Where an instance stands with its target's exec ([`Target::Exec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExecState {
    /// Not an exec target, or one reopened without `enable_on_exec` (its exec seen, or
    /// disarmed at a stop): counted as opened.
    Plain,
    /// Opened with `enable_on_exec` and not started by us since (attached while not running):
    /// reads as zero, whatever the kernel counted after an exec; the exec enables its fds
    /// whatever our state.
    Pending,
    /// Opened with `enable_on_exec`, started by us (or attached while running), the exec not
    /// seen yet: the kernel enables these fds at the exec, whatever our state.
    Armed,
    /// Its exec came before its first start: reopened as a pid at that start, so its mappings
    /// are synthesized like a pid's.
    Missed,
}

impl ExecState {
    /// Opened with `enable_on_exec` and the exec not seen yet.
    fn armed(self) -> bool {
        matches!(self, ExecState::Pending | ExecState::Armed)
    }
}

/// The fds of one instance: a CPU (system scope) or a target (process scope).
pub(super) struct InstanceFds {
    pub(super) instance: Instance,
    /// One fd set per thread (or per CPU for system scope: exactly one), leader first.
    pub(super) threads: Vec<Vec<OwnedFd>>,
    /// Where it stands with its target's exec.
    exec: ExecState,
    /// The CPU each fd set of `threads` was opened on (-1: any, per task).
    cpus: Vec<i32>,
    /// Its ring buffers (sampling, log-procexit) are mapped and handed to the log or the
    /// owner; false until the next start maps them, and again when the log let them go.
    rings_mapped: bool,
    /// [`Target::CurrentThread`]: the thread it was attached on.
    pub(super) thread: Option<i32>,
}

/// The fd sets of every instance of a PMC or group, and the probe opened at allocate.
///
/// Its methods take the PMC's members (`&[Member]`; the opening ones `&mut`, to record the
/// attr each was opened with) and, to open, whether the PMC is running (fds are then opened
/// enabled).
pub(super) struct InstanceSet<S: Sys> {
    /// One per CPU (system scope) or attached target (process scope), in attach order.
    instances: Vec<InstanceFds>,
    /// A disabled fd set on the allocating thread, opened to validate the
    /// event at allocate time; reused by an attach to [`Target::Current`]
    /// from the same thread.
    probe: Option<(i32, Vec<OwnedFd>)>,
    /// How each fd set is read.
    read: ReadLayout,
    shared: Arc<Shared<S>>,
    /// A system-scope PMC of one cgroup ([`Allocation::cgroup`](pmc_core::Allocation::cgroup)): its directory, the `pid` of
    /// every CPU's events (opened with `PERF_FLAG_PID_CGROUP`).
    cgroup: Option<crate::cgroup::Cgroup>,
}

impl<S: Sys> InstanceSet<S> {
    /// No instances yet.
    pub(super) fn new(read: ReadLayout, shared: Arc<Shared<S>>) -> InstanceSet<S> {
        InstanceSet {
            instances: Vec::new(),
            probe: None,
            read,
            shared,
            cgroup: None,
        }
    }

    /// Counts one cgroup: its directory is the `pid` of every CPU's events from now on.
    pub(super) fn set_cgroup(&mut self, cgroup: crate::cgroup::Cgroup) {
        self.cgroup = Some(cgroup);
    }

    /// How each fd set is read.
    pub(super) fn read_layout(&self) -> ReadLayout {
        self.read
    }

    /// log-procexit's counting layout (one inherited event per CPU, see
    /// `Counters::new`).
    fn exit_reads(&self) -> bool {
        self.read == ReadLayout::PerCpuTotals
    }

    /// The instances, in attach order.
    pub(super) fn instances(&self) -> &[InstanceFds] {
        &self.instances
    }

    /// The targets attached (process scope).
    pub(super) fn targets(&self) -> Vec<Target> {
        self.instances
            .iter()
            .filter_map(|i| match i.instance {
                Instance::Target(t) => Some(t),
                Instance::Cpu(_) => None,
            })
            .collect()
    }

    /// The one fd set of the one instance, when that is all there is and it reads as
    /// opened (not an exec target waiting for its first start): the fast read paths.
    pub(super) fn lone_set(&self) -> Option<&[OwnedFd]> {
        if let [inst] = self.instances.as_slice() {
            if let (false, [set]) = (inst.exec == ExecState::Pending, inst.threads.as_slice()) {
                return Some(set);
            }
        }
        None
    }

    /// The position of `target`'s instance.
    pub(super) fn position(&self, target: Target) -> Option<usize> {
        self.instances
            .iter()
            .position(|i| i.instance == Instance::Target(target))
    }

    /// Whether the rings of `self.instances()[i]` are mapped.
    #[cfg(feature = "sampling")]
    pub(super) fn rings_mapped(&self, i: usize) -> bool {
        self.instances.get(i).is_some_and(|i| i.rings_mapped)
    }

    /// The pid of a target instance's process (the calling process for
    /// [`Target::Current`]); 0 for a CPU.
    #[cfg(feature = "sampling")]
    pub(super) fn target_pid(&self, instance: &Instance) -> i32 {
        match instance {
            Instance::Target(Target::Pid(p) | Target::Exec(p)) => i32::try_from(*p).unwrap_or(0),
            Instance::Target(Target::Current | Target::CurrentThread) => {
                i32::try_from(self.shared.sys.getpid()).unwrap_or(0)
            }
            Instance::Cpu(_) => 0,
        }
    }

    /// Closes the fds of `self.instances()[i]`.
    pub(super) fn remove(&mut self, i: usize) {
        self.instances.remove(i);
    }

    /// Closes the fds of the instance added last (an attach undone).
    #[cfg(feature = "sampling")]
    pub(super) fn pop(&mut self) {
        self.instances.pop();
    }

    /// Enables every fd set, members before their leader (see `Counters::start`); the exec
    /// targets not started yet are left to their exec, and are started by us from now on.
    pub(super) fn enable_all(&mut self) -> Result<()> {
        let sys = &self.shared.sys;
        let r = self.for_each_set(|inst, set| {
            if inst.exec == ExecState::Pending {
                return Ok(()); // enable_on_exec starts it
            }
            // The members first, one by one, then the leader: the group is scheduled in once,
            // whole. Enabling the leader first (PERF_IOC_FLAG_GROUP) schedules it in alone and
            // each member joins at a later reschedule, losing its counts until then, in every
            // thread the events were inherited into (issue 20: 13,021 of 15,360 page faults
            // over three cycles).
            for fd in set.iter().skip(1).chain(set.first()) {
                sys.ioctl(fd.as_fd(), Ioctl::Enable(false))
                    .map_err(|e| errno_map::op_error(Op::Start, e))?;
            }
            Ok(())
        });
        for i in &mut self.instances {
            if i.exec == ExecState::Pending {
                i.exec = ExecState::Armed;
            }
        }
        r
    }

    /// Disables every fd set through its leader (with the group flag for a group), going
    /// on after an error; the first error, as `op`'s.
    pub(super) fn disable_all(&self, group: bool, op: Op) -> Result<()> {
        let sys = &self.shared.sys;
        self.for_each_leader(|_, fd| {
            sys.ioctl(fd, Ioctl::Disable(group))
                .map_err(|e| errno_map::op_error(op, e))
        })
    }

    /// Disables every fd of `self.instances()[i]`, as `op`.
    #[cfg(feature = "sampling")]
    pub(super) fn disable_instance(&self, i: usize, op: Op) -> Result<()> {
        for set in self.instances.get(i).map_or(&[][..], |i| &i.threads) {
            for fd in set {
                self.shared
                    .sys
                    .ioctl(fd.as_fd(), Ioctl::Disable(false))
                    .map_err(|e| errno_map::op_error(op, e))?;
            }
        }
        Ok(())
    }

    /// Resets every fd set's count (`PERF_EVENT_IOC_RESET` through its leader, the whole
    /// group for a group), for a write.
    pub(super) fn reset_all(&self, group: bool) -> Result<()> {
        let sys = &self.shared.sys;
        self.for_each_leader(|_, fd| {
            sys.ioctl(fd, Ioctl::Reset(group))
                .map_err(|e| errno_map::op_error(Op::Write, e))
        })
    }

    /// Sets the sampling period of every fd (in the kernel's unit), for a set_count.
    pub(super) fn set_period(&self, kernel: u64) -> Result<()> {
        let sys = &self.shared.sys;
        self.for_each_fd(|fd| {
            sys.ioctl(fd, Ioctl::Period(kernel))
                .map_err(|e| errno_map::op_error(Op::SetCount, e))
        })
    }

    /// Calls `f` on the leader of every fd set (with the group flag, an ioctl there reaches
    /// the whole group).
    fn for_each_leader(
        &self,
        mut f: impl FnMut(&InstanceFds, std::os::fd::BorrowedFd<'_>) -> Result<()>,
    ) -> Result<()> {
        self.for_each_set(|inst, set| match set.first() {
            Some(leader) => f(inst, leader.as_fd()),
            None => Ok(()),
        })
    }

    /// Calls `f` on every fd set (leader first), going on after an error; the first error.
    fn for_each_set(
        &self,
        mut f: impl FnMut(&InstanceFds, &[OwnedFd]) -> Result<()>,
    ) -> Result<()> {
        let mut first_err = None;
        for inst in &self.instances {
            for set in &inst.threads {
                if let Err(e) = f(inst, set) {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Calls `f` on every fd of every set, members too.
    fn for_each_fd(
        &self,
        mut f: impl FnMut(std::os::fd::BorrowedFd<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut first_err = None;
        for fd in self.instances.iter().flat_map(|i| &i.threads).flatten() {
            if let Err(e) = f(fd.as_fd()) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}
