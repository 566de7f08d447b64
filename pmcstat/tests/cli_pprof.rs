//! `pmcstat -R log --pprof out.pb.gz`, judged by `go tool pprof` (Debian's
//! golang-go, installed by ci/setup.sh): a sampled C program's export shows
//! the same top functions and self percentages as `pmcstat -R --summary`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::command as pmcstat;

/// `hot_leaf` calls an always-inlined `mix`, so the export has inlined
/// frames (pprof shows them as `mix (inline)`; `-noinlines` folds them
/// into `hot_leaf`, as the summary does).
const PROG: &str = r#"
#include <stdint.h>
volatile uint64_t sink;
static inline __attribute__((always_inline)) uint64_t mix(uint64_t i) { return i * 7 + (i >> 3); }
__attribute__((noinline)) void hot_leaf(void) { for (uint64_t i = 0; i < 4000000; i++) sink += mix(i); }
__attribute__((noinline)) void warm_leaf(void) { for (uint64_t i = 0; i < 1300000; i++) sink += i * 5; }
__attribute__((noinline)) void cold_leaf(void) { for (uint64_t i = 0; i < 400000; i++) sink += i * 3; }
__attribute__((noinline)) void outer(void) { hot_leaf(); warm_leaf(); cold_leaf(); }
int main(void) { for (int k = 0; k < 60; k++) outer(); return 0; }
"#;

fn workdir(name: &str) -> PathBuf {
    pmc_testkit::workdir(&format!("pmcstat-{name}"))
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn have_go() -> bool {
    pmc_testkit::cli::works("go", &["version"])
}

/// `go tool pprof ARGS FILE`, with its scratch files kept in `dir`.
fn go_pprof(dir: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", dir)
        .env("GOCACHE", dir.join("gocache"))
        .output()
        .unwrap();
    ok(&out, "go tool pprof");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn head(text: &str) -> String {
    text.lines().take(14).collect::<Vec<_>>().join("\n")
}

/// `-top` rows: (function, flat%), heaviest first.
fn parse_top(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let pct = f.get(1)?.strip_suffix('%')?.parse().ok()?;
            Some((f.get(5..)?.join(" "), pct))
        })
        .collect()
}

/// Both ways: each of one side's five heaviest functions has the same
/// self percentage on the other side, within 1 point.
fn assert_same_top5(ours: &[(String, f64)], pprof: &[(String, f64)], ctx: &str) {
    let o: HashMap<&str, f64> = ours.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    let g: HashMap<&str, f64> = pprof.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    for (a, b, side) in [(ours, &g, "pprof"), (pprof, &o, "--summary")] {
        for (name, pct) in a.iter().filter(|(_, p)| *p > 0.0).take(5) {
            let other = b.get(name.as_str()).copied().unwrap_or(0.0);
            assert!(
                (pct - other).abs() <= 1.0,
                "{name}: {pct}% vs {other}% in {side}\n{ctx}"
            );
        }
    }
}

