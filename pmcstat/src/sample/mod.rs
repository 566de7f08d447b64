//! Sampling mode (`-P`, `-S`): allocate sampling PMCs, log their samples, summarise.
//!
//! With `-O FILE` the samples go to a pmc-log file. Without it they are aggregated as they
//! arrive ([`LiveProfile`]: memory bounded by the distinct stacks), and at exit pmcstat
//! prints the top functions and objects, symbolized by pmc-analyze.
//!
//! A log that cannot be written (a full disk, a closed pipe) stops the run: the backend's
//! log takes nothing after its first write error (so the file holds, readable, everything
//! written before it), pmcstat sees the error within [`LOG_CHECK`] plus the backend's drain
//! period, prints it at once, stops the PMCs and exits 1. A launched command is not killed
//! (its work is the user's, and may matter more than its profile) nor left behind: pmcstat
//! says so and waits for it.

mod rate;

use rate::{rate_for, rate_text, split_freq};

use crate::config::Sample;
use crate::error::Failure;
use crate::live::LiveProfile;
use crate::logfile::{
    configure_log, io_failure, log_err, log_help, remote_log, RemoveUnlessStarted,
};
use crate::run::Wait;
use crate::sys::exit_code;
use pmc::{Allocation, Backend, Error, ErrorKind, EventSpec, Flags, Pmc, Rate, Scope};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::Profile;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// pmcstat's remedy for a log that cannot be written.
/// How often the run checks the backend's log for a write error.
pub const LOG_CHECK: Duration = Duration::from_millis(500);

struct Sampler {
    text: String,
    scope: Scope,
    /// Its -d.
    descendants: bool,
    /// Its rate.
    rate: Rate,
    /// The default rate chosen for it, when neither `,freq=`, `-n` nor `--freq` gave one.
    rate_note: Option<String>,
    pmc: <pmc::Native as Backend>::Pmc,
}

/// Runs sampling mode; returns the exit status to use.
pub fn run(args: &Sample) -> Result<u8, Failure> {
    let backend = open_backend(args)?;
    // The created log is bound after the backend, so dropped (the file removed) before it
    // on a failed start.
    let (aggregator, mut created_log) = open_log(&backend, args)?;
    let mut samplers = allocate_samplers(&backend, args)?;
    let mut session = attach(&mut samplers, args)?;
    if args.verbose {
        print_native_config(&samplers);
    }
    let probe = child_probe(&backend, &session, &samplers);
    let started = start(&mut samplers, &mut session)?;
    created_log.0 = None; // started: the log is kept, whatever happens next

    let live = std::io::stderr().is_terminal() && !args.top_mode && !args.quiet;
    let waited = wait(
        args,
        &mut session,
        &samplers,
        &backend,
        aggregator.as_ref(),
        (started, live),
    )?;
    let status = match waited.status {
        Err(Failure::Setup(e)) if waited.log_failed => {
            // The first failure (with its errno), not a later write refused because of it.
            let first = backend.log_error().unwrap_or(e);
            return log_failure(&first, samplers, session, &backend, args);
        }
        other => other?,
    };
    let view_failed = waited.view_error.is_some();
    if let Some(e) = waited.view_error {
        diag!("pmcstat: the -T view failed: {e}");
    }
    // `q` while the command runs: it gets SIGTERM and is waited for, so
    // nothing is left running behind pmcstat.
    let status = match status {
        None if (waited.quit || view_failed) && session.child().is_some() => {
            let _ = session.signal(crate::sys::SIGTERM);
            session.finish()?
        }
        s => s,
    };
    let elapsed = started.elapsed();
    stop_samplers(&mut samplers, count_interval(args).is_some())?;
    let uncounted_children = probe.and_then(crate::measure::ChildProbe::finish);
    if live {
        status_line(&backend, elapsed, true);
    }
    let events: Vec<String> = samplers.iter().map(|s| s.text.clone()).collect();
    let rates: Vec<String> = samplers
        .iter()
        .map(|s| format!("{} {}", s.text, rate_text(s.rate)))
        .collect();
    drop(samplers);
    close_log(&backend)?;
    report(args, &backend, aggregator, &events, elapsed)?;
    if let Some((0, _)) = summary_counts(&backend) {
        diag!("{}", no_samples_warning(&rates, elapsed));
    }
    if let Some(ns) = uncounted_children {
        note!(
            "pmcstat: note: child processes ran {:.2} msec of task-clock that the -P samplers \
             without -d do not sample: add -d before -P to sample the command's descendants",
            ns as f64 / 1e6
        );
    }
    Ok(final_code(&backend, status))
}

