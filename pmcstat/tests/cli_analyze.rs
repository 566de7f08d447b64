//! Sampling a program with a known call structure, then reading the log
//! back: `-R` dump, `-G` call graph, `--flamegraph`, `--summary`, agreement
//! with `perf record`, and FreeBSD hwpmc logs detected by magic.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = r#"
#include <stdint.h>
volatile uint64_t sink;
__attribute__((noinline)) void hot_leaf(void) { for (uint64_t i = 0; i < 4000000; i++) sink += i * 7; }
__attribute__((noinline)) void warm_leaf(void) { for (uint64_t i = 0; i < 1300000; i++) sink += i * 5; }
__attribute__((noinline)) void cold_leaf(void) { for (uint64_t i = 0; i < 400000; i++) sink += i * 3; }
__attribute__((noinline)) void outer(void) { hot_leaf(); warm_leaf(); cold_leaf(); }
int main(void) { for (int k = 0; k < 60; k++) outer(); return 0; }
"#;

fn pmcstat() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pmcstat"))
}

fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmcstat-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds the test program, or says why not.
fn build_prog(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROG).unwrap();
    let exe = dir.join("prog");
    let ok = Command::new("cc")
        .args(["-g", "-O0", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

fn sample(dir: &Path, exe: &Path) -> PathBuf {
    let log = dir.join("prog.pmclog");
    let out = pmcstat()
        .args(["-P", "cpu-clock", "-F", "4000", "-O"])
        .arg(&log)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    log
}

/// Parses a `-G` line: (indent, percent, name).
fn parse_line(l: &str) -> Option<(usize, f64, String)> {
    let indent = l.len() - l.trim_start().len();
    let mut it = l.split_whitespace();
    let pct: f64 = it.next()?.strip_suffix('%')?.parse().ok()?;
    let _count = it.next()?;
    let name = it.next()?.to_owned();
    Some((indent, pct, name))
}

#[test]
fn callgraph_flamegraph_and_summary_of_a_sampled_program() {
    let dir = workdir("analyze");
    let Some(exe) = build_prog(&dir) else {
        pmc_testkit::skip!("no C compiler (cc) to build the test program");
        return;
    };
    let log = sample(&dir, &exe);

    // -R alone: one line per record, starting with the header.
    let dump = pmcstat().arg("-R").arg(&log).output().unwrap();
    assert!(dump.status.success());
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.starts_with("header"),
        "{}",
        &text[..text.len().min(300)]
    );
    assert!(
        text.lines().any(|l| l.starts_with("sample")),
        "no sample lines"
    );

    // -G -: hot_leaf under outer under main; top level adds up to 100%.
    let g = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["-G", "-", "-z", "8"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let graph = String::from_utf8_lossy(&g.stdout);
    let lines: Vec<(usize, f64, String)> = graph.lines().filter_map(parse_line).collect();
    let top_sum: f64 = lines
        .iter()
        .filter(|(i, _, _)| *i == 0)
        .map(|(_, p, _)| p)
        .sum();
    assert!(
        (top_sum - 100.0).abs() < 0.1 + 0.01 * lines.len() as f64,
        "top level adds to {top_sum}:\n{graph}"
    );
    let pos = |name: &str| {
        lines
            .iter()
            .position(|(_, _, n)| n == name)
            .unwrap_or_else(|| panic!("{name} missing:\n{graph}"))
    };
    let (m, o, h) = (pos("main"), pos("outer"), pos("hot_leaf"));
    assert!(m < o && o < h, "{graph}");
    assert!(
        lines[m].0 < lines[o].0 && lines[o].0 < lines[h].0,
        "hot_leaf is not nested under outer under main:\n{graph}"
    );
    assert!(lines[h].1 > 55.0, "hot_leaf has {}%:\n{graph}", lines[h].1);

    // --flamegraph: an SVG with the hot function's name.
    let svg = dir.join("fg.svg");
    let f = pmcstat()
        .arg("-R")
        .arg(&log)
        .arg("--flamegraph")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    let body = std::fs::read_to_string(&svg).unwrap();
    assert!(body.starts_with("<?xml") && body.contains("hot_leaf"));

    // --summary --json: hot_leaf first.
    let s = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["--summary", "--json", "--top", "5"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    let first = v
        .pointer("/functions/0/name")
        .or_else(|| v.pointer("/functions/0/function"));
    assert_eq!(first.and_then(|x| x.as_str()), Some("hot_leaf"), "{v}");

    // perf as the oracle: the same three hottest functions (about 70%, 22%
    // and 7% of the samples, far apart enough to be stable).
    if Command::new("perf").arg("--version").output().is_err() {
        pmc_testkit::skip!("perf agreement part: perf is not installed");
    } else {
        let data = dir.join("perf.data");
        let rec = Command::new("perf")
            .args(["record", "-q", "-g", "-F", "4000", "-e", "cpu-clock", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(
            rec.status.success(),
            "{}",
            String::from_utf8_lossy(&rec.stderr)
        );
        let rep = Command::new("perf")
            .args(["report", "--stdio", "--no-children", "--sort", "sym", "-i"])
            .arg(&data)
            .output()
            .unwrap();
        let rep = String::from_utf8_lossy(&rep.stdout);
        let perf_top: Vec<&str> = rep
            .lines()
            .filter(|l| {
                l.trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
                    && l.contains('%')
            })
            .filter_map(|l| l.split_whitespace().last())
            .take(3)
            .collect();
        assert_eq!(
            perf_top,
            ["hot_leaf", "warm_leaf", "cold_leaf"],
            "perf report:\n{rep}"
        );
        let ours: Vec<&str> = v["functions"]
            .as_array()
            .unwrap()
            .iter()
            .take(3)
            .filter_map(|f| {
                f.get("name")
                    .or_else(|| f.get("function"))
                    .and_then(|x| x.as_str())
            })
            .collect();
        assert_eq!(ours, perf_top);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn freebsd_hwpmc_log_is_read_by_magic() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pmc-log/tests/fixtures/pmclog/synthetic-amd64-all-types.pmclog");
    let out = pmcstat().arg("-R").arg(&fixture).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() > 10, "{text}");
    assert!(
        text.contains("freebsd") || text.contains("FreeBSD") || text.contains("hwpmc"),
        "{text}"
    );
    let junk = workdir("junk").join("junk");
    std::fs::write(&junk, b"definitely not a log").unwrap();
    let out = pmcstat().arg("-R").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pmc log"));
}
