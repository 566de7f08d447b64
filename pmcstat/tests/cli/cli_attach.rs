//! pmcstat(8)'s -t PID|REGEX, and the positional -c and -d, end to end on
//! this machine (software events only).
#![cfg(target_os = "linux")]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;
use common::pmcstat;

fn temp(name: &str) -> std::path::PathBuf {
    pmc_testkit::workdir("pmcstat-attach").join(name)
}

/// Whether software counting works here (perf_event_paranoid, seccomp).
fn can_count() -> Option<String> {
    let (code, _, err) = pmcstat(&["-p", "task-clock", "true"]);
    (code != 0).then_some(err)
}

/// Kills and reaps the spinners at the end of a test, pass or fail.
struct Spinners(Vec<Child>);

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `n` busy shell scripts named `name` (their command name, /proc/PID/comm),
/// started and given time to exec.
fn spinners(name: &str, n: usize) -> Spinners {
    let dir = temp("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nwhile :; do :; done\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let kids = (0..n)
        .map(|_| {
            Command::new(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    Spinners(kids)
}

/// The value of the JSON report's counter `event`.
fn json_value(report: &str, event: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(report.lines().last()?).ok()?;
    v["counters"]
        .as_array()?
        .iter()
        .find(|c| c["event"] == event)?["value"]
        .as_f64()
}

#[test]
fn attach_by_regex_counts_every_matching_process() {
    if let Some(err) = can_count() {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    // comm holds 15 characters: keep the name short and unique to this run.
    let name = format!("spin{}", std::process::id() % 1_000_000);
    let spin = spinners(&name, 2);
    let mut pids: Vec<u32> = spin.0.iter().map(Child::id).collect();
    pids.sort_unstable();
    let re = format!("^{name}$");
    let (code, _, out) = pmcstat(&["--json-report", "-t", &re, "-p", "task-clock", "-l", "0.5"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let mut got: Vec<u64> = v["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("{out}"))
        .iter()
        .filter_map(|p| p.as_u64())
        .collect();
    got.sort_unstable();
    assert_eq!(
        got,
        pids.iter().map(|&p| u64::from(p)).collect::<Vec<_>>(),
        "{out}"
    );
    assert!(json_value(&out, "task-clock").unwrap() > 1e6, "{out}");
    // The text report names both.
    let (code, _, text) = pmcstat(&["-t", &re, "-p", "task-clock", "-l", "0.2"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("process id '{},{}'", pids[0], pids[1])),
        "{text}"
    );
    // Sampling: each process's own samples, and no other process's.
    let log = temp("regex.pmclog");
    let log_s = log.to_string_lossy().into_owned();
    let (code, _, sampled) = pmcstat(&[
        "-t",
        &re,
        "-P",
        "cpu-clock",
        "--freq",
        "1000",
        "-l",
        "0.5",
        "-O",
        &log_s,
    ]);
    assert_eq!(code, 0, "{sampled}");
    let bytes = std::fs::read(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let mut by_pid = std::collections::BTreeMap::<i32, u64>::new();
    for r in pmc_log::Reader::new(&bytes).unwrap().records() {
        if let pmc_log::record::Record::Sample(s) = r {
            *by_pid.entry(s.pid).or_default() += 1;
        }
    }
    eprintln!("-t {re}: samples by pid {by_pid:?}");
    let sampled_pids: Vec<u32> = by_pid.keys().map(|&p| p as u32).collect();
    assert_eq!(sampled_pids, pids, "{by_pid:?}");
    // Busy for 0.5 s at 1 kHz of their CPU time: each has its own samples. How many
    // depends on the CPU time they got (47 each at a load of 12 on 2 CPUs), not on pmcstat.
    assert!(by_pid.values().all(|&n| n >= 5), "{by_pid:?}");
}

#[test]
fn attach_usage_errors() {
    let (code, _, err) = pmcstat(&["-t", "^no-such-command-zz$", "-p", "task-clock", "-l", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no running process has a command name that matches"),
        "{err}"
    );
    assert!(err.contains("/proc/PID/comm"), "{err}");
    let (code, _, err) = pmcstat(&["-t", "(", "-p", "task-clock", "-l", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("regular expression"), "{err}");
    let (code, _, err) = pmcstat(&["-t", "0", "-p", "task-clock", "-l", "1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = pmcstat(&["-t", "^sh$", "-p", "task-clock", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not both"), "{err}");
}

/// The JSON report's counters: (event, cpu, value), in order.
fn json_counters(out: &str) -> Vec<(String, Option<u64>, u64)> {
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out}"));
    v["counters"]
        .as_array()
        .unwrap_or_else(|| panic!("{out}"))
        .iter()
        .map(|c| {
            (
                c["event"].as_str().unwrap_or_default().to_owned(),
                c["cpu"].as_u64(),
                c["value"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The CPUs each event was counted on, from --per-cpu --json-report.
fn cpus_of(out: &str, event: &str) -> Vec<u64> {
    json_counters(out)
        .into_iter()
        .filter(|c| c.0 == event)
        .filter_map(|c| c.1)
        .collect()
}

#[test]
fn cpu_list_applies_to_the_system_pmcs_after_it() {
    let (code, _, err) = pmcstat(&["-s", "page-faults", "-l", "0.05"]);
    if code != 0 {
        pmc_testkit::skip!("system-wide counting not permitted here: {err}");
        return;
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ncpu < 2 {
        pmc_testkit::skip!("one CPU: no two CPU sets to tell apart");
        return;
    }
    let all: Vec<u64> = (0..ncpu as u64).collect();
    // -c 0 between two -s: the first on every CPU, the second on CPU 0.
    let args = [
        "--json-report",
        "--per-cpu",
        "-s",
        "page-faults",
        "-c",
        "0",
        "-s",
        "task-clock",
        "-l",
        "0.2",
    ];
    let (code, _, out) = pmcstat(&args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(cpus_of(&out, "page-faults"), all, "{out}");
    assert_eq!(cpus_of(&out, "task-clock"), vec![0], "{out}");
    // CPU 0's clock ran the whole 0.2 s.
    let clock = json_counters(&out)
        .iter()
        .find(|c| c.0 == "task-clock")
        .unwrap()
        .2;
    assert!(clock > 150_000_000, "{clock} ns\n{out}");
    // Two -c, each for the PMCs after it; -S likewise, and -v says which.
    let (code, _, out) = pmcstat(&[
        "--json-report",
        "--per-cpu",
        "-c",
        "1",
        "-s",
        "page-faults",
        "-c",
        "0",
        "-s",
        "task-clock",
        "-l",
        "0.1",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(cpus_of(&out, "page-faults"), vec![1], "{out}");
    assert_eq!(cpus_of(&out, "task-clock"), vec![0], "{out}");
    let (code, _, out) = pmcstat(&[
        "-v",
        "-c",
        "1",
        "-S",
        "cpu-clock",
        "-c",
        "*",
        "-S",
        "page-faults",
        "-l",
        "0.1",
    ]);
    assert_eq!(code, 0, "{out}");
    let scopes: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("(pmcstat) scope"))
        .map(str::trim)
        .collect();
    assert_eq!(scopes, ["system, CPU 1", "system, every CPU"], "{out}");
    // Today's form: one -c after the only system PMC still applies to it.
    let (code, _, out) = pmcstat(&[
        "--json-report",
        "--per-cpu",
        "-s",
        "task-clock",
        "-c",
        "1",
        "-l",
        "0.1",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(cpus_of(&out, "task-clock"), vec![1], "{out}");
    // A -c that applies to nothing is a usage error.
    let (code, _, err) = pmcstat(&["-c", "1", "-s", "task-clock", "-c", "0", "-l", "0.1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("applies to none"), "{err}");
}

/// A shell whose child (not exec'd: `; true`) spins ~60 ms.
const FORKS: &str = "sh -c 'i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done'; true";

#[test]
fn descendants_toggle_for_the_process_pmcs_after_it() {
    if let Some(err) = can_count() {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    let values = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["--json-report"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--", "sh", "-c", FORKS]);
        let (code, _, out) = pmcstat(&all);
        assert_eq!(code, 0, "{out}");
        json_counters(&out).into_iter().map(|c| c.2).collect()
    };
    // -d on for the first task-clock, toggled off for the second.
    let on_off = values(&["-d", "-p", "task-clock", "-d", "-p", "task-clock"]);
    // Off for the first, on for the second.
    let off_on = values(&["-p", "task-clock", "-d", "-p", "task-clock"]);
    eprintln!("task-clock ns: -d -p -d -p {on_off:?}, -p -d -p {off_on:?}");
    for (tree, alone) in [(on_off[0], on_off[1]), (off_on[1], off_on[0])] {
        assert!(tree > 20_000_000, "with the child: {tree} ns");
        assert!(
            tree > 5 * alone,
            "with the child {tree} ns, the shell alone {alone} ns"
        );
    }
    // Today's form: a -d after the only -p still applies to it.
    let trailing = values(&["-p", "task-clock", "-d"]);
    assert!(trailing[0] > 20_000_000, "{trailing:?}");
    // The text report says which counted the children.
    let (code, _, text) = pmcstat(&[
        "-p",
        "page-faults",
        "-d",
        "-p",
        "task-clock",
        "--",
        "sh",
        "-c",
        FORKS,
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("(child processes counted only for task-clock)"),
        "{text}"
    );
    // Sampling PMCs too: -v names each one's scope.
    let (code, _, out) = pmcstat(&[
        "-v",
        "-P",
        "cpu-clock",
        "-d",
        "-P",
        "task-clock",
        "-O",
        "/dev/null",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{out}");
    let scopes: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("(pmcstat) scope"))
        .map(str::trim)
        .collect();
    assert_eq!(
        scopes,
        [
            "process alone (its threads, not its child processes)",
            "process and its child processes"
        ],
        "{out}"
    );
}
