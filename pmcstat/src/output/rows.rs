//! What counting's formats share: the rows (Counter, Report), the
//! [`CountFormat`] trait they implement, the derived metrics, the `-r`
//! statistics and the value formatting.

use pmc::{Reading, Scope, Status};
use std::io::Write;
use std::time::Duration;

/// One line of output: a counter (or one CPU of it) and its reading.
pub struct Counter {
    pub event: String,
    pub scope: Scope,
    /// `--cgroup`: the cgroup a system-wide counter counts (perf's `-G` column).
    pub cgroup: Option<String>,
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

/// One counting output format: how a `-w`/`-I` interval, a run's report, the
/// `-r N` summary and `-E`'s counts at exit print. A new format is a file in
/// `output/` with a type implementing this, an arm of [`crate::config::Format`]
/// and one in `output::writer`.
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

pub(super) fn status_str(r: &Reading) -> &'static str {
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
pub(super) fn split_reason<'a>(event: &str, msg: &'a str) -> (&'a str, &'a str) {
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
pub(super) fn is_task_clock(event: &str) -> bool {
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
pub(super) fn is_clock(event: &str) -> bool {
    event
        .parse::<pmc::EventSpec>()
        .ok()
        .and_then(|s| s.as_portable())
        .is_some_and(|p| p.is_clock())
}

/// `1234567` -> `1,234,567`.
pub(super) fn thousands(v: u64) -> String {
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
/// With `--cgroup`, the cgroup follows, as perf stat -G prints it.
pub(super) fn label(c: &Counter, all: &[Counter]) -> String {
    let name = match (&c.scope, c.cpu) {
        (_, Some(cpu)) => format!("{} (CPU {cpu})", c.event),
        (Scope::System { .. }, None) if !all_system(all) => format!("{} (system)", c.event),
        _ => c.event.clone(),
    };
    // A cgroup is a directory anyone with write access to the hierarchy may name.
    match &c.cgroup {
        Some(cg) => format!("{name}  {}", pmc_log::escape::escape(cg)),
        None => name,
    }
}

/// Every counter is system-wide (and there is one).
pub(super) fn all_system(all: &[Counter]) -> bool {
    !all.is_empty() && all.iter().all(|c| matches!(c.scope, Scope::System { .. }))
}

/// perf stat's derived metrics for each counter (`pmc::metrics::derive`),
/// pairing counters only within the same CPU line, from scaled values.
pub(super) fn derived_metrics(counters: &[Counter]) -> Vec<Vec<pmc::metrics::Derived>> {
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
    pub(super) fn of<'a>(counters: impl Iterator<Item = &'a Counter>) -> RepeatStat {
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

pub(super) fn text_value(c: &Counter, all: &[Counter]) -> String {
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
pub(super) fn row_metric(
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
pub(super) struct RowMetric {
    pub(super) value: f64,
    pub(super) unit: String,
    pub(super) text: String,
}

/// Each counter's metric ([`row_metric`]) and the further derived metrics of
/// its event, which perf prints on lines of their own. Counters pair only
/// within one CPU line (perf's `-A`: each CPU's rate is over its own
/// task-clock); `secs` is the time the counts cover, for CPUs utilized: the
/// run, the interval (`-I`, `-w`), or the mean run (`-r`).
pub(super) fn row_metrics(
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
pub(super) fn mean_counters(runs: &[Report], stats: &[RepeatStat]) -> Vec<Counter> {
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
                cgroup: c.cgroup.clone(),
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
pub(super) fn running_pct(c: &Counter) -> f64 {
    match c.reading.status() {
        Status::NotSupported => 100.0,
        _ => c.reading.running_ratio().map_or(0.0, |q| q * 100.0),
    }
}
