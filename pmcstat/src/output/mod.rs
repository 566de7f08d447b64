//! Printing counts, one file per format behind [`CountFormat`]:
//! perf-stat-style text (`table`), CSV (`-x`, `csv`), perf stat's JSON lines
//! (`--json`, `json`), pmcstat's own JSON document (`--json-report`,
//! `json_report`) and pmcstat(8)'s columns (`--columns`, `columns`). This
//! file holds what they share: the rows, their metrics, the `-r` statistics.
//! What prints whole (`-L`, `--diagnose`, `--selftest`, `-R`'s summary and
//! listings) chooses its format in [`document`].

mod columns;
mod csv;
pub mod document;
mod json;
mod json_report;
mod rows;
mod table;

use rows::{mean_counters, CountFormat, RepeatStat, Repeated};
pub use rows::{Counter, Report};

use crate::config::{Format, Print};
use crate::dest::{create_file, stderr_stream, write_outcome, Checked, Dest};
use crate::error::Failure;
use pmc::{Error, NativeField};
use std::io::Write;
use std::time::Duration;

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
/// perf stat -o's `# started on Mon Dec  7 03:32:38 2026` (ctime(3)'s layout, local time).
fn started_on(now: &jiff::Zoned) -> String {
    format!("# started on {}", now.strftime("%a %b %e %H:%M:%S %Y"))
}

impl Sink {
    /// Opens `-o FILE`, or standard error.
    pub fn open(path: Option<&std::path::Path>, args: &Print) -> std::io::Result<Sink> {
        let (out, name): (Dest, String) = match path {
            Some(p) => (create_file(p)?, p.display().to_string()),
            None => (Dest::Stream(stderr_stream()), "standard error".into()),
        };
        let mut sink = Sink::to(Checked::new(out), name, args);
        // perf stat -o FILE's first line, in its formats (the table, -x, -j); pmcstat's own
        // JSON Lines document and pmcstat(8)'s columns keep their first line.
        if path.is_some() && matches!(args.format, Format::Table | Format::Csv(_) | Format::Json) {
            let _ = writeln!(sink.out, "{}\n", started_on(&jiff::Zoned::now()));
        }
        Ok(sink)
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

#[cfg(test)]
mod tests {
    use super::columns::{columns_header, columns_values};
    use super::csv::csv_rows;
    use super::json_report::json_counter;
    use super::rows::*;
    use super::*;
    use pmc::{Reading, Scope};

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
            cgroup: None,
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
            cgroup: None,
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
            cgroup: None,
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
                            cgroup: None,
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
            cgroup: None,
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