/// The native backend, with `--mmap-pages`' ring size.
fn open_backend(args: &Sample) -> Result<pmc::Native, Failure> {
    let backend = pmc::Native::open()?;
    if let Some(pages) = args.mmap_pages {
        backend.set_buffer_pages(pages).map_err(|e| {
            let help = match e.help() {
                Some(h) => format!("--mmap-pages takes a power of two (1, 2, 4, ...); {h}"),
                None => "--mmap-pages takes a power of two (1, 2, 4, ...)".to_owned(),
            };
            Failure::Setup(e.with_help(help))
        })?;
    }
    Ok(backend)
}

/// For samplers of the process alone (-P without -d): the probe, started, that watches for
/// the child processes they miss, as counting does.
fn child_probe(
    backend: &pmc::Native,
    session: &crate::sys::launch::Session,
    samplers: &[Sampler],
) -> Option<crate::measure::ChildProbe> {
    let alone = samplers
        .iter()
        .any(|s| !s.scope.is_system() && !s.descendants);
    let mut probe = Some(session)
        .filter(|s| alone && !s.targets().is_empty())
        .and_then(|s| crate::measure::ChildProbe::new(backend, s));
    if let Some(p) = probe.as_mut() {
        p.start();
    }
    probe
}

/// Closes the log. Stopped by a signal, a log reader that stalled (a FIFO, -O -) cannot
/// hold the exit: what it did not take is counted as lost and said, with the summary.
fn close_log(backend: &pmc::Native) -> Result<(), Failure> {
    let stopped = crate::run::stop_signal().is_some();
    if stopped {
        crate::sys::bound_log_close(backend, crate::sys::LOG_CLOSE_WAIT);
    }
    match backend.close_log() {
        Err(e) if stopped => diag!("pmcstat: {}", log_err_line(&e)),
        r => r.map_err(log_err)?,
    }
    Ok(())
}

/// The exit status: the command's (after `q` too: 128 + SIGTERM if it died of the SIGTERM
/// that `q` sent it, as on any other stop), or [`LOST_STATUS`] when samples were lost.
fn final_code(backend: &pmc::Native, status: Option<std::process::ExitStatus>) -> u8 {
    let status = crate::run::final_status(status.map(exit_code));
    let lost = summary_counts(backend).map_or(0, |(_, lost)| lost);
    let code = exit_status(status, lost);
    if code != status {
        diag!(
            "pmcstat: exit status {LOST_STATUS}: {lost} samples were lost (the summary says \
             why); the command itself succeeded"
        );
    }
    code
}

/// A log error as one line and its remedy, for a warning that does not end the run.
fn log_err_line(e: &Error) -> String {
    let fact = e.to_string();
    let fact = fact.lines().next().unwrap_or_default().to_owned();
    format!("{fact}\nhelp: {}", log_help(e))
}

/// The warning of a run that took no sample: each PMC's rate, and what to change.
fn no_samples_warning(rates: &[String], elapsed: Duration) -> String {
    format!(
        "pmcstat: warning: no samples in {:.3} s ({}): the events did not occur, or not often \
         enough for the rate; sample more often with -n N (a smaller period) or --freq HZ",
        elapsed.as_secs_f64(),
        rates.join(", ")
    )
}

