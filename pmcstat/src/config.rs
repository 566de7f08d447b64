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
    TopReplay(Analyze),
    /// `-R FILE`: reports and exports of a log.
    Analyze(Analyze),
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
    Sample(Sample),
    /// `-p`/`-s`/`-e`/the default set: counting.
    Count(Count),
}

/// How counts print: the format and what it depends on (for `output::Sink`).
pub struct Print {
    /// The format.
    pub format: Format,
    /// `-q`.
    pub quiet: bool,
    /// `-w`/`-I`: rows per interval (no total rows in CSV and JSON).
    pub intervals: bool,
    /// `-I MS`: perf stat -I's header.
    pub perf_header: bool,
    /// `-C`: interval rows count from the start.
    pub cumulative: bool,
}

impl Print {
    /// What `args` asks for, in `format`.
    pub fn new(args: &Args, format: Format) -> Print {
        Print {
            format,
            quiet: args.output.quiet,
            intervals: args.measure.interval.is_some(),
            perf_header: args.measure.interval_ms.is_some(),
            cumulative: args.counting.cumulative,
        }
    }
}

/// Counting mode's settings.
pub struct Count {
    /// `-p`: process-mode counting PMCs.
    pub process: Vec<String>,
    /// `-d` in force for each `-p`.
    pub process_descendants: Vec<bool>,
    /// `-e`: perf's event lists.
    pub events: Vec<String>,
    /// `-a`/`--all-cpus`.
    pub all_cpus: bool,
    /// `--cgroup NAME`: the system-wide counters count this cgroup's tasks only.
    pub cgroup: Option<String>,
    /// Every `-c` (the last applies to `-a`).
    pub cpus: Vec<String>,
    /// `-s`: system-mode counting PMCs.
    pub system: Vec<String>,
    /// The `-c` in force for each `-s`.
    pub system_cpus: Vec<Option<String>>,
    /// `-E`.
    pub exit_counts: bool,
    /// `-r N`/`--repeat N`.
    pub repeat: Option<u32>,
    /// `-W`.
    pub log_csw: bool,
    /// The command.
    pub command: Vec<std::ffi::OsString>,
    /// `-t`.
    pub attach: Option<crate::cli::AttachSpec>,
    /// `-o FILE`.
    pub output: Option<PathBuf>,
    /// `-O FILE`.
    pub log: Option<PathBuf>,
    /// `-v`.
    pub verbose: bool,
    /// `--per-cpu`/`-A`.
    pub per_cpu: bool,
    /// `-l SECS`.
    pub duration: Option<f64>,
    /// `-C`.
    pub cumulative: bool,
    /// How the rows are measured: pmcstat(8)'s rules under `--columns`.
    pub rules: Rules,
    /// How the counts print.
    pub print: Print,
}

impl Count {
    fn new(args: Args, format: Format) -> Count {
        let print = Print::new(&args, format);
        let rules = Rules::of(&args, print.format == Format::Columns);
        Count {
            process: args.pmcs.process,
            process_descendants: args.pmcs.process_descendants,
            events: args.pmcs.events,
            all_cpus: args.pmcs.all_cpus,
            cgroup: args.pmcs.cgroup,
            cpus: args.pmcs.cpus,
            system: args.pmcs.system,
            system_cpus: args.pmcs.system_cpus,
            exit_counts: args.measure.exit_counts,
            repeat: args.counting.repeat,
            log_csw: args.measure.log_csw,
            command: args.command,
            attach: args.measure.attach,
            output: args.output.output,
            log: args.sampling.log,
            verbose: args.output.verbose,
            per_cpu: args.counting.per_cpu,
            duration: args.measure.duration,
            cumulative: args.counting.cumulative,
            rules,
            print,
        }
    }
}

/// `--columns` without -w: pmcstat(8)'s `DEFAULT_WAIT_INTERVAL`, 5 s.
pub const COLUMNS_DEFAULT_INTERVAL: f64 = 5.0;

