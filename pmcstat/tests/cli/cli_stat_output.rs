//! Counting output that other programs parse, judged by perf: `--json` is
//! `perf stat -j`'s schema (checked with the rules of perf's own JSON linter,
//! `tools/perf/tests/shell/lib/perf_json_output_lint.py`, and line by line
//! against perf on the same case), and every row kind (`-I` intervals, `-r`
//! repeats, system-wide totals and `-A` rows) carries perf's metric column.
#![cfg(target_os = "linux")]

use serde_json::{Map, Value};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common;
use common::pmcstat;

const EVENTS: &str = "task-clock,page-faults,context-switches";

fn perf_works() -> bool {
    pmc_testkit::cli::works("perf", &["stat", "-e", "task-clock", "--", "true"])
}

/// perf's output of `perf stat ARGS` (it writes to standard error), or `None`.
fn perf_stat(args: &[&str]) -> Option<String> {
    let out = pmc_testkit::cli::run("perf", std::iter::once("stat").chain(args.iter().copied()));
    (out.code == 0).then_some(out.stderr)
}

/// pmcstat's counts on standard error, or `None` (skipped) where it may not count.
fn counts(name: &str, args: &[&str]) -> Option<String> {
    let (code, out, err) = pmcstat(args);
    if code != 0 {
        pmc_testkit::skip!(name = name, "pmcstat {args:?} did not count here: {err}");
        return None;
    }
    assert!(
        out.is_empty(),
        "counts go to standard error, as perf's: {out}"
    );
    Some(err)
}

/// The JSON lines of `text`: each one object, its keys in the order written.
fn json_lines(text: &str) -> Vec<(Map<String, Value>, Vec<String>)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
            let Value::Object(m) = v else {
                panic!("not an object: {l}")
            };
            // serde_json's map is sorted: the order is read from the line.
            let mut keys: Vec<(usize, String)> = m
                .keys()
                .map(|k| (l.find(&format!("\"{k}\"")).unwrap(), k.clone()))
                .collect();
            keys.sort();
            (m, keys.into_iter().map(|(_, k)| k).collect())
        })
        .collect()
}

fn is_float_text(s: &str) -> bool {
    s.trim().parse::<f64>().is_ok()
}

/// The checks of perf's JSON linter (perf_json_output_lint.py, `check_json_output`):
/// every key one perf writes, each value of its type, and as many keys as perf's
/// lines of that kind have (`counts`; a metric adds two).
fn lint(lines: &[(Map<String, Value>, Vec<String>)], counts: &[usize], text: &str) {
    assert!(!lines.is_empty(), "no JSON lines: {text}");
    for (m, _) in lines {
        let n = m.len();
        assert!(
            counts.contains(&n) || (m.contains_key("variance") && counts.contains(&(n - 1))),
            "{n} keys, perf's lines of this kind have {counts:?}: {m:?}\n{text}"
        );
        for (k, v) in m {
            let ok = match k.as_str() {
                "counter-value" => v.as_str().is_some_and(|s| {
                    is_float_text(s) || s == "<not counted>" || s == "<not supported>"
                }),
                "cpu" => v.as_str().is_some_and(|s| s.parse::<u32>().is_ok()),
                "event-runtime" => v.as_u64().is_some(),
                "interval" | "metric-value" | "pcnt-running" | "variance" => {
                    v.is_f64() || v.is_u64()
                }
                "unit" | "event" | "metric-unit" => v.is_string(),
                _ => panic!("a key perf does not write: {k} in {m:?}\n{text}"),
            };
            assert!(ok, "{k}: {v} is not what perf writes there\n{text}");
        }
    }
}

/// perf's own JSON linter as perf installs it (`perf --exec-path`/tests/shell/lib/),
/// or `None`.
fn perf_linter() -> Option<PathBuf> {
    let out = Command::new("perf").arg("--exec-path").output().ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let lint = dir.join("tests/shell/lib/perf_json_output_lint.py");
    (lint.is_file() && pmc_testkit::cli::works("python3", &["--version"])).then_some(lint)
}

