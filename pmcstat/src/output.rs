//! Printing counts: perf-stat-style text, CSV (`-x`), perf stat's JSON lines
//! (`--json`), and pmcstat's own JSON document (`--json-report`).

use crate::config::{Format, Settings};
use crate::dest::{create_file, stderr_stream, write_outcome, Checked, Dest};
use crate::error::Failure;
use pmc::{Error, NativeField, Reading, Scope, Status};
use serde::Serialize;
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

/// Where output goes: standard error (as perf stat and pmcstat do) or `-o FILE`.
pub struct Sink {
    out: Checked<Dest>,
    /// What the output is, for messages: `standard error` or the file's path.
    name: String,
    /// perf's `-I` header (`#           time ...`) has been printed.
    interval_header: bool,
    /// `--columns`: rows printed since the last header.
    column_rows: usize,
    /// When the previous `-w`/`-I` interval ended (its rows' time base).
    last_interval: Duration,
}

#[derive(Serialize)]
struct JsonCounter<'a> {
    /// Always "counter".
    #[serde(rename = "type")]
    kind: &'static str,
    event: &'a str,
    scope: &'static str,
    cpu: Option<u32>,
    value: Option<u64>,
    scaled: Option<u64>,
    time_enabled: u64,
    time_running: u64,
    status: &'static str,
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    /// Always "total": the whole run.
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    /// `-t REGEX` matching several processes: all of them.
    #[serde(skip_serializing_if = "<[u32]>::is_empty")]
    pids: &'a [u32],
    exit_status: Option<i32>,
    elapsed_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    descendants: Option<bool>,
    /// -d toggled between the process PMCs: the events with child processes counted.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    descendants_events: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    uncounted_children_ns: Option<u64>,
    counters: Vec<JsonCounter<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sys_ns: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

#[derive(Serialize)]
struct JsonInterval<'a> {
    /// Always "interval": one `-w`/`-I` interval.
    #[serde(rename = "type")]
    kind: &'static str,
    interval_ns: u64,
    counters: Vec<JsonCounter<'a>>,
}

fn status_str(r: &Reading) -> &'static str {
    match r.status() {
        Status::Ok => "ok",
        Status::NotCounted => "not-counted",
        Status::NotSupported => "not-supported",
    }
}

