//! Printing counts, one file per format behind [`CountFormat`]:
//! perf-stat-style text (`table`), CSV (`-x`, `csv`), perf stat's JSON lines
//! (`--json`, `json`), pmcstat's own JSON document (`--json-report`,
//! `json_report`) and pmcstat(8)'s columns (`--columns`, `columns`). This
//! file holds what they share: the rows, their metrics, the `-r` statistics.

mod columns;
mod csv;
mod json;
mod json_report;
mod table;

use crate::config::{Format, Print};
use crate::dest::{create_file, stderr_stream, write_outcome, Checked, Dest};
use crate::error::Failure;
use pmc::{Error, NativeField, Reading, Scope, Status};
use std::io::Write;
use std::time::Duration;

/// One line of output: a counter (or one CPU of it) and its reading.
pub struct Counter {
    pub event: String,
    pub scope: Scope,
    pub cpu: Option<u32>,
    pub reading: Reading,
    pub error: Option<String>,
}

/// Everything printed at the end.
pub struct Report {
    pub command: Vec<String>,
    /// `-t`'s processes.
    pub pids: Vec<u32>,
    pub exit_status: Option<i32>,
    pub elapsed: Duration,
    pub counters: Vec<Counter>,
    /// For process-scope counters: whether the target's child processes
    /// were counted too (`None`: system scope only).
    pub descendants: Option<bool>,
    /// With -d toggled between the process PMCs: the events that counted the
    /// child processes (empty otherwise).
    pub with_children: Vec<String>,
    /// CPU time of child processes that ran uncounted (`-p` without `-d`).
    pub uncounted_children_ns: Option<u64>,
    /// Some events were narrowed to user mode (`:u`) by the system's policy.
    pub user_only: bool,
    /// CPU time of the launched command and the descendants it waited for,
    /// in user and in kernel mode, from `getrusage(RUSAGE_CHILDREN)` (what
    /// `perf stat` prints as `seconds user` / `seconds sys`).
    pub user_sys: Option<(Duration, Duration)>,
    /// `-E`: each process's counts at its exit.
    pub exits: Option<crate::exits::ExitCounts>,
}

impl Report {
    /// One-line notes about what was not counted, each with its fix.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(ns) = self.uncounted_children_ns {
            notes.push(format!(
                "child processes ran {:.2} msec of task-clock that the -p counters above without -d \
                 exclude: add -d before them (or use -e) to count the command's descendants",
                ns as f64 / 1e6
            ));
        }
        if self.user_only {
            notes.push(
                "events marked :u counted user mode only: this process may not count the kernel \
                 (Linux: perf_event_paranoid >= 2 without CAP_PERFMON); to count it too, run with \
                 CAP_PERFMON or lower the level: sysctl -w kernel.perf_event_paranoid=1"
                    .to_owned(),
            );
        }
        notes
    }
}

/// Where output goes: standard error (as perf stat and pmcstat do) or `-o FILE`,
/// in the run's format.
pub struct Sink {
    out: Checked<Dest>,
    /// What the output is, for messages: `standard error` or the file's path.
    name: String,
    /// The format's writer ([`writer`]).
    writer: Box<dyn CountFormat>,
    /// `-C`: intervals count from the start.
    cumulative: bool,
    /// When the previous `-w`/`-I` interval ended (its rows' time base).
    last_interval: Duration,
}

/// One counting output format: how a `-w`/`-I` interval, a run's report, the
/// `-r N` summary and `-E`'s counts at exit print. A new format is a file in
/// `output/` with a type implementing this, an arm of [`crate::config::Format`]
/// and one in [`writer`].
pub trait CountFormat {
    /// One interval, `at` since the start; `secs` is the span its rows count over.
    fn interval(&mut self, o: &mut dyn Write, at: Duration, secs: Option<f64>, c: &[Counter]);
    /// The report of one run.
    fn report(&mut self, o: &mut dyn Write, r: &Report);
    /// The summary of `-r N` runs.
    fn repeated(&mut self, o: &mut dyn Write, s: &Repeated<'_>);
    /// `-E`: the counts at process exit (text; JSON Lines in the JSON formats).
    fn exits(&mut self, o: &mut dyn Write, e: &crate::exits::ExitCounts) {
        let _ = e.write(o);
    }
}

/// What the `-r N` summary prints from.
pub struct Repeated<'a> {
    /// Every run.
    pub runs: &'a [Report],
    /// Per counter, the statistics of its scaled values.
    pub stats: &'a [RepeatStat],
    /// The elapsed times' statistics (ns).
    pub elapsed: &'a RepeatStat,
    /// The mean counters.
    pub means: &'a [Counter],
    /// The mean elapsed time in seconds.
    pub secs: Option<f64>,
}

