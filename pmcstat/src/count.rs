//! Counting mode: allocate, attach, start, run, stop, read, print.

use crate::cli::DEFAULT_EVENTS;
use crate::config::{Count, Rules};
use crate::error::Failure;
use crate::measure::{check_log_csw, cpu_list, scope_text, ChildProbe};
use crate::output::{Counter, Report, Sink};
use crate::run::Wait;
use crate::sys::launch::Session;
use crate::sys::{children_cpu, exit_code};
use pmc::{Allocation, Backend, Error, ErrorKind, EventSpec, Flags, Group, Pmc, Reading, Scope};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// One requested counter: its spec as typed, and what came of allocating it.
pub struct Slot {
    pub event: String,
    pub scope: Scope,
    /// `--cgroup`: the cgroup a system-wide counter counts.
    pub cgroup: Option<String>,
    /// Where its counts come from (`None`: not allocated, see `error`).
    pub source: Option<Source>,
    pub error: Option<Error>,
}

/// Where a slot's counts come from.
pub enum Source {
    /// A PMC of its own (boxed: a slot list holds few, and a PMC is large).
    Pmc(Box<<pmc::Native as Backend>::Pmc>),
    /// Member `.1` of a perf `{...}` group, shared by its members' slots (member 0 attaches,
    /// starts and stops it).
    Member(Rc<RefCell<pmc::NativeGroup>>, usize),
    /// perf stat's `duration_time`: the run's wall-clock time in ns, measured here (perf
    /// opens a dummy event for it and never reads it).
    Duration,
}

impl Source {
    /// The group this is the leader of, to attach, start and stop.
    fn leader_of(&self) -> Option<&Rc<RefCell<pmc::NativeGroup>>> {
        match self {
            Source::Member(g, 0) => Some(g),
            _ => None,
        }
    }
}

fn is_unsupported(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NoPmu | ErrorKind::NoSuchEvent | ErrorKind::NotSupported
    )
}

/// Runs counting mode; returns the exit status to use.
pub fn run(args: &Count) -> Result<u8, Failure> {
    let wanted = wanted_counters(args)?;
    check_wanted(args, &wanted)?;
    let mut sink = open_sink(args)?;
    let repeat = repeat_count(args)?;
    // Not preallocated: the count comes from the user (`-r` is bounded by clap, too).
    let mut reports = Vec::new();
    for i in 0..repeat {
        let report = run_once(args, &wanted, &mut sink, args.verbose && i == 0)?;
        reports.push(report);
        if crate::run::stop_signal().is_some() {
            break; // -r: the runs so far are reported, as perf stat -r does on Ctrl-C
        }
    }
    let last = reports.last().and_then(|r| r.exit_status);
    print_reports(&mut sink, &reports);
    sink.finish()?;
    Ok(crate::run::final_status(last))
}

/// The counters asked for (`-p`, `-e`, `-s`, in that order), or the default set.
fn wanted_counters(args: &Count) -> Result<Vec<Wanted>, Failure> {
    let mut wanted: Vec<Wanted> = Vec::new();
    // pmcstat(8)'s -p: the process alone unless -d.
    for (p, &d) in args.process.iter().zip(&args.process_descendants) {
        wanted.push(Wanted::process(p, d));
    }
    // perf stat's -e: the command and all its child processes; with -a, every CPU.
    let all_cpus = args
        .all_cpus
        .then(|| cpu_list(args.cpus.last().map(String::as_str)))
        .transpose()?;
    let perf_event = |text: &str| match &all_cpus {
        Some(cpu) => Wanted {
            text: text.to_owned(),
            label: None,
            scope: Scope::System { cpu: cpu.clone() },
            descendants: false,
            group: None,
        },
        None => Wanted::process(text, true),
    };
    let mut groups = 0;
    for list in &args.events {
        wanted.extend(event_list(list, &mut groups, &perf_event)?);
    }
    for (s, c) in args.system.iter().zip(&args.system_cpus) {
        wanted.push(Wanted {
            text: s.clone(),
            label: None,
            scope: Scope::System {
                cpu: cpu_list(c.as_deref())?,
            },
            descendants: false,
            group: None,
        });
    }
    if wanted.is_empty() {
        // The default set counts the whole command tree, as perf stat does; with -a every
        // CPU, with cpu-clock for task-clock, as perf stat -a.
        wanted = DEFAULT_EVENTS
            .iter()
            .map(|&e| match e {
                "task-clock" if args.all_cpus => perf_event("cpu-clock"),
                e => perf_event(e),
            })
            .collect();
    }
    Ok(wanted)
}

