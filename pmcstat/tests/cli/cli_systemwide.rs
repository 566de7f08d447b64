//! System-wide runs without a command (pmcstat(8)'s `-s SPEC -w 1`, `-S SPEC
//! -O FILE`; perf's `stat -a`, `record -a`), which run until a stop signal;
//! perf's `-a`/`--all-cpus` beside pmcstat(8)'s `-a FILE`; pmcstat's own
//! explanation for pmcstat(8)'s letters that clap would misread. Software
//! events only; counts are judged by structure and against perf, never by time.
#![cfg(target_os = "linux")]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;
use common::pmcstat;

fn temp(name: &str) -> std::path::PathBuf {
    pmc_testkit::workdir("pmcstat-systemwide").join(name)
}

/// Why system-wide counting does not work here, if it does not.
fn cannot_count_system() -> Option<String> {
    let (code, _, err) = pmcstat(&["-s", "cpu-clock", "-l", "0.01"]);
    (code != 0).then_some(err)
}

/// Runs pmcstat with `args` and no command, sends it `signal` after about a
/// second (a delay for it to start, not a measurement), and returns what it did.
fn run_until(args: &[&str], signal: &str) -> Output {
    let child = common::command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pmcstat");
    std::thread::sleep(Duration::from_secs(1));
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {signal}");
    child.wait_with_output().expect("wait for pmcstat")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The first number of the table row of `event`, without separators.
fn row_value(table: &str, event: &str) -> Option<f64> {
    table.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let v = w.next()?;
        let rest: Vec<&str> = w.collect();
        let named = rest.first() == Some(&event)
            || (rest.first() == Some(&"msec") && rest.get(1) == Some(&event));
        named.then(|| v.replace(',', "").parse().ok()).flatten()
    })
}

/// pmcstat(8)'s `pmcstat -s SPEC -w SECS`: intervals until SIGINT, then the
/// table, exit 128 + SIGINT (as perf stat -a on Ctrl-C).
#[test]
fn system_counting_without_a_command_runs_until_sigint() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let out = run_until(
        &["-s", "cpu-clock", "-s", "context-switches", "-w", "0.2"],
        "-INT",
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("Performance counter stats for 'system wide'"),
        "{err}"
    );
    assert!(err.contains("seconds time elapsed"), "{err}");
    // Interval rows came before the table, each with its time.
    let intervals = err
        .lines()
        .filter(|l| l.contains("cpu-clock") && l.trim_start().starts_with("0."))
        .count();
    assert!(intervals >= 1, "no -w rows: {err}");
    assert!(
        row_value(&err, "cpu-clock").is_some_and(|ms| ms > 0.0),
        "{err}"
    );
    // Noisy system-wide: nonzero is all that is asserted.
    assert!(
        row_value(&err, "context-switches").is_some_and(|n| n > 0.0),
        "{err}"
    );
}

/// SIGTERM stops it the same way: the table, exit 128 + SIGTERM.
#[test]
fn system_counting_stops_on_sigterm_too() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let out = run_until(&["-s", "page-faults"], "-TERM");
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(row_value(&err, "page-faults").is_some(), "{err}");
}