/// pmcstat's exit status when the command succeeded (or there was none, or `q` ended it) but
/// samples were lost: the profile is incomplete, and a script must be able to tell (perf
/// exits 0 and only prints "Total Lost Samples"). Distinct from 1 (setup or output failure)
/// and 2 (usage); a command's own nonzero status takes precedence, so it stays visible.
pub const LOST_STATUS: u8 = 3;

/// The exit status of a sampling run: `status` (the command's, or 128 + a stop signal), else
/// [`LOST_STATUS`] if `lost` samples were lost.
pub fn exit_status(status: u8, lost: u64) -> u8 {
    if status == 0 && lost > 0 {
        LOST_STATUS
    } else {
        status
    }
}

/// Where the samples go: the `-O` log (with the file it created, removed unless the run
/// starts), or else a live aggregator reading them as they arrive.
fn open_log(
    backend: &pmc::Native,
    args: &Sample,
) -> Result<(Option<LiveProfile>, RemoveUnlessStarted), Failure> {
    let mut created_log = RemoveUnlessStarted(None);
    let mut aggregator = None;
    match &args.log {
        Some(path) => created_log.0 = configure_log(backend, path)?,
        None => {
            let (profile, sink) = LiveProfile::start(args.exit_counts)
                .map_err(|e| io_failure("start the log reader", &e))?;
            backend.configure_log(Box::new(sink))?;
            aggregator = Some(profile);
        }
    }
    Ok((aggregator, created_log))
}

/// The call-chain flags of every PMC (`-N`, `-U`).
fn callchain_flags(args: &Sample) -> Flags {
    let mut flags = Flags::NONE;
    if !args.no_callchain {
        flags |= Flags::CALLCHAIN;
        // pmcstat(8): PMC_F_USERCALLCHAIN only with PMC_F_CALLCHAIN.
        if args.user_callchain {
            flags |= Flags::USERCALLCHAIN;
        }
    }
    flags
}

/// Allocates the `-P` and `-S` PMCs, in that order.
fn allocate_samplers(backend: &pmc::Native, args: &Sample) -> Result<Vec<Sampler>, Failure> {
    let flags = callchain_flags(args);
    // (spec, scope, -d) per PMC, -d and -c as in force where each stands.
    let mut wanted: Vec<(String, Scope, bool)> = Vec::new();
    for (p, &d) in args
        .process_sampling
        .iter()
        .zip(&args.process_sampling_descendants)
    {
        wanted.push((p.clone(), Scope::Process, d));
    }
    for (s, c) in args.system_sampling.iter().zip(&args.system_sampling_cpus) {
        let cpu = crate::measure::cpu_list(c.as_deref())?;
        wanted.push((s.clone(), Scope::System { cpu }, false));
    }
    let mut samplers = Vec::with_capacity(wanted.len());
    for (text, scope, descendants) in wanted {
        samplers.push(allocate_sampler(
            backend,
            args,
            (text, scope, descendants),
            flags,
        )?);
    }
    Ok(samplers)
}

