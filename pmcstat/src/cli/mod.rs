//! Command-line options, after FreeBSD pmcstat(8).

mod checks;
mod usage;
mod values;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

pub use usage::usage_message;
use values::{
    parse_attach, parse_call_graph, parse_count, parse_cpus, parse_duration, parse_interval,
    parse_interval_ms,
};

/// Count events in a command, a process or the whole system.
///
/// With no -p/-s/-e, counts a perf-stat-like default set for the command
/// and all its child processes, as perf stat does: task-clock,
/// context-switches, cpu-migrations, page-faults, cycles, instructions,
/// branches, branch-misses; with -a (perf's), on every CPU, cpu-clock for
/// task-clock. System-wide PMCs (-s, -S, -a) without a command, -t or -l run
/// until SIGINT or SIGTERM (q in -T), then print and close as on any stop.
#[derive(Debug, Parser)]
#[command(
    name = "pmcstat",
    version,
    about = "Portable performance counters: count a command, a process or the system",
    after_help = "Event specs: portable names (cycles, instructions, page-faults, task-clock, ...), \
perf style (task-clock:u, r01c2, cpu/event=0x3c,umask=0/, sched:sched_switch) or hwpmc style \
(instructions,usr, SOFT-CLOCK.HARD).\n\nUnits: cpu-clock and task-clock count nanoseconds; \
FreeBSD's clock.hard/clock.stat count ticks (kern.hz, stathz): on Linux only sampling them works, \
-n N being N ticks (1 ms each for clock.hard). Sampling without -n/--freq: 4000 Hz as perf record \
(on FreeBSD, without a kernel frequency mode: time events 4000 Hz, software events every 1000, \
hardware events every 65536), clock.* every tick, tracepoints every event; -v shows it, and a \
run without samples says so.\n\nExamples:\n  pmcstat -- ls -R /usr/share\n  \
pmcstat -e page-faults,task-clock -- make\n  pmcstat -d -p page-faults -p task-clock -- make\n  pmcstat -p page-faults -d -p task-clock -- make\n  \
pmcstat -c 0,1 -s cpu-clock -l 1\n  pmcstat -s page-faults -c 0 -s cpu-clock -l 1\n  \
pmcstat -s context-switches -w 1    (until Ctrl-C)\n  pmcstat -a    (perf stat -a, until Ctrl-C)\n  \
pmcstat -S cpu-clock -O s.pmclog    (until Ctrl-C)\n  pmcstat -TS cpu-clock\n  \
pmcstat --json -p page-faults -t 1234 -l 5\n  pmcstat -p task-clock -t '^nginx$' -l 5\n  \
pmcstat -P cpu-clock --freq 4000 -O out.pmclog -- ./a.out\n  pmcstat -c 0 -S cpu-clock -l 2\n  pmcstat -T -P cpu-clock -- ./a.out\n  \
pmcstat -R out.pmclog -G -\n  pmcstat -R out.pmclog -g -D prof && gprof ./a.out prof/cpu-clock/a.out.gmon\n  \
pmcstat -R out.pmclog -F out.callgrind && callgrind_annotate out.callgrind\n\n\
Exit status: the command's (128 + signal if a signal ended it), or, when it is 0, 3 if \
sampling lost samples (the summary says how many and why); 1 when counters cannot be set up \
or results written; 2 for a usage error; 127 when the command is not found, 126 when it \
cannot be executed (as shells)."
)]
pub struct Args {
    #[command(flatten)]
    pub pmcs: Pmcs,
    #[command(flatten)]
    pub measure: Measure,
    #[command(flatten)]
    pub counting: Counting,
    #[command(flatten)]
    pub sampling: Sampling,
    #[command(flatten)]
    pub read: ReadLog,
    #[command(flatten)]
    pub output: Output,
    #[command(flatten)]
    pub info: Info,
    #[command(flatten)]
    pub metrics: Metrics,

    /// The command to run and count.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The PMCs to allocate (`-p`, `-e`, `-s`, `-P`, `-S`), where (`-c`, `-a`, `--cgroup`), and pmcstat(8)'s positional `-c` and `-d` as they apply to each.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "PMCs")]
pub struct Pmcs {
    /// Count SPEC in the target process (process-scope counting PMC), as
    /// pmcstat(8): the process alone, its child processes only with -d.
    /// Repeatable.
    #[arg(short = 'p', value_name = "SPEC", action = clap::ArgAction::Append)]
    pub process: Vec<String>,

    /// Count SPEC in the command and all its child processes, as perf stat
    /// -e (a comma-separated list is several events; with -a, on every CPU).
    /// Repeatable.
    #[arg(short = 'e', long = "event", value_name = "SPEC[,SPEC...]", action = clap::ArgAction::Append)]
    pub events: Vec<String>,

