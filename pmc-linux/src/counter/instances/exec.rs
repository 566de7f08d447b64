//! Exec targets ([`pmc_core::Target::Exec`]): whether the exec was seen, the
//! reopen of an instance whose exec came before its first start, arming and disarming
//! `enable_on_exec`.

use super::{ExecState, InstanceSet};
use crate::counter::layout::FdLayout;
use crate::counter::Member;
use crate::sys::Sys;
use pmc_core::{ErrorKind, Instance, Reading, Result, Target};

impl<S: Sys> InstanceSet<S> {
    /// Whether the kernel has enabled the exec target `self.instances[i]` (its exec
    /// happened): an fd opened disabled has run for some time since.
    pub(super) fn exec_seen(&self, members: &[Member], i: usize) -> Result<bool> {
        let mut r = vec![Reading::default(); members.len()];
        self.read_instance_fds(members, &self.instances[i], &mut r)?;
        Ok(r.iter().any(|r| r.time_enabled > 0))
    }

    /// Replaces the fds of the exec target `self.instances[i]` by fds without
    /// `enable_on_exec`, opened as a pid's (every thread), disabled unless running.
    pub(super) fn reopen_exec(
        &mut self,
        members: &mut [Member],
        running: bool,
        i: usize,
    ) -> Result<()> {
        let Instance::Target(Target::Exec(pid)) = self.instances[i].instance else {
            return Ok(());
        };
        let layout = FdLayout::of(members, self.exit_reads(), &Target::Exec(pid));
        let follow_threads = layout.follow_threads();
        let per_cpu = layout.task_cpus(&self.shared.sys);
        let (threads, cpus) = match self.open_pid(members, running, pid, &per_cpu, follow_threads) {
            Ok(sets) => sets,
            // Gone (its exec failed, or it exited before the start): nothing more to count.
            Err(e) if e.kind() == ErrorKind::NoSuchProcess => (Vec::new(), Vec::new()),
            Err(e) => return Err(e),
        };
        #[cfg(feature = "sampling")]
        if self.exit_reads() {
            // Its old events go: their hang-up is not the target's exit.
            let pid = i32::try_from(pid).unwrap_or(0);
            self.shared.hub.exit_target_closed(members[0].pmc_id, pid);
        }
        let inst = &mut self.instances[i];
        inst.threads = threads;
        inst.cpus = cpus;
        if inst.exec.armed() {
            inst.exec = ExecState::Plain;
        }
        inst.rings_mapped = false;
        Ok(())
    }

    /// At a start: an exec target that exec'd before this start has counted since (the
    /// kernel's enable_on_exec): start it afresh, as a pid, without those counts.
    pub(in crate::counter) fn reopen_missed_exec(
        &mut self,
        members: &mut [Member],
        running: bool,
    ) -> Result<()> {
        for i in 0..self.instances.len() {
            if self.instances[i].exec == ExecState::Pending && self.exec_seen(members, i)? {
                self.reopen_exec(members, running, i)?;
                self.instances[i].exec = ExecState::Missed;
            }
        }
        Ok(())
    }

    /// After a stop: the exec targets whose exec has not come yet (an exec target whose exec
    /// came and that we started is counted as opened from now on).
    pub(in crate::counter) fn armed_exec(&mut self, members: &[Member]) -> Result<Vec<usize>> {
        let mut armed = Vec::new();
        for i in 0..self.instances.len() {
            if self.instances[i].exec.armed() {
                if self.exec_seen(members, i)? {
                    if self.instances[i].exec == ExecState::Armed {
                        self.instances[i].exec = ExecState::Plain;
                    }
                } else {
                    armed.push(i);
                }
            }
        }
        Ok(armed)
    }

    /// After a stop: an exec target whose exec has not come yet would be enabled by it
    /// (`enable_on_exec` overrides a disable), counting after the stop. Reopens each of
    /// `armed` ([`armed_exec`](InstanceSet::armed_exec)) without.
    pub(in crate::counter) fn disarm_exec(
        &mut self,
        members: &mut [Member],
        running: bool,
        armed: Vec<usize>,
    ) -> Result<()> {
        for i in armed {
            self.reopen_exec(members, running, i)?;
        }
        Ok(())
    }
}
