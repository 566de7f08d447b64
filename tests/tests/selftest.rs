//! The self-test on this machine: `pmc_selftest::run_native()` and `pmcstat
//! --selftest`. Software rows PASS here (page faults, sampling periods, the
//! log round trip; context switches and migrations when privileged and with
//! 2+ CPUs); on a machine without a PMU every hardware row SKIPs saying so,
//! and each such SKIP is recorded visibly. Nothing may FAIL, and the exit
//! status says so.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use pmc_selftest::{Report, Verdict};
use pmc_tests::skip;
use serde_json::Value;

mod common;
use common::pmcstat_or_skip;

const CHECKS: [&str; 10] = [
    "instructions",
    "branches",
    "cycles",
    "page faults",
    "context switches",
    "cpu migrations",
    "user-space reads",
    "multiplexing",
    "sampling period",
    "log round trip",
];

fn has_pmu() -> bool {
    pmc_linux::env::has_hardware_pmu()
}

/// What every run of the self-test on this machine must show.
fn judge(test: &str, r: &Report) {
    let names: Vec<&str> = r.rows.iter().map(|x| x.check).collect();
    assert_eq!(names, CHECKS, "one row per check, in order");
    assert!(r.passed(), "a check FAILed on this machine:\n{r}");
    for c in ["page faults", "sampling period", "log round trip"] {
        let row = r.row(c).unwrap();
        assert!(row.measured.is_some() && row.ratio().is_some(), "{row:?}");
        if c == "sampling period" && row.verdict == Verdict::Warn {
            // Late timer interrupts (the PMU lab's emulated guest under a
            // loaded host: 5-30 % of task-clock sampled on Linux 6.1) drop
            // cpu-clock expiries; this VM's 6.18 folds them and PASSes.
            eprintln!("{c}: WARN: {}", row.note);
            continue;
        }
        assert_eq!(row.verdict, Verdict::Pass, "{row:?}");
    }
    for c in ["context switches", "cpu migrations"] {
        let row = r.row(c).unwrap();
        match row.verdict {
            Verdict::Pass => {}
            Verdict::Skip => skip!(test, "{c}: {}", row.note),
            _ => panic!("{row:?}"),
        }
    }
    for row in r.rows.iter().filter(|x| x.hardware) {
        if has_pmu() {
            assert_ne!(row.verdict, Verdict::Fail, "{row:?}");
            continue;
        }
        assert_eq!(row.verdict, Verdict::Skip, "no PMU here: {row:?}");
        let why = format!("{} {}", row.note, row.causes.join(" "));
        assert!(
            why.contains("no hardware PMU") || why.contains("without a virtual PMU"),
            "a hardware SKIP names the missing PMU: {row:?}"
        );
        skip!(test, "hardware row `{}`: {}", row.check, row.note);
    }
}

#[test]
fn library_selftest_on_this_machine() {
    let t = "library_selftest_on_this_machine";
    let r = pmc_selftest::run_native().expect("the native backend opens");
    eprintln!("{r}");
    judge(t, &r);
    if !has_pmu() {
        // The report's own text says what is missing and how to fix it.
        let text = r.to_string();
        assert!(text.contains("likely cause: hardware PMU"), "{text}");
        assert!(
            text.contains("the counters that are here count right"),
            "{text}"
        );
    }
}

fn pmcstat(bin: &Path, args: &[&str]) -> pmc_testkit::cli::Output {
    pmc_testkit::cli::run_echoed(bin, "pmcstat", args)
}

#[test]
fn pmcstat_selftest_table_json_and_csv() {
    let t = "pmcstat_selftest_table_json_and_csv";
    let Some(bin) = pmcstat_or_skip(t) else {
        return;
    };
    let out = pmcstat(&bin, &["--selftest"]);
    assert_eq!(out.code, 0, "nothing FAILs here: {}", out.stderr);
    for c in CHECKS {
        assert!(
            out.stdout.lines().any(|l| l.starts_with(c)),
            "no `{c}` row:\n{}",
            out.stdout
        );
    }
    for c in ["page faults", "sampling period", "log round trip"] {
        let line = out.stdout.lines().find(|l| l.starts_with(c)).unwrap();
        let late_timer = c == "sampling period" && line.contains(" WARN ");
        assert!(line.contains(" PASS ") || late_timer, "{line}");
    }
    if !has_pmu() {
        for c in [
            "instructions",
            "branches",
            "cycles",
            "user-space reads",
            "multiplexing",
        ] {
            let line = out.stdout.lines().find(|l| l.starts_with(c)).unwrap();
            assert!(
                line.contains(" SKIP ") && line.contains("no hardware PMU"),
                "{line}"
            );
        }
    }
    assert!(
        out.stdout.contains(" failed, "),
        "the summary line: {}",
        out.stdout
    );

    let json = pmcstat(&bin, &["--selftest", "--json"]);
    assert_eq!(json.code, 0);
    let v: Value = serde_json::from_str(json.stdout.trim()).expect("one JSON object");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), CHECKS.len());
    assert_eq!(v["backend"], "linux-perf");
    for r in rows {
        assert!(
            ["PASS", "WARN", "SKIP"].contains(&r["verdict"].as_str().unwrap_or("")),
            "{r}"
        );
    }

    let csv = pmcstat(&bin, &["--selftest", "-x", ";"]);
    assert_eq!(csv.code, 0);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), CHECKS.len(), "{}", csv.stdout);
    for (l, c) in lines.iter().zip(CHECKS) {
        let f: Vec<&str> = l.split(';').collect();
        assert_eq!(f.len(), 7, "{l}");
        assert_eq!(f[0], c);
    }

    // With a command it is a usage error, not a silent count.
    let bad = pmcstat(&bin, &["--selftest", "--", "true"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// As an unprivileged user at `perf_event_paranoid` 2 the kernel-mode
/// software events read 0: those rows SKIP naming the paranoid level, and
/// the run still passes.
#[test]
fn pmcstat_selftest_unprivileged() {
    let t = "pmcstat_selftest_unprivileged";
    let Some(bin) = pmcstat_or_skip(t) else {
        return;
    };
    let Some((uid, gid)) = pmc_tests::nobody_ids() else {
        skip!(t, "no user `nobody`");
        return;
    };
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        .unwrap_or(false);
    if !root {
        skip!(t, "not root: cannot switch to `nobody`");
        return;
    }
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
        .unwrap_or(2);
    let (exe, _keep) = pmc_tests::executable_for(&bin, uid, gid).expect("pmcstat for nobody");
    let mut cmd = Command::new(&exe);
    cmd.arg("--selftest").current_dir("/");
    pmc_testkit::cli::as_user(&mut cmd, uid, gid);
    let out: pmc_testkit::cli::Output = cmd.output().expect("run pmcstat as nobody").into();
    eprintln!("as nobody:\n{}{}", out.stdout, out.stderr);
    if paranoid >= 3 {
        // Debian's level 3: nothing opens unprivileged; the rows say so.
        assert_eq!(out.code, 1);
        return;
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("context switches"))
        .unwrap_or_default();
    if paranoid == 2 {
        assert!(
            line.contains(" SKIP ") && line.contains("perf_event_paranoid 2"),
            "{line}"
        );
    }
}
