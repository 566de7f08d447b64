//! What pmcstat counts by default, and how it says so: the default set and
//! `-e` count the whole command tree (as `perf stat`, the oracle here), `-p`
//! keeps pmcstat(8)'s meaning (the process alone unless `-d`) and says when
//! child processes ran uncounted, events narrowed to user mode are labelled
//! `:u` (as perf labels them), and `-w` intervals add up to the total.
#![cfg(target_os = "linux")]

use std::process::{Command, Output};

use pmc_tests::{executable_for, nobody_ids, perf_available, perf_stat, pmcstat_path, skip};
use serde_json::Value;

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmc-workload");

/// A shell whose child spins 150 ms of CPU (`; true` keeps dash from
/// exec'ing it in place, so it is a child process).
fn tree_command() -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("{WORKLOAD} spin-cpu-ms 150; true"),
    ]
}

fn pmcstat(args: &[&str], command: &[String]) -> Option<Output> {
    let bin = pmcstat_path()?;
    Some(
        Command::new(bin)
            .args(args)
            .arg("--")
            .args(command)
            .output()
            .expect("run pmcstat"),
    )
}

fn json_of(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in pmcstat's output: {text}"));
    serde_json::from_str(line).expect("pmcstat --json-report parses")
}

fn counter<'a>(j: &'a Value, event: &str) -> &'a Value {
    j["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .find(|c| c["event"] == event)
        .unwrap_or_else(|| panic!("no {event} in {j}"))
}

fn task_clock_ms(j: &Value) -> f64 {
    counter(j, "task-clock")["scaled"]
        .as_u64()
        .expect("task-clock counted") as f64
        / 1e6
}

#[test]
fn default_set_counts_the_command_tree_as_perf_stat_does() {
    let name = "default_set_counts_the_command_tree_as_perf_stat_does";
    let cmd = tree_command();
    let Some(out) = pmcstat(&["--json-report"], &cmd) else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let j = json_of(&out);
    assert_eq!(j["descendants"], true, "{j}");
    let ms = task_clock_ms(&j);
    // The child alone spins 150 ms of CPU time.
    assert!(ms >= 140.0, "default set counted {ms} ms of a 150 ms child");
    assert!(j.get("uncounted_children_ns").is_none(), "{j}");
    let text = String::from_utf8_lossy(&pmcstat(&[], &cmd).unwrap().stderr).into_owned();
    assert!(
        text.contains("' and its child processes:"),
        "the header says what was counted: {text}"
    );
    // -e, perf's spelling, counts the tree too.
    let e = json_of(&pmcstat(&["--json-report", "-e", "task-clock"], &cmd).unwrap());
    assert!(task_clock_ms(&e) >= 140.0, "{e}");
    match perf_available() {
        Err(reason) => skip!(name, "perf oracle part: {reason}"),
        Ok(()) => {
            let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
            let perf = perf_stat(&["task-clock"], "sh".as_ref(), &args).expect("perf stat");
            let perf_ms = perf[0].value.expect("perf counted task-clock");
            assert!(
                (ms - perf_ms).abs() <= 0.25 * perf_ms,
                "pmcstat {ms} ms vs perf stat {perf_ms} ms"
            );
        }
    }
}

#[test]
fn process_option_counts_the_process_alone_and_says_children_were_missed() {
    let name = "process_option_counts_the_process_alone_and_says_children_were_missed";
    let cmd = tree_command();
    let Some(out) = pmcstat(&["--json-report", "-p", "task-clock"], &cmd) else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let j = json_of(&out);
    assert_eq!(j["descendants"], false, "{j}");
    let ms = task_clock_ms(&j);
    assert!(ms < 100.0, "-p without -d counted the child: {ms} ms");
    let missed = j["uncounted_children_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("the uncounted child is reported: {j}"));
    assert!(missed >= 140_000_000, "{missed} ns reported missed");
    let text =
        String::from_utf8_lossy(&pmcstat(&["-p", "task-clock"], &cmd).unwrap().stderr).into_owned();
    assert!(text.contains("alone (without child processes):"), "{text}");
    assert!(
        text.contains("note: child processes ran") && text.contains("add -d"),
        "{text}"
    );
    let csv = String::from_utf8_lossy(&pmcstat(&["-x,", "-p", "task-clock"], &cmd).unwrap().stderr)
        .into_owned();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("# note: child processes ran")),
        "{csv}"
    );

    // With -d: the whole tree, no note.
    let d = json_of(&pmcstat(&["--json-report", "-d", "-p", "task-clock"], &cmd).unwrap());
    assert_eq!(d["descendants"], true, "{d}");
    assert!(task_clock_ms(&d) >= 140.0, "{d}");
    assert!(d.get("notes").is_none(), "{d}");

    // A command without children gets no note.
    let solo = vec![WORKLOAD.to_owned(), "spin-cpu-ms".into(), "20".into()];
    let s = json_of(&pmcstat(&["--json-report", "-p", "task-clock"], &solo).unwrap());
    assert!(s.get("uncounted_children_ns").is_none(), "{s}");
}