/// The writer of the run's format: the one place a format is chosen.
fn writer(args: &Print) -> Box<dyn CountFormat> {
    let intervals = args.intervals;
    match &args.format {
        Format::Table => Box::new(table::Table::new(args.quiet, args.perf_header)),
        Format::Csv(sep) => Box::new(csv::Csv::new(sep, args.quiet, intervals)),
        Format::Json => Box::new(json::Json::new(intervals)),
        Format::JsonReport => Box::new(json_report::JsonReport),
        Format::Columns => Box::new(columns::Columns::default()),
    }
}

fn status_str(r: &Reading) -> &'static str {
    match r.status() {
        Status::Ok => "ok",
        Status::NotCounted => "not-counted",
        Status::NotSupported => "not-supported",
    }
}

/// A row's error as a short reason for its line and the whole explanation,
/// printed once for all the rows that share it: "`cycles` is not supported:
/// this machine exposes no hardware PMU (no /sys/...)" gives the first
/// clause, "this machine exposes no hardware PMU", and everything after the
/// event's name.
fn split_reason<'a>(event: &str, msg: &'a str) -> (&'a str, &'a str) {
    let quoted = format!("`{event}`");
    let full = msg
        .strip_prefix(quoted.as_str())
        .map(|rest| {
            rest.trim_start_matches(" is not supported")
                .trim_start_matches(':')
                .trim_start()
        })
        .filter(|rest| !rest.is_empty())
        .unwrap_or(msg);
    let short = full
        .split([';', '\n'])
        .next()
        .unwrap_or(full)
        .split(" (")
        .next()
        .unwrap_or(full)
        .trim();
    (short, full)
}

/// A clock of CPU time, task-clock or cpu-clock: perf stat's "CPUs utilized" row and the base
/// of the other rows' rates (`perf stat -a` counts cpu-clock; stat-shadow.c treats both so).
fn is_task_clock(event: &str) -> bool {
    matches!(
        event
            .parse::<pmc::EventSpec>()
            .ok()
            .and_then(|s| s.as_portable()),
        Some(pmc::PortableEvent::TaskClock | pmc::PortableEvent::CpuClock)
    )
}

/// A nanosecond clock, printed in msec: `cpu-clock`, `task-clock`. FreeBSD's SOFT clocks
/// (`SOFT-CLOCK.HARD`) count ticks and print as counts.
fn is_clock(event: &str) -> bool {
    event
        .parse::<pmc::EventSpec>()
        .ok()
        .and_then(|s| s.as_portable())
        .is_some_and(|p| p.is_clock())
}

/// `1234567` -> `1,234,567`.
fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A row's event name, as perf labels it. ` (system)` tells a system-wide counter from a
/// process one only when a run has both (`-s` with `-p`): a run of system-wide counters alone
/// (`-a`, `-s`) says so once, in its header (`'system wide'`), as perf stat -a.
fn label(c: &Counter, all: &[Counter]) -> String {
    match (&c.scope, c.cpu) {
        (_, Some(cpu)) => format!("{} (CPU {cpu})", c.event),
        (Scope::System { .. }, None) if !all_system(all) => format!("{} (system)", c.event),
        _ => c.event.clone(),
    }
}

/// Every counter is system-wide (and there is one).
fn all_system(all: &[Counter]) -> bool {
    !all.is_empty() && all.iter().all(|c| matches!(c.scope, Scope::System { .. }))
}