/// Allocates one sampling PMC: its spec (with its `,freq=`), scope and `-d`, and the
/// log flags of `-W` and `-E`.
fn allocate_sampler(
    backend: &pmc::Native,
    args: &Sample,
    (text, scope, descendants): (String, Scope, bool),
    mut flags: Flags,
) -> Result<Sampler, Failure> {
    if text.contains('{') {
        return Err(Failure::Usage(format!(
            "`{text}`: perf's {{...}} groups are for counting (-e); sample each event with its \
             own -P/-S"
        )));
    }
    let (spec_text, freq) = split_freq(&text).map_err(Failure::Usage)?;
    let spec: EventSpec = spec_text
        .parse()
        .map_err(|e: pmc::ParseError| Failure::Usage(e.to_string()))?;
    if spec.is_duration_time() {
        return Err(Failure::Usage(
            "duration_time is perf stat's tool event (the run's wall-clock time): count it \
             with -e; sample time with -P cpu-clock"
                .into(),
        ));
    }
    let (rate, rate_note) = match freq {
        Some(hz) => (Rate::Frequency(hz), None),
        None => rate_for(args, &spec, backend.native_frequency()),
    };
    // -W: the counts at every context switch, for the process-mode PMCs.
    // -E: each process's count at its exit, likewise.
    if descendants {
        flags |= Flags::DESCENDANTS;
    }
    if args.log_csw && !scope.is_system() {
        flags |= Flags::LOG_PROCCSW;
    }
    if args.exit_counts && !scope.is_system() {
        flags |= Flags::LOG_PROCEXIT;
    }
    let alloc = Allocation::sampling(spec, rate)
        .scope(scope.clone())
        .flags(flags)
        .call_graph(args.call_graph.unwrap_or_default());
    // --cgroup: the system samplers sample that cgroup's tasks only (perf record -a -G).
    let alloc = match args.cgroup.as_ref().filter(|_| scope.is_system()) {
        Some(cg) => alloc.cgroup(cg.clone()),
        None => alloc,
    };
    let pmc = backend.allocate(&alloc)?;
    // A backend that samples less often than asked says so (hwpmc's
    // minimum reload count).
    for f in pmc.native_config() {
        if f.name == "warning" {
            let _ = writeln!(std::io::stderr(), "pmcstat: warning: {}", f.value);
        }
    }
    Ok(Sampler {
        text,
        scope,
        descendants,
        rate,
        rate_note,
        pmc,
    })
}

/// Launches the command paused (or finds the `-t` processes) and attaches the
/// process-mode PMCs to it.
fn attach(samplers: &mut [Sampler], args: &Sample) -> Result<crate::sys::launch::Session, Failure> {
    let session = crate::targets::session(args.attach.as_ref(), &args.command)?;
    for s in samplers.iter_mut() {
        if !s.scope.is_system() {
            crate::targets::attach_all(&mut s.pmc, &session)?;
        }
    }
    Ok(session)
}

/// `-v`: each PMC's scope and native configuration.
fn print_native_config(samplers: &[Sampler]) {
    for s in samplers {
        diag!("{}: native configuration:", s.text);
        diag!(
            "  {:<24} {}",
            "(pmcstat) scope",
            crate::measure::scope_text(&s.scope, s.descendants)
        );
        if let Some(note) = &s.rate_note {
            diag!("  {:<24} {}", "(pmcstat) rate", note);
        }
        for f in s.pmc.native_config() {
            diag!("  {:<24} {}", f.name, f.value);
        }
    }
}

/// Starts the PMCs, then lets the command run; returns when sampling started.
fn start(
    samplers: &mut [Sampler],
    session: &mut crate::sys::launch::Session,
) -> Result<Instant, Failure> {
    for s in samplers.iter_mut() {
        s.pmc.start()?;
    }
    let started = Instant::now();
    session.resume()?;
    Ok(started)
}

/// `-w` as the interval for logging counts: without `-T` (where it is the refresh
/// interval).
fn count_interval(args: &Sample) -> Option<f64> {
    args.interval.filter(|_| !args.top_mode)
}

/// What the wait for the end of the run saw.
struct Waited {
    /// The command's exit status, if it ended, or why the wait stopped.
    status: Result<Option<std::process::ExitStatus>, Failure>,
    /// `q` in the `-T` view.
    quit: bool,
    /// Why the `-T` view stopped working, if it did.
    view_error: Option<std::io::Error>,
    /// The log could not be written.
    log_failed: bool,
}

