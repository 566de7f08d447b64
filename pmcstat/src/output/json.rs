//! `--json`/`-j`: perf stat -j's lines, one object per counter row with
//! perf's keys.

use super::rows::*;
use pmc::Status;
use std::io::Write;
use std::time::Duration;

/// `--json`.
pub(super) struct Json {
    /// `-w`/`-I`: the interval lines only, no total after them (perf stat -j -I).
    intervals: bool,
}

impl Json {
    pub(super) fn new(intervals: bool) -> Json {
        Json { intervals }
    }
}

impl CountFormat for Json {
    fn interval(&mut self, o: &mut dyn Write, at: Duration, secs: Option<f64>, c: &[Counter]) {
        for row in perf_json_rows(c, secs, Some(at.as_secs_f64()), None) {
            let _ = writeln!(o, "{row}");
        }
    }

    fn report(&mut self, o: &mut dyn Write, r: &Report) {
        if !self.intervals {
            let secs = Some(r.elapsed.as_secs_f64());
            for row in perf_json_rows(&r.counters, secs, None, None) {
                let _ = writeln!(o, "{row}");
            }
        }
    }

    fn repeated(&mut self, o: &mut dyn Write, s: &Repeated<'_>) {
        for row in perf_json_rows(s.means, s.secs, None, Some(s.stats)) {
            let _ = writeln!(o, "{row}");
        }
    }

    fn exits(&mut self, o: &mut dyn Write, e: &crate::exits::ExitCounts) {
        for line in e.json_lines() {
            let _ = writeln!(o, "{line}");
        }
    }
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
pub(super) fn perf_json_rows(
    counters: &[Counter],
    secs: Option<f64>,
    interval: Option<f64>,
    stats: Option<&[RepeatStat]>,
) -> Vec<String> {
    let json = |s: &str| {
        pmc_log::escape::json_controls(
            serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned()),
        )
    };
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
            if let Some(cg) = &c.cgroup {
                f.push(format!("\"cgroup\" : {}", json(cg)));
            }
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