    /// Count SPEC system-wide (system-scope counting PMC). Repeatable. Without
    /// a command, -t or -l: until SIGINT or SIGTERM.
    #[arg(short = 's', value_name = "SPEC", action = clap::ArgAction::Append)]
    pub system: Vec<String>,

    /// Sample SPEC in the target process (process-scope sampling PMC, hwpmc mode TS).
    /// Repeatable. A `,freq=HZ` qualifier samples at HZ per second instead of every -n events.
    #[arg(short = 'P', value_name = "SPEC", action = clap::ArgAction::Append)]
    pub process_sampling: Vec<String>,

    /// Sample SPEC system-wide (system-scope sampling PMC, hwpmc mode SS; CPUs from -c).
    /// Repeatable; `,freq=HZ` as for -P. Without a command, -t or -l: until
    /// SIGINT or SIGTERM (q with -T).
    #[arg(short = 'S', value_name = "SPEC", action = clap::ArgAction::Append)]
    pub system_sampling: Vec<String>,

    /// CPUs for the system-mode PMCs (-s, -S) that follow it on the command
    /// line, as pmcstat(8): `0`, `0,2`, `1-3` or `*` (every CPU, the default).
    /// Repeatable: each -c holds until the next. A -c after the last system
    /// PMC applies to those that no -c precedes.
    #[arg(short = 'c', value_name = "CPU-LIST", action = clap::ArgAction::Append, value_parser = parse_cpus)]
    pub cpus: Vec<String>,

    /// Toggle counting the target's child processes for the process-mode
    /// PMCs (-p, -P) that follow it on the command line, as pmcstat(8) (off
    /// at first; -e and the default set always count them). Repeatable:
    /// `-d -p a -d -p b` counts children for a, not for b. A -d after the last
    /// process PMC applies to those that no -d precedes.
    // Append, not Count: clap keeps the position of every occurrence only then.
    #[arg(short = 'd', action = clap::ArgAction::Append, num_args = 0,
          default_missing_value = "true", value_parser = clap::value_parser!(bool))]
    pub descendants_toggles: Vec<bool>,

    /// Every CPU, as perf's -a (also `-a` without -R): the -e events and the
    /// default set are counted system-wide (the default set with cpu-clock
    /// for task-clock, as `perf stat -a`), the -P events sampled
    /// system-wide (as -S); -c limits the CPUs. With a command, until it
    /// exits; without one, until -l SECS, SIGINT or SIGTERM.
    #[arg(long = "all-cpus")]
    pub all_cpus: bool,

    /// Count only the tasks of one control group, as perf's `-G NAME` (`--cgroup` for
    /// pmcstat(8)'s -G): NAME is a path below the cgroup mount that has perf_event (cgroup2,
    /// or a v1 hierarchy with the perf_event controller), e.g. `system.slice/foo.service`,
    /// or the cgroup directory's absolute path. For system-wide counting (-s, or -a/--all-cpus
    /// with -e or the default set), sampling (-S, or -a -P, as perf record -a -G) and
    /// --metrics -s; each counter row (each exported series, as a `cgroup` label) carries
    /// NAME. Linux only.
    #[arg(long = "cgroup", value_name = "NAME")]
    pub cgroup: Option<String>,

    /// The -c in force for each -s, in order (None: every CPU).
    #[arg(skip)]
    pub system_cpus: Vec<Option<String>>,

    /// The -c in force for each -S, in order (None: every CPU).
    #[arg(skip)]
    pub system_sampling_cpus: Vec<Option<String>>,

    /// Whether -d is on for each -p, in order.
    #[arg(skip)]
    pub process_descendants: Vec<bool>,

    /// Whether -d is on for each -P, in order.
    #[arg(skip)]
    pub process_sampling_descendants: Vec<bool>,
}

/// What to measure and for how long, in counting and sampling alike.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Measuring")]
pub struct Measure {
    /// Attach the process-mode PMCs to running processes instead of launching
    /// a command, as pmcstat(8) -t: a number is a process id; anything else
    /// is a regular expression (the regex crate's syntax, close to POSIX
    /// extended ones), and every process whose command
    /// name (Linux's `/proc/PID/comm`, at most 15 characters; FreeBSD's
    /// `ki_comm`, at most 19) matches it anywhere is
    /// counted (anchor it, `^name$`, for an exact name). No match is a usage
    /// error. pmcstat itself is never a match.
    #[arg(short = 't', value_name = "PID|REGEX", value_parser = parse_attach)]
    pub attach: Option<AttachSpec>,

