//! The ring buffers of an instance's fd sets (sampling, log-procexit): which are mapped,
//! building them, the `/proc` synthesis of the targets they follow.

use super::{ExecState, InstanceSet};
#[cfg(feature = "sampling")]
use crate::counter::rings::Rings;
use crate::counter::Member;
use crate::errno_map;
#[cfg(feature = "sampling")]
use crate::log::{RingPurpose, RingSource, Synth};
#[cfg(feature = "sampling")]
use crate::record::ParseConfig;
use crate::sys::{Ioctl, Sys};
use pmc_core::{Instance, Op, Result, Target};
use std::os::fd::{AsFd, AsRawFd};

impl<S: Sys> InstanceSet<S> {
    /// The rings of `self.instances()[which]` still to map (all but the mapped ones).
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn unmapped(&self) -> Vec<usize> {
        (0..self.instances.len())
            .filter(|i| !self.instances[*i].rings_mapped)
            .collect()
    }

    /// Records the rings of `which` as mapped.
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn mark_mapped(&mut self, which: &[usize]) {
        for &i in which {
            if let Some(inst) = self.instances.get_mut(i) {
                inst.rings_mapped = true;
            }
        }
    }

    /// Records every ring as not mapped (the log let them go): the next start maps them again.
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn forget_rings(&mut self) {
        for inst in &mut self.instances {
            inst.rings_mapped = false;
        }
    }

    /// What the log synthesizes for the rings of `which` (mappings and names of the tasks
    /// already running).
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn synth(&self, which: &[usize]) -> Synth {
        let mut pids = Vec::new();
        let mut all = false;
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            match inst.instance {
                Instance::Cpu(_) => all = true,
                Instance::Target(Target::Current | Target::CurrentThread) => {
                    pids.push(self.shared.sys.getpid());
                }
                Instance::Target(Target::Pid(p)) => pids.push(p),
                // Its exec came before the start: its mappings are there already.
                Instance::Target(Target::Exec(p)) if inst.exec == ExecState::Missed => pids.push(p),
                // The kernel reports the exec and its mappings (enable_on_exec precedes them).
                Instance::Target(Target::Exec(_)) => {}
            }
        }
        if all {
            Synth::All
        } else if pids.is_empty() {
            Synth::Nothing
        } else {
            Synth::Pids(pids)
        }
    }

    /// One ring per CPU (events on one CPU share it through `PERF_EVENT_IOC_SET_OUTPUT`) or,
    /// for per-task events, one per thread (shared by the group's members).
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn build_rings(
        &self,
        members: &[Member],
        rings: Option<&Rings>,
        which: &[usize],
    ) -> Result<Vec<RingSource>> {
        let leader = &members[0];
        let cfg = ParseConfig::new(leader.attr.sample_type, leader.attr.read_format, true)
            .with_regs_user(leader.attr.sample_regs_user);
        let token = leader.pmc_id;
        let purpose = rings.map(|r| r.purpose);
        let pages = rings.map_or(0, |r| r.pages);
        let mut rings: Vec<RingSource> = Vec::new();
        // (cpu, ring index, owner fd)
        let mut by_cpu: Vec<(i32, usize, i32)> = Vec::new();
        for inst in which.iter().filter_map(|i| self.instances.get(*i)) {
            let target = self.target_pid(&inst.instance);
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
                            &self.shared.sys,
                            first.as_fd(),
                            pages,
                            cfg,
                            token,
                            ring_cpu,
                        )?;
                        if let Some(p) = purpose {
                            ring.purpose = p;
                        }
                        ring.user_in_kernel =
                            leader.alloc.flags.contains(pmc_core::Flags::USERCALLCHAIN);
                        ring.cfg_inherit = leader.attr.inherit() == 1
                            && leader.alloc.flags.contains(pmc_core::Flags::DESCENDANTS);
                        ring.system_wide = matches!(inst.instance, Instance::Cpu(_));
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
                for (m, fd) in members.iter().zip(set) {
                    if fd.as_raw_fd() != owner {
                        self.shared.sys.ioctl(fd.as_fd(), Ioctl::SetOutput(owner)).map_err(|e| {
                            errno_map::op_error(Op::Mmap, e).with_help(
                                "the kernel refused to share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)",
                            )
                        })?;
                    }
                    let id = self.shared.sys.event_id(fd.as_fd());
                    if let (Ok(id), Some(ring)) = (id, rings.get_mut(ri)) {
                        ring.add_id(id, m.pmc_id);
                        ring.add_fixed_period(id, m.fixed_period.clone());
                        if purpose == Some(RingPurpose::ExitReads) {
                            ring.add_exit_fd(target, id, fd.as_fd())?;
                        }
                    }
                }
            }
        }
        Ok(rings)
    }
}