/// The rules that depend on the counters: `-W`, `-E`, and something that ends the run.
fn check_wanted(args: &Count, wanted: &[Wanted]) -> Result<(), Failure> {
    let has_process = wanted.iter().any(|w| !w.scope.is_system());
    let csw = crate::measure::LogCsw {
        log_csw: args.log_csw,
        log: args.log.as_deref(),
        repeat: args.repeat,
    };
    check_log_csw(&csw, has_process)?;
    if args.exit_counts {
        if !has_process {
            return Err(Failure::Usage(
                "-E prints the counts of each process at its exit: it is for process-mode \
                 PMCs (-p, -e), not system-mode ones (-s)"
                    .into(),
            ));
        }
        if args.repeat.is_some_and(|n| n > 1) {
            return Err(Failure::Usage(
                "-E with -r N: the counts at exit are of one run; run once".into(),
            ));
        }
        let process = wanted.iter().filter(|w| !w.scope.is_system()).count();
        if process > 1 || args.log_csw {
            return Err(Failure::Usage(crate::exits::COUNTING_ONE_PMC.into()));
        }
    }
    // System-wide counters alone run until -l SECS or a stop signal, as pmcstat(8).
    if args.command.is_empty() && args.attach.is_none() && has_process {
        return Err(Failure::Usage(
            "process-scope counters need a command or -t PID|REGEX (system-wide ones, -s or \
             -a, run until -l SECS or Ctrl-C)"
                .into(),
        ));
    }
    Ok(())
}

/// Where the counts go: `-o FILE`, else standard error.
fn open_sink(args: &Count) -> Result<Sink, Failure> {
    Sink::open(args.output.as_deref(), &args.print).map_err(|e| {
        Failure::Setup(Error::new(
            ErrorKind::Os,
            pmc::Op::Open,
            format!(
                "cannot write {}: {e}",
                args.output
                    .as_deref()
                    .unwrap_or(std::path::Path::new("-o"))
                    .display()
            ),
        ))
    })
}

/// `-r N`: how many runs (1 without it), checked against the command.
fn repeat_count(args: &Count) -> Result<u32, Failure> {
    let repeat = args.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(Failure::Usage(
            "-r: the repeat count must be at least 1".into(),
        ));
    }
    if repeat > 1 && args.command.is_empty() {
        return Err(Failure::Usage("-r repeats a command: give one".into()));
    }
    Ok(repeat)
}

/// The counts of the runs (one, or the `-r` summary), then the counts at exit (`-E`).
fn print_reports(sink: &mut Sink, reports: &[Report]) {
    if let [one] = reports {
        sink.report(one);
    } else {
        sink.repeated(reports);
    }
    if let Some(e) = reports.last().and_then(|r| r.exits.as_ref()) {
        sink.exits(e);
    }
}

/// One requested counter, before allocation.
#[derive(Clone)]
struct Wanted {
    /// The event to allocate (a group member's with the group's modifiers).
    text: String,
    /// What its counts are shown under, when not `text` (a group member as typed).
    label: Option<String>,
    scope: Scope,
    /// Count the target's child processes too (`-d`, `-e`, the default set).
    descendants: bool,
    /// Of a perf `{...}` group: (the group's number, the member's place, leader 0).
    group: Option<(usize, usize)>,
}

impl Wanted {
    fn process(text: &str, descendants: bool) -> Wanted {
        Wanted {
            text: text.to_owned(),
            label: None,
            scope: Scope::Process,
            descendants,
            group: None,
        }
    }
}

