//! Sampling a program with a known call structure, then reading the log
//! back: `-R` dump, `-G` call graph, `--flamegraph`, `--summary`, agreement
//! with `perf record`, and FreeBSD hwpmc logs detected by magic.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::command as pmcstat;

const PROG: &str = r#"
#include <stdint.h>
volatile uint64_t sink;
__attribute__((noinline)) void hot_leaf(void) { for (uint64_t i = 0; i < 4000000; i++) sink += i * 7; }
__attribute__((noinline)) void warm_leaf(void) { for (uint64_t i = 0; i < 1300000; i++) sink += i * 5; }
__attribute__((noinline)) void cold_leaf(void) { for (uint64_t i = 0; i < 400000; i++) sink += i * 3; }
__attribute__((noinline)) void outer(void) { hot_leaf(); warm_leaf(); cold_leaf(); }
int main(void) { for (int k = 0; k < 60; k++) outer(); return 0; }
"#;

fn workdir(name: &str) -> PathBuf {
    pmc_testkit::workdir(&format!("pmcstat-{name}"))
}

/// Builds the test program, or records a skip saying why not.
fn build_prog(dir: &Path) -> Option<PathBuf> {
    pmc_testkit::cc::build(dir, "prog", PROG, &["-g", "-O0", "-fno-omit-frame-pointer"])
}

fn sample(dir: &Path, exe: &Path) -> PathBuf {
    let log = dir.join("prog.pmclog");
    let out = pmcstat()
        .args(["-P", "cpu-clock", "--freq", "4000", "-O"])
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
        return;
    };
    let log = sample(&dir, &exe);

    // -R alone: pmcstat(8)'s record lines, starting with initlog.
    let dump = pmcstat().arg("-R").arg(&log).output().unwrap();
    assert!(dump.status.success());
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.starts_with("initlog   0x0 "),
        "{}",
        &text[..text.len().min(300)]
    );
    assert!(
        text.lines().any(|l| l.starts_with("callchain ")),
        "no callchain lines"
    );
    assert!(
        text.lines().any(|l| l.starts_with("...       0x")),
        "no PCs"
    );

    // -G - (pmcstat(8)'s layout): the hot function first, its callers
    // indented below it with shares of their parent.
    let g = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["-G", "-"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let graph = String::from_utf8_lossy(&g.stdout);
    let gl: Vec<&str> = graph.lines().collect();
    assert!(gl[0].starts_with("@ cpu-clock ["), "{graph}");
    assert_eq!(gl[1], "", "{graph}");
    assert!(
        gl[2].contains(" hot_leaf @ ") && gl[2].starts_with(|c: char| c.is_ascii_digit()),
        "{graph}"
    );
    let outer = gl[3];
    assert!(
        outer.starts_with(' ') && !outer.starts_with("  "),
        "{graph}"
    );
    assert!(outer.trim_end().ends_with(" outer"), "{graph}");
    let p: f64 = outer
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(
        p > 99.0,
        "outer calls nearly all of hot_leaf's samples:\n{graph}"
    );
    assert!(
        gl[4].starts_with("  ") && gl[4].trim_end().ends_with(" main"),
        "{graph}"
    );

    // --callgraph-order caller: hot_leaf under outer under main; top level
    // adds up to 100%.
    let g = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["-G", "-", "-z", "8", "--callgraph-order", "caller"])
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
    // --summary --top 0 (every row): no row of 0 samples; outer and main only
    // called hot_leaf and the others, so they are not rows of the table.
    let all = pmcstat()
        .arg("-R")
        .arg(&log)
        .args(["--summary", "--top", "0"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&all.stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(rows.len() >= 4, "{table}");
    for row in &rows {
        let samples = row.split_whitespace().nth(1);
        assert_ne!(samples, Some("0"), "a row of 0 samples: {row}\n{table}");
    }
    assert!(
        !rows
            .iter()
            .any(|r| r.split_whitespace().nth(4) == Some("main")),
        "{table}"
    );
    gprof_agrees_with_summary(&dir, &exe, &log, &v);
    callgrind_annotate_agrees_with_summary(&dir, &log, &v);
    annotate_listings(&exe, &log, &v);

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
    // -R alone prints pmcstat(8)'s record lines (pmcstat_log.c,
    // pmcstat_print_log): the name in 9 columns, then the fields. initlog
    // names pl_arch as pmc_name_of_cputype() does (0x9D, INTEL_ALDERLAKE),
    // allocate/allocatedyn print the record's own pl_flags (issue 23
    // item 12).
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("initlog   0xa010000 \"INTEL_ALDERLAKE\""),
        "{text}"
    );
    for want in [
        "allocate  0xfff20700 \"TSC\" 0x8e",
        "allocatedyn 0x110f00 \"SOFT-CLOCK.HARD\" 0x0",
        "map-in    -1 0xffffffff80200000 \"/boot/kernel/kernel\"",
        "exec      0xfff20700 4242 0x80021000 \"/usr/bin/yes\"",
        "callchain 4242 0xfff20700 1 3 u",
        "...       0x201234",
        "callchain 4242 0xfff20700 0 2 s",
        "cswval    0xfff20700 4242 123456",
        "fork      4242 4243",
        "userdata  0xc0ffee",
        "drop",
        "map-out   4242 0x80021000 0x80040000",
        "exitval   0xfff20700 4242 9999999",
        "exit      4242",
        "detach    0xfff20700 4242",
    ] {
        assert!(lines.contains(&want), "no line {want:?} in:\n{text}");
    }
    assert_eq!(lines.last().copied(), Some("closelog"), "{text}");
    // The callchain's PCs follow it, leaf first.
    let cc = lines
        .iter()
        .position(|l| *l == "callchain 4242 0xfff20700 1 3 u")
        .unwrap();
    assert_eq!(
        &lines[cc + 1..cc + 4],
        [
            "...       0x201234",
            "...       0x200100",
            "...       0x80021500"
        ]
    );
    // --dump: pmc-log's own dump, every field.
    let out = pmcstat()
        .arg("-R")
        .arg(&fixture)
        .arg("--dump")
        .output()
        .unwrap();
    assert!(out.status.success());
    let dump = String::from_utf8_lossy(&out.stdout);
    assert!(dump.starts_with("header"), "{dump}");
    assert!(dump.contains("hwpmc"), "{dump}");
    let junk = workdir("junk").join("junk");
    std::fs::write(&junk, b"definitely not a log").unwrap();
    let out = pmcstat().arg("-R").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pmc log"));
}