#[test]
fn event_lists_split_like_perf_but_keep_hwpmc_qualifiers() {
    let name = "event_lists_split_like_perf_but_keep_hwpmc_qualifiers";
    let cmd = vec![WORKLOAD.to_owned(), "touch-pages".into(), "64".into()];
    let Some(out) = pmcstat(&["--json-report", "-e", "page-faults,task-clock"], &cmd) else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    let j = json_of(&out);
    let events: Vec<&str> = j["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["page-faults", "task-clock"]);
    // `,usr` is a qualifier of one hwpmc-style event, not a second event.
    let j = json_of(&pmcstat(&["--json-report", "-e", "instructions,usr"], &cmd).unwrap());
    assert_eq!(j["counters"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j["counters"][0]["event"], "instructions,usr", "{j}");
}

#[test]
fn intervals_add_up_to_the_total() {
    let name = "intervals_add_up_to_the_total";
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        format!(
            "{WORKLOAD} touch-pages 3000; {WORKLOAD} sleep-ms 130; {WORKLOAD} touch-pages 3000"
        ),
    ];
    let Some(out) = pmcstat(&["--json-report", "-w", "0.05", "-e", "page-faults"], &cmd) else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // JSON Lines: one "interval" object per interval, then the "total".
    let objs: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |t: &'static str| -> Vec<u64> {
        objs.iter()
            .filter(|o| o["type"] == t)
            .map(|o| o["counters"][0]["value"].as_u64().unwrap_or(0))
            .collect()
    };
    let (intervals, totals) = (of("interval"), of("total"));
    assert!(intervals.len() >= 3, "{text}");
    assert_eq!(totals.len(), 1, "{text}");
    let (sum, total) = (intervals.iter().sum::<u64>(), totals[0]);
    assert!(total >= 6000, "{text}");
    assert_eq!(sum, total, "the intervals add up to the total: {text}");

    // CSV, as perf stat -I -x: every row has the time column, no untimed total.
    let Some(out) = pmcstat(&["-x,", "-w", "0.05", "-e", "page-faults"], &cmd) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert!(rows.len() >= 3, "{text}");
    for r in &rows {
        let t = r.split(',').next().unwrap_or("");
        assert!(
            t.contains('.') && t.parse::<f64>().is_ok(),
            "an untimed row: {r}\n{text}"
        );
    }
}

#[test]
fn user_mode_only_counts_are_labelled_u_as_perf_does() {
    let name = "user_mode_only_counts_are_labelled_u_as_perf_does";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip!(name, "must run as root to become `nobody`");
        return;
    }
    let paranoid: Option<i32> = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    if paranoid.is_none_or(|p| p < 2) {
        skip!(
            name,
            "perf_event_paranoid is {paranoid:?}: unprivileged users may count the kernel"
        );
        return;
    }
    let Some((uid, gid)) = nobody_ids() else {
        skip!(name, "no user `nobody`");
        return;
    };
    let Some(bin) = pmcstat_path() else {
        skip!(name, "pmcstat binary not built");
        return;
    };
    let (exe, _keep) = executable_for(&bin, uid, gid).expect("pmcstat executable by nobody");
    let run = |args: &[&str]| {
        let mut c = Command::new(&exe);
        c.args(args).args(["--", "true"]).current_dir("/");
        pmc_testkit::cli::as_user(&mut c, uid, gid);
        let out = c.output().expect("run pmcstat as nobody");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let text = run(&["-e", "context-switches"]);
    assert!(text.contains("context-switches:u"), "{text}");
    assert!(
        text.contains("note: events marked :u counted user mode only"),
        "{text}"
    );
    let j: Value =
        serde_json::from_str(run(&["--json-report", "-e", "context-switches"]).trim()).unwrap();
    assert_eq!(j["counters"][0]["event"], "context-switches:u", "{j}");
    assert!(j["notes"].as_array().is_some_and(|n| !n.is_empty()), "{j}");
    let csv = run(&["-x,", "-e", "context-switches"]);
    assert!(
        csv.lines()
            .any(|l| l.split(',').nth(2) == Some("context-switches:u")),
        "{csv}"
    );
    // An explicit mode is kept as typed.
    let k = run(&["-e", "context-switches:u"]);
    assert!(!k.contains("note: events marked :u"), "{k}");
}
