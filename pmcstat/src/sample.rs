//! Sampling mode (`-P`, `-S`): allocate sampling PMCs, log their samples, summarise.
//!
//! With `-O FILE` the samples go to a pmc-log file. Without it they go to memory, and at exit
//! pmcstat prints the sampled instruction addresses that came up most, each with the mapping
//! it falls in (`path+offset`, from the log's mapping records; symbol names need the
//! symbolizer), plus the same grouped by mapping.

use crate::cli::Args;
use crate::count::Failure;
use crate::run::{exit_code, Wait};
use pmc::{
    Allocation, Backend, Cpus, Error, ErrorKind, EventSpec, Flags, Pmc, Rate, Scope, Target,
};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::{AnalyzeOptions, Profile};
use pmc_log::record::Record;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// pmcstat's default sampling period (`-n`).
pub const DEFAULT_RATE: u64 = 65536;

/// A log sink kept in memory, for the summary printed when there is no `-O`.
#[derive(Clone, Default)]
struct MemLog(Arc<Mutex<Vec<u8>>>);

impl Write for MemLog {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("log buffer lock poisoned"))?
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Splits a `,freq=HZ` qualifier off an event spec: `("cpu-clock", Some(1000))`.
pub fn split_freq(spec: &str) -> Result<(String, Option<u64>), String> {
    let mut freq = None;
    let mut rest = Vec::new();
    for part in spec.split(',') {
        match part.trim().strip_prefix("freq=") {
            Some(v) => {
                let hz: u64 = v
                    .parse()
                    .map_err(|_| format!("bad frequency `{v}` in `{spec}`"))?;
                if hz == 0 {
                    return Err(format!("frequency must be at least 1 in `{spec}`"));
                }
                freq = Some(hz);
            }
            None => rest.push(part),
        }
    }
    Ok((rest.join(","), freq))
}

struct Sampler {
    text: String,
    scope: Scope,
    pmc: <pmc::Native as Backend>::Pmc,
}

fn io_failure(what: &str, e: &std::io::Error) -> Failure {
    Failure::Setup(Error::new(
        ErrorKind::Os,
        pmc::Op::Log,
        format!("cannot {what}: {e}"),
    ))
}