/// Waits for the end of the run: logs the counts every `-w`, checks the log for a write
/// error, and updates the live status line or the `-T` view. `started`: when sampling
/// started; `live`: whether the status line is shown.
fn wait(
    args: &Sample,
    session: &mut crate::sys::launch::Session,
    samplers: &[Sampler],
    backend: &pmc::Native,
    aggregator: Option<&LiveProfile>,
    (started, live): (Instant, bool),
) -> Result<Waited, Failure> {
    let mut view = open_view(args, samplers)?;
    let wait = Wait {
        started,
        duration: args.duration,
        interval: count_interval(args),
    };
    let mut view_error = None;
    let mut quit = false;
    let log_failed = std::cell::Cell::new(false);
    let poll_every = if view.is_some() {
        Duration::from_millis(50)
    } else {
        LOG_CHECK
    };
    let status = wait.run(
        session,
        || {
            for s in samplers {
                if let Err(e) = log_counts(&s.pmc) {
                    // `-w` writing into a log that just failed: the same stop as below.
                    log_failed.set(backend.log_error().is_some());
                    return Err(e);
                }
            }
            Ok(())
        },
        Some(poll_every),
        |_| {
            if let Some(e) = backend.log_error() {
                log_failed.set(true);
                return Err(Failure::Setup(e));
            }
            let (Some(v), Some(agg)) = (view.as_mut(), aggregator) else {
                if live {
                    status_line(backend, started.elapsed(), false);
                }
                return Ok(std::ops::ControlFlow::Continue(()));
            };
            Ok(match view_step(v, agg) {
                Ok(k) => {
                    quit = k.is_break();
                    k
                }
                Err(e) => {
                    view_error = Some(e);
                    std::ops::ControlFlow::Break(())
                }
            })
        },
    );
    drop(view);
    Ok(Waited {
        status,
        quit,
        view_error,
        log_failed: log_failed.get(),
    })
}

/// `-T`: the live view of the samples, titled with the events; `-w` is its refresh
/// interval.
fn open_view(args: &Sample, samplers: &[Sampler]) -> Result<Option<crate::top::TopView>, Failure> {
    if !args.top_mode {
        return Ok(None);
    }
    let refresh = args
        .interval
        .map_or(crate::top::DEFAULT_REFRESH, Duration::from_secs_f64);
    let names: Vec<&str> = samplers.iter().map(|s| s.text.as_str()).collect();
    let title = format!("pmcstat -T: {}", names.join(", "));
    let view = crate::top::TopView::open(title, refresh)
        .map_err(|e| io_failure("open the -T view", &e))?;
    Ok(Some(view))
}

/// One poll of the `-T` view: its keys, then a redraw when one is due.
fn view_step(
    v: &mut crate::top::TopView,
    agg: &LiveProfile,
) -> std::io::Result<std::ops::ControlFlow<()>> {
    let k = v.keys(Duration::ZERO)?;
    if k.is_continue() && v.due() {
        v.draw(agg.snapshot())?;
    }
    Ok(k)
}

/// Stops the PMCs; with `-w`, logs their final counts.
fn stop_samplers(samplers: &mut [Sampler], log_final_counts: bool) -> Result<(), Failure> {
    for s in samplers.iter_mut() {
        s.pmc.stop()?;
        if log_final_counts {
            log_counts(&s.pmc)?; // the final values
        }
    }
    Ok(())
}

/// The summary after the run, to `-o FILE` or standard error: where the samples were
/// written (`-O`) or the top functions (without it), the counts at exit (`-E`), losses and
/// unwinding.
fn report(
    args: &Sample,
    backend: &pmc::Native,
    aggregator: Option<LiveProfile>,
    events: &[String],
    elapsed: Duration,
) -> Result<(), Failure> {
    let mut out = crate::dest::Checked::new(summary_output(args)?);
    let summary = summary_counts(backend);
    let mut exits = None;
    match &args.log {
        Some(_) if args.quiet => {}
        Some(path) => {
            let _ = match summary {
                Some((samples, lost)) => writeln!(
                    out,
                    "pmcstat: {samples} samples ({lost} lost) of {} in {:.3} s written to {}",
                    events.join(", "),
                    elapsed.as_secs_f64(),
                    path.display()
                ),
                None => writeln!(out, "pmcstat: samples written to {}", path.display()),
            };
        }
        None => {}
    }
    if let Some(e) = exits_in_log(args)? {
        exits = Some(e);
    }
    if args.log.is_none() {
        let exit_counts = print_profile(&mut out, aggregator, events, elapsed, args.top)?;
        if args.exit_counts {
            exits = Some(exit_counts);
        }
    }
    if let Some(e) = &exits {
        crate::dest::write_outcome(e.write(&mut out), "the counts at exit")?;
    }
    if let Some(line) = losses_by_cpu(backend) {
        let _ = writeln!(out, "{line}");
    }
    for line in held_up_lines(backend, args.log.as_deref()) {
        let _ = writeln!(out, "{line}");
    }
    // The summary first: it is buffered, these lines are not.
    let _ = out.flush();
    for line in unwind_lines(backend) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    let done = out.finish().and_then(|()| out.get_mut().commit());
    crate::dest::write_outcome(done, "the sampling summary")
}

