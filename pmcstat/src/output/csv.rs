//! `-x SEP`: CSV rows in perf stat -x's column order, then pmcstat's own
//! (scope, time enabled, status).

use super::document::csv_cell;
use super::rows::*;
use pmc::Status;
use std::io::Write;
use std::time::Duration;

/// `-x SEP`.
pub(super) struct Csv {
    sep: String,
    /// `-q`: no `# note:` lines.
    quiet: bool,
    /// `-w`/`-I`: every row has the time column, no total rows follow.
    intervals: bool,
}

impl Csv {
    pub(super) fn new(sep: &str, quiet: bool, intervals: bool) -> Csv {
        Csv {
            sep: sep.to_owned(),
            quiet,
            intervals,
        }
    }
}

impl CountFormat for Csv {
    fn interval(&mut self, o: &mut dyn Write, at: Duration, secs: Option<f64>, c: &[Counter]) {
        for row in csv_rows(c, &self.sep, secs, Some(at.as_secs_f64())) {
            let _ = writeln!(o, "{row}");
        }
    }

    fn report(&mut self, o: &mut dyn Write, r: &Report) {
        // With intervals every row has a time column and the intervals add up to
        // the total, so, as perf stat -I -x, no untimed total rows follow.
        if !self.intervals {
            let secs = Some(r.elapsed.as_secs_f64());
            for row in csv_rows(&r.counters, &self.sep, secs, None) {
                let _ = writeln!(o, "{row}");
            }
        }
        // Comment lines, as perf stat -x writes its own (not with -q).
        for note in r.notes().iter().filter(|_| !self.quiet) {
            let _ = writeln!(o, "# note: {note}");
        }
    }

    fn repeated(&mut self, o: &mut dyn Write, s: &Repeated<'_>) {
        repeated_csv(&mut &mut *o, s.runs, s.stats, s.means, s.secs, &self.sep);
    }
}

/// `-r N -x SEP`: a row per counter.
pub(super) fn repeated_csv(
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
        let mut f = vec![value, unit.to_owned(), c.event.clone()];
        // With --cgroup, the cgroup after the event, as perf's -G.
        f.extend(c.cgroup.clone());
        f.extend([
            format!("{:.2}%", st.rel_stderr_pct().unwrap_or(0.0)),
            format!("{run_ns:.0}"),
            format!("{:.2}", 100.0 * st.count as f64 / n.max(1) as f64),
            mv,
            mu.to_owned(),
            n.to_string(),
            st.count.to_string(),
        ]);
        let _ = writeln!(o, "{}", join_cells(&f, sep));
    }
}

/// The CSV rows of a set of counters, in `perf stat -x`'s column order
/// (builtin-stat.c / stat-display.c, CSV output): `CPUn` first for per-CPU
/// rows (perf's -A), then value, unit, event, run time (ns), percentage of
/// the time it ran, metric value, metric unit (with `--cgroup`, the cgroup after the event,
/// as perf's -G); then pmcstat's own columns,
/// after perf's so perf's parsers read the row: scope, time enabled (ns),
/// status. `prefix` is the interval's time column (every row of an interval
/// run has one, and such runs print no separate total).
pub(super) fn csv_rows(
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
            let [value, unit, event, run, pct] = csv_fields(c);
            f.extend([value, unit, event]);
            // perf stat -x with -G: the cgroup after the event.
            if let Some(cg) = &c.cgroup {
                f.push(cg.clone());
            }
            f.extend([run, pct]);
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
            join_cells(&f, sep)
        })
        .collect()
}

/// A row of cells joined by `sep`, each made safe by the one CSV cell rule
/// ([`csv_cell`]): a name (an event, a cgroup) never adds a cell or a line.
fn join_cells(cells: &[String], sep: &str) -> String {
    let cells: Vec<_> = cells.iter().map(|c| csv_cell(c, sep)).collect();
    cells.join(sep)
}

/// value, unit, event, run time, running percentage: perf's first five columns.
pub(super) fn csv_fields(c: &Counter) -> [String; 5] {
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
