//! Opening fds: the `perf_event_attr` of each member, a PMC's allocation, and the fd sets of
//! its targets (including exec targets reopened as pids).

use super::*;

const FORMAT_LOST: u64 = crate::record::read_format::LOST;

pub(super) fn build_attr(
    sys: &dyn Sys,
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
            sys,
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
        set_exit_read_bits(&mut attr);
    }
    if let Mode::Sampling(rate) = a.mode {
        set_sampling_bits(&mut attr, a, rate, ring_bytes);
    }
    attr
}

/// log-procexit on a counting PMC, as perf record -s: the kernel writes each inherited task's
/// count to the ring at its exit (PERF_RECORD_READ), and the side-band records say which task
/// and when.
fn set_exit_read_bits(attr: &mut perf_event_attr) {
    attr.set_inherit_stat(1);
    attr.sample_type = u64::from(
        b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_IDENTIFIER,
    );
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
}

/// A sampling PMC's attr: the rate, what each sample carries, and the ring's wakeup.
fn set_sampling_bits(attr: &mut perf_event_attr, a: &Allocation, rate: Rate, ring_bytes: usize) {
    match rate {
        // A SOFT clock's period is in ticks (events::soft_clock_period).
        Rate::Period(p) => {
            attr.__bindgen_anon_1.sample_period = events::soft_clock_period(&a.event, p)
        }
        Rate::Frequency(f) => {
            attr.set_freq(1);
            attr.__bindgen_anon_1.sample_freq = f;
        }
    }
    attr.sample_type = u64::from(
        b::PERF_SAMPLE_IP | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU,
    );
    // The period travels with each sample only when it varies (a frequency), as perf record
    // does. At a fixed period it is the one asked for, and asking for it anyway changes what
    // a software or tracepoint event samples: the kernel then writes one sample per event
    // occurrence, each of period 1 (perf_swevent_event(): `if ((event->attr.sample_type &
    // PERF_SAMPLE_PERIOD) && !event->attr.freq) { data->period = nr; return
    // perf_swevent_overflow(event, 1, data, regs); }`, kernel/events/core.c, Linux 3.x to
    // 6.18), so a period of 1,000 page faults gave 1,000 times the samples asked for, and the
    // losses that come with them. The drain fills the period in (RingSource::fixed_period).
    if matches!(rate, Rate::Frequency(_)) {
        attr.sample_type |= u64::from(b::PERF_SAMPLE_PERIOD);
    }
    if a.flags.contains(pmc_core::Flags::CALLCHAIN) {
        attr.sample_type |= u64::from(b::PERF_SAMPLE_CALLCHAIN);
    }
    if let (true, Some(stack_size)) = (
        crate::log::unwind::wants_stack(a),
        a.call_graph.stack_size(),
    ) {
        // As perf record --call-graph dwarf: the user registers and stack with each
        // sample; the kernel's callchain keeps only its kernel part.
        attr.sample_type |= u64::from(b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER);
        attr.sample_regs_user = crate::log::unwind::REGS_MASK;
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

/// The data pages of each ring of a PMC allocated now.
fn ring_pages_for<S: Sys>(allocs: &[Allocation], shared: &Shared<S>, facts: &Facts) -> usize {
    match shared.ring_pages.load(Ordering::Relaxed) {
        // Samples with user stacks are kilobytes each: a privileged caller gets perf's
        // 512 KiB rings (an unprivileged one stays within perf_event_mlock_kb).
        0 if facts.privileged && allocs.iter().any(crate::log::unwind::wants_stack) => {
            crate::log::DWARF_RING_PAGES
        }
        0 => crate::log::DEFAULT_RING_PAGES,
        n => n,
    }
}

/// How many times a fd set is opened again after a member lost a race with its thread.
const MEMBER_RACE_RETRIES: u32 = 4;

/// A process target on a kernel without `inherit_thread` (before 5.13): its threads created
/// later cannot be counted without its child processes.
fn no_inherit_thread(event: &str) -> Error {
    Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        format!(
            "`{event}`: this kernel cannot follow a process's new threads without following its \
             child processes too (perf_event's inherit_thread needs Linux 5.13); counting only \
             the threads there are now would undercount"
        ),
    )
    .with_errno(libc::EINVAL)
    .with_help(
        "allocate with Allocation::descendants() to count new threads and child processes, \
         or attach Target::CurrentThread to count the calling thread alone",
    )
}

/// A process target whose event this kernel opens only without `inherit`: its threads
/// created later cannot be followed.
fn no_inherit(event: &str, attr: &perf_event_attr) -> Error {
    let sample_read = attr.sample_type & u64::from(b::PERF_SAMPLE_READ) != 0;
    let (why, help) = if sample_read {
        (
            "counts read at each sample (PERF_SAMPLE_READ, as log-proccsw's context-switch \
             records need) cannot be inherited into new threads before Linux 6.12",
            "leave out log-proccsw, or attach Target::CurrentThread to log the calling \
             thread alone",
        )
    } else {
        (
            "this kernel refuses to inherit it into new threads (EINVAL with `inherit`, \
             accepted without)",
            "attach Target::CurrentThread to count the calling thread alone",
        )
    };
    Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        format!(
            "`{event}`: a process is counted with the threads it creates later, but {why}; \
             counting only the threads there are now would undercount"
        ),
    )
    .with_errno(libc::EINVAL)
    .with_help(help)
}