/// How counting takes its rows, decided once here: perf stat's rules, or, under
/// `--columns`, pmcstat(8)'s, so that the counting code never asks which format prints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rules {
    /// The rows' counts per CPU: `--per-cpu`/`-A`; under `--columns` a column per CPU,
    /// as pmcstat(8) allocates a PMC per CPU.
    pub rows_per_cpu: bool,
    /// A row every this many seconds: `-w` (or `-I`); under `--columns` without it,
    /// [`COLUMNS_DEFAULT_INTERVAL`].
    pub interval: Option<f64>,
    /// Every PMC counts in every row (`--columns`: its table has no place for a count
    /// that is not there): a PMC that cannot be allocated or read stops the run, as
    /// pmcstat(8)'s "Cannot read pmc" does; otherwise it shows `<not supported>`.
    pub every_pmc: bool,
    /// A last row when the run ends, whatever the time since the previous one
    /// (`--columns`: pmcstat(8) prints one when the target exits or on SIGINT);
    /// otherwise a last partial interval only when something counted in it.
    pub final_row: bool,
}

impl Rules {
    fn of(args: &Args, columns: bool) -> Rules {
        let interval = args.measure.interval;
        Rules {
            rows_per_cpu: args.counting.per_cpu || columns,
            interval: interval.or(columns.then_some(COLUMNS_DEFAULT_INTERVAL)),
            every_pmc: columns,
            final_row: columns,
        }
    }
}

/// Sampling mode's settings.
pub struct Sample {
    /// `-P`: process-mode sampling PMCs.
    pub process_sampling: Vec<String>,
    /// `-d` in force for each `-P`.
    pub process_sampling_descendants: Vec<bool>,
    /// `-S` (and `-a -P`): system-mode sampling PMCs.
    pub system_sampling: Vec<String>,
    /// The `-c` in force for each `-S`.
    pub system_sampling_cpus: Vec<Option<String>>,
    /// `--cgroup NAME`: the `-S` PMCs sample this cgroup's tasks only.
    pub cgroup: Option<String>,
    /// `-n RATE`.
    pub rate: Option<u64>,
    /// `--freq HZ`.
    pub frequency: Option<u64>,
    /// `-N`.
    pub no_callchain: bool,
    /// `-U`, or perf's `--call-graph`/`-g`.
    pub user_callchain: bool,
    /// `--call-graph`.
    pub call_graph: Option<pmc::CallGraph>,
    /// `--mmap-pages`.
    pub mmap_pages: Option<usize>,
    /// `-O FILE`.
    pub log: Option<PathBuf>,
    /// `-E`.
    pub exit_counts: bool,
    /// `-W`.
    pub log_csw: bool,
    /// `-T`.
    pub top_mode: bool,
    /// `--top N`.
    pub top: usize,
    /// The command.
    pub command: Vec<std::ffi::OsString>,
    /// `-t`.
    pub attach: Option<crate::cli::AttachSpec>,
    /// `-o FILE`: the summary.
    pub output: Option<PathBuf>,
    /// `-w SECS`.
    pub interval: Option<f64>,
    /// `-l SECS`.
    pub duration: Option<f64>,
    /// `-v`.
    pub verbose: bool,
    /// `-q`.
    pub quiet: bool,
}

impl From<Args> for Sample {
    fn from(args: Args) -> Sample {
        Sample {
            process_sampling: args.pmcs.process_sampling,
            process_sampling_descendants: args.pmcs.process_sampling_descendants,
            system_sampling: args.pmcs.system_sampling,
            system_sampling_cpus: args.pmcs.system_sampling_cpus,
            cgroup: args.pmcs.cgroup,
            rate: args.sampling.rate,
            frequency: args.sampling.frequency,
            no_callchain: args.sampling.no_callchain,
            // perf's spellings (--call-graph, -g) with perf's meaning: the user callers of
            // kernel samples kept.
            user_callchain: args.sampling.user_callchain || args.sampling.call_graph.is_some(),
            call_graph: args.sampling.call_graph,
            mmap_pages: args.sampling.mmap_pages,
            log: args.sampling.log,
            exit_counts: args.measure.exit_counts,
            log_csw: args.measure.log_csw,
            top_mode: args.sampling.top_mode,
            top: args.sampling.top,
            command: args.command,
            attach: args.measure.attach,
            output: args.output.output,
            interval: args.measure.interval,
            duration: args.measure.duration,
            verbose: args.output.verbose,
            quiet: args.output.quiet,
        }
    }
}

