//! The validated command line: [`validate`] turns the clap options
//! ([`Args`], the flags as typed) into a [`Config`], once: the [`Mode`] the
//! run is in, with the configuration that mode takes, and the output
//! [`Format`]. The modes never pick the mode or the format again.

use crate::cli::{Args, Generate};
use crate::error::Failure;
use std::path::PathBuf;

/// What pmcstat was asked to do, and how to print it.
pub struct Config {
    /// The mode, with its own settings.
    pub mode: Mode,
    /// `-q`: no notes.
    pub quiet: bool,
}

/// The modes, in the order the command line is judged.
pub enum Mode {
    /// `--generate KIND`: the man page or shell completions.
    Generate(Generate),
    /// `-R FILE -T`: the top view, replayed from a log.
    TopReplay(Settings),
    /// `-R FILE`: reports and exports of a log.
    Analyze(Settings),
    /// `-u SPEC`: one event described (`--tracepoints`: whether -L would list
    /// tracepoints, for the hint).
    Describe(String, bool),
    /// `--selftest`.
    Selftest(Format),
    /// A measuring mode on an OS without a pmc backend: refused at run time.
    NoBackend,
    /// `--metrics [ADDR:]PORT`: the Prometheus exporter.
    Metrics(Metrics),
    /// `-L` or `--diagnose`.
    List(List),
    /// `-P`/`-S`: sampling.
    Sample(Settings),
    /// `-p`/`-s`/`-e`/the default set: counting.
    Count(Settings),
}

/// The options of the modes that still read most flags as typed (counting,
/// sampling, `-R`): the flags (through `Deref`) and what [`validate`] decided.
pub struct Settings {
    args: Args,
    /// The output format.
    pub format: Format,
}

impl Settings {
    fn new(args: Args, format: Format) -> Settings {
        Settings { args, format }
    }
}

impl std::ops::Deref for Settings {
    type Target = Args;
    fn deref(&self) -> &Args {
        &self.args
    }
}

/// `--metrics`: what the exporter serves.
pub struct Metrics {
    /// `[ADDR:]PORT`, as typed.
    pub addr: String,
    /// `-s` events (per CPU).
    pub system: Vec<String>,
    /// `-t`: the processes counted per process.
    pub attach: Option<crate::cli::AttachSpec>,
    /// `-p` and `-e` events (per process, with `-t`).
    pub process: Vec<String>,
    /// `--metrics-max-targets`.
    pub max_targets: usize,
}

/// `-L [--tracepoints]` or `--diagnose`.
pub struct List {
    /// `--diagnose` instead of the event list.
    pub diagnose: bool,
    /// `--tracepoints`.
    pub tracepoints: bool,
    /// `-o FILE`, else standard output.
    pub output: Option<PathBuf>,
    /// Text or `--json`.
    pub format: Format,
}

/// How results print: one value for the whole run, chosen here only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// The perf-stat-like table (or each mode's own text).
    Table,
    /// `-x SEP`: CSV with this separator.
    Csv(String),
    /// `--json`/`-j`: perf stat -j's lines (counting), else the mode's JSON document.
    Json,
    /// `--json-report`: pmcstat's own JSON document (counting only).
    JsonReport,
    /// `--columns`: pmcstat(8)'s columns (counting only).
    Columns,
}

impl Format {
    /// The format `args` asks for (clap has refused the conflicting ones).
    fn of(args: &Args) -> Format {
        if args.columns {
            Format::Columns
        } else if args.json_report {
            Format::JsonReport
        } else if args.json {
            Format::Json
        } else if let Some(sep) = &args.csv {
            Format::Csv(sep.clone())
        } else {
            Format::Table
        }
    }
}

/// Whether the run measures (counts, samples, serves metrics) rather than
/// reading a log, listing or testing: a measurement stops cleanly on the first
/// stop signal, a report stops writing.
pub fn measures(args: &Args) -> bool {
    args.read_log.is_none() && !args.list && !args.diagnose && !args.selftest
}

/// Picks the mode and the format, once.
pub fn validate(mut args: Args) -> Result<Config, Failure> {
    let quiet = args.quiet;
    let format = Format::of(&args);
    let measuring = measures(&args);
    let mode = if let Some(kind) = args.generate {
        Mode::Generate(kind)
    } else if args.read_log.is_some() && args.top_mode {
        Mode::TopReplay(Settings::new(args, format))
    } else if args.read_log.is_some() {
        Mode::Analyze(Settings::new(args, format))
    } else if let Some(spec) = args.describe.take() {
        Mode::Describe(spec, args.tracepoints)
    } else if args.selftest {
        Mode::Selftest(format)
    } else if measuring && !crate::sys::HAS_BACKEND {
        Mode::NoBackend
    } else if let Some(addr) = args.metrics.take() {
        let mut process = std::mem::take(&mut args.process);
        process.append(&mut args.events);
        Mode::Metrics(Metrics {
            addr,
            system: std::mem::take(&mut args.system),
            attach: args.attach.take(),
            process,
            max_targets: args.metrics_max_targets,
        })
    } else if args.list || args.diagnose {
        Mode::List(List {
            diagnose: args.diagnose,
            tracepoints: args.tracepoints,
            output: args.output.take(),
            format,
        })
    } else if !args.process_sampling.is_empty() || !args.system_sampling.is_empty() {
        check_sample(&args)?;
        Mode::Sample(Settings::new(args, format))
    } else {
        check_count(&args)?;
        Mode::Count(Settings::new(args, format))
    };
    Ok(Config { mode, quiet })
}

