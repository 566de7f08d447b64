//! pmcstat(8)'s -t PID|REGEX, and the positional -c and -d, end to end on
//! this machine (software events only).
#![cfg(target_os = "linux")]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

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

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pmcstat-attach-{}-{name}", std::process::id()))
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
    let (code, _, out) = pmcstat(&["--json", "-t", &re, "-p", "task-clock", "-l", "0.5"]);
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
    // Busy for 0.5 s at 1 kHz, even sharing two CPUs with other work.
    assert!(by_pid.values().all(|&n| n > 50), "{by_pid:?}");
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
