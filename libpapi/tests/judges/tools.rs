//! Debian's papi-tools binaries, unmodified, run on pmc's library by
//! `LD_LIBRARY_PATH`, their listings judged by what perf (`perf stat`) and
//! glibc (`getconf`) say about this machine, and `papi_command_line`'s
//! page-fault count by Debian's own libpapi counting the same program.

use std::process::{Command, Output};

use pmc_testkit::{row, skip};

use super::common::*;

/// Runs a papi-tools binary on pmc's library; `None` after a visible skip.
fn tool(name: &str, args: &[&str]) -> Option<Output> {
    let libdir = pmc_lib_dir()?;
    match Command::new(name)
        .args(args)
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
    {
        Ok(o) => Some(o),
        Err(e) => {
            skip!("no {name} (Debian's papi-tools; ci/setup.sh installs it): {e}");
            None
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn perf_available() -> bool {
    if perf_count("task-clock", &["true"]).is_none() {
        skip!("no perf (the oracle of which events this machine counts)");
        return false;
    }
    true
}

/// PAPI's perf names and perf's own.
const PERF_EVENTS: &[(&str, &str)] = &[
    ("CPU-CLOCK", "cpu-clock"),
    ("TASK-CLOCK", "task-clock"),
    ("PAGE-FAULTS", "page-faults"),
    ("CONTEXT-SWITCHES", "context-switches"),
    ("CPU-MIGRATIONS", "cpu-migrations"),
    ("MINOR-FAULTS", "minor-faults"),
    ("MAJOR-FAULTS", "major-faults"),
    ("ALIGNMENT-FAULTS", "alignment-faults"),
    ("EMULATION-FAULTS", "emulation-faults"),
    ("CYCLES", "cycles"),
    ("INSTRUCTIONS", "instructions"),
    ("BRANCHES", "branches"),
    ("BRANCH-MISSES", "branch-misses"),
    ("CACHE-REFERENCES", "cache-references"),
    ("CACHE-MISSES", "cache-misses"),
    ("REF-CYCLES", "ref-cycles"),
    ("L1-DCACHE-LOADS", "L1-dcache-loads"),
    ("L1-DCACHE-LOAD-MISSES", "L1-dcache-load-misses"),
];

#[test]
fn papi_native_avail_lists_what_perf_counts() {
    if !perf_available() {
        return;
    }
    let Some(o) = tool("papi_native_avail", &[]) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("Native Events in Component: pmc"), "{t}");
    let listed: Vec<&str> = t
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.contains("::"))
        .collect();
    let total: usize = t
        .lines()
        .find_map(|l| l.strip_prefix("Total events reported: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("Total events reported");
    assert_eq!(total, listed.len(), "{t}");
    let mut rows = Vec::new();
    for (papi, perf) in PERF_EVENTS {
        let shown = listed.contains(&format!("perf::{papi}").as_str());
        let counts = perf_count(&format!("{perf}:u"), &["true"]).is_some();
        rows.push(format!(
            "perf::{papi}={}",
            if shown { "listed" } else { "-" }
        ));
        assert_eq!(
            shown, counts,
            "perf::{papi}: listed {shown}, perf stat -e {perf} counts {counts}"
        );
    }
    row!("TOOL papi_native_avail: {total} events; {}", rows.join(" "));
}

#[test]
fn papi_component_avail_names_the_pmc_component() {
    let Some(o) = tool("papi_component_avail", &[]) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    let key: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("Name:") || l.contains("Native:") || l.contains("PMUs supported"))
        .collect();
    assert!(
        key.iter().filter(|l| l.starts_with("Name:   pmc")).count() == 2,
        "{t}"
    );
    let natives: usize = key
        .iter()
        .find_map(|l| l.trim().strip_prefix("Native: "))
        .and_then(|r| r.split(',').next()?.trim().parse().ok())
        .expect("Native: N");
    let nat = tool("papi_native_avail", &[])
        .map(|o| text(&o))
        .unwrap_or_default();
    let total: usize = nat
        .lines()
        .find_map(|l| l.strip_prefix("Total events reported: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert_eq!(
        natives, total,
        "papi_component_avail and papi_native_avail disagree"
    );
    row!(
        "TOOL papi_component_avail: {}",
        key.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" / ")
    );
}

#[test]
fn papi_avail_presets_are_what_perf_counts() {
    if !perf_available() {
        return;
    }
    let Some(o) = tool("papi_avail", &[]) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("PAPI version             : 7.0.0.0"), "{t}");
    let avail = |preset: &str| -> bool {
        let line = t
            .lines()
            .find(|l| l.starts_with(&format!("{preset} ")))
            .unwrap_or_else(|| panic!("no {preset} row: {t}"));
        line.split_whitespace().nth(2) == Some("Yes")
    };
    let mut rows = Vec::new();
    for (preset, perf) in [
        ("PAPI_TOT_INS", "instructions"),
        ("PAPI_TOT_CYC", "cycles"),
        ("PAPI_BR_INS", "branches"),
        ("PAPI_BR_MSP", "branch-misses"),
    ] {
        let counts = perf_count(&format!("{perf}:u"), &["true"]).is_some();
        rows.push(format!("{preset}={}", avail(preset)));
        assert_eq!(avail(preset), counts, "{preset} vs perf stat -e {perf}");
    }
    let hw = t
        .lines()
        .find(|l| l.starts_with("Number Hardware Counters"))
        .unwrap_or("");
    row!("TOOL papi_avail: {} {hw}", rows.join(" "));
}

/// `papi_command_line`'s count of an event, from its `NAME : \tN` line.
fn command_line_count(t: &str, event: &str) -> Option<u64> {
    t.lines()
        .find_map(|l| l.strip_prefix(&format!("{event} : ")))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
}

#[test]
fn papi_command_line_counts_the_page_faults_papi_counts() {
    let Some(o) = tool(
        "papi_command_line",
        &["perf::PAGE-FAULTS", "perf::TASK-CLOCK"],
    ) else {
        return;
    };
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Successfully added: perf::PAGE-FAULTS"), "{t}");
    let pmc = command_line_count(&t, "perf::PAGE-FAULTS").expect("a count");
    assert!(pmc > 0);
    // The same window counted by Debian's libpapi (its perf_event component
    // counts software events here): the same faults, exactly.
    let papi = if debian_lib().is_some() {
        let o = Command::new("papi_command_line")
            .arg("perf::PAGE-FAULTS")
            .output()
            .expect("papi_command_line");
        let n = command_line_count(&text(&o), "perf::PAGE-FAULTS");
        if let Some(n) = n {
            assert_eq!(
                pmc, n,
                "pmc's libpapi and Debian's count the window differently"
            );
        }
        n
    } else {
        None
    };
    // And within the whole run perf stat counts.
    let libdir = pmc_lib_dir().unwrap();
    let whole = Command::new("perf")
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "page-faults:u",
            "--",
            "papi_command_line",
            "perf::PAGE-FAULTS",
        ])
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
        .ok()
        .and_then(|o| {
            let e = String::from_utf8_lossy(&o.stderr).into_owned();
            e.lines()
                .find_map(|l| l.split(',').next()?.trim().parse::<u64>().ok())
        });
    if let Some(w) = whole {
        assert!(pmc <= w, "{pmc} faults counted in a run perf counts {w} in");
    }
    row!("TOOL papi_command_line perf::PAGE-FAULTS: pmc {pmc}, Debian libpapi {papi:?}, perf stat whole run {whole:?}");
}