/// perf's `-e a,{b,c}:u,d`: each event (as typed), and each group's members with the
/// group's modifiers added, labelled as typed; `next_group` numbers the groups. One event
/// with commas of its own (hwpmc's `instructions,usr`, terms in `pmu/.../`) stays one.
fn event_list(
    text: &str,
    next_group: &mut usize,
    each: &dyn Fn(&str) -> Wanted,
) -> Result<Vec<Wanted>, Failure> {
    let items = pmc::event::EventList::parse_typed(text)
        .map_err(|e| Failure::Usage(parse_hint(text, &e)))?;
    let mut out = Vec::new();
    for (item, typed) in items {
        match item {
            pmc::event::EventItem::Event(_) => out.push(each(typed)),
            pmc::event::EventItem::Group(g) => {
                let id = *next_group;
                *next_group += 1;
                let typed_members = pmc::event::EventGroup::typed_members(typed);
                for (i, spec) in g.member_specs().into_iter().enumerate() {
                    let mut w = each(&spec.to_string());
                    w.label = typed_members.get(i).map(|t| (*t).to_owned());
                    w.group = Some((id, i));
                    out.push(w);
                }
            }
        }
    }
    Ok(out)
}

/// The label a count is shown under: the event as typed, or, when the backend narrowed its
/// privilege modes, as counted (`context-switches:u`, as perf labels it); the output shows
/// perf's `name=` instead where there is one. The flag says whether it was narrowed.
fn counted_label(text: &str, spec: &EventSpec, pmc: &impl Pmc) -> (String, bool) {
    let counted = pmc.counted_event();
    if counted.modifiers != spec.modifiers {
        (counted.to_string(), true)
    } else {
        (text.to_owned(), false)
    }
}

/// One run: allocate, attach, start, run the command (or wait), stop, read.
fn run_once(
    args: &Count,
    wanted: &[Wanted],
    sink: &mut Sink,
    verbose: bool,
) -> Result<Report, Failure> {
    let backend = pmc::Native::open()?;
    // The created log is bound after the backend, so dropped (the file removed) before it
    // if the run does not start.
    let (created_log, live_exits) = open_logs(&backend, args)?;
    let (mut slots, user_only) = allocate_slots(&backend, args, wanted)?;
    // Launch paused, attach, start, then let it exec.
    let mut session = attach(&mut slots, args)?;
    // Counters of the process alone: watch for child processes they miss.
    let alone = wanted
        .iter()
        .any(|w| !w.scope.is_system() && !w.descendants);
    let mut probe = Some(&session)
        .filter(|s| alone && !s.targets().is_empty())
        .and_then(|s| ChildProbe::new(&backend, s));
    if verbose {
        print_verbose(sink, &slots, wanted);
    }
    let (started, children_before) = start(&mut slots, probe.as_mut(), &mut session)?;
    let _ = created_log.keep(); // started: the log is kept, whatever happens next

    let waited = wait(args, &mut session, &slots, sink, started)?;
    let elapsed = started.elapsed();
    // The command has been waited for: its CPU time is in RUSAGE_CHILDREN now.
    let user_sys = children_before.and_then(|(u0, s0)| {
        let (u1, s1) = children_cpu()?;
        Some((u1.saturating_sub(u0), s1.saturating_sub(s0)))
    });
    for s in &mut slots {
        match &mut s.source {
            Some(Source::Pmc(p)) => p.stop()?,
            Some(src) => {
                if let Some(g) = src.leader_of() {
                    g.borrow_mut().stop()?;
                }
            }
            None => {}
        }
    }
    let uncounted_children_ns = probe.and_then(ChildProbe::finish);
    let exits = close_logs(&backend, args, live_exits)?;
    let counters = collect(&slots, args.per_cpu, elapsed);
    let exit_status = waited.status.map(exit_code);
    print_last_interval(args, &slots, waited, elapsed, sink)?;
    Ok(Report {
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        pids: crate::targets::pids(session.targets()),
        exit_status,
        elapsed,
        counters,
        descendants: wanted
            .iter()
            .any(|w| !w.scope.is_system())
            .then_some(!alone),
        with_children: with_children(&slots, wanted),
        uncounted_children_ns,
        user_only,
        user_sys,
        exits,
    })
}

/// `-W`'s log file.
fn csw_log(args: &Count) -> Option<&std::path::Path> {
    args.log.as_deref().filter(|_| args.log_csw)
}

/// `-E`'s log file.
fn exit_log(args: &Count) -> Option<&std::path::Path> {
    args.log.as_deref().filter(|_| args.exit_counts)
}

