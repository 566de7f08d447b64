//! Counting mode: allocate, attach, start, run, stop, read, print.

use crate::cli::DEFAULT_EVENTS;
use crate::config::Count;
use crate::error::Failure;
use crate::measure::{check_log_csw, cpu_list, scope_text, ChildProbe};
use crate::output::{Counter, Report, Sink};
use crate::run::Wait;
use crate::sys::launch::Session;
use crate::sys::{children_cpu, exit_code};
use pmc::{Allocation, Backend, Error, ErrorKind, EventSpec, Flags, Pmc, Reading, Scope};
use std::time::{Duration, Instant};

/// One requested counter: its spec as typed, and what came of allocating it.
pub struct Slot {
    pub event: String,
    pub scope: Scope,
    /// `--cgroup`: the cgroup a system-wide counter counts.
    pub cgroup: Option<String>,
    pub pmc: Option<<pmc::Native as Backend>::Pmc>,
    pub error: Option<Error>,
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
            scope: Scope::System { cpu: cpu.clone() },
            descendants: false,
        },
        None => Wanted::process(text, true),
    };
    for list in &args.events {
        for e in split_event_list(list) {
            wanted.push(perf_event(&e));
        }
    }
    for (s, c) in args.system.iter().zip(&args.system_cpus) {
        wanted.push(Wanted {
            text: s.clone(),
            scope: Scope::System {
                cpu: cpu_list(c.as_deref())?,
            },
            descendants: false,
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

/// `-r N`: how many runs (1 without it), checked against `--columns` and the command.
fn repeat_count(args: &Count) -> Result<u32, Failure> {
    let repeat = args.repeat.unwrap_or(1);
    if args.columns && repeat > 1 {
        return Err(Failure::Usage(
            "--columns prints the rows of one run: give -r N without it".into(),
        ));
    }
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
    text: String,
    scope: Scope,
    /// Count the target's child processes too (`-d`, `-e`, the default set).
    descendants: bool,
}

impl Wanted {
    fn process(text: &str, descendants: bool) -> Wanted {
        Wanted {
            text: text.to_owned(),
            scope: Scope::Process,
            descendants,
        }
    }
}

/// perf's `-e a,b,c`: several events, unless the commas are one event's
/// own (hwpmc qualifiers as in `instructions,usr`, or terms inside
/// `pmu/.../`): the list is split only where every piece is an event.
fn split_event_list(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let mut in_pmu = false;
    for (i, ch) in text.char_indices() {
        match ch {
            '/' => in_pmu = !in_pmu,
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 && !in_pmu => {
                pieces.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    if pieces.len() > 1 && pieces.iter().all(|p| p.parse::<EventSpec>().is_ok()) {
        pieces.into_iter().map(str::to_owned).collect()
    } else {
        vec![text.to_owned()]
    }
}

/// The label a count is shown under: the event as typed, or, when the
/// backend narrowed its privilege modes, as counted (`context-switches:u`,
/// as perf labels it). The flag says whether it was narrowed.
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
        if let Some(p) = s.pmc.as_mut() {
            p.stop()?;
        }
    }
    let uncounted_children_ns = probe.and_then(ChildProbe::finish);
    let exits = close_logs(&backend, args, live_exits)?;
    let counters = collect(&slots, args.per_cpu);
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
    for w in wanted.iter().cloned() {
        let Wanted {
            text,
            scope,
            descendants,
        } = w;
        let spec: EventSpec = text
            .parse()
            .map_err(|e: pmc::ParseError| Failure::Usage(parse_hint(&text, &e)))?;
        let mut flags = if descendants {
            Flags::DESCENDANTS
        } else {
            Flags::NONE
        };
        if csw_log(args).is_some() && !scope.is_system() {
            flags |= Flags::LOG_PROCCSW;
        }
        if args.exit_counts && !scope.is_system() {
            flags |= Flags::LOG_PROCEXIT;
        }
        let alloc = Allocation::counting(spec.clone())
            .scope(scope.clone())
            .flags(flags);
        let cgroup = args.cgroup.clone().filter(|_| scope.is_system());
        let alloc = match &cgroup {
            Some(cg) => alloc.cgroup(cg.clone()),
            None => alloc,
        };
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
                let (event, narrowed) = counted_label(&text, &spec, &p);
                user_only |= narrowed;
                slots.push(Slot {
                    event,
                    scope,
                    cgroup: cgroup.clone(),
                    pmc: Some(p),
                    error: None,
                })
            }
            // pmcstat(8) stops when a PMC cannot be allocated; its table has no
            // place for a count that is not there.
            Err(e) if args.columns => return Err(Failure::Setup(e)),
            Err(e) if is_unsupported(&e) => slots.push(Slot {
                event: text,
                scope,
                cgroup,
                pmc: None,
                error: Some(e),
            }),
            Err(e) => return Err(Failure::Setup(e)),
        }
    }
    Ok((slots, user_only))
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
    for s in slots.iter_mut() {
        if let Some(p) = s.pmc.as_mut() {
            if !s.scope.is_system() {
                crate::targets::attach_all(p, &session)?;
            }
        }
    }
    Ok(session)
}

/// `-v`: each counter's scope and native configuration, or why it is missing.
fn print_verbose(sink: &mut Sink, slots: &[Slot], wanted: &[Wanted]) {
    for (s, w) in slots.iter().zip(wanted) {
        sink.verbose(
            &s.event,
            &scope_text(&s.scope, w.descendants),
            s.pmc.as_ref().map(|p| p.native_config()),
            s.error.as_ref(),
        );
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
        if let Some(p) = s.pmc.as_mut() {
            p.start()?;
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
/// [`COLUMNS_DEFAULT_INTERVAL`] with `--columns`).
fn wait(
    args: &Count,
    session: &mut Session,
    slots: &[Slot],
    sink: &mut Sink,
    started: Instant,
) -> Result<Waited, Failure> {
    // --columns: a column per CPU of each system-mode PMC, as pmcstat(8)
    // allocates one PMC per CPU; rows every 5 s without -w, as pmcstat(8)'s
    // DEFAULT_WAIT_INTERVAL.
    let per_cpu = args.per_cpu || args.columns;
    let interval = args
        .interval
        .or(args.columns.then_some(COLUMNS_DEFAULT_INTERVAL));
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
            let shown = interval_rows(collect(slots, per_cpu), &mut last, args.cumulative);
            last_at = started.elapsed();
            if args.columns {
                sink.interval(last_at, columns_checked(&shown)?);
            } else {
                sink.interval(last_at, &shown);
            }
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
    let mut last = waited.last;
    if args.columns {
        // pmcstat(8) prints a row when the target exits (EVFILT_PROC) or on
        // SIGINT, whatever the time since the last.
        let per_cpu = args.per_cpu || args.columns;
        let shown = interval_rows(collect(slots, per_cpu), &mut last, args.cumulative);
        sink.interval(elapsed, columns_checked(&shown)?);
    } else if args.interval.is_some() {
        let shown = interval_rows(collect(slots, args.per_cpu), &mut last, args.cumulative);
        let moved = shown.iter().any(|c| c.reading.value != 0);
        if moved || elapsed > waited.last_at + Duration::from_millis(1) {
            sink.interval(elapsed, &shown);
        }
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

/// `--columns` without -w: pmcstat(8)'s `DEFAULT_WAIT_INTERVAL`, 5 s.
const COLUMNS_DEFAULT_INTERVAL: f64 = 5.0;

/// `--columns`' rows have a count for every PMC: a PMC that cannot be read
/// stops the run, as pmcstat(8)'s "Cannot read pmc" does.
fn columns_checked(shown: &[Counter]) -> Result<&[Counter], Failure> {
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

/// Reads every slot (per CPU if asked, for system scope).
fn collect(slots: &[Slot], per_cpu: bool) -> Vec<Counter> {
    let mut out = Vec::new();
    for s in slots {
        let Some(p) = s.pmc.as_ref() else {
            out.push(Counter {
                event: s.event.clone(),
                scope: s.scope.clone(),
                cgroup: s.cgroup.clone(),
                cpu: None,
                reading: Reading::not_supported(),
                error: s.error.as_ref().map(|e| e.message().to_owned()),
            });
            continue;
        };
        if per_cpu && s.scope.is_system() {
            match p.read_instances() {
                Ok(list) => {
                    for ir in list {
                        let cpu = match ir.instance {
                            pmc::Instance::Cpu(c) => Some(c),
                            pmc::Instance::Target(_) => None,
                        };
                        out.push(Counter {
                            event: s.event.clone(),
                            scope: s.scope.clone(),
                            cgroup: s.cgroup.clone(),
                            cpu,
                            reading: ir.reading,
                            error: None,
                        });
                    }
                }
                Err(e) => out.push(Counter {
                    event: s.event.clone(),
                    scope: s.scope.clone(),
                    cgroup: s.cgroup.clone(),
                    cpu: None,
                    reading: Reading::not_supported(),
                    error: Some(e.to_string()),
                }),
            }
            continue;
        }
        match p.read() {
            Ok(r) => out.push(Counter {
                event: s.event.clone(),
                scope: s.scope.clone(),
                cgroup: s.cgroup.clone(),
                cpu: None,
                reading: r,
                error: None,
            }),
            Err(e) => out.push(Counter {
                event: s.event.clone(),
                scope: s.scope.clone(),
                cgroup: s.cgroup.clone(),
                cpu: None,
                reading: Reading::not_supported(),
                error: Some(e.to_string()),
            }),
        }
    }
    out
}