fn json_counter(c: &Counter) -> JsonCounter<'_> {
    let supported = c.reading.status() != Status::NotSupported;
    JsonCounter {
        kind: "counter",
        event: &c.event,
        scope: if c.scope.is_system() {
            "system"
        } else {
            "process"
        },
        cpu: c.cpu,
        value: supported
            .then_some(c.reading.value)
            .filter(|_| c.reading.status() == Status::Ok),
        scaled: c.reading.scaled(),
        time_enabled: c.reading.time_enabled,
        time_running: c.reading.time_running,
        status: status_str(&c.reading),
        error: c.error.as_deref(),
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
    pub fn open(path: Option<&std::path::Path>) -> std::io::Result<Sink> {
        let (out, name): (Dest, String) = match path {
            Some(p) => (create_file(p)?, p.display().to_string()),
            None => (Dest::Stream(stderr_stream()), "standard error".into()),
        };
        Ok(Sink {
            interval_header: false,
            last_interval: Duration::ZERO,
            column_rows: 0,
            out: Checked::new(out),
            name,
        })
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

    /// `--columns`: one row of counts, after the header when it is due
    /// (pmcstat(8)'s `pmcstat_print_pmcs`: the header before the first row
    /// and again every [`COLUMNS_HEIGHT`] rows).
    pub fn columns_row(&mut self, counters: &[Counter]) {
        self.column_rows += 1;
        if self.column_rows > COLUMNS_HEIGHT {
            self.column_rows = 1;
        }
        if self.column_rows == 1 {
            let _ = writeln!(self.out, "{}", columns_header(counters));
        }
        let _ = writeln!(self.out, "{}", columns_values(counters));
        let _ = self.out.flush();
    }

    /// `-E`: the counts at process exit, after the counts (JSON Lines with --json).
    pub fn exits(&mut self, e: &crate::exits::ExitCounts, args: &Settings) {
        if args.format.is_json() {
            for line in e.json_lines() {
                let _ = writeln!(self.out, "{line}");
            }
        } else {
            let _ = e.write(&mut self.out);
        }
        let _ = self.out.flush();
    }

    /// One interval of `-w`.
    pub fn interval(&mut self, at: Duration, counters: &[Counter], args: &Settings) {
        let t = at.as_secs_f64();
        // The time the rows count over, for CPUs utilized: the interval, or with -C
        // the whole run so far.
        let span = if args.cumulative {
            at
        } else {
            at.saturating_sub(self.last_interval)
        };
        self.last_interval = at;
        let secs = Some(span.as_secs_f64());
        if args.format == Format::JsonReport {
            let j = JsonInterval {
                kind: "interval",
                interval_ns: at.as_nanos() as u64,
                counters: counters.iter().map(json_counter).collect(),
            };
            if let Ok(s) = serde_json::to_string(&j) {
                let _ = writeln!(self.out, "{s}");
            }
        } else if args.format == Format::Json {
            for row in perf_json_rows(counters, secs, Some(t), None) {
                let _ = writeln!(self.out, "{row}");
            }
        } else if let Format::Csv(sep) = &args.format {
            for row in csv_rows(counters, sep, secs, Some(t)) {
                let _ = writeln!(self.out, "{row}");
            }
        } else {
            if args.interval_ms.is_some() && !self.interval_header {
                // perf stat -I's header (builtin-stat.c, print_interval).
                let _ = writeln!(self.out, "#           time             counts unit events");
                self.interval_header = true;
            }
            // perf stat -I's rows: the time, the count, and the metric as in the table.
            for (c, (m, more)) in counters.iter().zip(row_metrics(counters, secs)) {
                let line = match &m {
                    Some(m) => format!("{:<52} {}", text_value(c, counters), m.text),
                    None => text_value(c, counters),
                };
                let _ = writeln!(self.out, "{t:>16.9} {}", line.trim_end());
                for d in more {
                    let _ = writeln!(self.out, "{t:>16.9} {:<52} {d}", "");
                }
            }
        }
        let _ = self.out.flush();
    }

    /// The final report.
    pub fn report(&mut self, r: &Report, args: &Settings) {
        if args.format == Format::JsonReport {
            let j = JsonReport {
                kind: "total",
                command: &r.command,
                pid: r.pids.first().copied(),
                pids: if r.pids.len() > 1 { &r.pids } else { &[] },
                exit_status: r.exit_status,
                elapsed_ns: r.elapsed.as_nanos() as u64,
                descendants: r.descendants,
                descendants_events: &r.with_children,
                uncounted_children_ns: r.uncounted_children_ns,
                counters: r.counters.iter().map(json_counter).collect(),
                user_ns: r.user_sys.map(|(u, _)| u.as_nanos() as u64),
                sys_ns: r.user_sys.map(|(_, s)| s.as_nanos() as u64),
                notes: r.notes(),
            };
            if let Ok(s) = serde_json::to_string(&j) {
                let _ = writeln!(self.out, "{s}");
            }
        } else if args.format == Format::Json {
            // As perf stat -j -I: the interval lines only, no total after them.
            if args.interval.is_none() {
                let secs = Some(r.elapsed.as_secs_f64());
                for row in perf_json_rows(&r.counters, secs, None, None) {
                    let _ = writeln!(self.out, "{row}");
                }
            }
        } else if let Format::Csv(sep) = &args.format {
            // With intervals every row has a time column and the intervals add up to
            // the total, so, as perf stat -I -x, no untimed total rows follow.
            if args.interval.is_none() {
                let secs = Some(r.elapsed.as_secs_f64());
                for row in csv_rows(&r.counters, sep, secs, None) {
                    let _ = writeln!(self.out, "{row}");
                }
            }
            // Comment lines, as perf stat -x writes its own (not with -q).
            for note in r.notes().iter().filter(|_| !args.quiet) {
                let _ = writeln!(self.out, "# note: {note}");
            }
        } else {
            self.text(r, args.quiet);
        }
        let _ = self.out.flush();
    }

    /// The summary of `-r N` runs: per counter, the mean of the scaled
    /// values and the relative standard error of that mean.
    pub fn repeated(&mut self, runs: &[Report], args: &Settings) {
        let Some(first) = runs.first() else { return };
        let stats: Vec<RepeatStat> = (0..first.counters.len())
            .map(|i| RepeatStat::of(runs.iter().filter_map(|r| r.counters.get(i))))
            .collect();
        let elapsed = RepeatStat::of_values(runs.iter().map(|r| r.elapsed.as_nanos() as f64));
        let means = mean_counters(runs, &stats);
        let secs = Some(elapsed.mean / 1e9);
        if args.format == Format::JsonReport {
            repeated_json(&mut self.out, runs, &stats, &elapsed);
        } else if args.format == Format::Json {
            for row in perf_json_rows(&means, secs, None, Some(&stats)) {
                let _ = writeln!(self.out, "{row}");
            }
        } else if let Format::Csv(sep) = &args.format {
            repeated_csv(&mut self.out, runs, &stats, &means, secs, sep);
        } else {
            repeated_text(&mut self.out, runs, &stats, &elapsed, &means);
        }
        let _ = self.out.flush();
    }

    /// The perf-stat-like table; with `quiet` (`-q`), without the
    /// explanations of the rows not counted and the notes.
    fn text(&mut self, r: &Report, quiet: bool) {
        let o = &mut self.out;
        let _ = writeln!(
            o,
            "\n Performance counter stats for {}{}:\n",
            text_target(r),
            text_whom(r)
        );
        let mut explained = text_rows(o, r);
        if quiet {
            explained.clear();
        }
        for (full, events) in &explained {
            let _ = writeln!(o, "\n {}: {full}", events.join(", "));
        }
        let _ = writeln!(
            o,
            "\n {:>16.9} seconds time elapsed",
            r.elapsed.as_secs_f64()
        );
        if let Some((user, sys)) = r.user_sys {
            let _ = writeln!(o, "\n {:>16.9} seconds user", user.as_secs_f64());
            let _ = writeln!(o, " {:>16.9} seconds sys", sys.as_secs_f64());
        }
        if let Some(code) = r.exit_status.filter(|c| *c != 0) {
            let _ = writeln!(o, " (the command exited with status {code})");
        }
        for note in r.notes().iter().filter(|_| !quiet) {
            let _ = writeln!(o, " note: {note}");
        }
        let _ = writeln!(o);
    }
}

/// `-r N --json`: one `repeat` object with the mean and noise of each counter.
fn repeated_json(o: &mut impl Write, runs: &[Report], stats: &[RepeatStat], elapsed: &RepeatStat) {
    let Some(first) = runs.first() else { return };
    let n = runs.len();
    let counters: Vec<serde_json::Value> = first
        .counters
        .iter()
        .zip(stats)
        .map(|(c, st)| {
            serde_json::json!({
                "type": "counter",
                "event": c.event,
                "scope": if c.scope.is_system() { "system" } else { "process" },
                "cpu": c.cpu,
                "runs": n,
                "counted_runs": st.count,
                "mean": st.mean,
                "stddev": st.stddev,
                "rel_stderr_pct": st.rel_stderr_pct(),
                "status": if st.count == 0 { status_str(&c.reading) } else { "ok" },
            })
        })
        .collect();
    let j = serde_json::json!({
        "type": "repeat",
        "command": first.command,
        "runs": n,
        "exit_status": runs.last().and_then(|r| r.exit_status),
        "elapsed_ns_mean": elapsed.mean,
        "elapsed_rel_stderr_pct": elapsed.rel_stderr_pct(),
        "counters": counters,
    });
    let _ = writeln!(o, "{j}");
}

/// `-r N -x SEP`: a row per counter.
fn repeated_csv(
    o: &mut impl Write,
    runs: &[Report],
    stats: &[RepeatStat],
    means: &[Counter],
    secs: Option<f64>,
    sep: &str,
) {
    let Some(first) = runs.first() else { return };
    let n = runs.len();
    let metrics = row_metrics(means, secs);
    // perf stat -r -x's columns: value, unit, event, the noise
    // (`x.xx%`), run time, percentage, metric value, metric unit; then
    // pmcstat's: runs, runs in which the counter counted.
    for (i, (c, st)) in first.counters.iter().zip(stats).enumerate() {
        let (value, unit) = if is_clock(&c.event) {
            (format!("{:.2}", st.mean / 1e6), "msec")
        } else {
            (format!("{:.2}", st.mean), "")
        };
        let run_ns = runs
            .iter()
            .filter_map(|r| r.counters.get(i))
            .map(|c| c.reading.time_running as f64)
            .sum::<f64>()
            / n.max(1) as f64;
        let (mv, mu) = metrics
            .get(i)
            .and_then(|(m, _)| m.as_ref())
            .map_or((String::new(), ""), |m| {
                (format!("{:.3}", m.value), m.unit.as_str())
            });
        let _ = writeln!(
            o,
            "{value}{sep}{unit}{sep}{}{sep}{:.2}%{sep}{run_ns:.0}{sep}{:.2}{sep}{mv}{sep}{mu}{sep}{n}{sep}{}",
            c.event,
            st.rel_stderr_pct().unwrap_or(0.0),
            100.0 * st.count as f64 / n.max(1) as f64,
            st.count
        );
    }
}

/// `-r N`: perf stat -r's table, each mean with its noise.
fn repeated_text(
    o: &mut impl Write,
    runs: &[Report],
    stats: &[RepeatStat],
    elapsed: &RepeatStat,
    means: &[Counter],
) {
    let Some(first) = runs.first() else { return };
    let n = runs.len();
    let metrics = row_metrics(means, Some(elapsed.mean / 1e9));
    let _ = writeln!(
        o,
        "\n Performance counter stats for '{}' ({n} runs):\n",
        first.command.join(" ")
    );
    for ((c, st), (m, _)) in first.counters.iter().zip(stats).zip(&metrics) {
        let name = label(c, &first.counters);
        if st.count == 0 {
            let shown = if c.reading.status() == Status::NotSupported {
                "<not supported>"
            } else {
                "<not counted>"
            };
            let _ = writeln!(o, "{shown:>18}      {name}");
            continue;
        }
        let value = if is_clock(&c.event) {
            format!("{:>18.2} msec {name}", st.mean / 1e6)
        } else {
            format!("{:>18}      {name}", thousands(st.mean.round() as u64))
        };
        let noise = st
            .rel_stderr_pct()
            .map_or_else(String::new, |p| format!("( +- {p:5.2}% )"));
        let partial = if st.count < n {
            format!(" (counted in {}/{n} runs)", st.count)
        } else {
            String::new()
        };
        let value = match m {
            Some(m) => format!("{value:<52} {:<32}", m.text),
            None => value,
        };
        let _ = writeln!(o, "{value:<52} {noise}{partial}");
    }
    let _ = writeln!(
        o,
        "\n {:>16.9} seconds time elapsed {}\n",
        elapsed.mean / 1e9,
        elapsed
            .rel_stderr_pct()
            .map_or_else(String::new, |p| format!("( +- {p:5.2}% )"))
    );
}

/// What the table is of: the command, the `-t` processes, or the system.
fn text_target(r: &Report) -> String {
    if all_system(&r.counters) {
        // perf stat -a, with a command or without.
        "'system wide'".to_owned()
    } else if !r.command.is_empty() {
        format!("'{}'", r.command.join(" "))
    } else if !r.pids.is_empty() {
        let list: Vec<String> = r.pids.iter().map(u32::to_string).collect();
        format!("process id '{}'", list.join(","))
    } else {
        "'system wide'".to_owned()
    }
}

/// Whose counts they are: with the child processes or without, or which counters
/// counted them.
fn text_whom(r: &Report) -> std::borrow::Cow<'static, str> {
    match r.descendants {
        _ if !r.with_children.is_empty() => format!(
            " (child processes counted only for {})",
            r.with_children.join(", ")
        )
        .into(),
        Some(true) if !r.command.is_empty() => " and its child processes".into(),
        Some(true) => " and the child processes it starts".into(),
        Some(false) => " alone (without child processes)".into(),
        None => "".into(),
    }
}

