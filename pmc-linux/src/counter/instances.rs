//! The fd sets of a PMC's instances (a CPU for system scope, a target for process scope):
//! opening them per thread and CPU, reading and summing them, reopening an exec target whose
//! exec came before its first start, enabling and disabling them, and the rings they map.
//! [`Counters`] holds one [`InstanceSet`] and says when (the hwpmc verbs); this file says how.

use super::fallback::{self, Slot};
use super::open::open_attr;
use super::read::{group_stride, member_words, read_words};
use super::*;

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
    /// A system-scope PMC of one cgroup ([`Allocation::cgroup`]): its directory, the `pid` of
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

    /// At allocate: one fd set per CPU for system scope; for process scope, the disabled probe
    /// on the calling thread that validates the events.
    pub(super) fn open_instances(
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
    pub(super) fn open_probe(&mut self, members: &mut [Member], running: bool) -> Result<()> {
        let tid = self.shared.sys.gettid();
        self.probe = Some((tid, self.open_set(members, running, 0, -1, false, false)?));
        Ok(())
    }

    /// Opens `target`'s fd sets (reusing the probe for the calling process) and adds its
    /// instance; enabled when `running`.
    pub(super) fn open_target(
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
    pub(super) fn open_set(
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
    fn open_set_once(
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
    pub(super) fn open_pid(
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

    /// Whether the kernel has enabled the exec target `self.instances[i]` (its exec
    /// happened): an fd opened disabled has run for some time since.
    fn exec_seen(&self, members: &[Member], i: usize) -> Result<bool> {
        let mut r = vec![Reading::default(); members.len()];
        self.read_instance_fds(members, &self.instances[i], &mut r)?;
        Ok(r.iter().any(|r| r.time_enabled > 0))
    }

    /// Replaces the fds of the exec target `self.instances[i]` by fds without
    /// `enable_on_exec`, opened as a pid's (every thread), disabled unless running.
    fn reopen_exec(&mut self, members: &mut [Member], running: bool, i: usize) -> Result<()> {
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
    pub(super) fn reopen_missed_exec(
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
    pub(super) fn armed_exec(&mut self, members: &[Member]) -> Result<Vec<usize>> {
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
    pub(super) fn disarm_exec(
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
    /// The kernel's count of the records it could not write (`PERF_FORMAT_LOST`), per event:
    /// `(event id, lost)` for every fd of the mapped instances; empty when the reads carry
    /// no such count (core.c `perf_read_one` and `__perf_read_group_add` write
    /// `atomic64_read(&event->lost_samples)`, which `__perf_output_begin` increments, on the
    /// parent of an inherited event, for each record that did not fit).
    #[cfg(feature = "sampling")]
    pub(super) fn kernel_lost(&self, members: &[Member]) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        if !super::read::reads_lost(members) {
            return Ok(out);
        }
        let sys = &self.shared.sys;
        for inst in self.instances.iter().filter(|i| i.rings_mapped) {
            for set in &inst.threads {
                if self.read == ReadLayout::Group {
                    let Some(leader) = set.first() else { continue };
                    let want = 3 + 3 * members.len();
                    let mut buf = [0u64; READ_WORDS];
                    let words = buf.get_mut(..want).ok_or_else(|| short_read(0, want))?;
                    let n = read_words(sys, leader, words)?;
                    if n != want {
                        return Err(short_read(n, want));
                    }
                    for i in 0..members.len() {
                        out.push((words[4 + 3 * i], words[5 + 3 * i]));
                    }
                } else {
                    for fd in set {
                        let mut words = [0u64; 5];
                        let n = read_words(sys, fd, &mut words)?;
                        if n != 5 {
                            return Err(short_read(n, 5));
                        }
                        out.push((words[3], words[4]));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Adds one instance's readings (summed over its threads) into `out`.
    pub(super) fn read_instance(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        if inst.exec == ExecState::Pending {
            return Ok(()); // not started since attach: whatever an exec enabled is not ours
        }
        self.read_instance_fds(members, inst, out)
    }

    /// Adds every instance's readings into `out`.
    pub(super) fn sum_into(&self, members: &[Member], out: &mut [Reading]) -> Result<()> {
        for inst in &self.instances {
            self.read_instance(members, inst, out)?;
        }
        Ok(())
    }

    /// One member fd's `value, enabled, running[, id][, lost]`: `want` words
    /// ([`member_words`]), a short read an error. Small buffers: the read path
    /// zeroes 32 (40) bytes, not 1 KiB.
    fn read_member(&self, fd: &OwnedFd, want: usize) -> Result<[u64; 5]> {
        let mut words = [0u64; 5];
        let n = read_words(&self.shared.sys, fd, &mut words[..want])?;
        if n != want {
            return Err(short_read(n, want));
        }
        Ok(words)
    }

    /// [`read_instance`](InstanceSet::read_instance) whether started or not.
    pub(super) fn read_instance_fds(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        if self.read == ReadLayout::PerCpuTotals {
            // One event per CPU on the same tasks: each is enabled while the task runs
            // anywhere but counts only while it runs on its CPU, so the counts and running
            // times add up across the CPUs and the enabled time is one CPU's (summing it
            // would read as multiplexing and scale the count up).
            let mut sum = vec![(0u64, 0u64, 0u64); out.len()];
            let want = member_words(members);
            for set in &inst.threads {
                for (fd, acc) in set.iter().zip(sum.iter_mut()) {
                    add_cpu_share(acc, &self.read_member(fd, want)?);
                }
            }
            for (slot, (v, en, run)) in out.iter_mut().zip(sum) {
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
            return Ok(());
        }
        if self.read == ReadLayout::PerMember && inst.cpus.iter().any(|&c| c >= 0) {
            return self.read_per_thread_cpu(members, inst, out);
        }
        for set in &inst.threads {
            if self.read == ReadLayout::PerMember {
                let want = member_words(members);
                for (fd, slot) in set.iter().zip(out.iter_mut()) {
                    let words = self.read_member(fd, want)?;
                    slot.accumulate(&Reading::new(words[0], words[1], words[2]));
                }
            } else if let Some(leader) = set.first() {
                let stride = group_stride(members);
                let want = 3 + stride * members.len();
                // Groups of up to 4: 88-byte buffers, not 536-byte ones.
                let mut small = [0u64; 11];
                let mut big;
                let words: &mut [u64] = if want <= small.len() {
                    &mut small[..want]
                } else {
                    big = [0u64; READ_WORDS];
                    big.get_mut(..want).ok_or_else(|| short_read(0, want))?
                };
                let n = read_words(&self.shared.sys, leader, words)?;
                if n != want || words[0] as usize != members.len() {
                    return Err(short_read(n, want));
                }
                let (en, run) = (words[1], words[2]);
                for (i, slot) in out.iter_mut().enumerate() {
                    slot.accumulate(&Reading::new(words[3 + stride * i], en, run));
                }
            }
        }
        Ok(())
    }

    /// A process instance with one fd set per (thread, CPU) (sampling with descendants or of
    /// another process: [`FdLayout::PerThreadCpu`](super::layout::FdLayout)). A thread's
    /// per-CPU events are each enabled while it runs anywhere but run only while it runs on
    /// their CPU, so per thread the counts and running times add up over its CPUs and the
    /// enabled time is one CPU's (summing it would read as multiplexing: `scaled()` came out
    /// 2x the count on 2 CPUs). Threads then add up as usual. A thread's sets are consecutive,
    /// its CPUs ascending (`open_pid`, `attach`), so a CPU not above the previous one starts
    /// the next thread.
    fn read_per_thread_cpu(
        &self,
        members: &[Member],
        inst: &InstanceFds,
        out: &mut [Reading],
    ) -> Result<()> {
        let mut thread = vec![(0u64, 0u64, 0u64); out.len()];
        let flush = |thread: &mut [(u64, u64, u64)], out: &mut [Reading]| {
            for (slot, acc) in out.iter_mut().zip(thread.iter_mut()) {
                let (v, en, run) = std::mem::take(acc);
                slot.accumulate(&Reading::new(v, en, run.min(en)));
            }
        };
        let mut prev: Option<i32> = None;
        // Sampling events carry PERF_FORMAT_LOST: a fifth word.
        let want = member_words(members);
        for (set, &cpu) in inst.threads.iter().zip(&inst.cpus) {
            if prev.is_some_and(|p| cpu < 0 || cpu <= p) {
                flush(&mut thread, out);
            }
            prev = Some(cpu);
            for (fd, acc) in set.iter().zip(thread.iter_mut()) {
                add_cpu_share(acc, &self.read_member(fd, want)?);
            }
        }
        flush(&mut thread, out);
        Ok(())
    }

    /// The rings of `self.instances()[which]` still to map (all but the mapped ones).
    #[cfg(feature = "sampling")]
    pub(super) fn unmapped(&self) -> Vec<usize> {
        (0..self.instances.len())
            .filter(|i| !self.instances[*i].rings_mapped)
            .collect()
    }

    /// Records the rings of `which` as mapped.
    #[cfg(feature = "sampling")]
    pub(super) fn mark_mapped(&mut self, which: &[usize]) {
        for &i in which {
            if let Some(inst) = self.instances.get_mut(i) {
                inst.rings_mapped = true;
            }
        }
    }

    /// Records every ring as not mapped (the log let them go): the next start maps them again.
    #[cfg(feature = "sampling")]
    pub(super) fn forget_rings(&mut self) {
        for inst in &mut self.instances {
            inst.rings_mapped = false;
        }
    }

    /// What the log synthesizes for the rings of `which` (mappings and names of the tasks
    /// already running).
    #[cfg(feature = "sampling")]
    pub(super) fn synth(&self, which: &[usize]) -> Synth {
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
    pub(super) fn build_rings(
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

/// Adds one CPU's share of a task's per-CPU event to `acc` (value, enabled,
/// running): counts and running times add up over the CPUs, the enabled time is
/// one CPU's (each is enabled while the task runs anywhere).
fn add_cpu_share(acc: &mut (u64, u64, u64), words: &[u64; 5]) {
    acc.0 = acc.0.saturating_add(words[0]);
    acc.1 = acc.1.max(words[1]);
    acc.2 = acc.2.saturating_add(words[2]);
}