/// `-R`'s settings (reports, exports, and `-T`'s replay).
pub struct Analyze {
    /// `-R FILE` (`-`: standard input).
    pub read_log: Option<PathBuf>,
    /// `-G FILE`.
    pub callgraph: Option<PathBuf>,
    /// `--callgraph-order`.
    pub callgraph_order: crate::cli::CallgraphOrder,
    /// `-g`.
    pub gprof: bool,
    /// `-D DIR`.
    pub samples_dir: Option<PathBuf>,
    /// `-F FILE`.
    pub calltree: Option<PathBuf>,
    /// `-m FILE`.
    pub annotate_pcs: Option<PathBuf>,
    /// `-a FILE`.
    pub annotate_callchains: Option<PathBuf>,
    /// `-i TID`.
    pub thread: Option<u32>,
    /// `-k KERNELDIR`.
    pub kernel_dir: Option<PathBuf>,
    /// `--dump`.
    pub dump: bool,
    /// `-z DEPTH`.
    pub depth: Option<usize>,
    /// `--folded FILE`.
    pub folded: Option<PathBuf>,
    /// `--flamegraph FILE`.
    pub flamegraph: Option<PathBuf>,
    /// `--no-inline`: inlined frames folded in every report.
    pub no_inline: bool,
    /// `--pprof FILE`.
    pub pprof: Option<PathBuf>,
    /// `--script`.
    pub script: bool,
    /// `--perf-data FILE`.
    pub perf_data: Option<PathBuf>,
    /// `--summary`.
    pub summary: bool,
    /// `--top N`.
    pub top: usize,
    /// `-r DIR`: the root of the log's object paths.
    pub fsroot: Option<PathBuf>,
    /// `-o FILE`.
    pub output: Option<PathBuf>,
    /// `-w SECS`: `-T`'s refresh interval.
    pub interval: Option<f64>,
    /// `--json` or `-x SEP` (summary, record dump).
    pub format: Format,
}