    /// Print the counts every SECS seconds (fractions allowed, at least 0.01 as perf's
    /// 10 ms floor, at most a year). In sampling mode (-P/-S), log the sampling PMCs'
    /// counts every SECS seconds into the -O file.
    #[arg(short = 'w', value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,

    /// perf's `-I MS`: print the counts every MS milliseconds (at least 10),
    /// under perf's `# time counts unit events` header. With -R this is
    /// pmcstat(8)'s -I (symbol offsets), which this pmcstat does not have.
    #[arg(short = 'I', value_name = "MS", conflicts_with = "interval", value_parser = parse_interval_ms)]
    pub interval_ms: Option<f64>,

    /// Count for SECS seconds (for -t, -s, -S and -a without a command; more than 0, at
    /// most a year). Without it those run until SIGINT or SIGTERM.
    #[arg(short = 'l', value_name = "SECS", value_parser = parse_duration)]
    pub duration: Option<f64>,

    /// Print each process's counts at its exit, as pmcstat(8) -E (hwpmc's
    /// LOG_PROCEXIT), for the process-mode PMCs (with -d, every descendant
    /// process): after the run, one line per process that exited, with its
    /// pid, command and counts. For a counting PMC (-p, -e; one per run) the
    /// count is the kernel's (perf's inherit_stat); for sampling PMCs (-P) the
    /// sum of the process's sample periods (exact but for the last, incomplete
    /// period). The -O log, when given, holds them as `exitval` records.
    #[arg(short = 'E')]
    pub exit_counts: bool,

    /// Log, for the process-mode PMCs (-p, -e, the default set, -P), the
    /// counts of every time slice of the target's threads at each context
    /// switch into the -O FILE, as pmcstat(8) -W (hwpmc's LOG_PROCCSW);
    /// `-R FILE` prints them as pmcstat(8)'s `cswval` lines, `-R FILE --dump`
    /// as `counter kind=csw` with the thread id. Needs -O and kernel-mode counting
    /// (root, CAP_PERFMON or perf_event_paranoid <= 1); the slice that ends
    /// at a thread's exit is not logged (the kernel has detached its counters).
    #[arg(short = 'W')]
    pub log_csw: bool,
}

/// How counts are taken and repeated.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Counting")]
pub struct Counting {
    /// With -w: toggle between incremental (default) and cumulative counts.
    #[arg(short = 'C')]
    pub cumulative: bool,

    /// Show system-scope counters per CPU instead of summed.
    #[arg(long = "per-cpu")]
    pub per_cpu: bool,

    /// perf's `-A` (`--no-aggr`): the same as --per-cpu. With -R this is
    /// pmcstat(8)'s -A (addresses only), which this pmcstat does not have.
    #[arg(short = 'A')]
    pub no_aggr: bool,

    /// Without -R: run the command N times and print the mean and its
    /// relative standard error (`+- x.xx%`), as `perf stat -r` (1 to 100000;
    /// also `--repeat N`). With -R: pmcstat(8)'s `-r DIR`, the root under
    /// which the log's object paths are read (a log taken on another system,
    /// symbolized against a copy of its files; perf's `--symfs`).
    #[arg(short = 'r', value_name = "N|DIR")]
    pub r_arg: Option<String>,

    /// Run the command N times (perf stat's -r; 1 to 100000).
    #[arg(long = "repeat", value_name = "N", conflicts_with = "r_arg", value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT as i64))]
    pub repeat: Option<u32>,
}

/// How samples are taken, and where they go.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Sampling")]
pub struct Sampling {
    /// Sampling period: one sample every RATE events of the event's unit (nanoseconds for
    /// cpu-clock/task-clock on Linux, ticks for clock.hard/clock.stat). Without -n or --freq:
    /// 4000 Hz as perf record (the kernel adapts the period; on FreeBSD, which cannot, time
    /// events 4000 Hz, software events every 1000, hardware events every 65536 as
    /// pmcstat(8)); clock.hard/stat/prof every tick of their clock; tracepoints every event.
    /// -v shows the choice.
    #[arg(short = 'n', value_name = "RATE", value_parser = clap::value_parser!(u64).range(1..=MAX_PERIOD))]
    pub rate: Option<u64>,

    /// Sample HZ times a second of the event (perf record's -F; here -F is
    /// pmcstat(8)'s callgrind output) instead of every -n events.
    #[arg(long = "freq", value_name = "HZ", conflicts_with = "rate", value_parser = clap::value_parser!(u64).range(1..=MAX_PERIOD))]
    pub frequency: Option<u64>,

    /// Toggle callchain capture for sampling PMCs (on by default).
    #[arg(short = 'N')]
    pub no_callchain: bool,