/// A `--summary --json` function row: (self samples, self percent).
fn summary_self(v: &serde_json::Value, name: &str) -> (u64, f64) {
    let f = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f.get("function")
                .or_else(|| f.get("name"))
                .and_then(|x| x.as_str())
                == Some(name)
        })
        .unwrap_or_else(|| panic!("{name} not in the summary: {v}"));
    (
        f["self"].as_u64().unwrap(),
        f["self_percent"].as_f64().unwrap(),
    )
}

/// `-g -D dir`: one gmon file for the program, which GNU gprof reads with
/// the hot function on top and percentages matching `--summary`'s counts.
fn gprof_agrees_with_summary(dir: &Path, exe: &Path, log: &Path, v: &serde_json::Value) {
    let samples = dir.join("samples");
    let out = pmcstat()
        .arg("-R")
        .arg(log)
        .arg("-g")
        .arg("-D")
        .arg(&samples)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // pmcpl_gprof.c's layout: <dir>/<event>/<object basename>.gmon.
    let gmon = samples.join("cpu-clock").join("prog.gmon");
    assert!(gmon.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    let g = match Command::new("gprof").arg("-b").arg(exe).arg(&gmon).output() {
        Ok(g) => g,
        Err(e) => {
            pmc_testkit::skip!("gprof agreement: gprof is not runnable ({e})");
            return;
        }
    };
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let text = String::from_utf8_lossy(&g.stdout);
    println!("{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .take_while(|l| !l.contains("Call graph"))
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0].last().copied(), Some("hot_leaf"), "{text}");
    // gprof's percentages are of the samples in this object.
    let in_prog: u64 = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["object"].as_str().is_some_and(|p| p.ends_with("/prog")))
        .map(|o| o["self"].as_u64().unwrap())
        .sum();
    for name in ["hot_leaf", "warm_leaf", "cold_leaf"] {
        let (n, _) = summary_self(v, name);
        let want = n as f64 * 100.0 / in_prog as f64;
        let row = rows
            .iter()
            .find(|r| r.last() == Some(&name))
            .unwrap_or_else(|| panic!("{name} not in gprof's flat profile:\n{text}"));
        let got: f64 = row[0].parse().unwrap();
        assert!(
            (got - want).abs() <= 0.011,
            "{name}: gprof {got}% vs summary {want:.2}%\n{text}"
        );
        // Sampled at 4000 Hz (--freq): gprof's self seconds are samples / 4000.
        let secs: f64 = row[2].parse().unwrap();
        assert!(
            (secs - n as f64 / 4000.0).abs() <= 0.0051,
            "{name}: {secs} s vs {n} samples\n{text}"
        );
    }
}