/// The log of `-W` (the counts at context switches) and `-E` (the counts at exit): `-O
/// FILE` (with the file it created, removed unless the run starts), or for `-E` without
/// it a pipe read as it fills.
fn open_logs(
    backend: &pmc::Native,
    args: &Count,
) -> Result<
    (
        crate::logfile::RemoveUnlessStarted,
        Option<crate::live::LiveProfile>,
    ),
    Failure,
> {
    let mut created_log = crate::logfile::RemoveUnlessStarted(None);
    if let Some(path) = csw_log(args).or(exit_log(args)) {
        created_log.0 = crate::logfile::configure_log(backend, path)?;
    }
    let mut live_exits = None;
    if args.exit_counts && args.log.is_none() {
        let (reader, sink) = crate::live::LiveProfile::start(true).map_err(|e| {
            Failure::Setup(Error::new(
                ErrorKind::Os,
                pmc::Op::Log,
                format!("-E: cannot start the log reader: {e}"),
            ))
        })?;
        backend.configure_log(Box::new(sink))?;
        live_exits = Some(reader);
    }
    Ok((created_log, live_exits))
}

/// Allocates the counters; a counter the machine lacks is kept as an error to show (but
/// not with `--columns`). The flag says whether the backend narrowed any to user space.
fn allocate_slots(
    backend: &pmc::Native,
    args: &Count,
    wanted: &[Wanted],
) -> Result<(Vec<Slot>, bool), Failure> {
    let mut slots = Vec::with_capacity(wanted.len());
    let mut user_only = false;
    let mut i = 0;
    while let Some(w) = wanted.get(i) {
        if let Some((id, 0)) = w.group {
            let n = wanted[i..]
                .iter()
                .take_while(|m| m.group.is_some_and(|(g, _)| g == id))
                .count();
            let members = &wanted[i..i + n];
            slots.extend(allocate_group(backend, args, members, &mut user_only)?);
            i += n;
            continue;
        }
        let (slot, narrowed) = allocate_one(backend, args, w)?;
        user_only |= narrowed;
        slots.push(slot);
        i += 1;
    }
    Ok((slots, user_only))
}

/// `w`'s spec and its allocation: its scope, `-d`, the log flags of `-W` and `-E`, and
/// `--cgroup` for a system-wide one.
fn allocation_of(args: &Count, w: &Wanted) -> Result<(EventSpec, Allocation), Failure> {
    let spec: EventSpec = w
        .text
        .parse()
        .map_err(|e: pmc::ParseError| Failure::Usage(parse_hint(&w.text, &e)))?;
    let mut flags = if w.descendants {
        Flags::DESCENDANTS
    } else {
        Flags::NONE
    };
    if csw_log(args).is_some() && !w.scope.is_system() {
        flags |= Flags::LOG_PROCCSW;
    }
    if args.exit_counts && !w.scope.is_system() {
        flags |= Flags::LOG_PROCEXIT;
    }
    let alloc = Allocation::counting(spec.clone())
        .scope(w.scope.clone())
        .flags(flags);
    let alloc = match args.cgroup.clone().filter(|_| w.scope.is_system()) {
        Some(cg) => alloc.cgroup(cg),
        None => alloc,
    };
    Ok((spec, alloc))
}

/// One counter of its own (or perf stat's `duration_time`, measured here).
fn allocate_one(backend: &pmc::Native, args: &Count, w: &Wanted) -> Result<(Slot, bool), Failure> {
    let (spec, alloc) = allocation_of(args, w)?;
    let cgroup = alloc.cgroup.clone();
    let label = w.label.clone().unwrap_or_else(|| w.text.clone());
    let slot = |event: String, source, error| Slot {
        event,
        scope: w.scope.clone(),
        cgroup: cgroup.clone(),
        source,
        error,
    };
    if spec.is_duration_time() {
        return Ok((slot(label, Some(Source::Duration), None), false));
    }
    let allocated = backend.allocate(&alloc).map_err(|e| clock_help(&spec, e));
    if let (Err(e), Some(_)) = (&allocated, &cgroup) {
        // The cgroup refused (absent, not countable here) is the run's error; an event
        // this machine cannot count at all is a `<not supported>` row, as without it.
        let mut plain = alloc.clone();
        plain.cgroup = None;
        if backend.allocate(&plain).is_ok() {
            return Err(Failure::Setup(e.clone()));
        }
    }
    match allocated {
        Ok(p) => {
            let (event, narrowed) = counted_label(&label, &spec, &p);
            Ok((slot(event, Some(Source::Pmc(Box::new(p))), None), narrowed))
        }
        // pmcstat(8) stops when a PMC cannot be allocated; its table has no
        // place for a count that is not there.
        Err(e) if args.rules.every_pmc => Err(Failure::Setup(e)),
        Err(e) if is_unsupported(&e) => Ok((slot(label, None, Some(e)), false)),
        Err(e) => Err(Failure::Setup(e)),
    }
}

