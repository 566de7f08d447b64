//! What an unprivileged user may and may not count, checked for real: the
//! `pmc-workload unprivileged-check` helper is executed as user `nobody`
//! (`pmc_testkit::cli::as_user`: no supplementary groups, then setgid and
//! setuid between fork and exec, so it starts as a fresh, dumpable,
//! capability-less process, exactly like a user's program)
//! and reports as JSON what the library did.
#![cfg(target_os = "linux")]

use std::process::Command;

use pmc_tests::{executable_for, nobody_ids, skip};
use serde_json::Value;

const WORKLOAD: &str = env!("CARGO_BIN_EXE_pmc-workload");

/// `/proc/sys/kernel/perf_event_paranoid`, read here independently of the
/// library.
fn paranoid_from_proc() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[test]
fn nobody_is_refused_system_scope_but_counts_its_own_child() {
    let name = "nobody_is_refused_system_scope_but_counts_its_own_child";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip!(name, "must run as root to become `nobody`");
        return;
    }
    let Some(level) = paranoid_from_proc() else {
        skip!(name, "cannot read /proc/sys/kernel/perf_event_paranoid");
        return;
    };
    if level < 1 {
        skip!(
            name,
            "perf_event_paranoid = {level} lets unprivileged users count system-wide"
        );
        return;
    }
    let Some((uid, gid)) = nobody_ids() else {
        skip!(name, "no user `nobody` in the password database");
        return;
    };
    assert_ne!(uid, 0, "`nobody` is root?");

    // The helper must be executable by nobody (the target dir may not be).
    let (exe, _keep) = executable_for(WORKLOAD.as_ref(), uid, gid)
        .expect("make pmc-workload executable by nobody");

    let mut cmd = Command::new(&exe);
    cmd.arg("unprivileged-check")
        .arg(&exe)
        .current_dir("/")
        .env_remove("PERF_EXEC_PATH");
    pmc_testkit::cli::as_user(&mut cmd, uid, gid);
    let out = cmd.output().expect("run pmc-workload as nobody");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "helper failed ({}): {stdout}\n{stderr}",
        out.status
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("helper printed no JSON ({e}): {stdout}\n{stderr}"));
    eprintln!("{name}: helper reported {v:#}");

    // It really ran as nobody, without capabilities.
    assert_eq!(v["ids"]["uid"], serde_json::json!([uid, uid, uid]), "{v}");
    assert_eq!(v["ids"]["gid"], serde_json::json!([gid, gid, gid]), "{v}");
    assert_eq!(v["has_perfmon"], false, "{v}");
    assert_eq!(v["paranoid"], level, "the library read another level: {v}");

    // System scope: refused, with a message naming the capability and the
    // actual paranoid level.
    let sys = &v["system"];
    assert_eq!(sys["ok"], false, "nobody allocated a system-wide PMC: {v}");
    assert_eq!(sys["error"]["kind"], "Permission", "{sys}");
    let msg = sys["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("CAP_PERFMON"),
        "message does not name CAP_PERFMON: {msg}"
    );
    let want = format!("perf_event_paranoid = {level}");
    assert!(msg.contains(&want), "message does not say `{want}`: {msg}");

    // log-proccsw needs kernel-mode counting (the switch event fires in the kernel): refused
    // above paranoid 1, naming the level that would allow it.
    if level >= 2 {
        let csw = &v["proccsw"];
        assert_eq!(csw["ok"], false, "{v}");
        assert_eq!(csw["error"]["kind"], "Permission", "{csw}");
        let msg = csw["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("context switch") && msg.contains(&want) && msg.contains("<= 1"),
            "{msg}"
        );
    }

    // Its own launched child: counted (from exec).
    let pf = &v["exec"]["page-faults"];
    assert_eq!(
        pf["ok"], true,
        "nobody cannot count page-faults of its child: {pf}"
    );
    assert_eq!(pf["exit_code"], 0, "{pf}");
    let faults = pf["value"].as_u64().unwrap_or(0);
    assert!(
        faults >= 256,
        "child touched 256 pages, counted {faults}: {pf}"
    );
    let tc = &v["exec"]["task-clock"];
    assert_eq!(
        tc["ok"], true,
        "nobody cannot count task-clock of its child: {tc}"
    );
    assert!(tc["value"].as_u64().unwrap_or(0) > 0, "{tc}");
}

#[test]
fn helper_copy_is_made_when_nobody_cannot_reach_the_binary() {
    use std::os::unix::fs::PermissionsExt;
    let name = "helper_copy_is_made_when_nobody_cannot_reach_the_binary";
    let Some((uid, gid)) = nobody_ids() else {
        skip!(name, "no user `nobody` in the password database");
        return;
    };
    // A binary in a 0700 directory owned by us: nobody cannot traverse it.
    let private = pmc_tests::TempDir::new("private", 0o700).unwrap();
    let exe = private.0.join("pmc-workload");
    std::fs::copy(WORKLOAD, &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!pmc_tests::executable_by(&exe, uid, gid));
    let (copy, keep) = executable_for(&exe, uid, gid).unwrap();
    assert_ne!(copy, exe);
    assert!(keep.is_some());
    assert!(pmc_tests::executable_by(&copy, uid, gid));
    let out = Command::new(&copy).args(["exit", "7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(7));
}