/// `-F file`: callgrind_annotate lists the same functions with the same
/// self counts and percentages as `--summary`.
fn callgrind_annotate_agrees_with_summary(dir: &Path, log: &Path, v: &serde_json::Value) {
    let file = dir.join("prog.callgrind");
    let out = pmcstat()
        .arg("-R")
        .arg(log)
        .arg("-F")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Run from / so that callgrind_annotate does not shorten paths by $PWD.
    let a = match Command::new("callgrind_annotate")
        .arg(&file)
        .current_dir("/")
        .output()
    {
        Ok(a) => a,
        Err(e) => {
            pmc_testkit::skip!("callgrind_annotate agreement: not runnable ({e})");
            return;
        }
    };
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let text = String::from_utf8_lossy(&a.stdout);
    println!("{text}");
    let total = v["total"].as_u64().unwrap();
    let commas = |n: u64| {
        let s = n.to_string();
        let mut o = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                o.push(',');
            }
            o.push(c);
        }
        o
    };
    assert!(
        text.lines()
            .any(|l| l.contains("PROGRAM TOTALS") && l.trim_start().starts_with(&commas(total))),
        "total {total}:\n{text}"
    );
    // The function lines, in callgrind_annotate's order (heaviest first).
    let funcs: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(funcs[0].contains(":hot_leaf "), "{text}");
    for name in ["hot_leaf", "warm_leaf", "cold_leaf"] {
        let (n, pct) = summary_self(v, name);
        let line = funcs
            .iter()
            .find(|l| l.contains(&format!(":{name} ")))
            .unwrap_or_else(|| panic!("{name} not listed:\n{text}"));
        assert!(
            line.trim_start().starts_with(&commas(n)),
            "{name}: {n} samples\n{text}"
        );
        assert!(
            line.contains(&format!("{pct:.2}%")),
            "{name}: {pct:.2}%\n{text}"
        );
    }
}

/// `-m -` and `-a -`: per-sample listings. Oracles: binutils' addr2line and
/// nm for the PCs and bounds of -m, and the program's source (one function
/// per line) for the file:line of -a.
fn annotate_listings(exe: &Path, log: &Path, v: &serde_json::Value) {
    let m = pmcstat()
        .arg("-R")
        .arg(log)
        .args(["-m", "-"])
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let text = String::from_utf8_lossy(&m.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.iter().all(|r| r.len() == 4), "{text}");
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    for r in &rows {
        let (pc, lo, hi) = (hex(r[0]), hex(r[2]), hex(r[3]));
        assert!(lo <= pc && pc < hi, "PC outside its function: {r:?}");
    }
    // One line per sample: hot_leaf's lines are its --summary self count.
    let (hot, _) = summary_self(v, "hot_leaf");
    let n = rows.iter().filter(|r| r[1] == "hot_leaf").count() as u64;
    assert_eq!(n, hot, "{text}");
    // nm gives hot_leaf's start; addr2line names the function of a PC.
    let nm = Command::new("nm").arg(exe).output();
    let a2l = Command::new("addr2line").arg("--version").output();
    if let (Ok(nm), Ok(_)) = (nm, a2l) {
        let nm = String::from_utf8_lossy(&nm.stdout).into_owned();
        let start = nm
            .lines()
            .find(|l| l.ends_with(" T hot_leaf"))
            .map(|l| hex(l.split_whitespace().next().unwrap()))
            .unwrap();
        let r = rows.iter().find(|r| r[1] == "hot_leaf").unwrap();
        assert_eq!(hex(r[2]), start, "{r:?} vs nm:\n{nm}");
        let f = Command::new("addr2line")
            .arg("-f")
            .arg("-e")
            .arg(exe)
            .arg(r[0])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&f.stdout).lines().next(),
            Some("hot_leaf")
        );
    } else {
        pmc_testkit::skip!("-m against binutils: nm/addr2line not runnable");
    }

    let a = pmcstat()
        .arg("-R")
        .arg(log)
        .args(["-a", "-"])
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let text = String::from_utf8_lossy(&a.stdout);
    let samples = text.lines().filter(|l| *l == "--").count() as u64;
    assert_eq!(samples, v["total"].as_u64().unwrap(), "one -- per sample");
    // PROG (after its leading newline) has hot_leaf on line 4, outer on 7,
    // main on 8.
    for (func, line) in [("hot_leaf", 4), ("outer", 7), ("main", 8)] {
        let nodes: Vec<&str> = text
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(func))
            .collect();
        assert!(!nodes.is_empty(), "{func} missing");
        for l in nodes {
            assert!(
                l.ends_with(&format!("prog.c:{line}")),
                "{func} should be at prog.c:{line}: {l}"
            );
        }
    }
}