/// Runs perf's linter with `flag` (its case: `--no-args`, `--interval`, ...) on `text`.
fn run_linter(lint: &std::path::Path, flag: &str, text: &str) {
    let mut child = Command::new("python3")
        .arg(lint)
        .arg(flag)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "perf's linter {flag}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The key of a line for matching it with perf's: its event and CPU.
fn line_key(m: &Map<String, Value>) -> (String, Option<String>) {
    (
        m["event"].as_str().unwrap().to_owned(),
        m.get("cpu").and_then(|c| c.as_str()).map(str::to_owned),
    )
}

/// A metric unit without its K/M/G: rates differ in size from run to run.
fn unit_kind(u: &str) -> &str {
    u.trim_start_matches(['K', 'M', 'G'])
}

/// Compares pmcstat's lines with perf's of the same case: the same keys in the
/// same order for each counted event, and the same metric units.
fn same_as_perf(ours: &[(Map<String, Value>, Vec<String>)], perf: &str, ctx: &str) {
    let theirs = json_lines(perf);
    for (m, keys) in ours {
        if m["counter-value"]
            .as_str()
            .is_some_and(|v| v.starts_with('<'))
        {
            continue;
        }
        let want = line_key(m);
        let Some((pm, pkeys)) = theirs.iter().find(|(p, _)| {
            line_key(p) == want && !p["counter-value"].as_str().unwrap().starts_with('<')
        }) else {
            panic!("perf has no counted line for {want:?}:\n{perf}\nours:\n{ctx}");
        };
        assert_eq!(keys, pkeys, "keys of {want:?}\nperf:\n{perf}\nours:\n{ctx}");
        assert_eq!(
            unit_kind(m["metric-unit"].as_str().unwrap()),
            unit_kind(pm["metric-unit"].as_str().unwrap()),
            "metric of {want:?}\nperf:\n{perf}\nours:\n{ctx}"
        );
        assert_eq!(m["unit"], pm["unit"], "unit of {want:?}\n{perf}\n{ctx}");
    }
}

/// A case of [`json_is_perf_stat_json`]: pmcstat's arguments, perf's, the key
/// counts perf's linter allows for that kind, and the linter's option for it.
type JsonCase<'a> = (&'a [&'a str], &'a [&'a str], &'a [usize], Option<&'a str>);

/// `--json` is perf stat -j's: one object per counter line, perf's keys and value
/// types, `interval` and `cpu` where perf has them; and perf's own lines for the same
/// case have the same keys in the same order.
#[test]
fn json_is_perf_stat_json() {
    let name = "json_is_perf_stat_json";
    let perf = perf_works();
    if !perf {
        pmc_testkit::skip!(
            name = name,
            "perf stat does not run here: checked without it"
        );
    }
    let linter = perf_linter();
    if linter.is_none() {
        pmc_testkit::skip!(
            name = name,
            "perf's perf_json_output_lint.py is not installed here"
        );
    }
    let sys: &[&str] = &[
        "-s",
        "task-clock",
        "-s",
        "page-faults",
        "-s",
        "context-switches",
    ];
    let sys_json: Vec<&str> = ["--json"]
        .iter()
        .chain(sys)
        .chain(&["-l", "0.1"])
        .copied()
        .collect();
    let sys_a: Vec<&str> = ["--json", "-A"]
        .iter()
        .chain(sys)
        .chain(&["-l", "0.1"])
        .copied()
        .collect();
    // (pmcstat's arguments, perf's, the key counts perf's linter allows for that kind,
    // the linter's option for it: none for -r, whose `variance` it does not know).
    let cases: [JsonCase; 5] = [
        (
            &["--json", "-e", EVENTS, "--", "sleep", "0.05"],
            &["-j", "-e", EVENTS, "--", "sleep", "0.05"],
            &[5, 7],
            Some("--no-args"),
        ),
        (
            &["--json", "-I", "40", "-e", EVENTS, "--", "sleep", "0.1"],
            &["-j", "-I", "40", "-e", EVENTS, "--", "sleep", "0.1"],
            &[6, 8],
            Some("--interval"),
        ),
        (
            &sys_json,
            &["-j", "-a", "-e", EVENTS, "--", "sleep", "0.1"],
            &[5, 7],
            Some("--system-wide"),
        ),
        (
            &sys_a,
            &["-j", "-a", "-A", "-e", EVENTS, "--", "sleep", "0.1"],
            &[6, 8],
            Some("--system-wide-no-aggr"),
        ),
        (
            &[
                "--json",
                "-r",
                "3",
                "-e",
                "task-clock,page-faults",
                "--",
                "true",
            ],
            &[
                "-j",
                "-r",
                "3",
                "-e",
                "task-clock,page-faults",
                "--",
                "true",
            ],
            &[5, 7],
            None,
        ),
    ];
    for (ours, theirs, keys, flag) in cases {
        let Some(text) = counts(name, ours) else {
            return;
        };
        let lines = json_lines(&text);
        lint(&lines, keys, &text);
        if let (Some(l), Some(flag)) = (&linter, flag) {
            run_linter(l, flag, &text);
        }
        // Every counted line has its metric, as perf's.
        for (m, _) in &lines {
            if !m["counter-value"].as_str().unwrap().starts_with('<') {
                assert!(m.contains_key("metric-unit"), "{m:?}\n{text}");
            }
        }
        if perf {
            if let Some(p) = perf_stat(theirs) {
                lint(&json_lines(&p), &[keys[0], keys[1], keys[1] + 1], &p);
                same_as_perf(&lines, &p, &text);
            }
        }
    }
    // The richer document is kept under its own name.
    let Some(text) = counts(name, &["--json-report", "-e", "page-faults", "--", "true"]) else {
        return;
    };
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["type"], "total", "{text}");
    assert_eq!(v["counters"][0]["event"], "page-faults", "{text}");
}

/// A CSV row's event, CPU and metric unit; `time` and `repeat` say which of
/// perf's optional columns the row has.
fn csv_metric(row: &str, time: bool, repeat: bool) -> (String, Option<String>, String, String) {
    let mut f: Vec<&str> = row.split(',').map(str::trim).collect();
    if time {
        f.remove(0);
    }
    let cpu = f[0].starts_with("CPU").then(|| f.remove(0).to_owned());
    let at = if repeat { 6 } else { 5 };
    let get = |i: usize| f.get(i).copied().unwrap_or("").to_owned();
    (get(2), cpu, get(at), get(at + 1))
}

/// A case of [`metrics_on_every_row_kind`]: extra options, the counted command or
/// system-wide form, perf's form, whether rows have a time column, whether -r.
type RowCase<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], bool, bool);