/// perf's `{a,b,...}` group: its members allocated together, each a slot sharing the
/// group. A weak group (`:W`) the kernel refuses whole is allocated member by member, as
/// perf stat does; a group this machine cannot count is a `<not supported>` row per member.
fn allocate_group(
    backend: &pmc::Native,
    args: &Count,
    members: &[Wanted],
    user_only: &mut bool,
) -> Result<Vec<Slot>, Failure> {
    let mut specs = Vec::with_capacity(members.len());
    let mut allocs = Vec::with_capacity(members.len());
    for w in members {
        let (spec, alloc) = allocation_of(args, w)?;
        if spec.is_duration_time() {
            return Err(Failure::Usage(
                "duration_time is perf stat's tool event (the run's wall-clock time), not a \
                 counter to group: give it outside the {...} group"
                    .into(),
            ));
        }
        specs.push(spec);
        allocs.push(alloc);
    }
    let label = |w: &Wanted, _: &EventSpec| w.label.clone().unwrap_or_else(|| w.text.clone());
    match backend.allocate_group(&allocs) {
        Ok(g) => {
            let g = Rc::new(RefCell::new(g));
            Ok(members
                .iter()
                .zip(&specs)
                .zip(allocs)
                .enumerate()
                .map(|(i, ((w, spec), a))| Slot {
                    event: label(w, spec),
                    scope: w.scope.clone(),
                    cgroup: a.cgroup,
                    source: Some(Source::Member(g.clone(), i)),
                    error: None,
                })
                .collect())
        }
        Err(e) if specs.iter().any(|s| s.modifiers.weak_group) => {
            note!(
                "pmcstat: the weak group {{{}}} is counted member by member: {}",
                members
                    .iter()
                    .map(|w| w.label.as_deref().unwrap_or(&w.text))
                    .collect::<Vec<_>>()
                    .join(","),
                e.message()
            );
            let mut slots = Vec::with_capacity(members.len());
            for w in members {
                let (slot, narrowed) = allocate_one(backend, args, w)?;
                *user_only |= narrowed;
                slots.push(slot);
            }
            Ok(slots)
        }
        Err(e) if args.rules.every_pmc => Err(Failure::Setup(e)),
        Err(e) if is_unsupported(&e) => Ok(members
            .iter()
            .zip(&specs)
            .zip(allocs)
            .map(|((w, spec), a)| Slot {
                event: label(w, spec),
                scope: w.scope.clone(),
                cgroup: a.cgroup,
                source: None,
                error: Some(e.clone()),
            })
            .collect()),
        Err(e) => Err(Failure::Setup(e)),
    }
}

/// pmcstat's remedy for a SOFT clock the backend cannot count in its unit (Linux: no tick
/// counter): the flags that count the nanosecond clock, or sample the ticks.
fn clock_help(spec: &EventSpec, e: Error) -> Error {
    match spec.soft_clock() {
        Some(c) if e.kind() == ErrorKind::NotSupported => {
            let base = if c == pmc::SoftClock::Hard {
                "cpu-clock"
            } else {
                "task-clock"
            };
            // In the message too: a `<not supported>` row prints the message, not the help.
            let remedy = format!(
                "count CPU time in nanoseconds with -p {base} (or -s {base}); -P/-S {spec} \
                 samples every -n N ticks ({} ms each)",
                c.tick_ns() as f64 / 1e6
            );
            Error::new(e.kind(), e.op(), format!("{}; {remedy}", e.message())).with_help(remedy)
        }
        _ => e,
    }
}