/// The table's rows, a counter and its derived metrics each. Returns each distinct
/// explanation of the rows not counted, with its rows: printed once under the table
/// (perf's rows say only `<not supported>`).
fn text_rows<'r>(o: &mut impl Write, r: &'r Report) -> Vec<(&'r str, Vec<&'r str>)> {
    let metrics = row_metrics(&r.counters, Some(r.elapsed.as_secs_f64()));
    let mut explained: Vec<(&str, Vec<&str>)> = Vec::new();
    for (c, (m, more)) in r.counters.iter().zip(&metrics) {
        let mut line = text_value(c, &r.counters);
        if c.reading.status() == Status::Ok {
            let note = m.as_ref().map_or("", |m| m.text.as_str());
            line = format!("{line:<52} {note:<32}");
            if c.reading.is_multiplexed() {
                if let Some(q) = c.reading.running_ratio() {
                    line.push_str(&format!(" ({:.2}%)", q * 100.0));
                }
            }
        } else if let Some(e) = &c.error {
            let (short, full) = split_reason(&c.event, e);
            line = format!("{line:<52} # {short}");
            if short != full {
                match explained.iter_mut().find(|(f, _)| *f == full) {
                    Some((_, events)) => events.push(&c.event),
                    None => explained.push((full, vec![&c.event])),
                }
            }
        }
        let _ = writeln!(o, "{}", line.trim_end());
        // Further metrics of the same event on their own lines, as perf
        // prints `stalled cycles per insn` under `insn per cycle`.
        for d in more {
            let _ = writeln!(o, "{:<52} {d}", "");
        }
    }
    explained
}