/// Every counted row of every kind has perf stat's metric: CPUs utilized for
/// task-clock, a rate per second for the others; in -x CSV, the metric value and
/// unit columns as perf stat -x fills them on the same case.
#[test]
fn metrics_on_every_row_kind() {
    let name = "metrics_on_every_row_kind";
    let perf = perf_works();
    let sys: &[&str] = &["-s", "task-clock", "-s", "page-faults", "-l", "0.1"];
    let sys_perf: &[&str] = &["-a", "-e", "task-clock,page-faults", "--", "sleep", "0.1"];
    let cmd: &[&str] = &["-e", "task-clock,page-faults", "--", "sleep", "0.1"];
    // (extra options, the command or the system-wide form, perf's form, time column, repeat).
    let cases: [RowCase; 5] = [
        (&["-I", "40"], cmd, cmd, true, false),
        (
            &["-r", "3"],
            &["-e", "task-clock,page-faults", "--", "true"],
            &["-e", "task-clock,page-faults", "--", "true"],
            false,
            true,
        ),
        (&[], sys, sys_perf, false, false),
        (&["-A"], sys, sys_perf, false, false),
        (&["-I", "40"], sys, sys_perf, true, false),
    ];
    for (opts, what, perf_what, time, repeat) in cases {
        // Text: the comment after every counted row.
        let args: Vec<&str> = opts.iter().chain(what).copied().collect();
        let Some(text) = counts(name, &args) else {
            return;
        };
        let mut rows = 0;
        for l in text.lines() {
            let has = |e: &str| l.split_whitespace().any(|w| w == e);
            if l.contains("<not counted>") || !(has("task-clock") || has("page-faults")) {
                continue;
            }
            rows += 1;
            let want = if has("task-clock") {
                "CPUs utilized"
            } else {
                "/sec"
            };
            assert!(l.contains(want), "{args:?}: no `{want}` in {l:?}\n{text}");
        }
        assert!(rows >= 2, "{args:?}:\n{text}");

        // CSV, against perf stat -x on the same case.
        let mut args = vec!["-x,"];
        args.extend(opts.iter().chain(what));
        let Some(csv) = counts(name, &args) else {
            return;
        };
        let theirs = if perf {
            let mut p = vec!["-x,"];
            p.extend(opts.iter().chain(perf_what));
            perf_stat(&p)
        } else {
            None
        };
        for row in csv.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let (event, cpu, value, unit) = csv_metric(row, time, repeat);
            if row.contains("<not counted>") {
                continue;
            }
            assert!(
                is_float_text(&value),
                "{args:?}: no metric value in {row:?}\n{csv}"
            );
            let want = if event == "task-clock" {
                "CPUs utilized"
            } else {
                "/sec"
            };
            assert_eq!(unit_kind(&unit), want, "{args:?}: {row:?}\n{csv}");
            if let Some(p) = &theirs {
                let same = p
                    .lines()
                    .map(|l| csv_metric(l, time, repeat))
                    .find(|(e, c, v, _)| *e == event && *c == cpu && is_float_text(v));
                let Some((_, _, _, punit)) = same else {
                    panic!("perf stat {args:?} has no {event} {cpu:?} row with a metric:\n{p}");
                };
                assert_eq!(unit_kind(&unit), unit_kind(&punit), "{row:?}\nperf:\n{p}");
            }
        }
    }
}