/// Launches the command paused (or finds the `-t` processes) and attaches the
/// process-mode counters to it.
fn attach(slots: &mut [Slot], args: &Count) -> Result<Session, Failure> {
    let session = crate::targets::session(args.attach.as_ref(), &args.command)?;
    for s in slots.iter_mut().filter(|s| !s.scope.is_system()) {
        match &mut s.source {
            Some(Source::Pmc(p)) => crate::targets::attach_all(&mut **p, &session)?,
            Some(Source::Member(g, 0)) => {
                crate::targets::attach_group_all(&mut *g.borrow_mut(), &session)?
            }
            _ => {}
        }
    }
    Ok(session)
}

/// `-v`: each counter's scope and native configuration, or why it is missing.
fn print_verbose(sink: &mut Sink, slots: &[Slot], wanted: &[Wanted]) {
    for (s, w) in slots.iter().zip(wanted) {
        let fields = match &s.source {
            Some(Source::Pmc(p)) => Some(p.native_config()),
            Some(Source::Member(g, i)) => {
                let mut f = g.borrow().native_configs().into_iter().nth(*i);
                if let Some(f) = f.as_mut() {
                    let role = if *i == 0 {
                        "leader".to_owned()
                    } else {
                        format!("member {i}, with its leader (group_fd)")
                    };
                    f.insert(0, field("(pmcstat) group", &role));
                }
                f
            }
            Some(Source::Duration) => Some(vec![field(
                "(pmcstat) tool event",
                "the run's wall-clock time in ns, measured by pmcstat (perf stat's \
                 duration_time: a dummy event it never reads)",
            )]),
            None => None,
        };
        sink.verbose(
            &s.event,
            &scope_text(&s.scope, w.descendants),
            fields,
            s.error.as_ref(),
        );
    }
}