impl Analyze {
    fn new(args: Args, format: Format) -> Analyze {
        Analyze {
            read_log: args.read.read_log,
            callgraph: args.read.callgraph,
            callgraph_order: args.read.callgraph_order,
            gprof: args.read.gprof,
            samples_dir: args.read.samples_dir,
            calltree: args.read.calltree,
            annotate_pcs: args.read.annotate_pcs,
            annotate_callchains: args.read.annotate_callchains,
            thread: args.read.thread,
            kernel_dir: args.read.kernel_dir,
            dump: args.read.dump,
            depth: args.read.depth,
            folded: args.read.folded,
            flamegraph: args.read.flamegraph,
            no_inline: args.read.no_inline,
            pprof: args.read.pprof,
            script: args.read.script,
            perf_data: args.read.perf_data,
            summary: args.read.summary,
            top: args.sampling.top,
            fsroot: args.read.fsroot,
            output: args.output.output,
            interval: args.measure.interval,
            format,
        }
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
    /// `--cgroup NAME`: the `-s` counters count this cgroup's tasks only.
    pub cgroup: Option<String>,
    /// `--metrics-cgroups ROOT` and `--metrics-max-cgroups`: the cgroups discovered.
    pub cgroups: Option<(String, usize)>,
    /// `--web.config.file`: TLS and basic auth.
    pub web_config: Option<std::path::PathBuf>,
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
    pub fn of(args: &Args) -> Format {
        if args.output.columns {
            Format::Columns
        } else if args.output.json_report {
            Format::JsonReport
        } else if args.output.json {
            Format::Json
        } else if let Some(sep) = &args.output.csv {
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
    args.read.read_log.is_none() && !args.info.list && !args.info.diagnose && !args.info.selftest
}

/// Picks the mode and the format, once.
pub fn validate(mut args: Args) -> Result<Config, Failure> {
    let quiet = args.output.quiet;
    let format = Format::of(&args);
    let measuring = measures(&args);
    check_cgroup(&args)?;
    let mode = if let Some(kind) = args.info.generate {
        Mode::Generate(kind)
    } else if args.read.read_log.is_some() && args.sampling.top_mode {
        Mode::TopReplay(Analyze::new(args, format))
    } else if args.read.read_log.is_some() {
        Mode::Analyze(Analyze::new(args, format))
    } else if let Some(spec) = args.info.describe.take() {
        Mode::Describe(spec, args.info.tracepoints)
    } else if args.info.selftest {
        Mode::Selftest(format)
    } else if measuring && !crate::sys::HAS_BACKEND {
        Mode::NoBackend
    } else if let Some(addr) = args.metrics.metrics.take() {
        let mut process = std::mem::take(&mut args.pmcs.process);
        process.append(&mut args.pmcs.events);
        Mode::Metrics(Metrics {
            addr,
            system: std::mem::take(&mut args.pmcs.system),
            attach: args.measure.attach.take(),
            process,
            max_targets: args.metrics.metrics_max_targets,
            cgroup: args.pmcs.cgroup.take(),
            cgroups: args
                .metrics
                .metrics_cgroups
                .take()
                .map(|root| (root, args.metrics.metrics_max_cgroups)),
            web_config: args.metrics.web_config_file.take(),
        })
    } else if args.info.list || args.info.diagnose {
        Mode::List(List {
            diagnose: args.info.diagnose,
            tracepoints: args.info.tracepoints,
            output: args.output.output.take(),
            format,
        })
    } else if !args.pmcs.process_sampling.is_empty() || !args.pmcs.system_sampling.is_empty() {
        check_sample(&args)?;
        Mode::Sample(Sample::from(args))
    } else {
        check_count(&args)?;
        Mode::Count(Count::new(args, format))
    };
    Ok(Config { mode, quiet })
}

/// `--cgroup NAME` filters system-wide PMCs only: counting (`-s`, `-a`/`--all-cpus` with `-e`
/// or the default set), sampling (`-S`, `-a -P`) and `--metrics` with `-s`. Every other mode
/// is refused by name.
fn check_cgroup(args: &Args) -> Result<(), Failure> {
    let Some(name) = &args.pmcs.cgroup else {
        return Ok(());
    };
    let refuse = |what: &str| {
        Err(Failure::Usage(format!(
            "--cgroup {name} counts one cgroup's tasks on every CPU, for system-wide counting \
             (-s EVENT, or -a/--all-cpus), sampling (-S EVENT, or -a -P) and --metrics -s; \
             {what}"
        )))
    };
    if name.is_empty() {
        return refuse("give it a cgroup's name (a path below the cgroup mount)");
    }
    if args.read.read_log.is_some() {
        return refuse("-R reads a log, it counts nothing");
    }
    if !args.pmcs.process_sampling.is_empty() {
        return refuse("-P samples processes (with -a, -P samples every CPU: -a -P)");
    }
    if !args.pmcs.system_sampling.is_empty() {
        // -S, or -a -P: sampled in the cgroup, as perf record -a -G.
        return if args.pmcs.process.is_empty() && args.pmcs.system.is_empty() {
            Ok(())
        } else {
            refuse("counting (-p/-s) and sampling (-S) PMCs are used in separate runs")
        };
    }
    if !args.pmcs.process.is_empty() {
        return refuse("-p counts processes (count the cgroup's processes with -t PID instead)");
    }
    if args.metrics.metrics.is_some() {
        if args.measure.attach.is_some() || !args.pmcs.events.is_empty() {
            return refuse("with --metrics not the per-process counters (-t, -p, -e)");
        }
        if args.pmcs.system.is_empty() {
            return refuse("with --metrics give the events with -s");
        }
        return Ok(());
    }
    if args.measure.attach.is_some() {
        return refuse("-t counts processes, not a cgroup");
    }
    if !args.pmcs.all_cpus && (!args.pmcs.events.is_empty() || args.pmcs.system.is_empty()) {
        return refuse("-e and the default set count the command; add -a (--all-cpus)");
    }
    if args.measure.exit_counts || args.measure.log_csw {
        return refuse("-E and -W follow processes");
    }
    Ok(())
}

/// Counting: `-w` and `-l` positive, `-U` refused, a command or `-t` (not both).
fn check_count(args: &Args) -> Result<(), Failure> {
    if let Some(w) = args.measure.interval {
        if !(w.is_finite() && w > 0.0) {
            return Err(Failure::Usage(format!(
                "-w: interval must be a positive number of seconds, got {w}"
            )));
        }
    }
    if let Some(l) = args.measure.duration {
        if !(l.is_finite() && l > 0.0) {
            return Err(Failure::Usage(format!(
                "-l: duration must be a positive number of seconds, got {l}"
            )));
        }
    }
    if args.sampling.user_callchain {
        // pmcstat(8): "options -N, -n and -O require at least one sampling mode PMC".
        return Err(Failure::Usage(
            "-U (user-space call traces of samples taken in the kernel) is for sampling PMCs \
             (-P, -S)"
                .into(),
        ));
    }
    if args.measure.attach.is_some() && !args.command.is_empty() {
        return Err(Failure::Usage(
            "give either -t PID|REGEX or a command, not both".into(),
        ));
    }
    if args.output.columns && args.counting.repeat.is_some_and(|n| n > 1) {
        return Err(Failure::Usage(
            "--columns prints the rows of one run: give -r N without it".into(),
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
    if !args.pmcs.process.is_empty() || !args.pmcs.system.is_empty() {
        return Err(Failure::Usage(
            "counting (-p/-s) and sampling (-P/-S) PMCs are used in separate runs".into(),
        ));
    }
    if args.counting.repeat.is_some() {
        return Err(Failure::Usage("-r is for counting mode (-p/-s)".into()));
    }
    if let Some(w) = args.measure.interval {
        if !(w.is_finite() && w > 0.0) {
            return Err(Failure::Usage(format!(
                "-w: interval must be a positive number of seconds, got {w}"
            )));
        }
        if args.sampling.log.is_none() && !args.sampling.top_mode {
            return Err(Failure::Usage(
                "-w in sampling mode logs the counts every interval: give -O FILE \
                 (with -T it is the refresh interval)"
                    .into(),
            ));
        }
    }
    if let Some(l) = args.measure.duration {
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
    if args.measure.attach.is_some() && !args.command.is_empty() {
        return Err(Failure::Usage(
            "give either -t PID|REGEX or a command, not both".into(),
        ));
    }
    let has_process = !args.pmcs.process_sampling.is_empty();
    crate::measure::check_log_csw(
        &crate::measure::LogCsw {
            log_csw: args.measure.log_csw,
            log: args.sampling.log.as_deref(),
            repeat: args.counting.repeat,
        },
        has_process,
    )?;
    if args.measure.exit_counts && !has_process {
        return Err(Failure::Usage(
            "-E prints the counts of each process at its exit: it needs process sampling \
             PMCs (-P); system-mode PMCs (-S) follow no process"
                .into(),
        ));
    }
    if args.measure.exit_counts && args.sampling.top_mode {
        return Err(Failure::Usage(
            "-E prints the counts at process exit after the run; -T shows a live view: \
             record with -E -O FILE, then view the log with -R FILE -T"
                .into(),
        ));
    }
    // System sampling alone runs until -l SECS, a stop signal or -T's `q`, as pmcstat(8).
    if args.command.is_empty() && args.measure.attach.is_none() && has_process {
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
    if args.sampling.rate == Some(0) {
        return Err(Failure::Usage("-n: the period must be at least 1".into()));
    }
    if args.sampling.frequency == Some(0) {
        return Err(Failure::Usage(
            "--freq: the frequency must be at least 1".into(),
        ));
    }
    if matches!(
        args.sampling.call_graph,
        Some(pmc::CallGraph::DwarfRaw { .. })
    ) && args.sampling.log.is_none()
    {
        return Err(Failure::Usage(
            "--call-graph dwarf-raw keeps the stacks for unwinding when the log is read: it \
             needs -O FILE (or use --call-graph dwarf, which unwinds while recording)"
                .into(),
        ));
    }
    if args.sampling.top_mode && args.sampling.log.is_some() {
        return Err(Failure::Usage(
            "-T shows the samples live and writes no log: drop -O, or record with -O \
             and view the log with -R FILE -T"
                .into(),
        ));
    }
    Ok(())
}