/// `--columns`, FreeBSD pmcstat(8)'s counting output, after
/// usr.sbin/pmcstat/pmcstat.c (`pmcstat_print_headers`,
/// `pmcstat_print_counters`, `pmcstat_print_pmcs` and the "compute printout
/// widths" loop of `main`): the header's prefix, `PRINT_HEADER_PREFIX`.
const COLUMNS_PREFIX: &str = "# ";

/// pmcstat(8)'s `DEFAULT_DISPLAY_HEIGHT` ("file virtual height"): the header
/// is printed again after this many rows. (On a terminal pmcstat(8) uses its
/// height; this pmcstat does not read it.)
pub const COLUMNS_HEIGHT: usize = 256;

/// The width of a counter in bits, `pmc_width(3)`: perf_event counts are
/// 64-bit, as hwpmc's software PMCs are.
const COLUMNS_COUNTER_BITS: u32 = 64;

/// pmcstat(8)'s `ev_name`: the event spec up to its first comma, space or tab
/// (`instructions,usr` is `instructions`).
fn column_event(c: &Counter) -> &str {
    c.event.split([',', ' ', '\t']).next().unwrap_or(&c.event)
}

/// A column's `(fieldskip, fieldwidth)`: wide enough for the header
/// (`p/` or `s/NN/` and the name) and for the largest count
/// (`floor(bits / 3.32193) + 1` digits, 20 for 64 bits), the header right
/// aligned in it.
// 3.32193 is pmcstat(8)'s literal (log2 10, rounded), kept as it is.
#[allow(clippy::approx_constant)]
fn column_widths(c: &Counter) -> (usize, usize) {
    let mut header = column_event(c).len() + 2; // "p/" or "s/"
    if c.scope.is_system() {
        header += 3; // 2-digit CPU number and '/'
    }
    let display = (f64::from(COLUMNS_COUNTER_BITS) / 3.32193).floor() as usize + 1;
    if header > display {
        (0, header)
    } else {
        (display - header, display)
    }
}