impl Sink {
    /// Opens `-o FILE`, or standard error.
    pub fn open(path: Option<&std::path::Path>, args: &Print) -> std::io::Result<Sink> {
        let (out, name): (Dest, String) = match path {
            Some(p) => (create_file(p)?, p.display().to_string()),
            None => (Dest::Stream(stderr_stream()), "standard error".into()),
        };
        Ok(Sink::to(Checked::new(out), name, args))
    }

    /// Flushes, and reports the first write error (a closed pipe is a quiet success).
    pub fn finish(&mut self) -> Result<(), Failure> {
        let r = self.out.finish().and_then(|()| self.out.get_mut().commit());
        write_outcome(r, &format!("the counts to {}", self.name))
    }

    /// `-v`: the native configuration of each PMC.
    pub fn verbose(
        &mut self,
        event: &str,
        scope: &str,
        fields: Option<Vec<NativeField>>,
        err: Option<&Error>,
    ) {
        let o = &mut self.out;
        let _ = writeln!(
            o,
            "------------------------------------------------------------"
        );
        let _ = writeln!(o, "{event}: native configuration:");
        let _ = writeln!(o, "  {:<32} {scope}", "(pmcstat) scope");
        match (fields, err) {
            (Some(fields), _) => {
                for f in fields {
                    let _ = writeln!(o, "  {:<32} {}", f.name, f.value);
                }
            }
            (None, Some(e)) => {
                let _ = writeln!(o, "  not opened: {}", e.message());
            }
            (None, None) => {}
        }
        let _ = writeln!(
            o,
            "------------------------------------------------------------"
        );
        // Before the run's own messages on standard error.
        let _ = o.flush();
    }

    /// A sink writing to `out` in `args`' format.
    fn to(out: Checked<Dest>, name: String, args: &Print) -> Sink {
        Sink {
            out,
            name,
            writer: writer(args),
            cumulative: args.cumulative,
            last_interval: Duration::ZERO,
        }
    }

    /// `-E`: the counts at process exit, after the counts.
    pub fn exits(&mut self, e: &crate::exits::ExitCounts) {
        self.writer.exits(&mut self.out, e);
        let _ = self.out.flush();
    }

    /// One interval of `-w` (a row of `--columns`).
    pub fn interval(&mut self, at: Duration, counters: &[Counter]) {
        // The time the rows count over, for CPUs utilized: the interval, or with -C
        // the whole run so far.
        let span = if self.cumulative {
            at
        } else {
            at.saturating_sub(self.last_interval)
        };
        self.last_interval = at;
        let secs = Some(span.as_secs_f64());
        self.writer.interval(&mut self.out, at, secs, counters);
        let _ = self.out.flush();
    }

    /// The final report.
    pub fn report(&mut self, r: &Report) {
        self.writer.report(&mut self.out, r);
        let _ = self.out.flush();
    }

    /// The summary of `-r N` runs: per counter, the mean of the scaled
    /// values and the relative standard error of that mean.
    pub fn repeated(&mut self, runs: &[Report]) {
        let Some(first) = runs.first() else { return };
        let stats: Vec<RepeatStat> = (0..first.counters.len())
            .map(|i| RepeatStat::of(runs.iter().filter_map(|r| r.counters.get(i))))
            .collect();
        let elapsed = RepeatStat::of_values(runs.iter().map(|r| r.elapsed.as_nanos() as f64));
        let means = mean_counters(runs, &stats);
        let secs = Some(elapsed.mean / 1e9);
        let summary = Repeated {
            runs,
            stats: &stats,
            elapsed: &elapsed,
            means: &means,
            secs,
        };
        self.writer.repeated(&mut self.out, &summary);
        let _ = self.out.flush();
    }
}

