//! The perf-stat-like table (the default): `Performance counter stats for ...`,
//! perf stat -I's interval rows, and the `-r N` summary with `+- x.xx%`.

use super::rows::*;
use pmc::Status;
use std::io::Write;
use std::time::Duration;

/// The table.
pub(super) struct Table {
    /// `-q`: no explanations of rows not counted, no notes.
    quiet: bool,
    /// `-I MS`: perf stat -I's header before the first interval.
    perf_header: bool,
    /// That header has been printed.
    header_done: bool,
}

impl Table {
    pub(super) fn new(quiet: bool, perf_header: bool) -> Table {
        Table {
            quiet,
            perf_header,
            header_done: false,
        }
    }

    /// The perf-stat-like table; with `quiet` (`-q`), without the
    /// explanations of the rows not counted and the notes.
    pub(super) fn text(o: &mut dyn Write, r: &Report, quiet: bool) {
        let _ = writeln!(
            o,
            "\n Performance counter stats for {}{}:\n",
            text_target(r),
            text_whom(r)
        );
        let mut explained = text_rows(&mut &mut *o, r);
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

impl CountFormat for Table {
    fn interval(&mut self, o: &mut dyn Write, at: Duration, secs: Option<f64>, c: &[Counter]) {
        let t = at.as_secs_f64();
        if self.perf_header && !self.header_done {
            // perf stat -I's header (builtin-stat.c, print_interval).
            let _ = writeln!(o, "#           time             counts unit events");
            self.header_done = true;
        }
        // perf stat -I's rows: the time, the count, and the metric as in the table.
        for (row, (m, more)) in c.iter().zip(row_metrics(c, secs)) {
            let line = match &m {
                Some(m) => format!("{:<52} {}", text_value(row, c), m.text),
                None => text_value(row, c),
            };
            let _ = writeln!(o, "{t:>16.9} {}", line.trim_end());
            for d in more {
                let _ = writeln!(o, "{t:>16.9} {:<52} {d}", "");
            }
        }
    }

    fn report(&mut self, o: &mut dyn Write, r: &Report) {
        Table::text(o, r, self.quiet);
    }

    fn repeated(&mut self, o: &mut dyn Write, s: &Repeated<'_>) {
        repeated_text(&mut &mut *o, s.runs, s.stats, s.elapsed, s.means);
    }
}

/// `-r N`: perf stat -r's table, each mean with its noise.
pub(super) fn repeated_text(
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
        pmc_log::escape::escape(&first.command.join(" "))
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
pub(super) fn text_target(r: &Report) -> String {
    if all_system(&r.counters) {
        // perf stat -a, with a command or without.
        "'system wide'".to_owned()
    } else if !r.command.is_empty() {
        // The command line may carry a planted file name's control characters.
        format!("'{}'", pmc_log::escape::escape(&r.command.join(" ")))
    } else if !r.pids.is_empty() {
        let list: Vec<String> = r.pids.iter().map(u32::to_string).collect();
        format!("process id '{}'", list.join(","))
    } else {
        "'system wide'".to_owned()
    }
}

/// Whose counts they are: with the child processes or without, or which counters
/// counted them.
pub(super) fn text_whom(r: &Report) -> std::borrow::Cow<'static, str> {
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
pub(super) fn text_rows<'r>(o: &mut impl Write, r: &'r Report) -> Vec<(&'r str, Vec<&'r str>)> {
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
