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
        Mode::Sample(Settings::new(args, format))
    } else {
        Mode::Count(Settings::new(args, format))
    };
    Ok(Config { mode, quiet })
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
