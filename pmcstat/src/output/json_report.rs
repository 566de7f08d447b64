//! `--json-report`: pmcstat's own JSON document, one object per report
//! (`total`, `interval`, `repeat`).

use super::rows::*;
use pmc::Status;
use std::io::Write;
use std::time::Duration;

use serde::Serialize;

/// `--json-report`.
pub(super) struct JsonReport;

impl CountFormat for JsonReport {
    fn interval(&mut self, o: &mut dyn Write, at: Duration, _secs: Option<f64>, c: &[Counter]) {
        let j = JsonInterval {
            kind: "interval",
            interval_ns: at.as_nanos() as u64,
            counters: c.iter().map(json_counter).collect(),
        };
        if let Ok(s) = serde_json::to_string(&j) {
            let _ = writeln!(o, "{}", pmc_log::escape::json_controls(s));
        }
    }

    fn report(&mut self, o: &mut dyn Write, r: &Report) {
        let j = JsonTotal {
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
            let _ = writeln!(o, "{}", pmc_log::escape::json_controls(s));
        }
    }

    fn repeated(&mut self, o: &mut dyn Write, s: &Repeated<'_>) {
        repeated_json(&mut &mut *o, s.runs, s.stats, s.elapsed);
    }

    fn exits(&mut self, o: &mut dyn Write, e: &crate::exits::ExitCounts) {
        for line in e.json_lines() {
            let _ = writeln!(o, "{line}");
        }
    }
}

#[derive(Serialize)]
pub(super) struct JsonCounter<'a> {
    /// Always "counter".
    #[serde(rename = "type")]
    kind: &'static str,
    event: &'a str,
    scope: &'static str,
    /// `--cgroup`: the cgroup a system-wide counter counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    cgroup: Option<&'a str>,
    cpu: Option<u32>,
    value: Option<u64>,
    scaled: Option<u64>,
    time_enabled: u64,
    time_running: u64,
    status: &'static str,
    error: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct JsonTotal<'a> {
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
pub(super) struct JsonInterval<'a> {
    /// Always "interval": one `-w`/`-I` interval.
    #[serde(rename = "type")]
    kind: &'static str,
    interval_ns: u64,
    counters: Vec<JsonCounter<'a>>,
}

pub(super) fn json_counter(c: &Counter) -> JsonCounter<'_> {
    let supported = c.reading.status() != Status::NotSupported;
    JsonCounter {
        kind: "counter",
        event: &c.event,
        cgroup: c.cgroup.as_deref(),
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

/// `-r N --json`: one `repeat` object with the mean and noise of each counter.
pub(super) fn repeated_json(
    o: &mut impl Write,
    runs: &[Report],
    stats: &[RepeatStat],
    elapsed: &RepeatStat,
) {
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
                "cgroup": c.cgroup,
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