/// perf stat's derived metrics for each counter (`pmc::metrics::derive`),
/// pairing counters only within the same CPU line, from scaled values.
fn derived_metrics(counters: &[Counter]) -> Vec<Vec<pmc::metrics::Derived>> {
    let mut out = vec![Vec::new(); counters.len()];
    let specs: Vec<Option<pmc::EventSpec>> =
        counters.iter().map(|c| c.event.parse().ok()).collect();
    let mut cpus: Vec<Option<u32>> = counters.iter().map(|c| c.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        let members: Vec<(usize, &pmc::EventSpec)> = counters
            .iter()
            .zip(&specs)
            .enumerate()
            .filter(|(_, (c, _))| c.cpu == cpu && c.reading.status() == Status::Ok)
            .filter_map(|(i, (_, s))| s.as_ref().map(|s| (i, s)))
            .collect();
        let events: Vec<(&pmc::EventSpec, &Reading)> = members
            .iter()
            .map(|(i, s)| (*s, &counters[*i].reading))
            .collect();
        for d in pmc::metrics::derive(&events) {
            out[members[d.index].0].push(d);
        }
    }
    out
}

/// Mean and spread of one counter over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatStat {
    /// Runs in which the counter counted.
    pub count: usize,
    /// Mean of the scaled values.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
}

impl RepeatStat {
    fn of<'a>(counters: impl Iterator<Item = &'a Counter>) -> RepeatStat {
        RepeatStat::of_values(
            counters
                .filter_map(|c| c.reading.scaled())
                .map(|v| v as f64),
        )
    }

    /// Welford's algorithm over the values.
    pub fn of_values(values: impl Iterator<Item = f64>) -> RepeatStat {
        let (mut n, mut mean, mut m2) = (0usize, 0.0f64, 0.0f64);
        for x in values {
            n += 1;
            let d = x - mean;
            mean += d / n as f64;
            m2 += d * (x - mean);
        }
        let stddev = if n > 1 {
            (m2 / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        RepeatStat {
            count: n,
            mean,
            stddev,
        }
    }

    /// The standard error of the mean relative to the mean, in percent
    /// (what `perf stat -r` prints as `+- x%`).
    pub fn rel_stderr_pct(&self) -> Option<f64> {
        (self.count > 0 && self.mean != 0.0)
            .then(|| 100.0 * self.stddev / (self.count as f64).sqrt() / self.mean)
    }
}

fn text_value(c: &Counter, all: &[Counter]) -> String {
    let name = label(c, all);
    match c.reading.status() {
        Status::NotSupported => format!("{:>18}      {name}", "<not supported>"),
        Status::NotCounted => format!("{:>18}      {name}", "<not counted>"),
        Status::Ok => {
            let v = c.reading.scaled().unwrap_or(0);
            if is_clock(&c.event) {
                format!("{:>18.2} msec {name}", v as f64 / 1e6)
            } else {
                format!("{:>18}      {name}", thousands(v))
            }
        }
    }
}

/// perf stat's metric for one row, as (value, unit): the derived metric when
/// its partner event was counted too (stat-shadow.c), else CPUs utilized for
/// a task clock (over `secs`, when known), else the rate per second of
/// task-clock time.
fn row_metric(
    c: &Counter,
    derived: &[pmc::metrics::Derived],
    task_ms: Option<f64>,
    secs: Option<f64>,
) -> Option<(f64, String)> {
    if c.reading.status() != Status::Ok {
        return None;
    }
    if let Some(m) = derived.first() {
        return Some((m.value, m.metric.unit().to_owned()));
    }
    let v = c.reading.scaled().unwrap_or(0) as f64;
    if is_task_clock(&c.event) {
        let secs = secs.filter(|s| *s > 0.0)?;
        return Some((v / 1e9 / secs, "CPUs utilized".to_owned()));
    }
    let ms = task_ms.filter(|m| *m > 0.0 && !is_clock(&c.event))?;
    let per_sec = v / (ms / 1e3);
    Some(if per_sec >= 1e9 {
        (per_sec / 1e9, "G/sec".to_owned())
    } else if per_sec >= 1e6 {
        (per_sec / 1e6, "M/sec".to_owned())
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "K/sec".to_owned())
    } else {
        (per_sec, "/sec".to_owned())
    })
}

/// perf stat's metric of one row: its value and unit (the `-x` and `--json`
/// columns) and the comment the text table prints after the count.
struct RowMetric {
    value: f64,
    unit: String,
    text: String,
}