/// Counting: `-w` and `-l` positive, `-U` refused, a command or `-t` (not both).
fn check_count(args: &Args) -> Result<(), Failure> {
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
    if args.user_callchain {
        // pmcstat(8): "options -N, -n and -O require at least one sampling mode PMC".
        return Err(Failure::Usage(
            "-U (user-space call traces of samples taken in the kernel) is for sampling PMCs \
             (-P, -S)"
                .into(),
        ));
    }
    if args.attach.is_some() && !args.command.is_empty() {
        return Err(Failure::Usage(
            "give either -t PID|REGEX or a command, not both".into(),
        ));
    }
    Ok(())
}

/// Sampling: the usage rules, in the order they are checked.
fn check_sample(args: &Args) -> Result<(), Failure> {
    check_mode_and_timing(args)?;
    check_targets(args)?;
    check_sampling_options(args)
}

/// No counting PMCs, no `-r`; `-w` and `-l` positive, `-w` only with a log or `-T`.
fn check_mode_and_timing(args: &Args) -> Result<(), Failure> {
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
        if args.log.is_none() && !args.top_mode {
            return Err(Failure::Usage(
                "-w in sampling mode logs the counts every interval: give -O FILE \
                 (with -T it is the refresh interval)"
                    .into(),
            ));
        }
    }
    if let Some(l) = args.duration {
        if !(l.is_finite() && l > 0.0) {
            return Err(Failure::Usage(format!(
                "-l: duration must be a positive number of seconds, got {l}"
            )));
        }
    }
    Ok(())
}

/// What is sampled: a command or `-t` (not both), `-W` and `-E` with process PMCs, and
/// something that ends the run.
fn check_targets(args: &Args) -> Result<(), Failure> {
    if args.attach.is_some() && !args.command.is_empty() {
        return Err(Failure::Usage(
            "give either -t PID|REGEX or a command, not both".into(),
        ));
    }
    let has_process = !args.process_sampling.is_empty();
    crate::measure::check_log_csw(args, has_process)?;
    if args.exit_counts && !has_process {
        return Err(Failure::Usage(
            "-E prints the counts of each process at its exit: it needs process sampling \
             PMCs (-P); system-mode PMCs (-S) follow no process"
                .into(),
        ));
    }
    if args.exit_counts && args.top_mode {
        return Err(Failure::Usage(
            "-E prints the counts at process exit after the run; -T shows a live view: \
             record with -E -O FILE, then view the log with -R FILE -T"
                .into(),
        ));
    }
    // System sampling alone runs until -l SECS, a stop signal or -T's `q`, as pmcstat(8).
    if args.command.is_empty() && args.attach.is_none() && has_process {
        return Err(Failure::Usage(
            "process sampling (-P) needs a command or -t PID|REGEX (system sampling, -S or \
             -a -P, runs until -l SECS or Ctrl-C)"
                .into(),
        ));
    }
    Ok(())
}

/// `-n`, `--freq`, `--call-graph dwarf-raw` and `-T` against the log.
fn check_sampling_options(args: &Args) -> Result<(), Failure> {
    if args.rate == Some(0) {
        return Err(Failure::Usage("-n: the period must be at least 1".into()));
    }
    if args.frequency == Some(0) {
        return Err(Failure::Usage(
            "--freq: the frequency must be at least 1".into(),
        ));
    }
    if matches!(args.call_graph, Some(pmc::CallGraph::DwarfRaw { .. })) && args.log.is_none() {
        return Err(Failure::Usage(
            "--call-graph dwarf-raw keeps the stacks for unwinding when the log is read: it \
             needs -O FILE (or use --call-graph dwarf, which unwinds while recording)"
                .into(),
        ));
    }
    if args.top_mode && args.log.is_some() {
        return Err(Failure::Usage(
            "-T shows the samples live and writes no log: drop -O, or record with -O \
             and view the log with -R FILE -T"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
impl Settings {
    /// A command line's settings (the program's name first), for tests.
    pub fn parse_args<I, T>(argv: I) -> Result<Settings, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args = Args::parse_args(argv)?;
        let format = Format::of(&args);
        Ok(Settings::new(args, format))
    }
}