/// The header line: `# ` and, per PMC, `p/EVENT` right-aligned in its field,
/// or `s/NN/EVENT` (NN the CPU) left-aligned after the skip, each followed by
/// a space, as pmcstat(8)'s `"p/%*s "` and `"s/%02d/%-*s "`.
pub fn columns_header(counters: &[Counter]) -> String {
    let mut line = String::from(COLUMNS_PREFIX);
    for c in counters {
        let (skip, width) = column_widths(c);
        let w = width - skip - 2;
        line.push_str(&" ".repeat(skip));
        let name = column_event(c);
        match (c.scope.is_system(), c.cpu) {
            (true, cpu) => line.push_str(&format!(
                "s/{:02}/{name:<w$} ",
                cpu.unwrap_or(0),
                w = w.saturating_sub(3)
            )),
            (false, _) => line.push_str(&format!("p/{name:>w$} ")),
        }
    }
    line
}

/// A row of counts, each right-aligned under its header and followed by a
/// space; the first field is wider by the header's `# `, as pmcstat(8)'s
/// `"%*ju "` with `ev_fieldwidth + extra_width`.
pub fn columns_values(counters: &[Counter]) -> String {
    let mut line = String::new();
    let mut extra = COLUMNS_PREFIX.len();
    for c in counters {
        let (_, width) = column_widths(c);
        // The raw count, as hwpmc's (which never multiplexes): unscaled, the
        // rows of one PMC add up to its total exactly.
        let v = c.reading.value;
        line.push_str(&format!("{v:>w$} ", w = width + extra));
        extra = 0;
    }
    line
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

/// `--json`: `perf stat -j`'s lines (perf's `stat-display.c`, JSON output;
/// its linter is `tools/perf/tests/shell/lib/perf_json_output_lint.py`):
/// one object per counter line, its keys in perf's order: `interval` (a
/// number, seconds) with -I/-w, `cpu` (a string) with -A, `counter-value`
/// (a string: the count, msec for clocks, or `<not counted>`), `unit`,
/// `event`, `variance` (with -r: the relative standard error of the mean,
/// percent), `event-runtime` (ns), `pcnt-running`, `metric-value` and
/// `metric-unit` (0 and "" on a row without a metric, as perf 6.1 prints
/// them). `stats`: -r's, by counter.
fn perf_json_rows(
    counters: &[Counter],
    secs: Option<f64>,
    interval: Option<f64>,
    stats: Option<&[RepeatStat]>,
) -> Vec<String> {
    let json = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    counters
        .iter()
        .zip(row_metrics(counters, secs))
        .enumerate()
        .map(|(i, (c, (m, _)))| {
            let mut f: Vec<String> = Vec::with_capacity(10);
            if let Some(t) = interval {
                f.push(format!("\"interval\" : {t:.9}"));
            }
            if let Some(cpu) = c.cpu {
                f.push(format!("\"cpu\" : \"{cpu}\""));
            }
            let clock = is_clock(&c.event);
            let value = match c.reading.status() {
                Status::Ok => {
                    let v = c.reading.scaled().unwrap_or(0) as f64;
                    format!("{:.6}", if clock { v / 1e6 } else { v })
                }
                Status::NotCounted => "<not counted>".to_owned(),
                Status::NotSupported => "<not supported>".to_owned(),
            };
            f.push(format!("\"counter-value\" : \"{value}\""));
            f.push(format!(
                "\"unit\" : \"{}\"",
                if clock { "msec" } else { "" }
            ));
            f.push(format!("\"event\" : {}", json(&c.event)));
            if let Some(st) = stats.and_then(|s| s.get(i)) {
                let v = st.rel_stderr_pct().unwrap_or(0.0);
                f.push(format!("\"variance\" : {v:.2}"));
            }
            f.push(format!("\"event-runtime\" : {}", c.reading.time_running));
            f.push(format!("\"pcnt-running\" : {:.2}", running_pct(c)));
            // Always both, as perf 6.1 writes them and its linter counts them: 0 and ""
            // on a row without a metric (a later perf leaves them out; its linter
            // takes either).
            let (mv, mu) = m.map_or((0.0, String::new()), |m| (m.value, m.unit));
            f.push(format!("\"metric-value\" : {mv:.6}"));
            f.push(format!("\"metric-unit\" : {}", json(&mu)));
            format!("{{{}}}", f.join(", "))
        })
        .collect()
}

/// The CSV rows of a set of counters, in `perf stat -x`'s column order
/// (builtin-stat.c / stat-display.c, CSV output): `CPUn` first for per-CPU
/// rows (perf's -A), then value, unit, event, run time (ns), percentage of
/// the time it ran, metric value, metric unit; then pmcstat's own columns,
/// after perf's so perf's parsers read the row: scope, time enabled (ns),
/// status. `prefix` is the interval's time column (every row of an interval
/// run has one, and such runs print no separate total).
fn csv_rows(
    counters: &[Counter],
    sep: &str,
    secs: Option<f64>,
    prefix: Option<f64>,
) -> Vec<String> {
    counters
        .iter()
        .zip(row_metrics(counters, secs))
        .map(|(c, (m, _))| {
            let (mv, mu) = m.map_or((String::new(), String::new()), |m| {
                (format!("{:.3}", m.value), m.unit)
            });
            let mut f = Vec::with_capacity(12);
            if let Some(t) = prefix {
                f.push(format!("{t:.9}"));
            }
            if let Some(cpu) = c.cpu {
                f.push(format!("CPU{cpu}"));
            }
            f.extend(csv_fields(c));
            f.extend([mv, mu]);
            f.push(
                if c.scope.is_system() {
                    "system"
                } else {
                    "process"
                }
                .to_owned(),
            );
            f.push(c.reading.time_enabled.to_string());
            f.push(status_str(&c.reading).to_owned());
            f.join(sep)
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

/// value, unit, event, run time, running percentage: perf's first five columns.
fn csv_fields(c: &Counter) -> [String; 5] {
    let (value, unit) = match c.reading.status() {
        Status::Ok => {
            let v = c.reading.scaled().unwrap_or(0);
            if is_clock(&c.event) {
                (format!("{:.2}", v as f64 / 1e6), "msec")
            } else {
                (v.to_string(), "")
            }
        }
        Status::NotCounted => ("<not counted>".to_owned(), ""),
        Status::NotSupported => ("<not supported>".to_owned(), ""),
    };
    let pct = format!("{:.2}", running_pct(c));
    [
        value,
        unit.to_owned(),
        c.event.clone(),
        c.reading.time_running.to_string(),
        pct,
    ]
}

#[cfg(test)]
mod tests {
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
        let mut sink = Sink {
            column_rows: 0,
            last_interval: Duration::ZERO,
            interval_header: false,
            out: Checked::new(Dest::Stream(Box::new(buf.clone()))),
            name: "test".into(),
        };
        sink.text(&report, false);
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
            let mut sink = Sink {
                column_rows: 0,
                interval_header: false,
                last_interval: Duration::ZERO,
                out: Checked::new(Dest::Stream(Box::new(buf.clone()))),
                name: "test".into(),
            };
            let args = Settings::parse_args(argv.iter().copied()).unwrap();
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
                sink.repeated(&[run(4), run(4)], &args);
            } else {
                sink.interval(Duration::from_millis(4), &counters, &args);
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
