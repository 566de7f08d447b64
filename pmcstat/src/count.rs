//! Counting mode: allocate, attach, start, run, stop, read, print.

use crate::cli::{Args, DEFAULT_EVENTS};
use crate::output::{Counter, Report, Sink};
use crate::run::{exit_code, Wait};
use pmc::{
    Allocation, Backend, Cpus, Error, ErrorKind, EventSpec, Flags, Pmc, Reading, Scope, Target,
};
use std::time::Instant;

/// Why pmcstat stopped before the command ran.
pub enum Failure {
    /// Bad options: exit 2.
    Usage(String),
    /// Counters could not be set up: exit 1.
    Setup(Error),
    /// Results could not be written (`-o /dev/full`, a full disk): exit 1 with this message.
    Output(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Setup(e)
    }
}

/// One requested counter: its spec as typed, and what came of allocating it.
pub struct Slot {
    pub event: String,
    pub scope: Scope,
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
pub fn run(args: &Args) -> Result<u8, Failure> {
    let cpus = match &args.cpus {
        Some(c) => Cpus::parse_list(c).map_err(|e| Failure::Usage(format!("-c: {e}")))?,
        None => Cpus::All,
    };
    if let Some(w) = args.interval {
        if !(w.is_finite() && w > 0.0) {
            return Err(Failure::Usage(format!(
                "-w: interval must be a positive number of seconds, got {w}"
            )));
        }
    }
    if let Some(l) = args.duration {
        if !(l.is_finite() && l > 0.0) {
            return Err(Failure::Usage(format!(
                "-l: duration must be a positive number of seconds, got {l}"
            )));
        }
    }
    if args.pid.is_some() && !args.command.is_empty() {
        return Err(Failure::Usage(
            "give either -t PID or a command, not both".into(),
        ));
    }
    let mut wanted: Vec<(String, Scope)> = Vec::new();
    for p in &args.process {
        wanted.push((p.clone(), Scope::Process));
    }
    for s in &args.system {
        wanted.push((s.clone(), Scope::System { cpu: cpus.clone() }));
    }
    if wanted.is_empty() {
        wanted = DEFAULT_EVENTS
            .iter()
            .map(|e| ((*e).to_owned(), Scope::Process))
            .collect();
    }
    let has_process = wanted.iter().any(|(_, s)| !s.is_system());
    if args.command.is_empty() && args.pid.is_none() && (has_process || args.duration.is_none()) {
        return Err(Failure::Usage(if has_process {
            "process-scope counters need a command or -t PID".into()
        } else {
            "system-scope counting needs a command or -l SECS".into()
        }));
    }

    let mut sink = Sink::open(args.output.as_deref()).map_err(|e| {
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
    })?;

    let repeat = args.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(Failure::Usage(
            "-r: the repeat count must be at least 1".into(),
        ));
    }
    if repeat > 1 && args.command.is_empty() {
        return Err(Failure::Usage("-r repeats a command: give one".into()));
    }
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
    if let [one] = reports.as_slice() {
        sink.report(one, args);
    } else {
        sink.repeated(&reports, args);
    }
    sink.finish()?;
    Ok(crate::run::final_status(last))
}

/// One run: allocate, attach, start, run the command (or wait), stop, read.
fn run_once(
    args: &Args,
    wanted: &[(String, Scope)],
    sink: &mut Sink,
    verbose: bool,
) -> Result<Report, Failure> {
    let backend = pmc::Native::open()?;
    let flags = if args.descendants {
        Flags::DESCENDANTS
    } else {
        Flags::NONE
    };
    let mut slots = Vec::with_capacity(wanted.len());
    for (text, scope) in wanted.iter().cloned() {
        let spec: EventSpec = text
            .parse()
            .map_err(|e: pmc::ParseError| Failure::Usage(parse_hint(&text, &e)))?;
        let alloc = Allocation::counting(spec).scope(scope.clone()).flags(flags);
        match backend.allocate(&alloc) {
            Ok(p) => slots.push(Slot {
                event: text,
                scope,
                pmc: Some(p),
                error: None,
            }),
            Err(e) if is_unsupported(&e) => slots.push(Slot {
                event: text,
                scope,
                pmc: None,
                error: Some(e),
            }),
            Err(e) => return Err(Failure::Setup(e)),
        }
    }

    // Launch paused, attach, start, then let it exec.
    let mut child = None;
    let target = match (args.pid, args.command.first()) {
        (Some(pid), _) => Some(Target::Pid(pid)),
        (None, Some(prog)) => {
            let c = pmc::launch::PausedChild::spawn(prog, &args.command[1..])?;
            let pid = c.pid();
            child = Some(c);
            Some(Target::Exec(pid))
        }
        (None, None) => None,
    };
    for s in &mut slots {
        if let (Some(p), Some(t)) = (s.pmc.as_mut(), target) {
            if !s.scope.is_system() {
                p.attach(t)?;
            }
        }
    }
    if verbose {
        for s in &slots {
            sink.verbose(
                &s.event,
                s.pmc.as_ref().map(|p| p.native_config()),
                s.error.as_ref(),
            );
        }
    }
    // The counting window starts before the first start, so per-CPU clock
    // counts never exceed the elapsed time reported.
    let started = Instant::now();
    for s in &mut slots {
        if let Some(p) = s.pmc.as_mut() {
            p.start()?;
        }
    }
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }

    // Wait, printing intervals.
    let mut last: Vec<Reading> = vec![Reading::default(); slots.len()];
    let wait = Wait {
        started,
        duration: args.duration,
        interval: args.interval,
    };
    let status = wait.run(
        child.as_mut(),
        target,
        || {
            let counters = collect(&slots, args.per_cpu);
            let shown: Vec<Counter> = if args.cumulative {
                counters
            } else {
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
            };
            sink.interval(started.elapsed(), &shown, args);
            Ok(())
        },
        None,
        |_| {},
    )?;
    let elapsed = started.elapsed();
    for s in &mut slots {
        if let Some(p) = s.pmc.as_mut() {
            p.stop()?;
        }
    }
    let counters = collect(&slots, args.per_cpu);
    let exit_status = status.map(exit_code);
    let report = Report {
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        pid: args.pid,
        exit_status,
        elapsed,
        counters,
    };
    Ok(report)
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
                            cpu,
                            reading: ir.reading,
                            error: None,
                        });
                    }
                }
                Err(e) => out.push(Counter {
                    event: s.event.clone(),
                    scope: s.scope.clone(),
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
                cpu: None,
                reading: r,
                error: None,
            }),
            Err(e) => out.push(Counter {
                event: s.event.clone(),
                scope: s.scope.clone(),
                cpu: None,
                reading: Reading::not_supported(),
                error: Some(e.to_string()),
            }),
        }
    }
    out
}