/// pmcstat(8)'s `pmcstat -S SPEC -O FILE`: samples until SIGINT, then the log
/// is drained and closed (read back whole), exit 128 + SIGINT.
#[test]
fn system_sampling_without_a_command_runs_until_sigint() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let log = temp("s.out");
    let _ = std::fs::remove_file(&log);
    let out = run_until(&["-S", "cpu-clock", "-O", log.to_str().unwrap()], "-INT");
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("samples (0 lost)") || err.contains("lost) of cpu-clock"),
        "{err}"
    );
    let (code, summary, serr) = pmcstat(&["-R", log.to_str().unwrap(), "--summary"]);
    assert_eq!(code, 0, "{serr}");
    let all = summary + &serr;
    assert!(!all.contains("damaged or unfinished"), "{all}");
    let samples: u64 = all
        .lines()
        .find_map(|l| {
            l.split("Top functions (")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert!(samples > 0, "{all}");
}

/// perf stat -a's rows: the default set system-wide, with cpu-clock for
/// task-clock, and its metrics (CPUs utilized, /sec), judged against perf's
/// own -x output: the same events in the same order with the same metric units.
#[test]
fn all_cpus_prints_perf_stat_a_rows_and_metrics() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    if !pmc_testkit::cli::works("perf", &["--version"]) {
        pmc_testkit::skip!("perf is not installed");
        return;
    }
    // (event, running %, metric unit) of each row of perf's CSV
    // (value,unit,event,run,pct,metric,unit): 100.00 for an event not supported.
    let rows = |csv: &str| -> Vec<(String, String, String)> {
        csv.lines()
            .filter(|l| l.contains(','))
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                // K/sec or /sec follows the (noisy) count: the kind of metric is compared.
                let unit = f.get(6).unwrap_or(&"");
                let unit = if unit.ends_with("/sec") { "/sec" } else { unit };
                let pct = f.get(4).unwrap_or(&"");
                // A counted event ran part of the time on a busy machine: only perf's
                // 100.00 of an unsupported one is compared exactly.
                let pct = if f.first() == Some(&"<not supported>") {
                    pct
                } else {
                    ""
                };
                (
                    f.get(2).unwrap_or(&"").to_string(),
                    pct.to_string(),
                    unit.to_string(),
                )
            })
            .collect()
    };
    let perf = Command::new("perf")
        .args(["stat", "-a", "-x,", "--", "sleep", "0.3"])
        .output()
        .expect("perf");
    let perf_rows = rows(&String::from_utf8_lossy(&perf.stderr));
    for flag in ["-a", "--all-cpus"] {
        let (code, _, err) = pmcstat(&[flag, "-x,", "--", "sleep", "0.3"]);
        assert_eq!(code, 0, "{flag}: {err}");
        assert_eq!(
            rows(&err),
            perf_rows,
            "{flag}: pmcstat\n{err}\nperf\n{perf:?}"
        );
    }
    // The table: perf stat -a's header, its event names (no " (system)" when every counter
    // is system-wide), cpu-clock with CPUs utilized, rates per second, nonzero counts.
    let (code, _, err) = pmcstat(&["-a", "--", "sleep", "0.3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("Performance counter stats for 'system wide':"),
        "{err}"
    );
    assert!(!err.contains("(system)"), "{err}");
    let row = |e: &str| err.lines().find(|l| l.contains(e)).unwrap_or("").to_owned();
    assert!(row("cpu-clock").contains("CPUs utilized"), "{err}");
    assert!(row("context-switches").contains("/sec"), "{err}");
    assert!(row("page-faults").contains("/sec"), "{err}");
    assert!(
        row_value(&err, "context-switches").is_some_and(|n| n > 0.0),
        "{err}"
    );
}

/// `pmcstat -a` with no command: the default set system-wide until SIGINT.
#[test]
fn all_cpus_without_a_command_runs_until_sigint() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let out = run_until(&["-a"], "-INT");
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("'system wide'"), "{err}");
    for e in [
        "cpu-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    ] {
        assert!(row_value(&err, e).is_some(), "{e}: {err}");
    }
}

/// `-a -P SPEC` samples every CPU, as perf record -a (the log's PMC is system-wide).
#[test]
fn all_cpus_makes_p_sampling_system_wide() {
    if let Some(err) = cannot_count_system() {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let log = temp("a.out");
    let (code, _, err) = pmcstat(&[
        "-a",
        "-v",
        "-P",
        "cpu-clock",
        "-O",
        log.to_str().unwrap(),
        "--",
        "sleep",
        "0.2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("system, every CPU"), "{err}");
}

/// pmcstat(8)'s `-a FILE` keeps its meaning with -R; --all-cpus is refused there, and
/// with -p and -t, saying why.
#[test]
fn pmcstat8_a_keeps_its_meaning_with_r() {
    let (code, _, err) = pmcstat(&["-R", "/nonexistent.log", "-a", "out.txt"]);
    assert_ne!(code, 0);
    assert!(!err.contains("--all-cpus"), "{err}");
    for args in [
        &["-R", "x.log", "--all-cpus"][..],
        &["-a", "-p", "page-faults", "true"],
        &["-a", "-t", "1"],
    ] {
        let (code, _, err) = pmcstat(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("perf's -a"), "{args:?}: {err}");
    }
}

/// --help says what runs until a signal, and both meanings of -a.
#[test]
fn help_describes_system_wide_runs_and_a() {
    let (code, help, _) = pmcstat(&["--help"]);
    assert_eq!(code, 0);
    for says in [
        "--all-cpus",
        "until SIGINT or SIGTERM",
        "pmcstat -a    (perf stat -a, until Ctrl-C)",
        "pmcstat -TS cpu-clock",
        "Without -R, -a is perf's --all-cpus",
        "0600",
    ] {
        assert!(help.contains(says), "--help lacks {says:?}:\n{help}");
    }
}

/// pmcstat(8)'s letters that clap read as this pmcstat's options get
/// pmcstat's explanation, not clap's "a value is required for ...".
#[test]
fn pmcstat8_letters_get_pmcstats_explanation() {
    for (args, says) in [
        (&["-R", "x.log", "-I"][..], "pmcstat(8)'s symbol offsets"),
        (
            &["-R", "x.log", "-g", "-e"],
            "pmcstat(8)'s wide history counters",
        ),
        (
            &["-R", "x.log", "-e", "-g"],
            "pmcstat(8)'s wide history counters",
        ),
        (
            &["-R", "x.log", "-g", "-e", "foo"],
            "pmcstat(8)'s wide history counters",
        ),
        (
            &["-R", "x.log", "-a"],
            "-a FILE with -R writes every callchain node",
        ),
    ] {
        let (code, _, err) = pmcstat(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("a value is required"), "{args:?}: {err}");
    }
}