/// Where the summary goes: `-o FILE`, else standard error.
fn summary_output(args: &Sample) -> Result<crate::dest::Dest, Failure> {
    Ok(match &args.output {
        Some(p) => crate::dest::create_private_file(p)
            .map_err(|e| io_failure(&format!("write {}", p.display()), &e))?,
        None => crate::dest::Dest::Stream(crate::dest::stderr_stream()),
    })
}

/// `-E` with a log file: the counts at exit, read back from it (a log on standard output
/// or a socket keeps them as its `exitval` records).
fn exits_in_log(args: &Sample) -> Result<Option<crate::exits::ExitCounts>, Failure> {
    let Some(path) = args.log.as_deref().filter(|_| args.exit_counts) else {
        return Ok(None);
    };
    if path.as_os_str() == "-" || remote_log(path).is_some() {
        note!(
            "pmcstat: -E: the counts at process exit are in the log ({}), as exitval records",
            path.display()
        );
        return Ok(None);
    }
    let exits = crate::exits::of_file(path)
        .map_err(|e| io_failure("read the counts at exit", &std::io::Error::other(e)))?;
    Ok(Some(exits))
}

/// Without `-O`: the aggregated samples, printed as the top functions; returns the counts
/// at exit it gathered.
fn print_profile(
    out: &mut dyn Write,
    aggregator: Option<LiveProfile>,
    events: &[String],
    elapsed: Duration,
    top: usize,
) -> Result<crate::exits::ExitCounts, Failure> {
    let (profile, exit_counts) = aggregator
        .ok_or_else(|| io_failure("read the samples", &std::io::Error::other("no log")))?
        .finish()
        .map_err(|e| io_failure("read the samples", &std::io::Error::other(e)))?;
    // A closed pipe (`2>&1 | head -1`) ends quietly; other failures name the summary.
    crate::dest::write_outcome(
        print_top(out, &profile, events, elapsed, top),
        "the sampling summary",
    )?;
    Ok(exit_counts)
}

/// The log could not be written: say so at once, stop sampling, wait for a launched command
/// (never killed, never left behind), and exit 1.
fn log_failure(
    e: &Error,
    mut samplers: Vec<Sampler>,
    session: crate::sys::launch::Session,
    backend: &pmc::Native,
    args: &Sample,
) -> Result<u8, Failure> {
    let path = match args.log.as_deref() {
        Some(p) if p.as_os_str() == "-" => "the log on standard output".into(),
        Some(p) => p.display().to_string(),
        None => "the log".into(),
    };
    // The library's remedy names its API; pmcstat's names flags.
    let fact = e.to_string();
    let fact = fact.lines().next().unwrap_or_default();
    // Best effort from here on: the error that matters is already known.
    let _ = writeln!(
        std::io::stderr(),
        "pmcstat: {fact}\npmcstat: sampling stopped: {path} holds every record written before \
         the error\nhelp: {}",
        log_help(e)
    );
    for s in &mut samplers {
        let _ = s.pmc.stop();
    }
    drop(samplers);
    let _ = backend.close_log();
    if let Some(mut c) = session.into_child() {
        let _ = writeln!(
            std::io::stderr(),
            "pmcstat: waiting for `{}` (pid {}) to exit; it is not killed",
            args.command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            c.pid()
        );
        let _ = c.wait();
    }
    if let Some(line) = dropped_line(backend) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    Ok(1)
}