    /// Toggle capturing user-space call traces while in kernel mode, as
    /// pmcstat(8) -U (hwpmc's PMC_F_USERCALLCHAIN): off by default, the
    /// callchain of a -P/-S sample taken in the kernel holds the kernel's
    /// frames only (samples taken in user mode have their user frames); with
    /// -U it goes on into the user code that entered the kernel (a system
    /// call's caller), as perf's callchains do.
    #[arg(short = 'U')]
    pub user_callchain: bool,

    /// How -P/-S take callchains, in perf record's spelling, with perf's meaning:
    /// a sample taken in the kernel keeps its user callers (as -U). `fp` (frame
    /// pointers, the default) or `dwarf[,SIZE]` (copy SIZE bytes of user stack
    /// with each sample, default 8192, and unwind it with the binaries' DWARF
    /// call-frame information while recording: full call graphs for code built
    /// without frame pointers; Linux only), or `dwarf-raw[,SIZE]` (keep the
    /// stacks in the -O log, kilobytes per sample as in perf.data, and unwind
    /// when -R reads it, with `-r DIR` for binaries copied from elsewhere).
    #[arg(long = "call-graph", value_name = "MODE", value_parser = parse_call_graph, conflicts_with = "no_callchain")]
    pub call_graph: Option<pmc::CallGraph>,

    /// Write the samples to log FILE (pmc-log format: pmc-log's reader, or
    /// `cargo run -p pmc-log --example pmclog-tool -- dump FILE`), created
    /// 0600 as perf.data; -R's reports and exports of it are 0600 too.
    #[arg(short = 'O', value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// Size of each sample ring buffer in pages, a power of two (perf's
    /// -m/--mmap-pages; default 64 pages on Linux, 128 as perf's for root or
    /// CAP_IPC_LOCK, fewer when the locked-memory limit is low). Smaller fits
    /// a lower limit; larger loses fewer samples.
    #[arg(long = "mmap-pages", value_name = "PAGES", value_parser = parse_count::<1, 1_048_576>)]
    pub mmap_pages: Option<usize>,

    /// Top mode, as pmcstat(8) -T: a live view of the top functions of the
    /// -P/-S PMCs (or, with -R, the log replayed), redrawn every -w seconds
    /// (default 1). Keys: q quit, space pause, p next PMC, m merge PMCs,
    /// n functions/objects, c then d/a delta/accumulation mode. After q a
    /// launched command gets SIGTERM; the exit status is the command's.
    #[arg(short = 'T')]
    pub top_mode: bool,

    /// How many entries a top-N summary shows (sampling without -O, and -R
    /// with --summary; 0 shows all).
    #[arg(long = "top", value_name = "N", default_value_t = 20, value_parser = parse_count::<0, 1_000_000>)]
    pub top: usize,
}

/// `-R FILE` and its reports.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Reading a log (-R)")]
pub struct ReadLog {
    /// Read a log FILE (pmc-log, or a FreeBSD hwpmc log, detected by its
    /// magic) instead of counting; `-` reads standard input (what `-O -`
    /// writes). Alone, prints one line per record as pmcstat(8) does (see
    /// --dump, --json).
    #[arg(short = 'R', value_name = "FILE")]
    pub read_log: Option<PathBuf>,

    /// With -R: write a call graph to FILE (`-`: stdout) as FreeBSD pmcstat -G
    /// does: each sampled function, then its callers indented below it with
    /// their share of the parent's samples. See --callgraph-order.
    #[arg(short = 'G', value_name = "FILE", requires = "read_log")]
    pub callgraph: Option<PathBuf>,