/// The process-only log flags, and log-procexit's refusal of counting groups.
fn check_log_flags(a: &Allocation, group_len: usize) -> Result<()> {
    if a.flags.contains(pmc_core::Flags::LOG_PROCCSW) && a.scope.is_system() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            "log-proccsw needs a process-scope PMC: it logs the counts of the target \
             processes at their context switches",
        )
        .with_errno(libc::EINVAL)
        .with_help("allocate it with process scope and attach it to the processes to watch"));
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) && a.scope.is_system() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            "log-procexit needs a process-scope PMC: it logs the counts of the target \
             processes at their exits",
        )
        .with_errno(libc::EINVAL)
        .with_help("allocate it with process scope and attach it to the processes to watch"));
    }
    if a.flags.contains(pmc_core::Flags::LOG_PROCEXIT) && !a.mode.is_sampling() && group_len > 1 {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "log-procexit on a counting group: each counting PMC with log-procexit \
             has its events of its own on Linux",
        )
        .with_help("allocate the PMC alone"));
    }
    Ok(())
}

impl Member {
    /// A member of a PMC being allocated: its event resolved, its attr built, its log id.
    fn new<S: Sys>(
        a: &Allocation,
        facts: &Facts,
        grouped: bool,
        ring_bytes: usize,
        shared: &Shared<S>,
    ) -> Result<Member> {
        a.check_cgroup()?;
        crate::log::unwind::check(a)?;
        events::check_allocation(a)?;
        let resolved = events::resolve(&shared.sys, &a.event)?;
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
        let mut attr = build_attr(&shared.sys, a, &resolved, facts, grouped, ring_bytes);
        if a.mode.is_sampling() && !shared.no_format_lost.load(Ordering::Relaxed) {
            // The kernel's count of the samples it could not write (Linux 6.0+), read at stop:
            // samples lost while the drain was held up (a blocked log writer, a stopped
            // process) have no PERF_RECORD_LOST if the events stop before draining resumes.
            attr.read_format |= crate::record::read_format::LOST;
        }
        let pmc_id = shared.next_pmc_id.fetch_add(1, Ordering::Relaxed);
        let fixed = match a.mode {
            // As set_sampling_bits gives it to the kernel.
            Mode::Sampling(Rate::Period(p)) => events::soft_clock_period(&a.event, p),
            _ => 0,
        };
        Ok(Member {
            alloc: a.clone(),
            pmc_id,
            event: a.event.to_string(),
            resolved,
            attr,
            opened: attr,
            fixed_period: Arc::new(AtomicU64::new(fixed)),
        })
    }
}