#[test]
fn papi_mem_info_reports_the_caches_getconf_sees() {
    let Some(o) = tool("papi_mem_info", &[]) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    let getconf = |v: &str| -> Option<u64> {
        let o = Command::new("getconf").arg(v).output().ok()?;
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
    };
    let section = |title: &str, field: &str| -> Option<u64> {
        let mut lines = t.lines().skip_while(|l| !l.starts_with(title));
        lines.next()?;
        let l = lines.take(5).find(|l| l.trim_start().starts_with(field))?;
        l.split(':').nth(1)?.split_whitespace().next()?.parse().ok()
    };
    let mut checked = 0;
    for (title, size_var, line_var) in [
        (
            "L1 Data Cache:",
            "LEVEL1_DCACHE_SIZE",
            "LEVEL1_DCACHE_LINESIZE",
        ),
        (
            "L2 Unified Cache:",
            "LEVEL2_CACHE_SIZE",
            "LEVEL2_CACHE_LINESIZE",
        ),
    ] {
        let (Some(size), Some(line)) = (getconf(size_var), getconf(line_var)) else {
            continue;
        };
        assert_eq!(
            section(title, "Total size").map(|kb| kb * 1024),
            Some(size),
            "{title} {t}"
        );
        assert_eq!(section(title, "Line size"), Some(line), "{title} {t}");
        checked += 1;
    }
    if checked == 0 {
        skip!("getconf knows no cache sizes here");
    }
    row!(
        "TOOL papi_mem_info: {}",
        t.lines()
            .filter(|l| l.contains("Cache:") || l.contains("Total size"))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
    );
}

#[test]
fn papi_event_chooser_finds_events_that_count_together() {
    let Some(o) = tool("papi_event_chooser", &["NATIVE", "perf::PAGE-FAULTS"]) else {
        return;
    };
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("perf::TASK-CLOCK"), "{t}");
    let total = t
        .lines()
        .find(|l| l.starts_with("Total events reported"))
        .unwrap_or("");
    let o = tool("papi_event_chooser", &["NATIVE", "perf::NO-SUCH-EVENT"]).unwrap();
    assert!(
        !o.status.success(),
        "an unknown event is refused: {}",
        text(&o)
    );
    row!("TOOL papi_event_chooser NATIVE perf::PAGE-FAULTS: {total}");
}
