//! pmcstat(8)'s -q, -W, -E and -i end to end on this machine (software events only).
#![cfg(target_os = "linux")]

use std::process::Command;

fn pmcstat(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pmcstat"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A child process that burns well over the 0.1 ms the uncounted-children
/// note needs, under a shell that does not exec it.
const CHILD_LOOP: &str = "sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'; true";

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pmcstat-opts-{}-{name}", std::process::id()))
}

/// The task-clock value (msec) of a perf-stat-like table.
fn task_clock_ms(table: &str) -> Option<f64> {
    table.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let v = w.next()?.replace(',', "");
        (w.next()? == "msec" && w.next()? == "task-clock").then(|| v.parse().ok())?
    })
}

#[test]
fn quiet_keeps_the_counts_and_drops_the_notes() {
    let (code, _, loud) = pmcstat(&["-p", "task-clock", "--", "sh", "-c", CHILD_LOOP]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {loud}");
        return;
    }
    let (code, _, quiet) = pmcstat(&["-q", "-p", "task-clock", "--", "sh", "-c", CHILD_LOOP]);
    assert_eq!(code, 0, "{quiet}");
    // The counts print either way.
    let (a, b) = (task_clock_ms(&loud), task_clock_ms(&quiet));
    assert!(a.is_some_and(|v| v > 0.0), "{loud}");
    assert!(b.is_some_and(|v| v > 0.0), "{quiet}");
    assert!(quiet.contains("seconds time elapsed"), "{quiet}");
    // The note about the uncounted child process goes.
    assert!(loud.contains("note: child processes ran"), "{loud}");
    assert!(!quiet.contains("note:"), "{quiet}");
    let lines = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        lines(&quiet) < lines(&loud),
        "-q: {} lines, without: {}\n{quiet}\n---\n{loud}",
        lines(&quiet),
        lines(&loud)
    );
    // -q and -v pull opposite ways: a usage error.
    let (code, _, err) = pmcstat(&["-q", "-v", "-p", "task-clock", "true"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn quiet_sampling_drops_the_status_line() {
    let log = temp("quiet.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let args = [
        "-P",
        "cpu-clock",
        "--freq",
        "1000",
        "-O",
        &log_s,
        "--",
        "sh",
        "-c",
        CHILD_LOOP,
    ];
    let (code, _, loud) = pmcstat(&args);
    if code != 0 {
        let _ = std::fs::remove_file(&log);
        pmc_testkit::skip!("sampling not permitted here: {loud}");
        return;
    }
    assert!(loud.contains("written to"), "{loud}");
    let mut q = vec!["-q"];
    q.extend_from_slice(&args);
    let (code, _, quiet) = pmcstat(&q);
    let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&log);
    assert_eq!(code, 0, "{quiet}");
    assert!(!quiet.contains("written to"), "{quiet}");
    assert!(size > 0, "the log is still written");
}
