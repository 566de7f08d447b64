//! Opening an instance's fd sets: every CPU (system scope), a target's threads and CPUs
//! (process scope), the allocate-time probe. Each set is opened member by member down the
//! fallback ladder ([`open_member`](crate::counter::fallback::open_member)), and again when
//! a member lost a race with its thread.

use super::{ExecState, InstanceFds, InstanceSet, MEMBER_RACE_RETRIES};
use crate::counter::fallback::Slot;
use crate::counter::layout::{pid_i32, thread_ids, FdLayout};
use crate::counter::open::open_attr;
use crate::counter::{fallback, Member};
use crate::sys::{Ioctl, Sys};
use crate::{errno, errno_map};
use perf_event_open_sys::bindings as b;
use pmc_core::{Error, ErrorKind, Instance, Op, Result, Scope, Target};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

impl<S: Sys> InstanceSet<S> {
    /// At allocate: one fd set per CPU for system scope; for process scope, the disabled probe
    /// on the calling thread that validates the events.
    pub(in crate::counter) fn open_instances(
        &mut self,
        members: &mut [Member],
        running: bool,
        scope: &Scope,
    ) -> Result<()> {
        match scope {
            Scope::System { cpu } => {
                let cpus = match cpu {
                    pmc_core::Cpus::All => self.shared.sys.online_cpus(),
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
                    let fds = self.open_set(members, running, -1, cpu_i, false, false)?;
                    self.instances.push(InstanceFds {
                        thread: None,
                        instance: Instance::Cpu(cpu),
                        threads: vec![fds],
                        exec: ExecState::Plain,
                        cpus: vec![cpu_i],
                        rings_mapped: false,
                    });
                }
            }
            Scope::Process => {
                let tid = self.shared.sys.gettid();
                self.probe = Some((tid, self.open_set(members, running, 0, -1, false, false)?));
            }
        }
        Ok(())
    }

    /// Opens the disabled fd set on the calling thread that validates the events (process
    /// scope), kept as the probe.
    #[cfg(feature = "sampling")]
    pub(in crate::counter) fn open_probe(
        &mut self,
        members: &mut [Member],
        running: bool,
    ) -> Result<()> {
        let tid = self.shared.sys.gettid();
        self.probe = Some((tid, self.open_set(members, running, 0, -1, false, false)?));
        Ok(())
    }

