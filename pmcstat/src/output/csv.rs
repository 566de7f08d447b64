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

/// `-r N -x SEP`: a row per counter, as perf stat -r -x writes it: the mean (a whole number
/// for a count, `%.0f` as perf's, msec with two decimals for a clock), unit, event, the noise
/// (`x.xx%`), the mean run time, its percentage of the mean enabled time, metric value and
/// unit; then pmcstat's columns as a single run's: scope, time enabled (the mean), status.
pub(super) fn repeated_csv(
    o: &mut impl Write,
    runs: &[Report],
    stats: &[RepeatStat],
    means: &[Counter],
    secs: Option<f64>,
    sep: &str,
) {
    let Some(first) = runs.first() else { return };
    let metrics = row_metrics(means, secs);
    for (i, (c, st)) in first.counters.iter().zip(stats).enumerate() {
        // The runs that counted: their mean times.
        let counted = || {
            runs.iter()
                .filter_map(|r| r.counters.get(i))
                .filter(|c| c.reading.status() == Status::Ok)
        };
        let mean = |f: fn(&Counter) -> u64| {
            counted().map(|c| f(c) as f64).sum::<f64>() / st.count.max(1) as f64
        };
        let (run_ns, enabled_ns) = (
            mean(|c| c.reading.time_running),
            mean(|c| c.reading.time_enabled),
        );
        let mut f = Vec::with_capacity(12);
        if let Some(cpu) = c.cpu {
            f.push(format!("CPU{cpu}"));
        }
        let (value, unit) = match (st.count, is_clock(&c.event)) {
            (0, _) => (
                if c.reading.status() == Status::NotSupported {
                    "<not supported>"
                } else {
                    "<not counted>"
                }
                .to_owned(),
                "",
            ),
            (_, true) => (format!("{:.2}", st.mean / 1e6), "msec"),
            (_, false) => (format!("{:.0}", st.mean), unit_of(&c.event)),
        };
        f.extend([value, unit.to_owned(), event_name(&c.event)]);
        // With --cgroup, the cgroup after the event, as perf's -G.
        if let Some(cg) = &c.cgroup {
            f.push(cg.clone());
        }
        f.push(format!("{:.2}%", st.rel_stderr_pct().unwrap_or(0.0)));
        let pct = if enabled_ns > 0.0 {
            100.0 * run_ns / enabled_ns
        } else if st.count == 0 && c.reading.status() == Status::NotSupported {
            100.0
        } else {
            0.0
        };
        f.push(format!("{run_ns:.0}"));
        f.push(format!("{pct:.2}"));
        let (mv, mu) = metrics
            .get(i)
            .and_then(|(m, _)| m.as_ref())
            .map_or((String::new(), String::new()), |m| {
                (format!("{:.3}", m.value), m.unit.clone())
            });
        f.extend([mv, mu]);
        let mean_counter = means.get(i).unwrap_or(c);
        f.push(
            if c.scope.is_system() {
                "system"
            } else {
                "process"
            }
            .to_owned(),
        );
        f.push(format!("{enabled_ns:.0}"));
        f.push(status_str(&mean_counter.reading).to_owned());
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
                (v.to_string(), unit_of(&c.event))
            }
        }
        Status::NotCounted => ("<not counted>".to_owned(), ""),
        Status::NotSupported => ("<not supported>".to_owned(), ""),
    };
    let pct = format!("{:.2}", running_pct(c));
    [
        value,
        unit.to_owned(),
        event_name(&c.event),
        c.reading.time_running.to_string(),
        pct,
    ]
}