/// After a log failure: what was dropped, where the backend counts it.
fn dropped_line(backend: &pmc::Native) -> Option<String> {
    let s = backend.sampling_summary().ok()?;
    Some(format!(
        "pmcstat: {} records written, {} dropped after the error ({} samples read)",
        s.log_records, s.log_dropped, s.samples
    ))
}

/// `-w`: the PMC's current counts into the log.
fn log_counts(pmc: &<pmc::Native as Backend>::Pmc) -> Result<(), Failure> {
    match pmc.log_counts() {
        Err(e) if e.kind() == ErrorKind::NotSupported => Err(Failure::Usage(
            "-w in sampling mode is not supported by this backend".into(),
        )),
        r => r.map_err(Failure::Setup),
    }
}

/// (samples, lost) so far, where the backend counts them.
fn summary_counts(backend: &pmc::Native) -> Option<(u64, u64)> {
    let s = backend.sampling_summary().ok()?;
    Some((s.samples, s.lost))
}

/// When samples were lost: where, and what to do about it.
fn losses_by_cpu(backend: &pmc::Native) -> Option<String> {
    let s = backend.sampling_summary().ok()?;
    if s.lost == 0 && s.throttled == 0 {
        return None;
    }
    // Only losses to full rings between drains call for a lower rate (see held_up_lines).
    let advice = if s.lost > s.lost_unreported + s.lost_spool || s.throttled > 0 {
        "; use a longer period (-n) or a lower frequency (--freq)"
    } else {
        ""
    };
    let per: Vec<String> = s
        .by_cpu
        .iter()
        .filter(|(_, c)| c.lost > 0 || c.throttled > 0)
        .map(|(cpu, c)| format!("CPU {cpu}: {} lost, {} throttled", c.lost, c.throttled))
        .collect();
    Some(format!(
        "pmcstat: warning: {} samples lost, {} throttle events ({}){advice}",
        s.lost,
        s.throttled,
        per.join("; ")
    ))
}

/// Losses of another cause than a full ring between two drains: records lost while pmcstat
/// could not drain (its log writer blocked on a slow reader, socket or disk, or pmcstat was
/// stopped), which the kernel counted but never reported in its rings; and, on kernels
/// without that count, that the lost count may be incomplete.
fn held_up_lines(backend: &pmc::Native, log: Option<&std::path::Path>) -> Vec<String> {
    let Ok(s) = backend.sampling_summary() else {
        return Vec::new();
    };
    let mut v = held_up_lines_of(&s, log);
    if let Some(line) = stopped_line(&s, crate::run::was_continued()) {
        v.push(line);
    }
    v
}

/// Losses while pmcstat itself was stopped (SIGSTOP, SIGTSTP, a debugger) and later
/// continued: whether the kernel reported them in the rings once pmcstat drained again or
/// only counted them (then [`held_up_lines_of`] says so already), a full ring was not the
/// run's rate but pmcstat not draining.
fn stopped_line(s: &pmc::SamplingSummary, continued: bool) -> Option<String> {
    (continued && s.lost > 0 && s.lost_unreported == 0).then(|| {
        format!(
            "pmcstat: warning: pmcstat was stopped and continued (SIGCONT) while it sampled: \
             the {} lost samples include those the kernel could not fit in the rings while \
             pmcstat, stopped, could not drain the sample buffers",
            s.lost
        )
    })
}

