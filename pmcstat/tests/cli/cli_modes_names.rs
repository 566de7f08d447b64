//! Issue 24's smaller items, end to end: the files a profile goes to are the
//! owner's only (0600, as perf.data); `-v` prints what was opened, whole;
//! libpmc's legacy event names (pmc.k8(3), pmcstat(8)'s EXAMPLES) resolve to
//! their Linux counterparts.
#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;

use crate::common;
use common::pmcstat;

fn temp(name: &str) -> std::path::PathBuf {
    pmc_testkit::workdir("pmcstat-modes").join(name)
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Whether sampling works here (perf_event_paranoid, seccomp).
fn cannot_sample() -> Option<String> {
    let (code, _, err) = pmcstat(&["-P", "cpu-clock", "-O", "/dev/null", "--", "true"]);
    (code != 0).then_some(err)
}

/// `-O` logs are created 0600, as perf.data (an old log given again too), and so are
/// the profiles `-R` writes; counts (`-o` of counting mode) keep the umask's mode.
#[test]
fn logs_and_profiles_are_created_owner_only() {
    if let Some(err) = cannot_sample() {
        pmc_testkit::skip!("sampling not permitted here: {err}");
        return;
    }
    let log = temp("p.pmclog");
    let _ = std::fs::remove_file(&log);
    let log_s = log.to_str().unwrap();
    let (code, _, err) = pmcstat(&["-P", "cpu-clock", "-O", log_s, "--", "true"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&log), 0o600, "a new -O log");
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = pmcstat(&["-P", "cpu-clock", "-O", log_s, "--", "true"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&log), 0o600, "an -O log recorded over an old one");
    for (flag, name) in [
        ("-G", "graph.txt"),
        ("--folded", "folded.txt"),
        ("--pprof", "p.pb.gz"),
        ("-F", "cg.out"),
    ] {
        let out = temp(name);
        let (code, _, err) = pmcstat(&["-R", log_s, flag, out.to_str().unwrap()]);
        assert_eq!(code, 0, "{flag}: {err}");
        assert_eq!(mode(&out), 0o600, "{flag}");
    }
    // The sampling summary with -o is a profile too.
    let summary = temp("summary.txt");
    let (code, _, err) = pmcstat(&[
        "-P",
        "cpu-clock",
        "-o",
        summary.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&summary), 0o600, "sampling summary");
    // Counts are not a profile: as File::create makes them.
    let reference = temp("reference");
    std::fs::File::create(&reference).unwrap();
    let counts = temp("counts.txt");
    let (code, _, err) = pmcstat(&["-p", "page-faults", "-o", counts.to_str().unwrap(), "true"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&counts), mode(&reference), "counting -o");
}

/// `-v` prints every flag of what was opened: a `-p` PMC of the process alone is
/// inherited by its threads only (`inherit` with `inherit_thread`), one with `-d` by
/// its child processes too (`inherit` alone).
#[test]
fn verbose_shows_inherit_thread_for_the_process_alone() {
    let (code, _, err) = pmcstat(&["-v", "-p", "page-faults", "true"]);
    if code != 0 {
        pmc_testkit::skip!("counting not permitted here: {err}");
        return;
    }
    let field = |out: &str, name: &str| -> Option<String> {
        out.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next().unwrap_or("").to_owned())
        })
    };
    assert_eq!(field(&err, "inherit").as_deref(), Some("1"), "{err}");
    assert_eq!(field(&err, "inherit_thread").as_deref(), Some("1"), "{err}");
    assert!(
        err.contains("process alone (its threads, not its child processes)"),
        "{err}"
    );
    let (code, _, err) = pmcstat(&["-v", "-d", "-p", "page-faults", "true"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(field(&err, "inherit").as_deref(), Some("1"), "{err}");
    assert_eq!(field(&err, "inherit_thread"), None, "{err}");
}

/// pmcstat(8)'s EXAMPLES name `k8-fr-retired-x86-instructions` is retired
/// instructions (a hardware event: here it meets "no PMU", not "no Linux
/// counterpart"); a K8 event with no counterpart keeps that clear refusal.
#[test]
fn legacy_k8_names_resolve_to_linux_events() {
    let (code, _, err) = pmcstat(&[
        "-p",
        "k8-fr-retired-x86-instructions",
        "-p",
        "k8-fp-dispatched-fpu-ops",
        "true",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = |e: &str| {
        err.lines()
            .find(|l| l.contains(e) && !l.trim_start().starts_with(e))
            .unwrap_or("")
            .to_owned()
    };
    let k8 = row("k8-fr-retired-x86-instructions");
    assert!(!k8.is_empty(), "{err}");
    assert!(!k8.contains("no Linux counterpart"), "{err}");
    // Counted where there is a PMU; else refused for the missing PMU, as `instructions` is.
    let (_, _, plain) = pmcstat(&["-p", "instructions", "true"]);
    if plain.contains("<not supported>") {
        assert!(
            k8.contains("<not supported>") && k8.contains("PMU"),
            "{err}"
        );
    } else {
        assert!(!k8.contains("<not"), "{err}");
    }
    assert!(
        row("k8-fp-dispatched-fpu-ops")
            .contains("is a FreeBSD hwpmc event with no Linux counterpart"),
        "{err}"
    );
}