    /// With -G: `callee` (default) is pmcstat(8)'s layout, sampled functions
    /// first; `caller` is a top-down tree from main down to the sampled
    /// functions, with shares of all samples and [self] lines.
    #[arg(long = "callgraph-order", value_name = "ORDER", value_enum,
          default_value_t = CallgraphOrder::Callee, requires = "callgraph")]
    pub callgraph_order: CallgraphOrder,

    /// With -R: write gprof profiles (gmon.out format, for gprof(1)), one per
    /// executable object and PMC, as DIR/EVENT/OBJECT.gmon (DIR from -D). Without -R,
    /// with -P/-S: perf record's -g, `--call-graph fp` (callchains with the user callers
    /// of samples taken in the kernel).
    #[arg(short = 'g')]
    pub gprof: bool,

    /// With -g: the directory for the gmon files (default: the current one).
    #[arg(short = 'D', value_name = "DIR", requires = "gprof")]
    pub samples_dir: Option<PathBuf>,

    /// With -R: write a callgrind ("calltree") profile to FILE (`-`: stdout),
    /// for callgrind_annotate and KCachegrind.
    #[arg(short = 'F', value_name = "FILE")]
    pub calltree: Option<PathBuf>,

    /// With -R: write every sampled PC with its function's raw symbol name and
    /// bounds to FILE (`-`: stdout), one line per sample, for pmcannotate(8).
    #[arg(short = 'm', value_name = "FILE", requires = "read_log")]
    pub annotate_pcs: Option<PathBuf>,

    /// With -R: write every callchain node resolved to its function and
    /// file:line to FILE (`-`: stdout), a `--` line after each sample, as
    /// pmcstat(8) -a. Without -R, -a is perf's --all-cpus.
    #[arg(short = 'a', value_name = "FILE", requires = "read_log")]
    pub annotate_callchains: Option<PathBuf>,

    /// With -R: only the samples of the thread with this id, as pmcstat(8)
    /// -i, in every report (the record lines, --dump, --json, --summary, -G,
    /// -g, -F, --folded, --pprof, ...; -T replays). Per-thread counter
    /// records (-W's context-switch counts) of other threads go too; the
    /// records that describe processes (maps, command names) stay.
    #[arg(short = 'i', value_name = "TID", requires = "read_log",
          value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub thread: Option<u32>,

    /// With -R: where the kernel's symbols are, as pmcstat(8)'s -k
    /// kerneldir: a directory holding `kallsyms` (a copy of /proc/kallsyms
    /// saved on the machine, and in the boot, that took the log) or else
    /// `vmlinux` (its ELF symbol table at link-time addresses: right for a
    /// kernel without KASLR), or such a file itself. Kernel frames are
    /// symbolized from it instead of this machine's /proc/kallsyms. A
    /// directory with neither is a warning that says where it looked, and
    /// kernel frames are left unresolved.
    #[arg(short = 'k', value_name = "KERNELDIR", requires = "read_log")]
    pub kernel_dir: Option<PathBuf>,

    /// With -R alone: print pmc-log's own record dump (every field,
    /// key=value, with timestamps) instead of pmcstat(8)'s record lines.
    #[arg(long = "dump", requires = "read_log")]
    pub dump: bool,

    /// With -G or -g: the call graph's maximum depth (0: unlimited; default 16).
    #[arg(short = 'z', value_name = "DEPTH", requires = "read_log", value_parser = parse_count::<0, 100_000>)]
    pub depth: Option<usize>,

    /// With -R: write folded stacks (for flame graph tools) to FILE; `-` is stdout.
    #[arg(long = "folded", value_name = "FILE", requires = "read_log")]
    pub folded: Option<PathBuf>,

    /// With -R: write an SVG flame graph to FILE.
    #[arg(long = "flamegraph", value_name = "FILE", requires = "read_log")]
    pub flamegraph: Option<PathBuf>,

    /// With -R: -G, --folded and --flamegraph fold inlined functions into the
    /// function they were inlined into instead of showing them as frames of
    /// their own marked "(inlined)" (perf report's --no-inline).
    #[arg(long = "no-inline", requires = "read_log")]
    pub no_inline: bool,

    /// With -R: write a pprof profile (profile.proto, gzipped) to FILE, for
    /// `go tool pprof` and the tools that read it (Pyroscope, Parca, ...).
    #[arg(long = "pprof", value_name = "FILE", requires = "read_log")]
    pub pprof: Option<PathBuf>,

    /// With -R: print every sample, symbolized, as `perf script` does (to
    /// standard output, or -o FILE): `comm pid/tid [cpu] time: period event:`
    /// and one `ip symbol+offset (object)` line per frame.
    #[arg(long = "script", requires = "read_log")]
    pub script: bool,

    /// With -R: write the log as a perf.data file to FILE, for `perf report
    /// -i FILE`, `perf script` and the tools that read perf.data.
    #[arg(long = "perf-data", value_name = "FILE", requires = "read_log")]
    pub perf_data: Option<PathBuf>,

    /// With -R: print the top-N functions and objects (text, --json or -x CSV).
    #[arg(long = "summary", requires = "read_log")]
    pub summary: bool,

    /// With -R: the root directory for object paths (from `-r DIR`).
    #[arg(skip)]
    pub fsroot: Option<PathBuf>,
}

/// Where and how results print.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Output")]
pub struct Output {
    /// Write the counts to FILE instead of standard error.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print, for every PMC, the native configuration it opened
    /// (on Linux, every non-zero perf_event_attr field and flag, inherit_thread
    /// included).
    #[arg(short = 'v')]
    pub verbose: bool,

