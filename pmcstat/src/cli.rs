//! Command-line options, after FreeBSD pmcstat(8).

use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

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
-n N being N ticks (1 ms each for clock.hard). Sampling without -n/--freq: 4000 Hz for time \
events, every 65536 events otherwise (-v shows it).\n\nExamples:\n  pmcstat -- ls -R /usr/share\n  \
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

    /// Sampling period: one sample every RATE events of the event's unit (nanoseconds for
    /// cpu-clock/task-clock on Linux, ticks for clock.hard/clock.stat). Without -n or --freq:
    /// 4000 Hz for time events (cpu-clock, task-clock, clock.*), as perf record; every
    /// 65536 events otherwise, as pmcstat(8). -v shows the choice.
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

    /// How -P/-S take callchains, in perf record's spelling: `fp` (frame
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

    /// Size of each sample ring buffer in pages, a power of two (perf's
    /// -m/--mmap-pages; default 64 pages on Linux, 128 as perf's for root or
    /// CAP_IPC_LOCK, fewer when the locked-memory limit is low). Smaller fits a lower limit; larger loses fewer samples.
    #[arg(long = "mmap-pages", value_name = "PAGES", value_parser = parse_count::<1, 1_048_576>)]
    pub mmap_pages: Option<usize>,

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
    /// executable object and PMC, as DIR/EVENT/OBJECT.gmon (DIR from -D).
    #[arg(short = 'g', requires = "read_log")]
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

    /// With -w: toggle between incremental (default) and cumulative counts.
    #[arg(short = 'C')]
    pub cumulative: bool,

    /// Count for SECS seconds (for -t, -s, -S and -a without a command; more than 0, at
    /// most a year). Without it those run until SIGINT or SIGTERM.
    #[arg(short = 'l', value_name = "SECS", value_parser = parse_duration)]
    pub duration: Option<f64>,

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

    /// With -R: the root directory for object paths (from `-r DIR`).
    #[arg(skip)]
    pub fsroot: Option<PathBuf>,

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

    /// Serve the counts to Prometheus on PORT or ADDR:PORT (127.0.0.1 without ADDR) at
    /// `/metrics`, read at each scrape, until SIGINT/SIGTERM: per-CPU counters of the -s
    /// events (the default set without -s), and with -t per-process counters of the -p
    /// events (the default set without -p), labelled pid and comm.
    #[arg(long = "metrics", value_name = "[ADDR:]PORT", conflicts_with_all = ["command", "list", "diagnose", "selftest"])]
    pub metrics: Option<String>,

    /// With --metrics -t: count at most N processes at once; further matches are
    /// refused and counted (pmc_exporter_targets_refused_total).
    #[arg(
        long = "metrics-max-targets",
        value_name = "N",
        requires = "metrics",
        default_value_t = 64
    )]
    pub metrics_max_targets: usize,

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

    /// The command to run and count.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl Args {
    /// Parses a command line (the program's name first), with the options'
    /// positions for -c and -d.
    pub fn parse_args<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let mut cmd = Args::command();
        let argv = perf_all_cpus(argv.into_iter().map(Into::into).collect(), &cmd);
        let m = cmd.try_get_matches_from_mut(argv)?;
        // Not the `_mut` form, which takes the values out of `m`: the indices are read after.
        let mut args = Args::from_arg_matches(&m).map_err(|e| e.format(&mut cmd))?;
        args.positional(&m)?;
        args.checked()
    }

    /// pmcstat(8)'s positional -c and -d: each PMC gets the -c (the CPUs, for
    /// system mode) and the -d parity (for process mode) in force where it
    /// stands on the command line. A -c or -d that no PMC of its mode
    /// follows applies to the PMCs of that mode that none precedes, so that
    /// `-s SPEC -c 0` keeps working.
    fn positional(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        let idx =
            |id: &str| -> Vec<usize> { m.indices_of(id).map(|i| i.collect()).unwrap_or_default() };
        let c_at = idx("cpus");
        let d_at = idx("descendants_toggles");
        let (s_at, ss_at) = (idx("system"), idx("system_sampling"));
        let (p_at, ps_at) = (idx("process"), idx("process_sampling"));

        // -c: the last one before the PMC, else a trailing one.
        let last_system = s_at.iter().chain(&ss_at).copied().max();
        let trailing_c = c_at
            .iter()
            .zip(&self.cpus)
            .rfind(|(at, _)| last_system.is_some_and(|l| **at > l))
            .map(|(_, c)| c.clone());
        let cpus_at = |pmc: usize| -> Option<String> {
            c_at.iter()
                .zip(&self.cpus)
                .rfind(|(at, _)| **at < pmc)
                .map(|(_, c)| c.clone())
                .or_else(|| trailing_c.clone())
        };
        self.system_cpus = s_at.iter().map(|&i| cpus_at(i)).collect();
        self.system_sampling_cpus = ss_at.iter().map(|&i| cpus_at(i)).collect();
        if let Some(c) = &trailing_c {
            if s_at
                .iter()
                .chain(&ss_at)
                .all(|&i| c_at.iter().any(|&at| at < i))
            {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "-c {c} follows every system-mode PMC (-s, -S), and each has a -c \
                         before it: it applies to none (pmcstat(8)'s -c sets the CPUs of the \
                         system-mode PMCs after it)\n"
                    ),
                ));
            }
        }

        // -d: the parity of the toggles before the PMC, else of the trailing ones.
        let last_process = p_at.iter().chain(&ps_at).copied().max();
        let trailing_d = d_at
            .iter()
            .filter(|&&at| last_process.is_some_and(|l| at > l))
            .count();
        let descendants_at = |pmc: usize| -> bool {
            match d_at.iter().filter(|&&at| at < pmc).count() {
                0 => trailing_d % 2 == 1,
                n => n % 2 == 1,
            }
        };
        self.process_descendants = p_at.iter().map(|&i| descendants_at(i)).collect();
        self.process_sampling_descendants = ps_at.iter().map(|&i| descendants_at(i)).collect();
        Ok(())
    }

    /// Checks clap cannot express: `-F` without `-R` is most likely perf's
    /// `-F HZ` habit, so say where the frequency went.
    fn checked(mut self) -> Result<Args, clap::Error> {
        // perf's -I and -A where pmcstat(8) has them only for -R (its -I and
        // -A print symbol offsets and bare addresses): outside -R they are
        // perf's, with -R they are pmcstat(8)'s, which are not here.
        if self.read_log.is_some() && (self.interval_ms.is_some() || self.no_aggr) {
            let (o, what) = if self.no_aggr {
                (
                    "-A",
                    "addresses only; --dump prints the log's raw addresses",
                )
            } else {
                (
                    "-I",
                    "symbol offsets; -a FILE resolves every callchain node to symbol and file:line",
                )
            };
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{o} with -R is pmcstat(8)'s {what}: not in this pmcstat (without -R, {o} is perf stat's)\n"),
            ));
        }
        if let Some(why) = self
            .csv
            .as_deref()
            .and_then(crate::output::document::csv_separator_refused)
        {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("-x: {why}; give a separator such as ',' ';' or a tab\n"),
            ));
        }
        if let Some(what) = self.measuring_with_read_log() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{what} with -R: -R reads a log, it measures nothing (pmcstat(8) refuses -O \
                     with -R); record with -O FILE in one run, read it with -R FILE in the next\n"
                ),
            ));
        }
        if self.read_log.is_some() && !self.events.is_empty() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{PMCSTAT8_E}\n"),
            ));
        }
        self.all_cpus_checked()?;
        if let Some(v) = self.r_arg.take() {
            if self.read_log.is_some() {
                self.fsroot = Some(PathBuf::from(v));
            } else {
                match v.trim().parse::<u32>() {
                    Ok(n) if (1..=MAX_REPEAT).contains(&n) => self.repeat = Some(n),
                    _ => {
                        return Err(clap::Error::raw(
                            clap::error::ErrorKind::ValueValidation,
                            format!(
                                "-r {v}: the number of runs must be a whole number from 1 to \
                                 {MAX_REPEAT} (with -R, -r DIR is pmcstat(8)'s root directory \
                                 for object paths)\n"
                            ),
                        ))
                    }
                }
            }
        }
        if let Some(ms) = self.interval_ms {
            self.interval = Some(ms / 1000.0);
        }
        // Outside counting, --json-report is --json: those modes have one JSON form.
        if self.json_report
            && (self.read_log.is_some()
                || self.list
                || self.diagnose
                || self.selftest
                || self.describe.is_some())
        {
            self.json = true;
            self.json_report = false;
        }
        if self.no_aggr {
            self.per_cpu = true;
        }
        if self.calltree.is_some() && self.read_log.is_none() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                "-F FILE writes a callgrind file from a log and needs -R LOG \
                 (pmcstat(8)'s -F); to sample at a frequency as perf's -F does, use --freq HZ\n",
            ));
        }
        Ok(self)
    }
}