    /// Opens `target`'s fd sets (reusing the probe for the calling process) and adds its
    /// instance; enabled when `running`.
    pub(in crate::counter) fn open_target(
        &mut self,
        members: &mut [Member],
        running: bool,
        target: Target,
    ) -> Result<()> {
        let layout = FdLayout::of(members, self.exit_reads(), &target);
        let follow_threads = layout.follow_threads();
        let per_cpu = layout.task_cpus(&self.shared.sys);
        let mut threads = Vec::new();
        let mut cpus = Vec::new();
        let exec_target = match target {
            Target::Current | Target::CurrentThread => {
                let tids = if target == Target::CurrentThread {
                    vec![self.shared.sys.gettid()]
                } else {
                    thread_ids(&self.shared.sys, None)?
                };
                let probe = self.probe.take().filter(|_| layout == FdLayout::PerThread);
                for tid in tids {
                    if matches!(&probe, Some((ptid, _)) if *ptid == tid) {
                        continue;
                    }
                    for &cpu in &per_cpu {
                        match self.open_set(members, running, tid, cpu, false, follow_threads) {
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
                    if running {
                        if let Some(fd) = fds.first() {
                            self.shared
                                .sys
                                .ioctl(fd.as_fd(), Ioctl::Enable(true))
                                .map_err(|e| errno_map::op_error(Op::Attach, e))?;
                        }
                    }
                    threads.insert(0, fds);
                    cpus.insert(0, -1);
                }
                false
            }
            Target::Pid(pid) => {
                (threads, cpus) = self.open_pid(members, running, pid, &per_cpu, follow_threads)?;
                false
            }
            Target::Exec(pid) => {
                let p = pid_i32(pid)?;
                for &cpu in &per_cpu {
                    threads.push(self.open_set(members, running, p, cpu, true, follow_threads)?);
                    cpus.push(cpu);
                }
                true
            }
        };
        self.probe = None;
        // Attached while running, an exec target starts at its exec: started by us.
        let exec = match (exec_target, running) {
            (false, _) => ExecState::Plain,
            (true, true) => ExecState::Armed,
            (true, false) => ExecState::Pending,
        };
        let thread = (target == Target::CurrentThread).then(|| self.shared.sys.gettid());
        self.instances.push(InstanceFds {
            thread,
            instance: Instance::Target(target),
            threads,
            exec,
            cpus,
            rings_mapped: false,
        });
        Ok(())
    }

    /// Opens one fd per member for `(pid, cpu)`, leader first. With `follow_threads`, the
    /// events are inherited by the threads the target creates later (`inherit` +
    /// `inherit_thread`), but not by its child processes: a hwpmc process PMC counts the
    /// whole process. Kernels before 5.13 lack `inherit_thread`; there the fds are reopened
    /// without it (threads that exist at attach time only).
    pub(in crate::counter) fn open_set(
        &self,
        members: &mut [Member],
        running: bool,
        pid: i32,
        cpu: i32,
        exec: bool,
        follow_threads: bool,
    ) -> Result<Vec<OwnedFd>> {
        let mut tries = 0;
        loop {
            match self.open_set_once(members, running, pid, cpu, exec, follow_threads) {
                Ok(fds) => return Ok(fds),
                // A member refused with EINVAL or ENODEV on another thread whose leader just
                // opened: the thread's context moved under the leader (it exited, or the
                // scheduler swapped the equivalent contexts of inherited threads, core.c
                // perf_event_context_sched_out). Open the whole set again; a real refusal
                // repeats and is reported.
                Err((_, true)) if self.shared.sys.thread_exiting(pid) => {
                    return Err(Error::new(
                        ErrorKind::NoSuchProcess,
                        Op::Attach,
                        format!("thread {pid} exited while its events were being opened"),
                    )
                    .with_errno(errno::ESRCH));
                }
                Err((_, true)) if tries < MEMBER_RACE_RETRIES => {
                    tries += 1;
                    if tries > 2 {
                        // Let the thread run on (or its child exit) before the next try.
                        std::thread::yield_now();
                    }
                }
                Err((e, _)) => return Err(e),
            }
        }
    }

    /// One try of [`InstanceSet::open_set`]: each member down the kernel's fallback ladder
    /// ([`fallback::open_member`]), leader first; the error says whether a member lost a
    /// race with its thread (worth a retry).
    pub(super) fn open_set_once(
        &self,
        members: &mut [Member],
        running: bool,
        pid: i32,
        cpu: i32,
        exec: bool,
        follow_threads: bool,
    ) -> std::result::Result<Vec<OwnedFd>, (Error, bool)> {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(members.len());
        let enabled = running && !exec;
        let exit_reads = self.exit_reads();
        // A cgroup's system-scope events: the cgroup directory's fd is the pid, on each CPU.
        let cgroup = self.cgroup.as_ref().filter(|_| pid == -1 && cpu >= 0);
        let (pid_arg, flags) = match cgroup {
            Some(cg) => (cg.fd.as_raw_fd(), u64::from(b::PERF_FLAG_PID_CGROUP)),
            None => (pid, 0),
        };
        for m in members.iter_mut() {
            let leader = fds.is_empty();
            let attr = open_attr(m, leader, enabled, exec, exit_reads, follow_threads);
            let at = Slot {
                pid,
                pid_arg,
                cpu,
                group: fds.first().map(|f| f.as_fd()),
                flags,
                cgroup,
                position: fds.len(),
            };
            let no_format_lost = &self.shared.no_format_lost;
            let fd = fallback::open_member(&self.shared.sys, &at, m, attr, no_format_lost)?;
            fds.push(fd);
        }
        Ok(fds)
    }

    /// One fd set per (thread of `pid`, CPU of `per_cpu`); a thread other than the main one
    /// that exits meanwhile is skipped.
    #[allow(clippy::type_complexity)]
    pub(in crate::counter) fn open_pid(
        &self,
        members: &mut [Member],
        running: bool,
        pid: u32,
        per_cpu: &[i32],
        follow_threads: bool,
    ) -> Result<(Vec<Vec<OwnedFd>>, Vec<i32>)> {
        let p = pid_i32(pid)?;
        let (mut threads, mut cpus) = (Vec::new(), Vec::new());
        for tid in thread_ids(&self.shared.sys, Some(pid))? {
            for &cpu in per_cpu {
                match self.open_set(members, running, tid, cpu, false, follow_threads) {
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
}