/// Each counter's metric ([`row_metric`]) and the further derived metrics of
/// its event, which perf prints on lines of their own. Counters pair only
/// within one CPU line (perf's `-A`: each CPU's rate is over its own
/// task-clock); `secs` is the time the counts cover, for CPUs utilized: the
/// run, the interval (`-I`, `-w`), or the mean run (`-r`).
fn row_metrics(
    counters: &[Counter],
    secs: Option<f64>,
) -> Vec<(Option<RowMetric>, Vec<pmc::metrics::Derived>)> {
    let task_ms = |cpu: Option<u32>| {
        counters
            .iter()
            .find(|t| t.cpu == cpu && is_task_clock(&t.event) && t.reading.status() == Status::Ok)
            .and_then(|t| t.reading.scaled())
            .map(|ns| ns as f64 / 1e6)
    };
    counters
        .iter()
        .zip(derived_metrics(counters))
        .map(|(c, mut derived)| {
            let m = row_metric(c, &derived, task_ms(c.cpu), secs)
                .filter(|(value, _)| value.is_finite())
                .map(|(value, unit)| RowMetric {
                    text: match derived.first() {
                        Some(d) => d.to_string(),
                        None => format!("#  {value:>8.3} {unit}"),
                    },
                    value,
                    unit,
                });
            let more = if derived.is_empty() {
                derived
            } else {
                derived.split_off(1)
            };
            (m, more)
        })
        .collect()
}

/// `-r N`: each counter of the first run with the mean of its counts over the
/// runs that counted it (and the mean time it ran), for the metrics of the means.
fn mean_counters(runs: &[Report], stats: &[RepeatStat]) -> Vec<Counter> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .counters
        .iter()
        .zip(stats)
        .enumerate()
        .map(|(i, (c, st))| {
            let running = RepeatStat::of_values(
                runs.iter()
                    .filter_map(|r| r.counters.get(i))
                    .filter(|c| c.reading.status() == Status::Ok)
                    .map(|c| c.reading.time_running as f64),
            );
            let run_ns = (running.mean.round() as u64).max(1);
            Counter {
                event: c.event.clone(),
                scope: c.scope.clone(),
                cpu: c.cpu,
                reading: if st.count > 0 {
                    Reading::new(st.mean.round() as u64, run_ns, run_ns)
                } else {
                    c.reading
                },
                error: None,
            }
        })
        .collect()
}

/// The running percentage of `-x` and `-j` rows: time running over time enabled, 0 for an
/// event that never ran, and 100 for one that could not be opened, as perf writes it.
fn running_pct(c: &Counter) -> f64 {
    match c.reading.status() {
        Status::NotSupported => 100.0,
        _ => c.reading.running_ratio().map_or(0.0, |q| q * 100.0),
    }
}

#[cfg(test)]
mod tests {
    use super::columns::{columns_header, columns_values};
    use super::csv::csv_rows;
    use super::json_report::json_counter;
    use super::*;

    /// A `Write` whose bytes the test reads back after the sink is done with it.
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `--columns`' layout, worked out from pmcstat(8)'s format strings: a
    /// 64-bit counter is 20 digits wide, the names right-aligned (`p/`) or
    /// left-aligned after the skip (`s/NN/`), the first field 2 wider for `# `.
    #[test]
    fn columns_layout_is_pmcstat8s() {
        let counter = |event: &str, system: bool, cpu: Option<u32>, value: u64| Counter {
            event: event.into(),
            scope: if system {
                Scope::System {
                    cpu: pmc::Cpus::All,
                }
            } else {
                Scope::Process
            },
            cpu,
            reading: {
                let mut r = Reading::default();
                r.value = value;
                r.time_enabled = 1;
                r.time_running = 1;
                r
            },
            error: None,
        };
        let cols = [
            counter("page-faults", false, None, 123),
            counter("task-clock", true, Some(1), 4567),
            counter("instructions,usr", false, None, 8),
        ];
        let h = columns_header(&cols);
        assert_eq!(
            h,
            format!(
                "# {}p/page-faults {}s/01/task-clock {}p/instructions ",
                " ".repeat(7),
                " ".repeat(5),
                " ".repeat(6)
            )
        );
        let r = columns_values(&cols);
        assert_eq!(
            r,
            format!("{:>22} {:>20} {:>20} ", 123, 4567, 8),
            "{h}\n{r}"
        );
        assert_eq!(h.len(), r.len());
        // A name longer than 20 widens its column.
        let long = [counter("a-very-long-event-name-here", false, None, 1)];
        assert_eq!(columns_header(&long), "# p/a-very-long-event-name-here ");
        assert_eq!(columns_values(&long), format!("{:>31} ", 1));
    }