/// Runs sampling mode; returns the exit status to use.
pub fn run(args: &Args) -> Result<u8, Failure> {
    if !args.process.is_empty() || !args.system.is_empty() {
        return Err(Failure::Usage(
            "counting (-p/-s) and sampling (-P/-S) PMCs are used in separate runs".into(),
        ));
    }
    if args.repeat.is_some() {
        return Err(Failure::Usage("-r is for counting mode (-p/-s)".into()));
    }
    if let Some(w) = args.interval {
        if !(w.is_finite() && w > 0.0) {
            return Err(Failure::Usage(format!(
                "-w: interval must be a positive number of seconds, got {w}"
            )));
        }
        if args.log.is_none() {
            return Err(Failure::Usage(
                "-w in sampling mode logs the counts every interval: give -O FILE".into(),
            ));
        }
    }
    let cpus = match &args.cpus {
        Some(c) => Cpus::parse_list(c).map_err(|e| Failure::Usage(format!("-c: {e}")))?,
        None => Cpus::All,
    };
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
    let has_process = !args.process_sampling.is_empty();
    if args.command.is_empty() && args.pid.is_none() && (has_process || args.duration.is_none()) {
        return Err(Failure::Usage(if has_process {
            "process sampling (-P) needs a command or -t PID".into()
        } else {
            "system sampling (-S) needs a command or -l SECS".into()
        }));
    }
    if args.rate == Some(0) {
        return Err(Failure::Usage("-n: the period must be at least 1".into()));
    }
    if args.frequency == Some(0) {
        return Err(Failure::Usage(
            "-F: the frequency must be at least 1".into(),
        ));
    }
    let default_rate = match args.frequency {
        Some(hz) => Rate::Frequency(hz),
        None => Rate::Period(args.rate.unwrap_or(DEFAULT_RATE)),
    };
    let mut flags = Flags::NONE;
    if !args.no_callchain {
        flags |= Flags::CALLCHAIN;
    }
    if args.descendants {
        flags |= Flags::DESCENDANTS;
    }

    let backend = pmc::Native::open()?;
    // Declared after the backend, so dropped (the file removed) before it on a failed start.
    let mut created_log = RemoveUnlessStarted(None);
    let mem = MemLog::default();
    match &args.log {
        Some(path) => {
            let f = crate::output::create_file(path)
                .map_err(|e| io_failure(&format!("create the log {}", path.display()), &e))?;
            created_log.0 = Some(path.clone());
            backend.configure_log(Box::new(std::io::BufWriter::new(f)))?;
        }
        None => backend.configure_log(Box::new(mem.clone()))?,
    }

    let mut wanted: Vec<(String, Scope)> = Vec::new();
    for p in &args.process_sampling {
        wanted.push((p.clone(), Scope::Process));
    }
    for s in &args.system_sampling {
        wanted.push((s.clone(), Scope::System { cpu: cpus.clone() }));
    }
    let mut samplers = Vec::with_capacity(wanted.len());
    for (text, scope) in wanted {
        let (spec_text, freq) = split_freq(&text).map_err(Failure::Usage)?;
        let spec: EventSpec = spec_text
            .parse()
            .map_err(|e: pmc::ParseError| Failure::Usage(e.to_string()))?;
        let rate = freq.map_or(default_rate, Rate::Frequency);
        let alloc = Allocation::sampling(spec, rate)
            .scope(scope.clone())
            .flags(flags);
        let pmc = backend.allocate(&alloc)?;
        samplers.push(Sampler { text, scope, pmc });
    }

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
    for s in &mut samplers {
        if let (false, Some(t)) = (s.scope.is_system(), target) {
            s.pmc.attach(t)?;
        }
    }
    if args.verbose {
        for s in &samplers {
            diag!("{}: native configuration:", s.text);
            for f in s.pmc.native_config() {
                diag!("  {:<24} {}", f.name, f.value);
            }
        }
    }
    for s in &mut samplers {
        s.pmc.start()?;
    }
    let started = Instant::now();
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }
    created_log.0 = None; // started: the log is kept, whatever happens next

    let live = std::io::stderr().is_terminal();
    let interval = args.interval;
    let wait = Wait {
        started,
        duration: args.duration,
        interval,
    };
    let status = wait.run(
        child.as_mut(),
        target,
        || {
            for s in &samplers {
                log_counts(&s.pmc)?;
            }
            Ok(())
        },
        live.then_some(Duration::from_millis(250)),
        |_| status_line(&backend, started.elapsed(), false),
    )?;
    let elapsed = started.elapsed();
    for s in &mut samplers {
        s.pmc.stop()?;
        if interval.is_some() {
            log_counts(&s.pmc)?; // the final values
        }
    }
    if live {
        status_line(&backend, elapsed, true);
    }
    let events: Vec<String> = samplers.iter().map(|s| s.text.clone()).collect();
    drop(samplers);
    backend.close_log()?;

    let out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            crate::output::create_file(p)
                .map_err(|e| io_failure(&format!("write {}", p.display()), &e))?,
        )),
        None => Box::new(std::io::stderr()),
    };
    let mut out = crate::output::Checked::new(out);
    let summary = summary_counts(&backend);
    match &args.log {
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
        None => {
            let bytes =
                mem.0.lock().map(|b| b.clone()).map_err(|_| {
                    io_failure("read the samples", &std::io::Error::other("poisoned"))
                })?;
            // A closed pipe (`2>&1 | head -1`) ends quietly; other failures name the summary.
            crate::output::write_outcome(
                print_top(&mut out, &bytes, &events, elapsed, args.top),
                "the sampling summary",
            )?;
        }
    }
    if let Some(line) = losses_by_cpu(&backend) {
        let _ = writeln!(out, "{line}");
    }
    crate::output::write_outcome(out.finish(), "the sampling summary")?;
    Ok(crate::run::final_status(status.map(exit_code)))
}

/// The `-O` file while the run has not started: a start that fails (command not found,
/// permission denied, a PMC refused) removes it rather than leave a partial, unclosed log.
struct RemoveUnlessStarted(Option<std::path::PathBuf>);