impl Args {
    /// With `-R`, the first option that measures (which `-R` would otherwise ignore): `-O`,
    /// a PMC (`-p`/`-s`/`-P`/`-S`), `-t`, `-l` or a command.
    fn measuring_with_read_log(&self) -> Option<&'static str> {
        self.read_log.as_ref()?;
        [
            (self.log.is_some(), "-O (the log to record)"),
            (!self.process.is_empty(), "-p (a counting PMC)"),
            (!self.system.is_empty(), "-s (a counting PMC)"),
            (!self.process_sampling.is_empty(), "-P (a sampling PMC)"),
            (!self.system_sampling.is_empty(), "-S (a sampling PMC)"),
            (self.attach.is_some(), "-t (a process to measure)"),
            (self.duration.is_some(), "-l (how long to measure)"),
            (!self.command.is_empty(), "a command (to measure)"),
        ]
        .into_iter()
        .find_map(|(given, what)| given.then_some(what))
    }

    /// perf's `-a`/`--all-cpus`: not with -R, -p or -t; the -P PMCs become
    /// system-wide ones (on the CPUs of the last -c), as `perf record -a`.
    fn all_cpus_checked(&mut self) -> Result<(), clap::Error> {
        if !self.all_cpus {
            return Ok(());
        }
        let refuse = |why: &str| {
            Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!("--all-cpus (perf's -a, every CPU) {why}\n"),
            ))
        };
        if self.read_log.is_some() {
            return refuse(
                "is for counting and sampling, not for reading a log; with -R, -a FILE is \
                 pmcstat(8)'s callchain listing",
            );
        }
        if self.attach.is_some() {
            return refuse("counts every process: give it without -t PID|REGEX");
        }
        if !self.process.is_empty() {
            return refuse(
                "counts every process, and -p counts one (pmcstat(8)'s process mode): use -e \
                 SPEC with -a, or -s SPEC beside -p",
            );
        }
        let cpus = self.cpus.last().cloned();
        let sampled = std::mem::take(&mut self.process_sampling);
        self.process_sampling_descendants.clear();
        self.system_sampling_cpus
            .extend(sampled.iter().map(|_| cpus.clone()));
        self.system_sampling.extend(sampled);
        Ok(())
    }
}