    #[test]
    fn repeat_statistics() {
        let st = RepeatStat::of_values([10.0, 12.0, 14.0].into_iter());
        assert_eq!(st.count, 3);
        assert!((st.mean - 12.0).abs() < 1e-9);
        assert!((st.stddev - 2.0).abs() < 1e-9);
        let pct = st.rel_stderr_pct().unwrap();
        assert!((pct - 100.0 * 2.0 / 3f64.sqrt() / 12.0).abs() < 1e-9);
        assert_eq!(
            RepeatStat::of_values(std::iter::empty()).rel_stderr_pct(),
            None
        );
    }

    /// The derived comments, laid out as perf stat 6.1 prints them
    /// (`stat-display.c`: the value column, the name, then `# metric`).
    #[test]
    fn derived_metrics_print_like_perf_stat() {
        let c = |event: &str, r| Counter {
            event: event.into(),
            scope: Scope::Process,
            cpu: None,
            reading: r,
            error: None,
        };
        let report = Report {
            command: vec!["prog".into()],
            pids: Vec::new(),
            exit_status: Some(0),
            elapsed: Duration::from_millis(2),
            descendants: Some(true),
            with_children: Vec::new(),
            uncounted_children_ns: None,
            user_sys: None,
            exits: None,
            user_only: false,
            counters: vec![
                c("task-clock", Reading::new(1_000_000, 1, 1)),
                c("cycles", Reading::new(2_000_000, 10, 5)), // multiplexed: 4,000,000
                c("instructions", Reading::new(4_000_000, 1, 1)),
                c("stalled-cycles-frontend", Reading::new(1_000_000, 1, 1)),
                c("branches", Reading::new(800_000, 1, 1)),
                c("branch-misses", Reading::new(8_000, 1, 1)),
                c("cache-references", Reading::new(10_000, 1, 1)),
                c("cache-misses", Reading::new(0, 1, 0)), // not counted: no ratio
            ],
        };
        let buf = Buf::default();
        table::Table::text(&mut buf.clone(), &report, false);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let line = |name: &str| {
            text.lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("no {name} line in {text}"))
                .to_owned()
        };
        assert!(
            line("cycles").ends_with("#    4.000 GHz                   (50.00%)"),
            "{text}"
        );
        assert!(
            line("instructions").ends_with("#    1.00  insn per cycle"),
            "{text}"
        );
        assert!(
            text.contains(&format!("\n{:52} #    0.25  stalled cycles per insn\n", "")),
            "{text}"
        );
        assert!(
            line("stalled-cycles-frontend").ends_with("#   25.00% frontend cycles idle"),
            "{text}"
        );
        assert!(
            line("branch-misses").ends_with("#    1.00% of all branches"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("<not counted>") && l.ends_with("cache-misses")),
            "{text}"
        );
        assert!(!text.contains("cache refs"), "{text}");
        // The value column: 18 wide, then 6 spaces, then the name.
        assert!(
            line("instructions").starts_with("         4,000,000      instructions "),
            "{text}"
        );
    }

    /// IPC and the miss ratios are on interval rows (text, -x, --json) and on
    /// -r's means too, not only in the total table.
    #[test]
    fn derived_metrics_on_interval_and_repeat_rows() {
        let c = |event: &str, v: u64| Counter {
            event: event.into(),
            scope: Scope::Process,
            cpu: None,
            reading: Reading::new(v, 1000, 1000),
            error: None,
        };
        let counters = [
            c("task-clock", 2_000_000),
            c("cycles", 4_000_000),
            c("instructions", 6_000_000),
            c("branches", 1_000_000),
            c("branch-misses", 20_000),
        ];
        let printed = |argv: &[&str], repeat: bool| {
            let buf = Buf::default();
            let args = crate::cli::Args::parse_args(argv.iter().copied()).unwrap();
            let print = Print::new(&args, Format::of(&args));
            let out = Checked::new(Dest::Stream(Box::new(buf.clone())));
            let mut sink = Sink::to(out, "test".into(), &print);
            if repeat {
                let run = |ms| Report {
                    command: vec!["prog".into()],
                    pids: Vec::new(),
                    exit_status: Some(0),
                    elapsed: Duration::from_millis(ms),
                    descendants: Some(true),
                    with_children: Vec::new(),
                    uncounted_children_ns: None,
                    user_sys: None,
                    exits: None,
                    user_only: false,
                    counters: counters
                        .iter()
                        .map(|c| Counter {
                            event: c.event.clone(),
                            scope: Scope::Process,
                            cpu: None,
                            reading: c.reading,
                            error: None,
                        })
                        .collect(),
                };
                sink.repeated(&[run(4), run(4)]);
            } else {
                sink.interval(Duration::from_millis(4), &counters);
            }
            let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
            text
        };
        for (argv, repeat) in [
            (&["pmcstat", "-I", "100", "-e", "cycles", "true"][..], false),
            (&["pmcstat", "-r", "2", "-e", "cycles", "true"], true),
        ] {
            let text = printed(argv, repeat);
            let line = |e: &str| {
                text.lines()
                    .find(|l| l.split_whitespace().any(|w| w == e))
                    .unwrap_or_else(|| panic!("{e}: {text}"))
                    .to_owned()
            };
            assert!(
                line("instructions").contains("#    1.50  insn per cycle"),
                "{text}"
            );
            assert!(
                line("branch-misses").contains("#    2.00% of all branches"),
                "{text}"
            );
            assert!(line("task-clock").contains("0.500 CPUs utilized"), "{text}");
            for (flag, want) in [
                ("-x,", ",1.500,insn per cycle"),
                (
                    "--json",
                    "\"metric-value\" : 1.500000, \"metric-unit\" : \"insn per cycle\"",
                ),
            ] {
                let mut a = argv.to_vec();
                a.insert(1, flag);
                let text = printed(&a, repeat);
                assert!(
                    line_with(&text, "instructions").contains(want),
                    "{flag}: {text}"
                );
            }
        }
        fn line_with(text: &str, event: &str) -> String {
            text.lines()
                .find(|l| l.contains(&format!("{event},")) || l.contains(&format!("\"{event}\"")))
                .unwrap_or_default()
                .to_owned()
        }
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn states_print_like_perf() {
        let c = |r| Counter {
            event: "cycles".into(),
            scope: Scope::Process,
            cpu: None,
            reading: r,
            error: None,
        };
        assert!(text_value(&c(Reading::not_supported()), &[]).contains("<not supported>"));
        assert!(text_value(&c(Reading::new(5, 10, 0)), &[]).contains("<not counted>"));
        assert!(text_value(&c(Reading::new(1500, 10, 10)), &[]).contains("1,500"));
        let j = serde_json::to_value(json_counter(&c(Reading::new(5, 10, 0)))).unwrap();
        assert_eq!(j["status"], "not-counted");
        assert_eq!(j["value"], serde_json::Value::Null);
        // perf stat -x's columns (value, unit, event, run time, percentage,
        // metric value, metric unit), then scope, time enabled, status.
        let csv = csv_rows(&[c(Reading::new(100, 20, 10))], ",", Some(1.0), None);
        assert_eq!(csv, ["200,,cycles,10,50.00,,,process,20,ok"]);
        let mut per_cpu = c(Reading::new(7, 1, 1));
        per_cpu.cpu = Some(1);
        let csv = csv_rows(&[per_cpu], ";", None, Some(0.5));
        assert_eq!(csv, ["0.500000000;CPU1;7;;cycles;1;100.00;;;process;1;ok"]);
    }
}