impl Drop for RemoveUnlessStarted {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `-w`: the PMC's current counts into the log.
#[cfg(target_os = "linux")]
fn log_counts(pmc: &<pmc::Native as Backend>::Pmc) -> Result<(), Failure> {
    pmc.log_counts().map_err(Failure::Setup)
}

#[cfg(not(target_os = "linux"))]
fn log_counts(_pmc: &<pmc::Native as Backend>::Pmc) -> Result<(), Failure> {
    Err(Failure::Usage(
        "-w in sampling mode is not supported by this backend".into(),
    ))
}

/// (samples, lost) so far, where the backend counts them.
#[cfg(target_os = "linux")]
fn summary_counts(backend: &pmc::Native) -> Option<(u64, u64)> {
    let s = backend.sampling_summary();
    Some((s.samples, s.lost))
}

#[cfg(not(target_os = "linux"))]
fn summary_counts(_backend: &pmc::Native) -> Option<(u64, u64)> {
    None
}

/// When samples were lost: where, and what to do about it.
#[cfg(target_os = "linux")]
fn losses_by_cpu(backend: &pmc::Native) -> Option<String> {
    let s = backend.sampling_summary();
    if s.lost == 0 && s.throttled == 0 {
        return None;
    }
    let per: Vec<String> = s
        .by_cpu
        .iter()
        .filter(|(_, c)| c.lost > 0 || c.throttled > 0)
        .map(|(cpu, c)| format!("CPU {cpu}: {} lost, {} throttled", c.lost, c.throttled))
        .collect();
    Some(format!(
        "pmcstat: warning: {} samples lost, {} throttle events ({}); use a longer period (-n) \
         or a lower frequency (-F)",
        s.lost,
        s.throttled,
        per.join("; ")
    ))
}

#[cfg(not(target_os = "linux"))]
fn losses_by_cpu(_backend: &pmc::Native) -> Option<String> {
    None
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

/// Where an address falls: the mapping and the file offset.
/// Prints the top-N sampled functions (symbolized by pmc-analyze) from an
/// in-memory log, after a line with the sample and loss totals.
fn print_top(
    out: &mut dyn Write,
    log: &[u8],
    events: &[String],
    elapsed: Duration,
    top: usize,
) -> std::io::Result<()> {
    let reader = pmc_log::Reader::new(log).map_err(std::io::Error::other)?;
    let mut samples = 0u64;
    let mut lost = 0u64;
    let mut lost_records = 0u64;
    let mut records = reader.records();
    for r in records.by_ref() {
        match r {
            Record::Sample(_) => samples += 1,
            Record::Lost(l) => {
                lost += l.count;
                lost_records += 1;
            }
            _ => {}
        }
    }
    let report = records.into_report();
    writeln!(
        out,
        "# {samples} samples of {} in {:.3} s; {lost} lost ({lost_records} loss records)",
        events.join(", "),
        elapsed.as_secs_f64()
    )?;
    if !report.closed_cleanly || report.skipped_bytes() > 0 {
        writeln!(
            out,
            "# warning: the log is damaged or unfinished ({} bytes skipped)",
            report.skipped_bytes()
        )?;
    }
    if samples == 0 {
        return Ok(());
    }
    let profile =
        Profile::from_log(log, AnalyzeOptions::default()).map_err(std::io::Error::other)?;
    for w in &profile.warnings {
        writeln!(out, "# warning: {w}")?;
    }
    TopReport::build(
        &profile,
        &TopOptions {
            limit: top,
            ..Default::default()
        },
    )
    .write_text(&mut &mut *out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freq_qualifier() {
        assert_eq!(
            split_freq("cpu-clock,freq=1000").unwrap(),
            ("cpu-clock".into(), Some(1000))
        );
        assert_eq!(
            split_freq("instructions,usr").unwrap(),
            ("instructions,usr".into(), None)
        );
        assert!(split_freq("cpu-clock,freq=x").is_err());
        assert!(split_freq("cpu-clock,freq=0").is_err());
    }
}