    /// Decrease verbosity, as pmcstat(8) -q: the counts (and reports) print
    /// as usual, but not the notes and explanations around them (why a row
    /// is `<not supported>`, child processes left uncounted), nor status
    /// lines (the sampling progress line, what was written where, what -R
    /// converted or could not symbolize). Errors and warnings still print.
    #[arg(short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print CSV with this field separator, in perf stat -x's column order:
    /// `[time,] [CPUn,]` value, unit, event, run time (ns), running percent,
    /// metric value, metric unit; then scope, time enabled (ns), status.
    /// With -w/-I every row has the time column and no total rows follow.
    /// With -L: one row per event (name, source, availability, why not
    /// available, description); --diagnose: per check (check, verdict, detail,
    /// fix); --selftest: per check (check, event, measured, expected, ratio,
    /// verdict, note); -R --summary: its own comma-separated tables. A SEP inside
    /// a cell becomes a space, a double quote a single one, a control character
    /// an escape (\n, \e, \xNN); an empty SEP or one with a line break is refused.
    #[arg(short = 'x', value_name = "SEP")]
    pub csv: Option<String>,

    /// Print the counts as FreeBSD pmcstat(8) does for counting PMCs: a
    /// `# ` header line with one column per PMC, `p/EVENT` for process-mode
    /// PMCs (-p, -e) and `s/NN/EVENT` for system-mode ones (-s; one column per
    /// CPU, NN its number; `s/NN/EVENT@CGROUP` with --cgroup), then one row of counts every -w SECS (default 5 s,
    /// as pmcstat(8)) and a last row when the command exits or -l ends. Each
    /// row holds the counts since the previous row (the rows add up to the
    /// total), or with -C the running totals (the last row is the total).
    /// Instead of the perf-stat-like table; not with -x, --json, --json-report
    /// or -r N.
    #[arg(long = "columns", conflicts_with_all = ["json", "json_report", "csv"])]
    pub columns: bool,

    /// Print JSON. Counting: perf stat -j's lines (also `-j`), one object per
    /// counter row with perf's keys, so tools written for perf read them:
    /// `interval` (-w/-I), `cpu` (-A), `counter-value` (a string: the count,
    /// msec for clocks, or `<not counted>`), `unit`, `event`, `variance` (-r),
    /// `event-runtime` (ns), `pcnt-running`, `metric-value` and `metric-unit`
    /// (0 and "" on a row without a metric). With -R, -L, --diagnose, --selftest:
    /// their JSON documents.
    #[arg(short = 'j', long = "json", conflicts_with_all = ["csv", "json_report"])]
    pub json: bool,

    /// Counting: print pmcstat's own JSON document instead of perf's lines:
    /// one object per report (`"type": "total"`, `"interval"` per -w/-I
    /// interval, `"repeat"` for -r) with the command, its exit status, the
    /// elapsed time, child-process accounting, the notes, and per counter its
    /// raw and scaled values, time enabled and running, scope and status.
    /// Elsewhere the same as --json.
    #[arg(long = "json-report", conflicts_with = "csv")]
    pub json_report: bool,
}

/// Listing events, checking the machine, the reference files.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Listing and checks")]
pub struct Info {
    /// List the events this machine offers, grouped by source, each marked
    /// available or not (and why).
    #[arg(short = 'L')]
    pub list: bool,

    /// Describe event SPEC (pmcstat(8) -u): where it comes from, what it
    /// counts, whether it can be opened here and how it is encoded.
    #[arg(short = 'u', value_name = "SPEC")]
    pub describe: Option<String>,

    /// With -L: also list (and probe) tracepoints.
    #[arg(long = "tracepoints", requires = "list")]
    pub tracepoints: bool,

    /// Report what works on this machine and why not, with fixes.
    #[arg(long = "diagnose", conflicts_with = "list")]
    pub diagnose: bool,

    /// Check this machine's counters against calibrated workloads (exact
    /// instruction loops, fresh pages, context switches, sampling periods):
    /// one row per check with measured, expected, ratio and PASS, WARN, FAIL
    /// or SKIP, and the likely cause. Exits 0 when nothing FAILed (WARN and
    /// SKIP included), 1 otherwise. With --json or -x SEP.
    #[arg(long = "selftest", conflicts_with_all = ["list", "diagnose", "command"])]
    pub selftest: bool,

    /// Print pmcstat's reference, generated from these options, and exit:
    /// `man` (the man page, pmcstat.1, in roff) or the completions for
    /// `bash`, `zsh`, `fish`, `elvish` or `powershell`. For packagers; see
    /// pmcstat/README.md.
    #[arg(
        long = "generate",
        value_name = "KIND",
        value_enum,
        hide = true,
        exclusive = true
    )]
    pub generate: Option<Generate>,
}