/// perf's `-a` where pmcstat(8)'s `-a FILE` cannot be meant: without `-R` among
/// pmcstat's options, each `-a` (alone or in a cluster such as `-av`) becomes
/// `--all-cpus`. pmcstat(8)'s form is kept when `-R` is there, read with `-a`
/// taking a value (`-a FILE -R LOG`) and, if a command follows, also with `-a`
/// as a flag (so `-a grep -R x .` is perf's: `grep -R` is the command's).
fn perf_all_cpus(argv: Vec<OsString>, cmd: &clap::Command) -> Vec<OsString> {
    let valued = scan_options(&argv, cmd, true);
    let flag = scan_options(&argv, cmd, false);
    if valued.read_log && (flag.read_log || !valued.command) {
        return argv;
    }
    if flag.a_at.is_empty() {
        return argv;
    }
    let mut out = Vec::with_capacity(argv.len() + flag.a_at.len());
    for (i, arg) in argv.into_iter().enumerate() {
        if !flag.a_at.contains(&i) {
            out.push(arg);
            continue;
        }
        // A short cluster with `a` as a flag: the letters before it, --all-cpus, the rest.
        let s = arg.to_string_lossy().into_owned();
        let body = &s[1..];
        let at = body.find('a').unwrap_or(0);
        if at > 0 {
            out.push(OsString::from(format!("-{}", &body[..at])));
        }
        out.push(OsString::from("--all-cpus"));
        if at + 1 < body.len() {
            out.push(OsString::from(format!("-{}", &body[at + 1..])));
        }
    }
    out
}

/// What [`scan_options`] found before the command.
struct Scanned {
    /// `-R` is among the options.
    read_log: bool,
    /// A command follows the options.
    command: bool,
    /// The arguments (by index) holding a flag `-a`.
    a_at: Vec<usize>,
}