/// [`held_up_lines`] of summary `s`.
fn held_up_lines_of(s: &pmc::SamplingSummary, log: Option<&std::path::Path>) -> Vec<String> {
    let mut v = Vec::new();
    if s.lost_unreported > 0 {
        let whom = match log {
            Some(p) if p.as_os_str() == "-" => "the reader of standard output (-O -)".to_owned(),
            Some(p) if remote_log(p).is_some() => format!("the peer of -O {}", p.display()),
            Some(p) => format!("the disk of -O {}", p.display()),
            None => "the summary's reader".to_owned(),
        };
        v.push(format!(
            "pmcstat: warning: {} of the lost samples were lost while pmcstat could not drain \
             the sample buffers (writing the log waited on {whom}, or pmcstat was stopped); the \
             kernel counted them at the end (PERF_FORMAT_LOST)",
            s.lost_unreported
        ));
    }
    if s.lost_spool > 0 {
        v.push(format!(
            "pmcstat: warning: {} of the lost samples were dropped because writing the log fell \
             further behind than the samples kept in memory for it ({}); the log has a lost \
             record where they were",
            s.lost_spool,
            match log {
                Some(p) if p.as_os_str() == "-" =>
                    "the reader of standard output was slow".to_owned(),
                Some(p) if remote_log(p).is_some() =>
                    format!("the peer of -O {} was slow", p.display()),
                Some(p) => format!("-O {} was slow to write", p.display()),
                None => "the summary's reader was slow".to_owned(),
            }
        ));
    }
    if s.lost_count_incomplete {
        v.push(
            "pmcstat: note: this kernel does not count lost samples for pmcstat (PERF_FORMAT_LOST \
             needs Linux 6.0): the lost count may miss samples lost while pmcstat was blocked or \
             stopped"
                .to_owned(),
        );
    }
    v
}

/// After a run with `--call-graph dwarf`: how many samples were unwound and how many
/// stopped short, and the objects whose unwind tables could not be used.
fn unwind_lines(backend: &pmc::Native) -> Vec<String> {
    let Ok(s) = backend.sampling_summary() else {
        return Vec::new();
    };
    if s.unwound == 0 {
        return Vec::new();
    }
    let mut v = vec![format!(
        "pmcstat: {} samples unwound with DWARF call-frame information, {} ({:.1}%) stopped \
         before the stack's root (shown as [truncated]; a larger dwarf,SIZE copies more stack)",
        s.unwound,
        s.unwind_truncated,
        100.0 * s.unwind_truncated as f64 / s.unwound as f64
    )];
    for r in &s.unwind_refused {
        v.push(format!(
            "pmcstat: warning: no unwinding through {}",
            pmc_log::escape::escape(&r.to_string())
        ));
    }
    v
}

/// The live status line on a terminal: elapsed time, samples, lost.
fn status_line(backend: &pmc::Native, elapsed: Duration, last: bool) {
    let Some((samples, lost)) = summary_counts(backend) else {
        return;
    };
    let mut e = std::io::stderr().lock();
    let _ = write!(
        e,
        "\r\x1b[K[pmcstat] {:.1} s  {samples} samples  {lost} lost",
        elapsed.as_secs_f64()
    );
    if last {
        let _ = writeln!(e);
    }
    let _ = e.flush();
}

/// Prints the top-N sampled functions (symbolized by pmc-analyze) after a
/// line with the sample and loss totals.
fn print_top(
    out: &mut dyn Write,
    profile: &Profile,
    events: &[String],
    elapsed: Duration,
    top: usize,
) -> std::io::Result<()> {
    let st = &profile.stats;
    writeln!(
        out,
        "# {} samples of {} in {:.3} s; {} lost ({} loss records)",
        st.samples,
        events.join(", "),
        elapsed.as_secs_f64(),
        st.lost,
        st.lost_records
    )?;
    if !st.closed_cleanly || st.skipped_bytes > 0 {
        writeln!(
            out,
            "# warning: the log is damaged or unfinished ({} bytes skipped)",
            st.skipped_bytes
        )?;
    }
    if st.samples == 0 {
        return Ok(());
    }
    for w in &profile.warnings {
        writeln!(
            out,
            "# warning: {}",
            pmc_log::escape::escape(&w.to_string())
        )?;
    }
    TopReport::build(
        profile,
        &TopOptions {
            limit: top,
            ..Default::default()
        },
    )
    .write_text(&mut &mut *out)
}

#[cfg(test)]
mod tests;