/// A `-v` line of pmcstat's own.
fn field(name: &str, value: &str) -> pmc::NativeField {
    pmc::NativeField {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

/// Starts the child-process probe and the counters, then lets the command run. Returns
/// when counting started and the children's CPU time before it (with a command).
fn start(
    slots: &mut [Slot],
    probe: Option<&mut ChildProbe>,
    session: &mut Session,
) -> Result<(Instant, Option<(Duration, Duration)>), Failure> {
    // The counting window starts before the first start, so per-CPU clock
    // counts never exceed the elapsed time reported.
    let started = Instant::now();
    let children_before = session.child().and_then(|_| children_cpu());
    if let Some(p) = probe {
        p.start();
    }
    for s in slots.iter_mut() {
        match &mut s.source {
            Some(Source::Pmc(p)) => p.start()?,
            Some(src) => {
                if let Some(g) = src.leader_of() {
                    g.borrow_mut().start()?;
                }
            }
            None => {}
        }
    }
    session.resume()?;
    Ok((started, children_before))
}

/// What the wait for the end of the run left for the last interval.
struct Waited {
    /// The command's exit status, if it ended.
    status: Option<std::process::ExitStatus>,
    /// The readings at the last interval (`-w`, `--columns`).
    last: Vec<Reading>,
    /// When the last interval was printed.
    last_at: Duration,
}

/// Waits for the end of the run, printing the counts every interval (`-w`; every
/// [`Rules::interval`]).
fn wait(
    args: &Count,
    session: &mut Session,
    slots: &[Slot],
    sink: &mut Sink,
    started: Instant,
) -> Result<Waited, Failure> {
    let Rules {
        rows_per_cpu,
        interval,
        ..
    } = args.rules;
    let mut last: Vec<Reading> = Vec::new();
    let wait = Wait {
        started,
        duration: args.duration,
        interval,
    };
    let mut last_at = Duration::ZERO;
    let status = wait.run(
        session,
        || {
            let shown = interval_rows(
                collect(slots, rows_per_cpu, started.elapsed()),
                &mut last,
                args.cumulative,
            );
            last_at = started.elapsed();
            sink.interval(last_at, every_pmc_checked(args.rules, &shown)?);
            Ok(())
        },
        None,
        |_| Ok(std::ops::ControlFlow::Continue(())),
    )?;
    Ok(Waited {
        status,
        last,
        last_at,
    })
}

/// With the counters stopped: closes the `-W` log (its switches drained from the rings)
/// and, with `-E`, reads the counts at exit from the log.
fn close_logs(
    backend: &pmc::Native,
    args: &Count,
    live_exits: Option<crate::live::LiveProfile>,
) -> Result<Option<crate::exits::ExitCounts>, Failure> {
    let csw_log = csw_log(args);
    if let Some(path) = csw_log {
        // Stopped: every switch is in the rings; drain them and close the log.
        backend.close_log().map_err(crate::logfile::log_err)?;
        note!(
            "pmcstat: the counts at context switches were written to {}",
            path.display()
        );
    }
    // -E: the log is complete once the PMCs are stopped.
    if !args.exit_counts {
        return Ok(None);
    }
    if csw_log.is_none() {
        backend.close_log().map_err(crate::logfile::log_err)?;
    }
    Ok(Some(match (live_exits, exit_log(args)) {
        (Some(reader), _) => reader
            .finish()
            .map(|(_, counts)| counts)
            .map_err(|e| Failure::Output(format!("-E: cannot read the log: {e}")))?,
        (None, Some(path))
            if path.as_os_str() != "-" && crate::logfile::remote_log(path).is_none() =>
        {
            crate::exits::of_file(path)
                .map_err(|e| Failure::Output(format!("-E: cannot read {}: {e}", path.display())))?
        }
        _ => {
            note!("pmcstat: -E: the counts at process exit are in the log, as exitval records");
            crate::exits::ExitCounts::default()
        }
    }))
}

/// The last, partial interval: with it the intervals add up to the total.
fn print_last_interval(
    args: &Count,
    slots: &[Slot],
    waited: Waited,
    elapsed: Duration,
    sink: &mut Sink,
) -> Result<(), Failure> {
    let rules = args.rules;
    if rules.interval.is_none() {
        return Ok(());
    }
    let mut last = waited.last;
    let shown = interval_rows(
        collect(slots, rules.rows_per_cpu, elapsed),
        &mut last,
        args.cumulative,
    );
    let moved = shown.iter().any(|c| c.reading.value != 0);
    if rules.final_row || moved || elapsed > waited.last_at + Duration::from_millis(1) {
        sink.interval(elapsed, every_pmc_checked(rules, &shown)?);
    }
    Ok(())
}

/// `-d` toggled between `-p` PMCs: the events that counted the children.
fn with_children(slots: &[Slot], wanted: &[Wanted]) -> Vec<String> {
    let process: Vec<&Wanted> = wanted.iter().filter(|w| !w.scope.is_system()).collect();
    if process.iter().any(|w| w.descendants) && !process.iter().all(|w| w.descendants) {
        slots
            .iter()
            .zip(wanted)
            .filter(|(_, w)| !w.scope.is_system() && w.descendants)
            .map(|(s, _)| s.event.clone())
            .collect()
    } else {
        Vec::new()
    }
}

/// The rows, when [`Rules::every_pmc`] asks for a count of every PMC: a PMC that
/// cannot be read stops the run, as pmcstat(8)'s "Cannot read pmc" does.
fn every_pmc_checked(rules: Rules, shown: &[Counter]) -> Result<&[Counter], Failure> {
    if !rules.every_pmc {
        return Ok(shown);
    }
    match shown.iter().find_map(|c| c.error.as_ref().map(|e| (c, e))) {
        Some((c, e)) => Err(Failure::Setup(Error::new(
            ErrorKind::Os,
            pmc::Op::Read,
            format!("cannot read `{}`: {e}", c.event),
        ))),
        None => Ok(shown),
    }
}

/// One `-w` interval's rows: the counts since the previous interval (or,
/// with -C, the running totals); `last` keeps the totals seen so far (as
/// pmcstat(8)'s `ev_saved`: `pmcstat_print_counters` prints `value -
/// ev_saved`, or with -C `value`). `last` grows to the number of rows on the
/// first call (a system-mode PMC read per CPU is one row per CPU).
fn interval_rows(
    counters: Vec<Counter>,
    last: &mut Vec<Reading>,
    cumulative: bool,
) -> Vec<Counter> {
    if last.len() < counters.len() {
        last.resize(counters.len(), Reading::default());
    }
    if cumulative {
        return counters;
    }
    counters
        .into_iter()
        .zip(last.iter_mut())
        .map(|(mut c, prev)| {
            let total = c.reading;
            c.reading = total.delta(prev);
            *prev = total;
            c
        })
        .collect()
}

/// The parse error, plus a hint when a perf-style comma list was given to
/// one option (`-p page-faults,task-clock` parses as hwpmc qualifiers).
fn parse_hint(text: &str, e: &pmc::ParseError) -> String {
    let listed = text.split(',').skip(1).any(|part| {
        part.parse::<EventSpec>().is_ok_and(|s| {
            s.modifiers == pmc::Modifiers::default()
                && !matches!(s.source, pmc::EventSource::Hwpmc(_))
        })
    });
    if listed {
        format!("{e}\nhint: to count several events, give each its own option: -p page-faults -p task-clock")
    } else {
        e.to_string()
    }
}

/// Reads every slot (per CPU if asked, for system scope), `elapsed` into the run (perf
/// stat's `duration_time`). A group is read once, all its members at one instant.
fn collect(slots: &[Slot], per_cpu: bool, elapsed: Duration) -> Vec<Counter> {
    let mut out = Vec::new();
    // The last group read: its members' totals, or per-instance readings.
    let mut group: Option<(*const RefCell<pmc::NativeGroup>, GroupRead)> = None;
    for s in slots {
        let row = |cpu: Option<u32>, reading: Reading, error: Option<String>| Counter {
            event: s.event.clone(),
            scope: s.scope.clone(),
            cgroup: s.cgroup.clone(),
            cpu,
            reading,
            error,
        };
        let failed = |e: &Error| row(None, Reading::not_supported(), Some(e.to_string()));
        let instances = per_cpu && s.scope.is_system();
        match &s.source {
            None => out.push(row(
                None,
                Reading::not_supported(),
                s.error.as_ref().map(|e| e.message().to_owned()),
            )),
            Some(Source::Duration) => {
                let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
                out.push(row(None, Reading::new(ns, ns, ns), None));
            }
            Some(Source::Pmc(p)) if instances => match p.read_instances() {
                Ok(list) => out.extend(
                    list.into_iter()
                        .map(|ir| row(cpu_of(ir.instance), ir.reading, None)),
                ),
                Err(e) => out.push(failed(&e)),
            },
            Some(Source::Pmc(p)) => match p.read() {
                Ok(r) => out.push(row(None, r, None)),
                Err(e) => out.push(failed(&e)),
            },
            Some(Source::Member(g, i)) => {
                let key = Rc::as_ptr(g);
                if group.as_ref().is_none_or(|(k, _)| *k != key) {
                    let g = g.borrow();
                    let read = if instances {
                        GroupRead::Instances(g.read_instances())
                    } else {
                        GroupRead::Totals(g.read())
                    };
                    group = Some((key, read));
                }
                match group.as_ref().map(|(_, r)| r) {
                    Some(GroupRead::Totals(Ok(r))) => {
                        out.push(row(None, r.get(*i).copied().unwrap_or_default(), None))
                    }
                    Some(GroupRead::Instances(Ok(list))) => out.extend(list.iter().map(|ir| {
                        let r = ir.readings.get(*i).copied().unwrap_or_default();
                        row(cpu_of(ir.instance), r, None)
                    })),
                    Some(GroupRead::Totals(Err(e)) | GroupRead::Instances(Err(e))) => {
                        out.push(failed(e))
                    }
                    None => {}
                }
            }
        }
    }
    out
}

/// One read of a group: its members' totals, or each instance's (per CPU).
enum GroupRead {
    Totals(pmc::Result<Vec<Reading>>),
    Instances(pmc::Result<Vec<pmc::GroupInstanceReading>>),
}

/// The CPU of a per-instance reading.
fn cpu_of(i: pmc::Instance) -> Option<u32> {
    match i {
        pmc::Instance::Cpu(c) => Some(c),
        pmc::Instance::Target(_) => None,
    }
}
