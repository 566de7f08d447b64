//! `pmcstat -L` and `pmcstat --diagnose` on the machine running the tests.

use std::process::Command;

use crate::common;
use common::pmcstat;

/// A core PMU: x86's `cpu` (`cpu_core` on hybrids) or an Armv8 PMU.
fn has_pmu() -> bool {
    let dir = std::path::Path::new("/sys/bus/event_source/devices");
    ["cpu", "cpu_core"].iter().any(|p| dir.join(p).exists())
        || std::fs::read_dir(dir).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("armv8"))
        })
}

fn line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{text}"))
}

#[test]
fn list_marks_software_available_and_hardware_by_pmu() {
    let (code, out, err) = pmcstat(&["-L"]);
    assert_eq!(code, 0, "{err}");
    for sw in [
        "task-clock",
        "cpu-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ] {
        assert!(
            line(&out, sw).contains("[available]"),
            "{sw}: {}",
            line(&out, sw)
        );
    }
    for hw in ["cycles", "instructions"] {
        let l = line(&out, hw);
        if has_pmu() {
            eprintln!("note: this machine has a PMU; {hw}: {l}");
        } else {
            assert!(l.contains("[unavailable: no hardware PMU]"), "{l}");
        }
    }
    let (code, json, _) = pmcstat(&["-L", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert!(v.as_array().is_some_and(|a| a
        .iter()
        .any(|e| e["name"] == "page-faults" && e["availability"]["state"] == "available")));
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[test]
fn diagnose_reports_pmu_paranoid_and_user() {
    let (code, out, err) = pmcstat(&["--diagnose"]);
    assert_eq!(code, 0, "{err}");
    let hw = out.lines().find(|l| l.contains("hardware PMU")).unwrap();
    if has_pmu() {
        assert!(hw.contains("yes"), "{hw}");
    } else {
        assert!(hw.contains("NO") && hw.contains("none"), "{hw}");
    }
    if let Some(p) = paranoid() {
        assert!(
            out.contains(&format!("kernel.perf_event_paranoid = {p}")),
            "{out}"
        );
    }
    let uid0 = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if uid0 {
        assert!(out.contains("running as root (uid 0)"), "{out}");
    } else {
        assert!(out.contains("(not root)"), "{out}");
    }
    let (_, json, _) = pmcstat(&["--diagnose", "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert!(
        v.as_array().is_some_and(|a| a
            .iter()
            .all(|c| c["verdict"] != "no" || c["fix"].is_string())),
        "every no has a fix: {v}"
    );
}

#[test]
fn diagnose_as_unprivileged_user_says_what_it_cannot_do() {
    let uid0 = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !uid0
        || paranoid().is_none_or(|p| p < 1)
        || Command::new("setpriv").arg("--version").output().is_err()
    {
        pmc_testkit::skip!("needs root (to drop to nobody), setpriv, and perf_event_paranoid >= 1");
        return;
    }
    // Copy the binary somewhere nobody can execute it.
    let dir = std::env::temp_dir().join(format!("pmcstat-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("pmcstat");
    std::fs::copy(env!("CARGO_BIN_EXE_pmcstat"), &bin).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    // ETXTBSY: a thread of this test binary that forks while the copy's write fd is open
    // hands that fd to its child until the child execs; exec of the copy fails meanwhile.
    let out = (0..50)
        .map(|_| {
            Command::new("setpriv")
                .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                .arg(&bin)
                .arg("--diagnose")
                .output()
                .unwrap()
        })
        .find(|o| {
            let busy = String::from_utf8_lossy(&o.stderr).contains("Text file busy");
            if busy {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            !busy
        })
        .expect("the copied pmcstat stayed busy (ETXTBSY) for 50 tries");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sys = text
        .lines()
        .find(|l| l.contains("system-wide counting"))
        .unwrap();
    assert!(sys.contains("NO") && sys.contains("CAP_PERFMON"), "{text}");
    assert!(text.contains("(not root)"), "{text}");
    assert!(
        text.contains("fix: run as root, setcap cap_perfmon+ep"),
        "{text}"
    );
}

/// `-u SPEC` (pmcstat(8)'s event description): the -L entry, and how it opens here, with the
/// same verdict as -L; a spec that does not parse is a usage error.
#[test]
fn describe_an_event() {
    let (code, out, err) = pmcstat(&["-u", "page-faults"]);
    assert_eq!(code, 0, "{err}");
    assert!(field(&out, "listed as").contains("available"), "{out}");
    let opens = field(&out, "opens here");
    assert!(
        opens.contains("yes, as type=1") && opens.contains("config=0x2"),
        "{out}"
    );
    // A modifier shows in the parse and in the encoding.
    let (code, out, _) = pmcstat(&["-u", "task-clock:u"]);
    assert_eq!(code, 0);
    assert!(
        field(&out, "opens here").contains("exclude_kernel=1"),
        "{out}"
    );
    // The hardware verdict agrees with -L's.
    let (code, out, _) = pmcstat(&["-u", "cycles"]);
    assert_eq!(code, 0);
    let opens = field(&out, "opens here");
    assert_eq!(opens.contains("yes"), has_pmu(), "{out}");
    let (code, _, err) = pmcstat(&["-u", "page-faults:k:"]);
    assert_eq!(code, 2, "{err}");
}

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{text}"))
}

/// Splits `-x SEP` rows into cells, each row checked to have `width` cells.
fn rows<'a>(text: &'a str, sep: &str, width: usize) -> Vec<Vec<&'a str>> {
    text.lines()
        .map(|l| {
            let cells: Vec<&str> = l.split(sep).collect();
            assert_eq!(cells.len(), width, "{width} cells wanted: {l:?}");
            cells
        })
        .collect()
}

#[test]
fn list_and_diagnose_print_csv_rows_that_agree_with_their_json() {
    let (code, csv, err) = pmcstat(&["-L", "-x", ";"]);
    assert_eq!(code, 0, "{err}");
    let list = rows(&csv, ";", 5);
    let (_, json, _) = pmcstat(&["-L", "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let events = v.as_array().unwrap();
    assert_eq!(list.len(), events.len(), "one row per event");
    for (row, e) in list.iter().zip(events) {
        assert_eq!(row[0], e["name"], "{row:?}");
        let state = e["availability"]["state"]
            .as_str()
            .unwrap()
            .replace('_', " ");
        assert_eq!(row[2], state, "{row:?} against {e}");
        assert_eq!(row[3].is_empty(), state == "available", "{row:?}");
    }
    let pf = list.iter().find(|r| r[0] == "page-faults").unwrap();
    assert_eq!(pf[2], "available", "{pf:?}");
    if !has_pmu() {
        let cycles = list.iter().find(|r| r[0] == "cycles").unwrap();
        assert_eq!(
            &cycles[2..4],
            ["unavailable", "no hardware PMU"],
            "{cycles:?}"
        );
    }
    // --json-report is --json outside counting, as its help says.
    let (_, report, _) = pmcstat(&["-L", "--json-report"]);
    assert_eq!(report, json);

    let (code, csv, err) = pmcstat(&["--diagnose", "-x", ","]);
    assert_eq!(code, 0, "{err}");
    let checks = rows(&csv, ",", 4);
    let (_, json, _) = pmcstat(&["--diagnose", "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let want: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().replace(',', " ");
            (name, c["verdict"].as_str().unwrap().to_owned())
        })
        .collect();
    let got: Vec<(String, String)> = checks
        .iter()
        .map(|r| (r[0].to_owned(), r[1].to_owned()))
        .collect();
    assert_eq!(got, want);
    assert!(
        checks.iter().all(|r| r[1] != "no" || !r[3].is_empty()),
        "every no has a fix: {csv}"
    );
}
