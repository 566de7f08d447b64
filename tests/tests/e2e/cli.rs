//! `pmcstat` end to end: the binary of this build counting `pmc-workload`,
//! its JSON, its exit statuses, its event-string errors and its default set.
//!
//! The binary is `<target>/<profile>/pmcstat`, next to this test's
//! `deps/` directory; `cargo test --workspace` builds it (pmcstat has
//! integration tests of its own). Without it, each test prints `SKIP` and
//! returns.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Command, Output};

use pmc_tests::{perf_available, perf_stat, skip};

use crate::common;
use common::pmcstat_or_skip;
use serde_json::Value;

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmc-workload");

fn run(pmcstat: &PathBuf, args: &[&str]) -> Output {
    let out = Command::new(pmcstat)
        .args(args)
        .output()
        .expect("run pmcstat");
    eprintln!(
        "$ pmcstat {}\n{}{}[exit {:?}]",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        out.status.code()
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The text line for `event`: `(value, rest)` with the value's thousands
/// separators removed (clocks in msec); `None` for `<not supported>` and
/// `<not counted>`.
fn text_line<'a>(text: &'a str, event: &str) -> Option<(Option<f64>, &'a str)> {
    text.lines().find_map(|l| {
        let t = l.trim_start();
        let (value, rest) = if let Some(r) = t.strip_prefix("<not supported>") {
            (None, r)
        } else if let Some(r) = t.strip_prefix("<not counted>") {
            (None, r)
        } else {
            let (v, r) = t.split_once(char::is_whitespace)?;
            (Some(v.replace(',', "").parse().ok()?), r)
        };
        let mut rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("msec ") {
            rest = r.trim_start();
        }
        (rest.split_whitespace().next() == Some(event)).then_some((value, rest))
    })
}

/// The last line of stderr that parses as a JSON object.
fn json_of(o: &Output) -> Value {
    let s = stderr(o);
    s.lines()
        .rev()
        .find_map(|l| {
            l.trim_start()
                .starts_with('{')
                .then(|| serde_json::from_str(l).ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no JSON object in pmcstat's output:\n{s}"))
}

#[test]
fn counts_page_faults_of_a_command() {
    let name = "counts_page_faults_of_a_command";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(
        &p,
        &["-p", "page-faults", "--", WORKLOAD, "touch-pages", "4096"],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = stderr(&out);
    let (value, _) = text_line(&text, "page-faults")
        .unwrap_or_else(|| panic!("no page-faults line in:\n{text}"));
    let value = value.expect("page-faults counted");
    assert_eq!(value.fract(), 0.0, "{value}");
    assert!(
        value >= 4096.0,
        "pmcstat counted {value} page faults:\n{text}"
    );
    assert!(value < 4096.0 + 2048.0, "{value}:\n{text}");
    assert!(
        text.contains("Performance counter stats for"),
        "perf-stat-style header missing:\n{text}"
    );
}

#[test]
fn json_has_the_documented_fields_and_agrees_with_perf() {
    let name = "json_has_the_documented_fields_and_agrees_with_perf";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(
        &p,
        &[
            "--json-report",
            "-p",
            "page-faults",
            "-p",
            "task-clock",
            "-p",
            "cycles",
            "--",
            WORKLOAD,
            "touch-pages",
            "4096",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    let cmd: Vec<&str> = j["command"]
        .as_array()
        .expect("command is an array")
        .iter()
        .map(|v| v.as_str().expect("command strings"))
        .collect();
    assert_eq!(cmd, [WORKLOAD, "touch-pages", "4096"]);
    assert_eq!(j["type"], "total", "{j}");
    assert_eq!(j["exit_status"], 0, "{j}");
    for f in ["user_ns", "sys_ns"] {
        assert!(j[f].is_u64(), "no `{f}`: {j}");
    }
    let elapsed = j["elapsed_ns"].as_u64().expect("elapsed_ns");
    assert!(elapsed > 0 && elapsed < 60_000_000_000, "{j}");

    let counters = j["counters"].as_array().expect("counters array");
    assert_eq!(counters.len(), 3, "{j}");
    for c in counters {
        for field in [
            "event",
            "scope",
            "cpu",
            "value",
            "scaled",
            "time_enabled",
            "time_running",
            "status",
            "error",
        ] {
            assert!(c.get(field).is_some(), "counter lacks `{field}`: {c}");
        }
        assert_eq!(c["type"], "counter", "{c}");
        assert_eq!(c["scope"], "process", "{c}");
        assert!(c["cpu"].is_null(), "{c}");
    }
    let by = |e: &str| {
        counters
            .iter()
            .find(|c| c["event"] == e)
            .unwrap_or_else(|| panic!("no {e} counter: {j}"))
    };
    let pf = by("page-faults");
    assert_eq!(pf["status"], "ok", "{pf}");
    assert!(pf["error"].is_null(), "{pf}");
    let faults = pf["value"].as_u64().expect("page-faults value");
    assert!(faults >= 4096, "{pf}");
    assert_eq!(pf["scaled"], pf["value"], "not multiplexed: {pf}");
    assert_eq!(pf["time_enabled"], pf["time_running"], "{pf}");
    assert!(pf["time_enabled"].as_u64().unwrap() > 0, "{pf}");
    let tc = by("task-clock");
    assert_eq!(tc["status"], "ok", "{tc}");
    assert!(tc["value"].as_u64().unwrap_or(0) > 0, "{tc}");

    let cy = by("cycles");
    if pmc_linux::env::has_hardware_pmu() {
        assert_eq!(cy["status"], "ok", "{cy}");
    } else {
        assert_eq!(cy["status"], "not-supported", "{cy}");
        assert!(cy["value"].is_null(), "{cy}");
        let err = cy["error"].as_str().expect("an error message for cycles");
        assert!(err.contains("no hardware PMU"), "{cy}");
    }

    match perf_available().and_then(|()| {
        perf_stat(
            &["page-faults"],
            WORKLOAD.as_ref(),
            &["touch-pages", "4096"],
        )
    }) {
        Err(reason) => skip!(name, "perf oracle part: {reason}"),
        Ok(counts) => {
            let perf = counts
                .iter()
                .find(|c| c.event.starts_with("page-faults"))
                .and_then(|c| c.value)
                .expect("perf counted page-faults") as u64;
            let diff = (faults as f64 - perf as f64).abs() / perf as f64;
            assert!(
                diff <= 0.02,
                "pmcstat {faults} vs perf stat {perf} page faults"
            );
        }
    }
}

#[test]
fn exit_status_of_the_command_is_propagated() {
    let name = "exit_status_of_the_command_is_propagated";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(&p, &["-p", "page-faults", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let out = run(&p, &["-p", "page-faults", "--", WORKLOAD, "exit", "42"]);
    assert_eq!(out.status.code(), Some(42), "{}", stderr(&out));
    // JSON reports it too.
    let out = run(
        &p,
        &[
            "--json-report",
            "-p",
            "page-faults",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json_of(&out)["exit_status"], 3);
    // A signal: the shell convention, 128 + signal number.
    let out = run(
        &p,
        &["-p", "page-faults", "--", "sh", "-c", "kill -TERM $$"],
    );
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2() {
    let name = "usage_errors_exit_2";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    for args in [
        &["--no-such-option"][..],
        &[][..],                // process counters and nothing to count
        &["-p", "page-faults"], // the same
        &["-w", "0", "--", "true"],
        &["-c", "3-1", "-s", "cpu-clock", "-l", "0.1"],
        &["-t", "1", "--", "true"],
        // Issue 10, defect 6: values that panicked (Duration conversion) or aborted
        // (a 343 GB allocation), and an interval under perf's 10 ms floor.
        &["-l", "1e20", "-s", "task-clock"],
        &["-w", "1e20", "--", "true"],
        &["-w", "1e300", "--", "true"],
        &["-w", "1e-9", "--", "true"],
        &["-r", "4294967295", "--", "true"],
        &["-t", "4294967295", "-l", "1"],
        &["-P", "cpu-clock", "-n", "9223372036854775808", "--", "true"],
    ] {
        let out = run(&p, args);
        assert_eq!(out.status.code(), Some(2), "pmcstat {args:?}");
        assert!(!stderr(&out).trim().is_empty(), "no message for {args:?}");
        assert!(!stderr(&out).contains("panicked"), "panic for {args:?}");
    }
    // pmcstat(8)'s options that are not here: exit 2 before running the
    // command, saying which option it is and what to use instead, without
    // clap's tip to pass it as `-- -E` (which would run it as the command).
    for (opt, says) in [
        ("-b", "PMU groups"),
        ("-M", "map file"),
        ("-f", "plugin options"),
        ("-X", "unknown option '-X'"),
        ("--frobnicate", "unknown option '--frobnicate'"),
    ] {
        let out = run(&p, &[opt, "--", "false"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "pmcstat {opt}: {err}");
        assert!(err.contains(says), "pmcstat {opt}: {err}");
        assert!(
            !err.contains("tip:") && !err.contains("'-- "),
            "pmcstat {opt}: {err}"
        );
        if opt != "-X" && !opt.starts_with("--") {
            assert!(err.contains("pmcstat(8)"), "pmcstat {opt}: {err}");
        }
    }
}

#[test]
fn misspelt_event_is_an_error_naming_its_position() {
    let name = "misspelt_event_is_an_error_naming_its_position";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    // A misspelt name: refused before running the command (the marker file
    // is not created), exit 2 as for other usage errors.
    let dir = pmc_tests::TempDir::new("cli-typo", 0o755).unwrap();
    let marker = dir.0.join("ran");
    let touch = format!("touch {}", marker.display());
    let out = run(&p, &["-p", "page-fualts", "--", "sh", "-c", &touch]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!marker.exists(), "the command ran despite the bad event");
    assert!(err.contains("page-fualts"), "{err}");
    assert!(err.contains("at position 0"), "{err}");
    assert!(err.contains("page-faults"), "no suggestion: {err}");
    // No near name: the library's help names `Backend::list_events`; pmcstat's
    // user gets its option instead.
    let out = run(&p, &["-p", "zzqqxxyy", "--", "true"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`pmcstat -L`") && !err.contains("Backend::"),
        "{err}"
    );

    // A bad modifier: the position points at it, with a caret under it.
    let out = run(&p, &["-p", "page-faults:q", "--", "true"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("at position 12"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let echo = lines
        .iter()
        .position(|l| l.trim() == "page-faults:q")
        .unwrap_or_else(|| panic!("the spec is not echoed: {err}"));
    let caret = lines.get(echo + 1).copied().unwrap_or_default();
    let col = |l: &str, pat: char| l.find(pat);
    assert_eq!(
        col(caret, '^').map(|c| c as isize - col(lines[echo], 'p').unwrap() as isize),
        Some(12),
        "caret not under position 12:\n{err}"
    );
}

#[test]
fn default_event_set_shows_cycles_not_supported_without_pmu() {
    let name = "default_event_set_shows_cycles_not_supported_without_pmu";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(&p, &["--", WORKLOAD, "touch-pages", "64"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stderr(&out);
    // The software half of perf stat's default set is always counted.
    for ev in [
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    ] {
        let (v, _) = text_line(&text, ev).unwrap_or_else(|| panic!("no {ev} line:\n{text}"));
        assert!(v.is_some(), "{ev} not counted:\n{text}");
    }
    let (pf, _) = text_line(&text, "page-faults").unwrap();
    assert!(pf.unwrap() >= 64.0, "{text}");
    let hw = ["cycles", "instructions", "branches", "branch-misses"];
    if pmc_linux::env::has_hardware_pmu() {
        for ev in hw {
            assert!(text_line(&text, ev).is_some(), "no {ev} line:\n{text}");
        }
        skip!(
            name,
            "this machine has a hardware PMU: the <not supported> rendering needs one without"
        );
        return;
    }
    for ev in hw {
        let (v, rest) = text_line(&text, ev).unwrap_or_else(|| panic!("no {ev} line:\n{text}"));
        assert_eq!(v, None, "{ev} counted without a PMU?\n{text}");
        let line = text.lines().find(|l| l.contains(rest)).unwrap();
        assert!(
            line.trim_start().starts_with("<not supported>"),
            "{ev}: {line}"
        );
        assert!(line.contains("no hardware PMU"), "{ev}: no reason: {line}");
        // One short reason per row; the whole explanation once, below.
        assert!(
            !line.contains("/sys/bus"),
            "{ev}: the long reason on its row: {line}"
        );
    }
    let explanations: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/sys/bus/event_source/devices"))
        .collect();
    assert_eq!(explanations.len(), 1, "the explanation once:\n{text}");
    for ev in hw {
        assert!(explanations[0].contains(ev), "{ev} not named:\n{text}");
    }
}

#[test]
fn descendants_flag_counts_children() {
    let name = "descendants_flag_counts_children";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    // The trailing builtin keeps both workloads children of the shell:
    // busybox sh (the PMU lab's) execs a -c script's last external command
    // in place, which would count it without -d.
    let script = format!("{WORKLOAD} touch-pages 2048; {WORKLOAD} touch-pages 2048; exit 0");
    let faults = |d: bool| {
        let mut args = vec!["--json-report", "-p", "page-faults"];
        if d {
            args.push("-d");
        }
        args.extend(["--", "sh", "-c", &script]);
        let out = run(&p, &args);
        assert_eq!(out.status.code(), Some(0));
        json_of(&out)["counters"][0]["value"]
            .as_u64()
            .expect("page-faults value")
    };
    let with = faults(true);
    let without = faults(false);
    assert!(with >= 4096, "-d: {with}");
    assert!(
        without < 2048,
        "without -d the children are not counted: {without}"
    );
}

#[test]
fn system_scope_per_cpu_json_and_csv() {
    let name = "system_scope_per_cpu_json_and_csv";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    if !pmc_linux::env::has_perfmon() && pmc_linux::env::paranoid_level().is_none_or(|l| l > 0) {
        skip!(
            name,
            "system scope needs CAP_PERFMON or perf_event_paranoid <= 0"
        );
        return;
    }
    let out = run(
        &p,
        &[
            "--json-report",
            "--per-cpu",
            "-s",
            "cpu-clock",
            "--",
            WORKLOAD,
            "sleep-ms",
            "100",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    let elapsed = j["elapsed_ns"].as_u64().unwrap() as f64;
    assert!(elapsed >= 100e6, "{j}");
    let counters = j["counters"].as_array().unwrap();
    let cpus: Vec<u64> = counters
        .iter()
        .map(|c| c["cpu"].as_u64().unwrap())
        .collect();
    let online: Vec<u64> = pmc_linux::env::online_cpus()
        .into_iter()
        .map(u64::from)
        .collect();
    assert_eq!(cpus, online, "one counter per online CPU, in order: {j}");
    for c in counters {
        assert_eq!(c["scope"], "system", "{c}");
        assert_eq!(c["status"], "ok", "{c}");
        let v = c["value"].as_u64().unwrap() as f64;
        assert!(
            (0.7 * elapsed..=1.3 * elapsed).contains(&v),
            "cpu-clock {v} ns on CPU {} over {elapsed} ns: {c}",
            c["cpu"]
        );
    }

    // CSV in perf stat -x's column order (value, unit, event, run time,
    // percentage, metric value, metric unit), then scope, time enabled,
    // status; summed over CPUs without --per-cpu.
    let out = run(
        &p,
        &[
            "-x",
            ",",
            "-s",
            "cpu-clock",
            "-p",
            "page-faults",
            "--",
            WORKLOAD,
            "touch-pages",
            "128",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = stderr(&out);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() == 10)
        .collect();
    assert_eq!(rows.len(), 2, "two CSV rows of 10 fields:\n{text}");
    let sys = rows
        .iter()
        .find(|f| f[2] == "cpu-clock")
        .expect("cpu-clock row");
    assert_eq!(
        (sys[1], sys[7], sys[9]),
        ("msec", "system", "ok"),
        "{sys:?}"
    );
    let pf = rows
        .iter()
        .find(|f| f[2] == "page-faults")
        .expect("page-faults row");
    assert_eq!((pf[7], pf[9]), ("process", "ok"), "{pf:?}");
    assert!(pf[0].parse::<u64>().unwrap() >= 128, "{pf:?}");
    assert_eq!(pf[3], pf[8], "time running = enabled: {pf:?}");
    assert_eq!(pf[4], "100.00", "{pf:?}");

    // The oracle: perf stat -x, on the same command lays out its first seven
    // columns the same way (a perf CSV parser reads ours).
    if let Err(reason) = perf_available() {
        skip!(name, "perf -x oracle part: {reason}");
        return;
    }
    let perf = Command::new("perf")
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "page-faults,task-clock",
            "--",
            WORKLOAD,
            "touch-pages",
            "128",
        ])
        .output()
        .expect("perf stat runs");
    let theirs = String::from_utf8_lossy(&perf.stderr).into_owned();
    let out = run(
        &p,
        &[
            "-x",
            ",",
            "-e",
            "page-faults,task-clock",
            "--",
            WORKLOAD,
            "touch-pages",
            "128",
        ],
    );
    let ours = stderr(&out);
    let row = |text: &str, ev: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split(',').map(str::to_owned).collect::<Vec<_>>())
            .find(|f| f.get(2).is_some_and(|e| e == ev))
            .unwrap_or_else(|| panic!("no {ev} row:\n{text}"))
    };
    for ev in ["page-faults", "task-clock"] {
        let (a, b) = (row(&ours, ev), row(&theirs, ev));
        assert!(b.len() >= 7 && a.len() >= 7, "{a:?} vs perf {b:?}");
        assert_eq!(a[1], b[1], "{ev} unit: {a:?} vs perf {b:?}");
        assert_eq!(a[4], b[4], "{ev} percentage: {a:?} vs perf {b:?}");
        assert_eq!(a[6], b[6], "{ev} metric unit: {a:?} vs perf {b:?}");
        for i in [0, 3, 5] {
            assert!(
                a[i].parse::<f64>().is_ok() && b[i].parse::<f64>().is_ok(),
                "{ev} column {i}: {a:?} vs perf {b:?}"
            );
        }
    }
}

/// `pmcstat -p` counts the whole launched command, every thread it starts (hwpmc's process
/// PMC; perf stat's count), and `-P` samples every thread: two threads of 150 ms CPU each.
#[test]
fn threads_of_the_command_are_counted_and_sampled() {
    let name = "threads_of_the_command_are_counted_and_sampled";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(
        &p,
        &[
            "--json-report",
            "-p",
            "task-clock",
            "--",
            WORKLOAD,
            "spin-threads",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    let ms = j["counters"][0]["value"]
        .as_u64()
        .expect("task-clock value") as f64
        / 1e6;
    assert!(
        ms >= 300.0 * 0.98,
        "two threads x 150 ms, counted {ms:.1} ms: {j}"
    );

    let dir = std::env::temp_dir().join(format!("pmc-cli-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("threads.pmclog");
    let log_s = log.to_str().expect("utf-8 path");
    let out = run(
        &p,
        &[
            "-P",
            "cpu-clock",
            "-n",
            "1000000",
            "-O",
            log_s,
            "--",
            WORKLOAD,
            "spin-threads",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let dump = run(&p, &["-R", log_s, "--dump"]);
    let text = String::from_utf8_lossy(&dump.stdout);
    let tids: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("sample "))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("tid=")))
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    // The main thread hardly runs; the two spinning threads are sampled.
    assert!(tids.len() >= 2, "samples from threads {tids:?}");
}

/// Issue 10, defect 9: as an unprivileged user, a tracepoint on a root-only tracefs
/// (mounted, mode 0700) is reported as mounted but unreadable, with its mode, not as
/// "not mounted" (which sent users to mount what was already there).
#[test]
fn unprivileged_tracepoint_on_private_tracefs_says_unreadable() {
    use std::os::unix::fs::PermissionsExt;
    let name = "unprivileged_tracepoint_on_private_tracefs_says_unreadable";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip!(name, "must run as root to become `nobody`");
        return;
    }
    let tracefs = std::path::Path::new("/sys/kernel/tracing");
    let mounted = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| {
            l.split_whitespace().nth(1) == Some("/sys/kernel/tracing") && l.contains(" tracefs ")
        });
    let mode = std::fs::metadata(tracefs).map(|m| m.permissions().mode() & 0o7777);
    let Ok(mode) = mode.ok().filter(|m| mounted && m & 0o005 == 0).ok_or(()) else {
        skip!(
            name,
            "tracefs is not mounted at /sys/kernel/tracing with mode 0700 here"
        );
        return;
    };
    let Some((uid, gid)) = pmc_tests::nobody_ids() else {
        skip!(name, "no user `nobody`");
        return;
    };
    let (exe, _keep) = pmc_tests::executable_for(&p, uid, gid).expect("pmcstat for nobody");
    let mut cmd = Command::new(&exe);
    cmd.args(["-p", "sched:sched_switch", "--", "true"])
        .current_dir("/");
    pmc_testkit::cli::as_user(&mut cmd, uid, gid);
    let out = cmd.output().expect("run pmcstat as nobody");
    let err = stderr(&out);
    eprintln!("as nobody: {err}");
    // The event is shown as not supported, with the reason (the command still ran).
    assert!(
        err.contains("tracefs is mounted at /sys/kernel/tracing but not readable")
            && err.contains(&format!("(mode {mode:04o})")),
        "{err}"
    );
    assert!(!err.contains("not mounted"), "{err}");
}

/// Issue 10, defect 9: `-R` of a damaged or unfinished log prints the reader's report in its
/// readable form (`N records in M blocks, ... not closed cleanly ...`), not a Rust `Debug`
/// struct (`ReadReport { .. }`).
#[test]
fn read_damage_report_is_readable() {
    let name = "read_damage_report_is_readable";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let dir = pmc_tests::TempDir::new("cli-damage", 0o755).unwrap();
    let log = dir.0.join("cut.pmclog");
    let out = run(
        &p,
        &[
            "-P",
            "cpu-clock",
            "--freq",
            "1000",
            "-O",
            &log.to_string_lossy(),
            "--",
            WORKLOAD,
            "spin-cpu-ms",
            "50",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Cut the log's last 10 bytes: the clean-close marker goes, and a record is torn.
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 10]).unwrap();
    let out = run(&p, &["-R", &log.to_string_lossy(), "-o", "/dev/null"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("ReadReport"), "Debug output: {err}");
    assert!(
        err.contains("records in") && err.contains("not closed cleanly"),
        "{err}"
    );
}

/// `seconds user` / `seconds sys` lines, as perf stat prints them for a
/// launched command, agreeing with perf stat's on a CPU-bound shell loop.
#[test]
fn user_and_sys_time_lines_agree_with_perf_stat() {
    let name = "user_and_sys_time_lines_agree_with_perf_stat";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    // ~0.2 s of user time in the shell, with a child process per round (sys).
    let script = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; /bin/true";
    let secs = |text: &str, what: &str| -> f64 {
        text.lines()
            .find(|l| l.trim_end().ends_with(&format!("seconds {what}")))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `seconds {what}` line:\n{text}"))
    };
    let out = run(&p, &["-p", "task-clock", "--", "sh", "-c", script]);
    let ours = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{ours}");
    let (user, sys) = (secs(&ours, "user"), secs(&ours, "sys"));
    let elapsed = secs(&ours, "time elapsed");
    assert!(user > 0.02, "{ours}");
    assert!(
        user + sys <= elapsed * 2.0 + 0.02,
        "more CPU than 2 CPUs give: {ours}"
    );
    if let Err(reason) = perf_available() {
        skip!(name, "perf oracle part: {reason}");
        return;
    }
    let perf = Command::new("perf")
        .args(["stat", "-e", "task-clock", "--", "sh", "-c", script])
        .output()
        .expect("perf stat runs");
    let theirs = String::from_utf8_lossy(&perf.stderr).into_owned();
    let perf_user = secs(&theirs, "user");
    // The same loop twice: CPU time agrees within noise (tick accounting).
    let ratio = user / perf_user.max(1e-3);
    assert!(
        (0.5..=2.0).contains(&ratio),
        "pmcstat {user} s user vs perf stat {perf_user} s:\n{ours}\n{theirs}"
    );
}

/// perf's `-I MS` and `-A` outside `-R`: the interval header is perf stat
/// -I's, byte for byte, and the rows are timed; `-A` gives per-CPU rows;
/// with `-R` both letters are pmcstat(8)'s and refused with a message.
#[test]
fn perf_interval_and_no_aggregation_letters() {
    let name = "perf_interval_and_no_aggregation_letters";
    let Some(p) = pmcstat_or_skip(name) else {
        return;
    };
    let out = run(
        &p,
        &["-I", "100", "-p", "task-clock", "--", "sleep", "0.35"],
    );
    let ours = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{ours}");
    let header = "#           time             counts unit events";
    assert_eq!(ours.lines().filter(|l| *l == header).count(), 1, "{ours}");
    let rows: Vec<f64> = ours
        .lines()
        .filter(|l| l.contains("task-clock") && !l.contains("Performance"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(rows.len() >= 3, "timed rows: {rows:?}\n{ours}");
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "{rows:?}");
    let out = run(&p, &["-A", "-s", "cpu-clock", "-l", "0.05"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("CPU0 ")),
        "-A is per CPU, CPU0 first as perf: {text}"
    );
    for letter in ["-A", "-I"] {
        let mut args = vec!["-R", "/dev/null", letter];
        if letter == "-I" {
            args.push("100");
        }
        let out = run(&p, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("pmcstat(8)"), "{err}");
    }
    if let Err(reason) = perf_available() {
        skip!(name, "perf oracle part: {reason}");
        return;
    }
    let perf = Command::new("perf")
        .args([
            "stat",
            "-I",
            "100",
            "-e",
            "task-clock",
            "--",
            "sleep",
            "0.25",
        ])
        .output()
        .expect("perf stat runs");
    let theirs = String::from_utf8_lossy(&perf.stderr);
    assert!(
        theirs.lines().any(|l| l == header),
        "perf's header differs:\n{theirs}"
    );
}