#[test]
fn go_tool_pprof_agrees_with_the_summary() {
    if !have_go() {
        pmc_testkit::skip!(
            "`go` (Debian golang-go, for go tool pprof) is not installed; \
             ci/setup.sh installs it when run as root"
        );
        return;
    }
    let dir = workdir("pprof");
    let Some(exe) = pmc_testkit::cc::build(
        &dir,
        "prog",
        PROG,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    ) else {
        return;
    };
    // A fixed period (250 us of CPU time), so the event's value (ns) and
    // the sample count give the same percentages.
    let log = dir.join("prog.pmclog");
    let out = pmcstat()
        .args(["-P", "cpu-clock", "-n", "250000", "-O"])
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    ok(&out, "pmcstat -P");

    let pb = dir.join("out.pb.gz");
    let out = pmcstat()
        .arg("-R")
        .arg(&log)
        .arg("--pprof")
        .arg(&pb)
        .output()
        .unwrap();
    ok(&out, "pmcstat --pprof");
    let gz = std::fs::read(&pb).unwrap();
    assert_eq!(gz.get(..2), Some(&[0x1f, 0x8b][..]), "not gzip");

    let out = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["--summary", "--json", "--top", "0"])
        .output()
        .unwrap();
    ok(&out, "pmcstat --summary");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours: Vec<(String, f64)> = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap().to_owned(),
                f["self_percent"].as_f64().unwrap(),
            )
        })
        .collect();
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["--summary", "--top", "6"])
        .output()
        .unwrap();
    eprintln!(
        "pmcstat -R --summary:\n{}",
        String::from_utf8_lossy(&text.stdout)
    );
    assert_eq!(
        ours.first().map(|x| x.0.as_str()),
        Some("hot_leaf"),
        "{summary}"
    );

    // Sample counts, inlined frames folded into their function: the
    // summary's view.
    let text = go_pprof(
        &dir,
        &[
            "-top",
            "-noinlines",
            "-sample_index=samples",
            "-nodefraction=0",
        ],
        &pb,
    );
    eprintln!(
        "go tool pprof -top -noinlines -sample_index=samples:\n{}",
        head(&text)
    );
    let top = parse_top(&text);
    let names: Vec<&str> = top.iter().take(3).map(|x| x.0.as_str()).collect();
    assert_eq!(names, ["hot_leaf", "warm_leaf", "cold_leaf"], "{text}");
    assert_same_top5(&ours, &top, &format!("{text}\n{summary}"));

    // The default view: the event in nanoseconds, inlined functions apart.
    let text = go_pprof(&dir, &["-top", "-nodefraction=0"], &pb);
    eprintln!("go tool pprof -top:\n{}", head(&text));
    assert!(text.contains("Type: cpu-clock"), "{text}");
    let top = parse_top(&text);
    let pct = |n: &str| top.iter().find(|x| x.0 == n).map_or(0.0, |x| x.1);
    assert!(pct("mix (inline)") > 0.0, "no inlined frame:\n{text}");
    let hot = ours[0].1;
    assert!(
        (pct("hot_leaf") + pct("mix (inline)") - hot).abs() <= 1.0,
        "hot_leaf + mix = {} + {}, summary {hot}\n{text}",
        pct("hot_leaf"),
        pct("mix (inline)")
    );
    for name in ["warm_leaf", "cold_leaf"] {
        let want = ours.iter().find(|x| x.0 == name).map_or(0.0, |x| x.1);
        assert!((pct(name) - want).abs() <= 1.0, "{name}\n{text}");
    }

    // Labels as pprof reads them.
    let tags = go_pprof(&dir, &["-tags"], &pb);
    assert!(tags.contains("comm:") && tags.contains("prog"), "{tags}");
    assert!(tags.contains("pid:") && tags.contains("tid:"), "{tags}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn freebsd_hwpmc_log_exports_for_pprof() {
    if !have_go() {
        pmc_testkit::skip!("`go` (golang-go) is not installed");
        return;
    }
    let dir = workdir("pprof-hwpmc");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pmc-log/tests/fixtures/pmclog/synthetic-amd64-all-types.pmclog");
    let pb = dir.join("hwpmc.pb.gz");
    let out = pmcstat()
        .arg("-R")
        .arg(&fixture)
        .arg("--pprof")
        .arg(&pb)
        .output()
        .unwrap();
    ok(&out, "pmcstat -R hwpmc --pprof");
    let raw = go_pprof(&dir, &["-raw"], &pb);
    assert!(
        raw.contains("Samples:") && raw.contains("Locations"),
        "{raw}"
    );
    assert!(raw.contains("samples/count"), "{raw}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `go tool pprof -traces` value (`250us`, `34.75ms`, `1.2s`) in nanoseconds.
fn trace_ns(v: &str) -> Option<f64> {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(num.parse::<f64>().ok()? * scale)
}

/// Issue 34: inlined functions are frames of their own in `-G` and `--folded`, marked
/// "(inlined)" as perf marks them, and lines of their own in pprof's locations, while the
/// summary folds them into their function. Judged by binutils' `addr2line -i -f` over the
/// sampled PCs (`-m`, in the object's addresses): the samples whose innermost function it
/// says is the always-inlined `mix` are the samples `--folded` ends in `mix (inlined)`, and
/// `go tool pprof -traces` starts with `mix (inline)`.
#[test]
fn inlined_frames_agree_with_addr2line() {
    if !pmc_testkit::cli::works("addr2line", &["--version"]) {
        pmc_testkit::skip!("binutils' addr2line is not installed");
        return;
    }
    let dir = workdir("inline");
    let Some(exe) = pmc_testkit::cc::build(
        &dir,
        "prog",
        PROG,
        &["-g", "-O1", "-fno-omit-frame-pointer"],
    ) else {
        return;
    };
    let log = dir.join("prog.pmclog");
    let out = pmcstat()
        .args(["-q", "-P", "cpu-clock", "-n", "250000", "-O"])
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    ok(&out, "pmcstat -P");
    let report = |args: &[&str]| {
        let out = pmcstat().arg("-R").arg(&log).args(args).output().unwrap();
        ok(&out, &format!("pmcstat -R {args:?}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // addr2line's innermost function at each PC sampled in hot_leaf.
    let pcs: Vec<String> = report(&["-m", "-"])
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some("hot_leaf"))
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert!(pcs.len() >= 100, "{} samples in hot_leaf", pcs.len());
    let mut distinct = pcs.clone();
    distinct.sort();
    distinct.dedup();
    // addr2line's chain at each address, innermost first: the first line is the innermost
    // function.
    let innermost: HashMap<&str, String> = distinct
        .iter()
        .map(|pc| {
            let out = Command::new("addr2line")
                .args(["-i", "-f", "-e"])
                .arg(&exe)
                .arg(pc)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            (pc.as_str(), text.lines().next().unwrap_or("").to_owned())
        })
        .collect();
    let in_mix = pcs
        .iter()
        .filter(|pc| innermost[pc.as_str()] == "mix")
        .count();
    eprintln!(
        "{} samples in hot_leaf, addr2line puts {in_mix} in the inlined mix",
        pcs.len()
    );
    assert!(in_mix * 2 >= pcs.len(), "mix is the loop's body: {in_mix}");

    let folded = report(&["--folded", "-"]);
    let count = |suffix: &str| -> usize {
        folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(stack, _)| stack.ends_with(suffix))
            .map(|(_, n)| n.parse::<usize>().unwrap())
            .sum()
    };
    assert_eq!(count(";hot_leaf;mix (inlined)"), in_mix, "{folded}");
    assert_eq!(count(";hot_leaf") + in_mix, pcs.len(), "{folded}");
    // --no-inline (perf report's spelling): every sample in hot_leaf itself.
    let flat = report(&["--folded", "-", "--no-inline"]);
    assert!(!flat.contains("(inlined)"), "{flat}");
    let in_leaf: usize = flat
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.ends_with(";hot_leaf"))
        .map(|(_, n)| n.parse::<usize>().unwrap())
        .sum();
    assert_eq!(in_leaf, pcs.len(), "{flat}");

    let graph = report(&["-G", "-"]);
    let lines: Vec<&str> = graph.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(" mix (inlined) @ "))
        .unwrap_or_else(|| panic!("no inlined frame in -G:\n{graph}"));
    assert!(lines[at + 1].trim_end().ends_with(" hot_leaf"), "{graph}");

    let summary = report(&["--summary", "--top", "5"]);
    assert!(
        !summary.contains("mix"),
        "the summary folds inlines: {summary}"
    );

    if have_go() {
        let pb = dir.join("prog.pb.gz");
        report(&["--pprof", pb.to_str().unwrap()]);
        let traces = go_pprof(&dir, &["-traces"], &pb);
        let mut ns = 0.0;
        for block in traces.split("-----------+") {
            let first = block
                .lines()
                .find(|l| !l.contains(':') && !l.trim().is_empty() && !l.starts_with('-'));
            if let Some(l) = first {
                let mut w = l.split_whitespace();
                if let (Some(v), Some("mix")) = (w.next(), w.next()) {
                    ns += trace_ns(v).unwrap_or(0.0);
                }
            }
        }
        assert_eq!((ns / 250_000.0).round() as usize, in_mix, "{traces}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