/// Walks the options as clap does (values of options that take one skipped; the first
/// argument that is not an option, or `--`, starts the command), `-a` taking a value or not.
fn scan_options(argv: &[OsString], cmd: &clap::Command, a_valued: bool) -> Scanned {
    let takes_value = |short: Option<char>, long: Option<&str>| -> bool {
        if short == Some('a') {
            return a_valued;
        }
        cmd.get_arguments().any(|a| {
            (short.is_some() && a.get_short() == short || long.is_some() && a.get_long() == long)
                && a.get_action().takes_values()
        })
    };
    let is_value = |next: Option<&OsString>| {
        next.is_some_and(|n| n == "-" || !n.to_string_lossy().starts_with('-'))
    };
    let mut found = Scanned {
        read_log: false,
        command: false,
        a_at: Vec::new(),
    };
    let mut i = 1;
    while i < argv.len() {
        let s = argv[i].to_string_lossy();
        if s == "--" {
            found.command = i + 1 < argv.len();
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if !long.contains('=') && takes_value(None, Some(long)) && is_value(argv.get(i + 1)) {
                i += 1;
            }
        } else if s.len() > 1 && s.starts_with('-') {
            for (at, c) in s.char_indices().skip(1) {
                if c == 'R' {
                    found.read_log = true;
                }
                if c == 'a' && !a_valued {
                    found.a_at.push(i);
                    // A second `a` in one cluster is rewritten with the first.
                    continue;
                }
                if takes_value(Some(c), None) {
                    if at + c.len_utf8() == s.len() && is_value(argv.get(i + 1)) {
                        i += 1;
                    }
                    break;
                }
            }
        } else {
            found.command = true;
            break;
        }
        i += 1;
    }
    found.a_at.dedup();
    found
}

impl Args {
    /// The clap command, for walking a command line's options.
    fn command_for_scan() -> clap::Command {
        <Args as clap::CommandFactory>::command()
    }
}

/// `-c`: a CPU list `Cpus::parse_list` takes, kept as typed.
fn parse_cpus(s: &str) -> Result<String, String> {
    pmc::Cpus::parse_list(s).map(|_| s.to_owned())
}

/// `-t`: a process id, or a regular expression for command names.
#[derive(Clone, Debug)]
pub enum AttachSpec {
    /// One process.
    Pid(u32),
    /// Every process whose command name matches.
    Regex(regex::Regex),
}

/// pmcstat(8)'s rule: an argument that is a whole number is a pid, anything
/// else a regular expression.
fn parse_attach(s: &str) -> Result<AttachSpec, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u32>() {
            Ok(p) if (1..=i32::MAX as u32).contains(&p) => Ok(AttachSpec::Pid(p)),
            _ => Err(format!(
                "`{s}` is not a process id (1 to {}); a command name pattern is a regular \
                 expression that is not a number",
                i32::MAX
            )),
        };
    }
    if s.is_empty() {
        return Err("give a process id or a regular expression for command names".into());
    }
    regex::Regex::new(s)
        .map(AttachSpec::Regex)
        .map_err(|e| format!("`{s}` is neither a process id nor a valid regular expression: {e}"))
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

/// Seconds in `[min, MAX_SECS]` (`min` itself excluded when `open`).
fn parse_secs(s: &str, min: f64, open: bool) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    let low_ok = if open { v > min } else { v >= min };
    if !(v.is_finite() && low_ok && v <= MAX_SECS) {
        let low = if open { "more than" } else { "at least" };
        return Err(format!(
            "`{s}` is out of range: give {low} {min} and at most {MAX_SECS} seconds (a year)"
        ));
    }
    Ok(v)
}

/// `-w SECS`: 10 ms to a year.
fn parse_interval(s: &str) -> Result<f64, String> {
    parse_secs(s, MIN_INTERVAL_SECS, false)
}

/// `-I MS`: 10 ms to a year, in milliseconds.
fn parse_interval_ms(s: &str) -> Result<f64, String> {
    let ms: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of milliseconds"))?;
    parse_interval(&(ms / 1000.0).to_string())
        .map(|secs| secs * 1000.0)
        .map_err(|e| format!("{e} (-I takes milliseconds: {s} ms)"))
}

/// `-l SECS`: more than 0, at most a year.
fn parse_duration(s: &str) -> Result<f64, String> {
    parse_secs(s, 0.0, true)
}