/// `--metrics`: counters served to Prometheus.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Prometheus exporter")]
pub struct Metrics {
    /// Serve the counts to Prometheus on PORT or ADDR:PORT (127.0.0.1 without ADDR, also
    /// for `:PORT`; 0.0.0.0:PORT for every address) at `/metrics`, read at each scrape, until
    /// SIGINT/SIGTERM: per-CPU counters of the -s events (the default set without -s), with
    /// -t per-process counters of the -p events (the default set without -p), labelled pid
    /// and comm, and with --metrics-cgroups per-cgroup counters; the exporter's own
    /// process_* and pmc_exporter_build_info. `--web.listen-address` is the same option
    /// under node_exporter's name.
    #[arg(long = "metrics", visible_alias = "web.listen-address", value_name = "[ADDR:]PORT", conflicts_with_all = ["command", "list", "diagnose", "selftest"])]
    pub metrics: Option<String>,

    /// With --metrics: TLS and basic auth from a web configuration file in node_exporter's
    /// --web.config.file format (tls_server_config: cert_file, key_file, client_auth_type,
    /// client_ca_file, min_version, max_version; basic_auth_users: NAME: BCRYPT-HASH).
    #[arg(long = "web.config.file", value_name = "FILE", requires = "metrics")]
    pub web_config_file: Option<PathBuf>,

    /// With --metrics -t: count at most N processes at once; further matches are
    /// refused and counted (pmc_process_exporter_targets_refused_total).
    #[arg(
        long = "metrics-max-targets",
        value_name = "N",
        requires = "metrics",
        default_value_t = 64
    )]
    pub metrics_max_targets: usize,

    /// With --metrics: also count every cgroup under ROOT (ROOT included), one series per
    /// cgroup as cAdvisor gives containers (pmc_cgroup_*, labelled cgroup="/PATH"), with the
    /// -s events (the default set, cpu-clock for task-clock, without -s). ROOT is a path
    /// below the cgroup mount as perf -G takes it (system.slice, / for all) or an absolute
    /// path. Cgroups created and removed are followed at each scrape. Linux only.
    #[arg(long = "metrics-cgroups", value_name = "ROOT", requires = "metrics")]
    pub metrics_cgroups: Option<String>,

    /// With --metrics-cgroups: count at most N cgroups at once; further ones are refused and
    /// counted (pmc_cgroup_exporter_cgroups_refused_total).
    #[arg(
        long = "metrics-max-cgroups",
        value_name = "N",
        requires = "metrics_cgroups",
        default_value_t = 64
    )]
    pub metrics_max_cgroups: usize,
}

/// `-t`: a process id, or a regular expression for command names.
#[derive(Clone, Debug)]
pub enum AttachSpec {
    /// One process.
    Pid(u32),
    /// Every process whose command name matches.
    Regex(regex::Regex),
}

/// `--generate`: what reference to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Generate {
    /// The man page, pmcstat.1 (roff).
    Man,
    /// bash completions.
    Bash,
    /// zsh completions.
    Zsh,
    /// fish completions.
    Fish,
    /// elvish completions.
    Elvish,
    /// PowerShell completions.
    Powershell,
}

/// The clap command: every option, for parsing and for the generated reference.
pub fn command() -> clap::Command {
    <Args as clap::CommandFactory>::command()
}

/// `--callgraph-order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CallgraphOrder {
    /// Sampled functions first, callers below (pmcstat(8) -G).
    Callee,
    /// Outermost callers first (top-down).
    Caller,
}

/// The default event set, as perf stat's.
pub const DEFAULT_EVENTS: [&str; 8] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// The largest `-n` period or `-F` frequency: the kernel rejects a period with the top
/// bit set (perf_event_open(2), `sample_period & (1ULL << 63)`).
pub const MAX_PERIOD: u64 = i64::MAX as u64;

/// The largest `-r` repeat count.
pub const MAX_REPEAT: u32 = 100_000;