impl<S: Sys> Counters<S> {
    pub(super) fn new(allocs: &[Allocation], shared: Arc<Shared<S>>) -> Result<Counters<S>> {
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
        let mut c = Counters::unopened(members, shared, read);
        // log-procexit counting: perf record -s's layout (one inherited event per CPU, with a
        // ring for its PERF_RECORD_READs at task exits; see log::procexit::ExitReads).
        let exit_reads = !sampling
            && allocs
                .iter()
                .any(|a| a.flags.contains(pmc_core::Flags::LOG_PROCEXIT));
        if exit_reads {
            c.read = ReadLayout::PerCpuTotals;
        }
        c.rings = match (sampling, exit_reads) {
            (true, _) => Some(Rings::new(ring_pages, RingPurpose::Samples)),
            (false, true) => Some(Rings::new(ring_pages, RingPurpose::ExitReads)),
            (false, false) => None,
        };
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
            c.cgroup = Some(crate::cgroup::open(&c._shared.sys, name)?);
        }
        c.open_instances(&allocs[0].scope)?;
        Ok(c)
    }

    /// At allocate: one fd set per CPU for system scope; for process scope, the disabled probe
    /// on the calling thread that validates the events.
    fn open_instances(&mut self, scope: &Scope) -> Result<()> {
        match scope {
            Scope::System { cpu } => {
                let cpus = match cpu {
                    pmc_core::Cpus::All => self._shared.sys.online_cpus(),
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
                    let fds = self.open_set(-1, cpu_i, false, false)?;
                    self.instances.push(InstanceFds {
                        thread: None,
                        instance: Instance::Cpu(cpu),
                        threads: vec![fds],
                        exec: ExecState::Plain,
                        cpus: vec![cpu_i],
                        mapped: false,
                    });
                }
            }
            Scope::Process => {
                let tid = self._shared.sys.gettid();
                self.probe = Some((tid, self.open_set(0, -1, false, false)?));
            }
        }
        Ok(())
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
            instances: Vec::new(),
            retired: vec![Reading::default(); n],
            base: vec![0; n],
            probe: None,
            read,
            _shared: shared,
            rings: None,
            csw: None,
            cgroup: None,
        }
    }

    /// Opens one fd per member for `(pid, cpu)`, leader first. With `follow_threads`, the
    /// events are inherited by the threads the target creates later (`inherit` +
    /// `inherit_thread`), but not by its child processes: a hwpmc process PMC counts the
    /// whole process. Kernels before 5.13 lack `inherit_thread`; there the fds are reopened
    /// without it (threads that exist at attach time only).
    pub(super) fn open_set(
        &mut self,
        pid: i32,
        cpu: i32,
        exec: bool,
        follow_threads: bool,
    ) -> Result<Vec<OwnedFd>> {
        let mut tries = 0;
        loop {
            match self.open_set_once(pid, cpu, exec, follow_threads) {
                Ok(fds) => return Ok(fds),
                // A member refused with EINVAL or ENODEV on another thread whose leader just
                // opened: the thread's context moved under the leader (it exited, or the
                // scheduler swapped the equivalent contexts of inherited threads, core.c
                // perf_event_context_sched_out). Open the whole set again; a real refusal
                // repeats and is reported.
                Err((_, true)) if self._shared.sys.thread_exiting(pid) => {
                    return Err(Error::new(
                        ErrorKind::NoSuchProcess,
                        Op::Attach,
                        format!("thread {pid} exited while its events were being opened"),
                    )
                    .with_errno(libc::ESRCH));
                }
                Err((_, true)) if tries < MEMBER_RACE_RETRIES => tries += 1,
                Err((e, _)) => return Err(e),
            }
        }
    }

    /// One try of [`Counters::open_set`]; the error says whether a member lost a race with
    /// its thread (worth a retry).
    fn open_set_once(
        &mut self,
        pid: i32,
        cpu: i32,
        exec: bool,
        follow_threads: bool,
    ) -> std::result::Result<Vec<OwnedFd>, (Error, bool)> {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(self.members.len());
        let enabled = self.life.is_running() && !exec;
        let sys = &self._shared.sys;
        let exit_reads = self.exit_reads();
        // A cgroup's system-scope events: the cgroup directory's fd is the pid, on each CPU.
        let cgroup = self.cgroup.as_ref().filter(|_| pid == -1 && cpu >= 0);
        let (pid_arg, open_flags) = match cgroup {
            Some(cg) => (cg.fd.as_raw_fd(), u64::from(b::PERF_FLAG_PID_CGROUP)),
            None => (pid, 0),
        };
        for m in &mut self.members {
            let mut attr = m.attr;
            // perf_event_open(2): only the leader of a group starts disabled; members follow
            // it, as perf opens them. Members are in the kernel's group whatever the read
            // layout (an inherited group is read member by member): a member opened disabled
            // and enabled after its leader was scheduled in loses the time until the next
            // reschedule, and with `inherit` its count (issue 20: 13,589-16,322 of 16,385
            // page faults, `time_running < time_enabled` on software events).
            let leader = fds.is_empty();
            attr.set_disabled(u64::from(!enabled && leader));
            attr.set_enable_on_exec(u64::from(exec));
            if leader && !m.alloc.mode.is_sampling() && exit_reads {
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
            let mut opened = sys.perf_event_open(&mut attr, pid_arg, cpu, group, open_flags);
            if matches!(opened, Err(Errno(libc::EINVAL))) && attr.read_format & FORMAT_LOST != 0 {
                // Before Linux 6.0 PERF_FORMAT_LOST is beyond PERF_FORMAT_MAX (core.c
                // perf_copy_attr: `if (attr->read_format & ~(PERF_FORMAT_MAX-1)) return
                // -EINVAL`): open without it, and remember that the lost count may be
                // incomplete (no count of what is lost while the drain is held up).
                let mut plain = attr;
                plain.read_format &= !FORMAT_LOST;
                let again = sys.perf_event_open(&mut plain, pid_arg, cpu, group, open_flags);
                if again.is_ok() {
                    self._shared.no_format_lost.store(true, Ordering::Relaxed);
                    m.attr.read_format &= !FORMAT_LOST;
                    attr = plain;
                }
                opened = again;
            }
            let opened = match opened {
                // (A leader: a member's EINVAL on another thread may be a race, retried below.)
                Err(Errno(libc::EINVAL)) if attr.inherit_thread() == 1 && leader => {
                    // What did the kernel refuse? If plain `inherit` opens, inherit_thread
                    // (Linux < 5.13): new threads cannot be followed without child processes.
                    // If only a non-inherited event opens, inheriting this event at all (e.g.
                    // PERF_SAMPLE_READ before 6.12). Either way refuse, rather than count only
                    // the threads there are now (issue 20: half the work, no warning).
                    let mut inherit_only = attr;
                    inherit_only.set_inherit_thread(0);
                    if sys
                        .perf_event_open(&mut inherit_only, pid_arg, cpu, group, open_flags)
                        .is_ok()
                    {
                        return Err((no_inherit_thread(&m.event), false));
                    }
                    let mut plain = inherit_only;
                    plain.set_inherit(0);
                    if sys
                        .perf_event_open(&mut plain, pid_arg, cpu, group, open_flags)
                        .is_ok()
                    {
                        return Err((no_inherit(&m.event, &attr), false));
                    }
                    Err(Errno(libc::EINVAL))
                }
                r => r,
            };
            let race =
                matches!(opened, Err(Errno(libc::ENODEV | libc::EINVAL))) && !leader && pid > 0;
            if let (Err(errno), Some(cg), true) = (&opened, cgroup, leader) {
                // Was it the cgroup the kernel refused? The same event opens on this CPU
                // without it: then say so (else the event's own refusal is reported below).
                let mut plain = attr;
                if matches!(
                    errno.0,
                    libc::ENOENT | libc::EBADF | libc::EINVAL | libc::EOPNOTSUPP
                ) && sys.perf_event_open(&mut plain, -1, cpu, None, 0).is_ok()
                {
                    return Err((crate::cgroup::refused(*errno, cg, &m.event), false));
                }
            }
            let fd = opened.map_err(|errno| {
                // A member whose leader was just opened on a thread that is now exiting fails
                // with ENODEV, not ESRCH (the leader's context is torn down). Report it as the
                // vanished thread it is, so attach skips it like any thread that exited.
                let errno = if race && sys.thread_exiting(pid) {
                    Errno(libc::ESRCH)
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
                if errno == Errno(libc::EINVAL) && !leader && m.resolved.is_hardware() {
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
                    .with_errno(errno.0)
                    .with_help("use smaller groups (a group is scheduled all at once), or allocate the events separately so the kernel multiplexes them");
                }
                errno_map::open_error(errno, &ctx, &sys.facts())
            });
            let fd = fd.map_err(|e| {
                let retry = race && e.kind() != ErrorKind::NoSuchProcess;
                (e, retry)
            })?;
            m.opened = attr;
            fds.push(fd);
        }
        Ok(fds)
    }

    /// One fd set per (thread of `pid`, CPU of `per_cpu`); a thread other than the main one
    /// that exits meanwhile is skipped.
    #[allow(clippy::type_complexity)]
    pub(super) fn open_pid(
        &mut self,
        pid: u32,
        per_cpu: &[i32],
        follow_threads: bool,
    ) -> Result<(Vec<Vec<OwnedFd>>, Vec<i32>)> {
        let p = pid_i32(pid)?;
        let (mut threads, mut cpus) = (Vec::new(), Vec::new());
        for tid in thread_ids(&self._shared.sys, Some(pid))? {
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
    pub(super) fn exec_seen(&self, i: usize) -> Result<bool> {
        let mut r = vec![Reading::default(); self.members.len()];
        self.read_instance_fds(&self.instances[i], &mut r)?;
        Ok(r.iter().any(|r| r.time_enabled > 0))
    }

    /// Replaces the fds of the exec target `self.instances[i]` by fds without
    /// `enable_on_exec`, opened as a pid's (every thread), disabled unless running.
    pub(super) fn reopen_exec(&mut self, i: usize) -> Result<()> {
        let Instance::Target(Target::Exec(pid)) = self.instances[i].instance else {
            return Ok(());
        };
        let layout = self.layout(&Target::Exec(pid));
        let follow_threads = layout.follow_threads();
        let per_cpu = layout.task_cpus(&self._shared.sys);
        let (threads, cpus) = match self.open_pid(pid, &per_cpu, follow_threads) {
            Ok(sets) => sets,
            // Gone (its exec failed, or it exited before the start): nothing more to count.
            Err(e) if e.kind() == ErrorKind::NoSuchProcess => (Vec::new(), Vec::new()),
            Err(e) => return Err(e),
        };
        let inst = &mut self.instances[i];
        inst.threads = threads;
        inst.cpus = cpus;
        if inst.exec.armed() {
            inst.exec = ExecState::Plain;
        }
        inst.mapped = false;
        Ok(())
    }

    /// After a stop: an exec target whose exec has not come yet would be enabled by it
    /// (`enable_on_exec` overrides a disable), counting after the stop. Reopen it without.
    pub(super) fn disarm_exec(&mut self) -> Result<()> {
        let mut armed = Vec::new();
        for i in 0..self.instances.len() {
            if self.instances[i].exec.armed() {
                if self.exec_seen(i)? {
                    if self.instances[i].exec == ExecState::Armed {
                        self.instances[i].exec = ExecState::Plain;
                    }
                } else {
                    armed.push(i);
                }
            }
        }
        if armed.is_empty() || (self.is_sampling() && self.local_wanted()) {
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
}