/// A count in `[MIN, MAX]`.
fn parse_count<const MIN: usize, const MAX: usize>(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(v) if (MIN..=MAX).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a whole number from {MIN} to {MAX}")),
    }
}

/// pmcstat(8)'s options that this pmcstat does not have, each with what it
/// does there and what to use here instead.
const PMCSTAT8_MISSING: &[(&str, &str)] = &[
    ("-b", "PMU groups (AMD's fork of pmcstat(8)) are not in this pmcstat; -e with several events counts them, and the library's Backend::allocate_group schedules events together"),
    ("-M", "pmcstat(8)'s map file is not needed here: object paths are read from the log itself"),
    ("-f", "pmcstat(8)'s plugin options are not in this pmcstat; -z DEPTH limits the call graph's depth"),
];

/// pmcstat(8)'s `-e` (with `-g`), which this pmcstat's `-e` (perf's) is not.
const PMCSTAT8_E: &str = "-e with -R is pmcstat(8)'s wide history counters for -g's gprof \
    files: not in this pmcstat, whose gmon files have GNU gprof's 16-bit counters (saturating \
    at 65535 samples per bucket; FreeBSD's wide counters need its own gprof); without -R, \
    -e SPEC is perf stat's event list";

/// pmcstat(8)'s `-I` (value-less, with `-R`), which this pmcstat's `-I MS` (perf's) is not.
const PMCSTAT8_I: &str = "-I with -R is pmcstat(8)'s symbol offsets: not in this pmcstat \
    (-a FILE resolves every callchain node to symbol and file:line); without -R, -I MS is \
    perf stat's interval in milliseconds";

/// pmcstat(8)'s `-a FILE` given without its FILE.
const PMCSTAT8_A: &str = "-a FILE with -R writes every callchain node resolved to its \
    function and file:line to FILE (pmcstat(8)'s -a; `-` for standard output): give the \
    FILE; perf's -a (every CPU) is -a without -R, or --all-cpus";

/// pmcstat's own message for clap's errors about pmcstat(8)'s letters: an
/// unknown option (clap's tip, "to pass '-T' as a value, use '-- -T'",
/// would run the option as the command), and pmcstat(8)'s value-less `-I`
/// and `-e` or `-a` without its FILE, which clap reports as a missing value
/// of this pmcstat's options. `argv` is the command line (for `-R`).
pub fn usage_message(e: &clap::Error, argv: &[OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(s) => s.clone(),
        _ => return None,
    };
    if matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::NoEquals | ErrorKind::MissingRequiredArgument
    ) {
        let read_log = scan_options(argv, &Args::command_for_scan(), true).read_log;
        let name = arg.split([' ', '=']).next().unwrap_or(&arg);
        return match name {
            "-I" if read_log => Some(PMCSTAT8_I.into()),
            "--event" | "-e" if read_log => Some(PMCSTAT8_E.into()),
            "-a" if read_log => Some(PMCSTAT8_A.into()),
            _ => None,
        };
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    // `-Ex` is clap's `-E` with `x` attached (or a cluster): judge the letter.
    let letter: String = arg.chars().take(2).collect();
    let known = if arg.starts_with("--") {
        None
    } else {
        PMCSTAT8_MISSING.iter().find(|(o, _)| *o == letter)
    };
    Some(match known {
        Some((o, what)) => format!("{o}: {what}"),
        None => format!("unknown option '{arg}'"),
    })
}

fn parse_call_graph(s: &str) -> Result<pmc::CallGraph, String> {
    pmc::CallGraph::parse(s)
}

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
        assert!(a.all_cpus && a.annotate_callchains.is_none());
        assert_eq!(a.command, ["sleep", "1"]);
        let a = parse(&["-va", "-e", "page-faults", "true"]);
        assert!(a.all_cpus && a.verbose);
        let a = parse(&["-av", "-c", "0", "-P", "cpu-clock", "true"]);
        assert!(a.all_cpus && a.verbose && a.process_sampling.is_empty());
        assert_eq!(a.system_sampling, ["cpu-clock"]);
        assert_eq!(a.system_sampling_cpus, [Some("0".to_owned())]);
        // A command's own -R is the command's.
        let a = parse(&["-a", "grep", "-R", "x", "."]);
        assert!(a.all_cpus && a.read_log.is_none());
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
            assert!(!a.all_cpus, "{v:?}");
            assert!(
                a.annotate_callchains.is_some() || a.callgraph.is_some(),
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
}