/// The longest `-l` duration or `-w` interval: a year, in seconds.
pub const MAX_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// The shortest `-w` interval: 10 ms, perf stat's floor (`-I`: "print interval must be >= 10ms").
pub const MIN_INTERVAL_SECS: f64 = 0.01;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_bounded() {
        for bad in [
            "1e20", "1e300", "inf", "NaN", "-1", "0", "1e-9", "0.009", "x",
        ] {
            assert!(parse_interval(bad).is_err(), "-w {bad}");
        }
        for bad in ["1e20", "1e300", "inf", "0", "-0.5", "NaN"] {
            assert!(parse_duration(bad).is_err(), "-l {bad}");
        }
        assert_eq!(parse_interval("0.01"), Ok(0.01));
        assert_eq!(parse_duration("1e-9"), Ok(1e-9));
        // Every accepted value converts to a Duration without panicking.
        let _ = std::time::Duration::from_secs_f64(parse_duration(&MAX_SECS.to_string()).unwrap());
    }

    /// Issue 24: perf's -a where pmcstat(8)'s -a FILE cannot be meant.
    #[test]
    fn a_is_perfs_without_r_and_pmcstat8s_with_it() {
        let parse = |v: &[&str]| {
            let mut full = vec!["pmcstat"];
            full.extend_from_slice(v);
            Args::parse_args(&full).unwrap_or_else(|e| panic!("{v:?}: {e}"))
        };
        let a = parse(&["-a", "sleep", "1"]);
        assert!(a.pmcs.all_cpus && a.read.annotate_callchains.is_none());
        assert_eq!(a.command, ["sleep", "1"]);
        let a = parse(&["-va", "-e", "page-faults", "true"]);
        assert!(a.pmcs.all_cpus && a.output.verbose);
        let a = parse(&["-av", "-c", "0", "-P", "cpu-clock", "true"]);
        assert!(a.pmcs.all_cpus && a.output.verbose && a.pmcs.process_sampling.is_empty());
        assert_eq!(a.pmcs.system_sampling, ["cpu-clock"]);
        assert_eq!(a.pmcs.system_sampling_cpus, [Some("0".to_owned())]);
        // A command's own -R is the command's.
        let a = parse(&["-a", "grep", "-R", "x", "."]);
        assert!(a.pmcs.all_cpus && a.read.read_log.is_none());
        assert_eq!(a.command, ["grep", "-R", "x", "."]);
        let a = parse(&["-a", "--", "prog", "-a"]);
        assert_eq!(a.command, ["prog", "-a"]);
        // pmcstat(8)'s forms.
        for v in [
            &["-R", "l", "-a", "f"][..],
            &["-a", "f", "-R", "l"],
            &["-R", "l", "-G", "-", "-a", "-"],
        ] {
            let a = parse(v);
            assert!(!a.pmcs.all_cpus, "{v:?}");
            assert!(
                a.read.annotate_callchains.is_some() || a.read.callgraph.is_some(),
                "{v:?}"
            );
        }
        assert!(Args::parse_args(["pmcstat", "-a", "-p", "page-faults", "true"]).is_err());
    }

    #[test]
    fn numeric_options_are_usage_errors() {
        for args in [
            &["pmcstat", "-r", "4294967295", "true"][..],
            &["pmcstat", "-r", "0", "true"],
            &["pmcstat", "-w", "1e-9", "true"],
            &["pmcstat", "-l", "1e20", "-s", "task-clock"],
            &["pmcstat", "-t", "4294967295"],
            &["pmcstat", "-t", "0"],
            &["pmcstat", "-n", "0", "-P", "cpu-clock", "true"],
            &[
                "pmcstat",
                "-n",
                "9223372036854775808",
                "-P",
                "cpu-clock",
                "true",
            ],
            &["pmcstat", "--freq", "0", "-P", "cpu-clock", "true"],
            &["pmcstat", "--top", "1000001", "-R", "f", "--summary"],
            &["pmcstat", "-z", "-1", "-R", "f", "-G", "-"],
        ] {
            let e = Args::parse_args(args).expect_err(&args.join(" "));
            assert!(e.use_stderr(), "{}", args.join(" "));
        }
    }

    /// Issue 34: `-g` is pmcstat(8)'s gprof files with -R, perf record's `-g` with -P/-S,
    /// and a usage error naming both otherwise; perf's spellings keep user callers.
    #[test]
    fn g_is_perfs_without_r() {
        let a = Args::parse_args(["pmcstat", "-g", "-P", "cpu-clock", "true"]).unwrap();
        assert!(!a.read.gprof);
        assert_eq!(a.sampling.call_graph, Some(pmc::CallGraph::FramePointers));
        let s = crate::config::Sample::from(a);
        assert!(s.user_callchain, "-g keeps the user callers, as perf");
        let a = Args::parse_args(["pmcstat", "-R", "log", "-g"]).unwrap();
        assert!(a.read.gprof && a.sampling.call_graph.is_none());
        for bad in [
            &["pmcstat", "-g", "true"][..],
            &["pmcstat", "-g", "-N", "-P", "cpu-clock", "true"],
            &["pmcstat", "-g", "-D", "d", "-P", "cpu-clock", "true"],
        ] {
            let e = Args::parse_args(bad).expect_err(&bad.join(" ")).to_string();
            assert!(e.contains("gprof") && e.contains("perf record's -g"), "{e}");
        }
        let a = Args::parse_args(["pmcstat", "--call-graph", "dwarf", "-P", "cpu-clock", "x"]);
        assert!(crate::config::Sample::from(a.unwrap()).user_callchain);
        let a = Args::parse_args(["pmcstat", "-P", "cpu-clock", "x"]).unwrap();
        assert!(
            !crate::config::Sample::from(a).user_callchain,
            "pmcstat(8)'s default"
        );
    }
}