/// Issue 34: the text differences from perf stat, each judged by perf's own output for the
/// same flags on the same command (software events): `-I` prints no total table after its
/// intervals; `-A` rows lead with `CPUn`, the count ending in perf's column; `-r -x` prints
/// a count's mean as a whole number, with perf's columns and then a single run's trailing
/// fields; `-o FILE` starts with perf's `# started on` line; the `-r` header says whose
/// counts, as a single run's does.
#[test]
fn text_layout_follows_perf_stat() {
    let name = "text_layout_follows_perf_stat";
    let perf = perf_works();
    // -I: intervals and no table.
    let cmd: &[&str] = &["-e", "task-clock,page-faults", "--", "sleep", "0.15"];
    let i: Vec<&str> = ["-I", "50"].iter().chain(cmd).copied().collect();
    let Some(ours) = counts(name, &i) else {
        return;
    };
    assert!(
        ours.lines().filter(|l| l.contains(" page-faults")).count() >= 2,
        "{ours}"
    );
    assert!(!ours.contains("Performance counter stats"), "{ours}");
    assert!(!ours.contains("seconds time elapsed"), "{ours}");
    if let Some(theirs) = perf.then(|| perf_stat(&i)).flatten() {
        assert!(
            !theirs.contains("Performance counter stats"),
            "perf: {theirs}"
        );
    }

    // -A: `CPUn` first; the count ends, and the event starts, where perf's do.
    let sys: &[&str] = &["-A", "-s", "cpu-clock", "-s", "page-faults", "-l", "0.1"];
    let Some(ours) = counts(name, sys) else {
        return;
    };
    // (where the count ends, where the event name starts) of a row.
    let columns = |l: &str, event: &str| {
        let at = l.find(&format!(" {event}"))? + 1;
        let before = l[..at].trim_end();
        let before = before.strip_suffix("msec").unwrap_or(before).trim_end();
        Some((before.len(), at))
    };
    let rows: Vec<&str> = ours
        .lines()
        .filter(|l| l.contains(" page-faults"))
        .collect();
    assert!(!rows.is_empty(), "{ours}");
    assert!(rows.iter().all(|l| l.starts_with("CPU")), "{ours}");
    assert!(!ours.contains("(CPU "), "{ours}");
    if let Some(theirs) = perf
        .then(|| {
            perf_stat(&[
                "-A",
                "-a",
                "-e",
                "cpu-clock,page-faults",
                "--",
                "sleep",
                "0.1",
            ])
        })
        .flatten()
    {
        for event in ["cpu-clock", "page-faults"] {
            let row = |t: &str| {
                t.lines()
                    .find(|l| l.starts_with("CPU0 ") && l.contains(&format!(" {event} ")))
                    .map(str::to_owned)
            };
            let (o, t) = (row(&ours).unwrap(), row(&theirs).unwrap());
            assert_eq!(
                columns(&o, event),
                columns(&t, event),
                "ours {o:?}\nperf {t:?}"
            );
        }
    }

    // -r -x: perf's columns, the count's mean a whole number, then a single run's trailing
    // fields (scope, time enabled, status).
    let r: &[&str] = &[
        "-x,",
        "-r",
        "3",
        "-e",
        "task-clock,page-faults",
        "--",
        "true",
    ];
    let Some(ours) = counts(name, r) else {
        return;
    };
    let one = counts(name, &["-x,", "-e", "task-clock,page-faults", "--", "true"]).unwrap();
    let row = |t: &str, e: &str| -> Vec<String> {
        t.lines()
            .find(|l| l.split(',').nth(2) == Some(e))
            .unwrap_or_else(|| panic!("no {e} row:\n{t}"))
            .split(',')
            .map(str::to_owned)
            .collect()
    };
    for event in ["task-clock", "page-faults"] {
        let (rep, single) = (row(&ours, event), row(&one, event));
        if event == "page-faults" {
            assert!(rep[0].parse::<u64>().is_ok(), "a whole number: {rep:?}");
        }
        assert!(rep[3].ends_with('%'), "{rep:?}");
        // After perf's 8 columns (the single run's 7): the single run's trailing fields.
        assert_eq!(rep.len(), single.len() + 1, "{rep:?} {single:?}");
        assert_eq!(rep[8], single[7], "{rep:?} {single:?}");
        assert!(rep[9].parse::<u64>().is_ok(), "{rep:?}");
        assert_eq!(rep[10], single[9], "{rep:?} {single:?}");
        if let Some(theirs) = perf.then(|| perf_stat(r)).flatten() {
            let perf_row = row(&theirs, event);
            assert_eq!(perf_row.len(), 8, "{perf_row:?}");
            assert_eq!(
                perf_row[0].contains('.'),
                rep[0].contains('.'),
                "{perf_row:?} {rep:?}"
            );
            assert_eq!(&perf_row[1..3], &rep[1..3], "{perf_row:?} {rep:?}");
        }
    }

    // -r's header says whose counts, as a single run's does.
    let Some(ours) = counts(name, &["-r", "2", "-e", "page-faults", "--", "true"]) else {
        return;
    };
    assert!(
        ours.contains("for 'true' and its child processes (2 runs):"),
        "{ours}"
    );

    // -o FILE: perf's `# started on` line, then a blank line, in each of perf's formats.
    let dir = pmc_testkit::workdir("pmcstat-started-on");
    let shape = |l: &str| -> bool {
        // `# started on Mon Dec  7 03:32:38 2026`: ctime(3)'s 24 characters.
        l.strip_prefix("# started on ").is_some_and(|d| {
            d.len() == 24
                && d.as_bytes()[3] == b' '
                && d.as_bytes()[7] == b' '
                && d[20..].parse::<u32>().is_ok()
        })
    };
    for (flag, tag) in [(None, "table"), (Some("-x,"), "csv"), (Some("-j"), "json")] {
        let file = dir.join(format!("{tag}.txt"));
        let file_s = file.to_string_lossy().into_owned();
        let mut args: Vec<&str> = flag.into_iter().collect();
        args.extend(["-o", &file_s, "-e", "page-faults", "--", "true"]);
        let (code, _, err) = pmcstat(&args);
        assert_eq!(code, 0, "{err}");
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines = text.lines();
        assert!(lines.next().is_some_and(shape), "{tag}: {text}");
        assert_eq!(lines.next(), Some(""), "{tag}: {text}");
        if perf {
            let pf = dir.join(format!("{tag}.perf"));
            let mut p: Vec<&str> = flag.into_iter().collect();
            let pf_s = pf.to_string_lossy().into_owned();
            p.extend(["-o", &pf_s, "-e", "page-faults", "--", "true"]);
            if perf_stat(&p).is_some() {
                let theirs = std::fs::read_to_string(&pf).unwrap();
                let mut t = theirs.lines();
                assert!(t.next().is_some_and(shape), "perf {tag}: {theirs}");
                assert_eq!(t.next(), Some(""), "perf {tag}: {theirs}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `perf_event_attr`s of a `-v`/`-vv` output, in open order: each field and value, and
/// whether it is a group member (perf: `group_fd` not -1; pmcstat: its `(pmcstat) group`
/// line).
fn attrs(text: &str, perf: bool) -> Vec<(std::collections::BTreeMap<String, String>, bool)> {
    let mut out: Vec<(std::collections::BTreeMap<String, String>, bool)> = Vec::new();
    for l in text.lines() {
        let starts = if perf {
            l == "perf_event_attr:"
        } else {
            l.ends_with(": native configuration:")
        };
        if starts {
            out.push(Default::default());
            continue;
        }
        if perf && l.starts_with("sys_perf_event_open:") {
            if let Some(last) = out.last_mut() {
                last.1 = !l.contains("group_fd -1");
            }
            continue;
        }
        let Some(last) = out.last_mut() else { continue };
        let w: Vec<&str> = l.split_whitespace().collect();
        if !perf && l.contains("(pmcstat) group") && l.contains("member") {
            last.1 = true;
        }
        if l.starts_with("  ") && w.len() == 2 {
            last.0.insert(w[0].to_owned(), w[1].to_owned());
        }
    }
    out
}

/// Issue 34: perf's event grammar, judged by `perf stat -vv` on the same strings: the
/// `perf_event_attr` bits of the modifiers beyond u/k/h/p (`:D` pinned and `:e` exclusive on
/// a group's leader alone, `:I` exclude_idle, `:G` exclude_host, `:H` exclude_guest, `:P`
/// precise_ip), `{a,b}:mods` groups (the member opened with its leader, the group's
/// modifiers on each), `name=` terms (the row's name) and `duration_time` (the run's
/// wall-clock time in ns). perf also sets exclude_guest on events without `:G`/`:H` where
/// pmc does not (see docs/pmcstat.md), so that field is compared with those two only.
#[test]
fn perf_grammar_builds_perfs_attrs() {
    let name = "perf_grammar_builds_perfs_attrs";
    if !perf_works() {
        pmc_testkit::skip!("perf is not installed or cannot count here");
        return;
    }
    let fields = [
        "type",
        "config",
        "pinned",
        "exclusive",
        "exclude_user",
        "exclude_kernel",
        "exclude_hv",
        "exclude_idle",
        "exclude_host",
        "precise_ip",
    ];
    for spec in [
        "page-faults:D",
        "page-faults:e",
        "page-faults:I",
        "page-faults:G",
        "page-faults:H",
        "page-faults:uP",
        "page-faults:SW",
        "{page-faults,task-clock}:D",
        "{page-faults,task-clock:k}:uI",
        "software/config=2,name=pf/",
    ] {
        let Some(ours) = counts(name, &["-v", "-e", spec, "--", "true"]) else {
            return;
        };
        let Some(theirs) = perf_stat(&["-vv", "-e", spec, "--", "true"]) else {
            panic!("perf stat -vv -e {spec} fails");
        };
        let (o, t) = (attrs(&ours, false), attrs(&theirs, true));
        assert_eq!(o.len(), t.len(), "{spec}: events\n{ours}\nperf:\n{theirs}");
        for ((oa, om), (ta, tm)) in o.iter().zip(&t) {
            assert_eq!(om, tm, "{spec}: group membership\n{ours}\nperf:\n{theirs}");
            let mut keys: Vec<&str> = fields.to_vec();
            if spec.contains('G') || spec.contains('H') {
                keys.push("exclude_guest");
            }
            for k in keys {
                assert_eq!(
                    oa.get(k),
                    ta.get(k),
                    "{spec}: `{k}`\nours: {oa:?}\nperf: {ta:?}"
                );
            }
        }
    }
    // name=: the row is the name, as perf's.
    let out = counts(
        name,
        &["-x,", "-e", "software/config=2,name=pf/", "--", "true"],
    )
    .unwrap();
    assert!(
        out.lines().any(|l| l.split(',').nth(2) == Some("pf")),
        "{out}"
    );
    // duration_time: the run's wall-clock time in ns, as perf's (a sleep of 100 ms).
    let out = counts(name, &["-x,", "-e", "duration_time", "--", "sleep", "0.1"]).unwrap();
    let row: Vec<&str> = out.lines().next().unwrap_or("").split(',').collect();
    assert_eq!(
        (row.get(1), row.get(2)),
        (Some(&"ns"), Some(&"duration_time")),
        "{out}"
    );
    let ns: f64 = row[0].parse().unwrap();
    assert!((1e8..2e9).contains(&ns), "{out}");
    let theirs = perf_stat(&["-x,", "-e", "duration_time", "--", "sleep", "0.1"]).unwrap();
    let prow: Vec<&str> = theirs.lines().next().unwrap_or("").split(',').collect();
    assert_eq!(&prow[1..3], &row[1..3], "perf: {theirs}");
}
