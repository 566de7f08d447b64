//! End-to-end tests over synthetic logs whose Map records point at a real,
//! freshly compiled program and whose sample addresses are that program's
//! real symbol addresses.

mod common;

use std::path::Path;

use common::*;
use pmc_analyze::callgraph::{write_callgraph, CallGraphOptions, CallTree, Order};
use pmc_analyze::flame::{folded_lines, write_flamegraph, FlameGraphOptions, FoldedOptions};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::{AnalyzeOptions, KernelSymbols, Profile, SymbolizeOptions, Warning, Weight};
use pmc_log::record::{Exec, Record};

const PIE_BASE: u64 = 0x5555_5555_0000;
const PID: i32 = 4242;

fn opts_with_kallsyms(dir: &Path) -> AnalyzeOptions {
    let k = dir.join("kallsyms");
    std::fs::write(
        &k,
        "ffffffff81000000 T _text\n\
         ffffffff81000100 T fake_syscall_entry\n\
         ffffffff81000200 T fake_after\n",
    )
    .expect("write kallsyms");
    AnalyzeOptions {
        symbolize: SymbolizeOptions {
            kernel: KernelSymbols::File(k),
            ..SymbolizeOptions::default()
        },
        ..AnalyzeOptions::default()
    }
}

/// The standard PIE program, log and profile.
fn standard(dir: &Path) -> (std::path::PathBuf, Profile) {
    let prog = compile(dir, "prog", &["-pie", "-fPIE"]);
    assert!(is_pie(&prog));
    let mut recs = vec![pmc(0, "cpu-clock"), comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &build_id(&prog)));
    recs.extend(standard_samples(PID, &addrs(&prog, PIE_BASE)));
    let log = write_log(&recs);
    let p = Profile::from_log(&log, opts_with_kallsyms(dir)).expect("profile");
    (prog, p)
}

fn check_sums(tree: &CallTree) {
    for n in &tree.nodes {
        let kids: u64 = n.children.iter().map(|&c| tree.nodes[c].total).sum();
        assert_eq!(kids + n.self_weight, n.total, "children + self = node");
    }
    let roots: u64 = tree.roots.iter().map(|&r| tree.nodes[r].total).sum();
    assert_eq!(roots, tree.total);
}

/// Sum of the percentages printed on top-level (unindented) lines.
fn top_level_percent_sum(text: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| l.split('%').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn callgraph_puts_hot_leaf_under_outer_under_main() {
    let dir = scratch("callgraph");
    let (_prog, p) = standard(&dir);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.stats.samples, 1000);
    let tree = CallTree::build(&p, None, Order::Callers, Weight::Samples);
    check_sums(&tree);
    let hot = tree
        .find_path(&p, &["main", "outer", "hot_leaf"])
        .expect("main -> outer -> hot_leaf");
    assert_eq!(tree.nodes[hot].total, 900);
    let cold = tree
        .find_path(&p, &["main", "outer", "cold_leaf"])
        .expect("main -> outer -> cold_leaf");
    assert_eq!(tree.nodes[cold].total, 100);

    let mut out = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut out).expect("write");
    let text = String::from_utf8(out).expect("utf8");
    println!("{text}");
    assert!(text.starts_with("@ cpu-clock [1000 samples]\n"), "{text}");
    let main_line = text
        .lines()
        .position(|l| l.contains(" main @ prog"))
        .expect("main line");
    let outer_line = text
        .lines()
        .position(|l| l.contains(" outer @ prog"))
        .expect("outer line");
    let hot_line = text
        .lines()
        .position(|l| l.contains(" hot_leaf @ prog"))
        .expect("hot line");
    assert!(main_line < outer_line && outer_line < hot_line);
    let indent = |i: usize| {
        let l = text.lines().nth(i).unwrap_or_default();
        l.len() - l.trim_start().len()
    };
    assert!(indent(main_line) < indent(outer_line) && indent(outer_line) < indent(hot_line));
    assert!(text
        .lines()
        .nth(hot_line)
        .unwrap_or_default()
        .trim_start()
        .starts_with("90.00%  [900]  hot_leaf"));
    let sum = top_level_percent_sum(&text);
    assert!(
        (sum - 100.0).abs() <= 0.1,
        "top-level percentages add to {sum}"
    );

    // Depth limit (-z 2): hot_leaf (depth 3) is not printed.
    let mut out = Vec::new();
    let o = CallGraphOptions {
        max_depth: 2,
        ..CallGraphOptions::default()
    };
    write_callgraph(&p, &o, &mut out).expect("write");
    let text = String::from_utf8(out).expect("utf8");
    assert!(
        text.contains("outer") && !text.contains("hot_leaf"),
        "{text}"
    );

    // pmcstat's inverted layout: hot_leaf on top, outer and main below.
    let tree = CallTree::build(&p, None, Order::Callees, Weight::Samples);
    let n = tree
        .find_path(&p, &["hot_leaf", "outer", "main"])
        .expect("callee order");
    assert_eq!(tree.nodes[n].total, 900);
    let mut out = Vec::new();
    let o = CallGraphOptions {
        order: Order::Callees,
        ..CallGraphOptions::default()
    };
    write_callgraph(&p, &o, &mut out).expect("write");
    let text = String::from_utf8(out).expect("utf8");
    println!("{text}");
    // FreeBSD's exact layout (pmcpl_callgraph.c, pmcstat_cgnode_print):
    // "%05.2f%% " or "100.0% ", " [%u] " padded to 12, the depth's indent
    // before both, " @ object" only when the object changes, a blank line
    // after each top-level entry.
    let prog = _prog.display();
    assert_eq!(
        text,
        format!(
            "@ cpu-clock [1000 samples]\n\n\
             90.00%  [900]      hot_leaf @ {prog}\n \
             100.0%  [900]       outer\n  \
             100.0%  [900]        main\n\n\
             10.00%  [100]      cold_leaf @ {prog}\n \
             100.0%  [100]       outer\n  \
             100.0%  [100]        main\n\n"
        )
    );
    // -z 2: the sampled function and its direct caller only.
    let mut out = Vec::new();
    let o2 = CallGraphOptions {
        max_depth: 2,
        ..o.clone()
    };
    write_callgraph(&p, &o2, &mut out).expect("write");
    let text2 = String::from_utf8(out).expect("utf8");
    assert!(
        text2.contains("outer") && !text2.contains("main"),
        "{text2}"
    );
    let sum = top_level_percent_sum(&text);
    assert!(
        (sum - 100.0).abs() <= 0.1,
        "top-level percentages add to {sum}"
    );

    // JSON form.
    let mut out = Vec::new();
    pmc_analyze::callgraph::write_callgraph_json(&p, &CallGraphOptions::default(), &mut out)
        .expect("json");
    let j: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    assert_eq!(j["pmcs"][0]["name"], "cpu-clock");
    let j = &j["pmcs"][0]["tree"];
    assert_eq!(j["total"], 1000);
    assert_eq!(j["roots"][0]["name"], "main");
    assert_eq!(
        j["roots"][0]["children"][0]["children"][0]["name"],
        "hot_leaf"
    );
}

#[test]
fn source_locations_from_dwarf() {
    let dir = scratch("dwarf");
    let (_prog, p) = standard(&dir);
    let hot = p
        .functions
        .iter()
        .find(|f| f.name == "hot_leaf")
        .expect("hot_leaf function");
    let src = hot.source.as_ref().expect("DWARF location");
    assert!(src.file.ends_with("prog.c"), "{src:?}");
    assert_eq!(src.line, HOT_LEAF_LINE, "{src:?}");
    assert_eq!(
        hot.address,
        Some(symbol(&dir.join("prog"), "hot_leaf").addr)
    );
}

/// Per-address lines against binutils `addr2line` as the oracle.
#[test]
fn address_lines_match_binutils_addr2line() {
    let dir = scratch("a2l");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let mut sym = pmc_analyze::Symbolizer::new(SymbolizeOptions {
        kernel: KernelSymbols::Disabled,
        ..SymbolizeOptions::default()
    });
    for m in maps_for(PID, &prog, PIE_BASE, &build_id(&prog)) {
        sym.observe(&m);
    }
    let mut checked = 0;
    for name in ["main", "outer", "hot_leaf", "cold_leaf"] {
        let s = symbol(&prog, name);
        for off in (0..s.size).step_by(5) {
            let info = sym.lookup_address(PID, PIE_BASE + s.addr + off, false, false);
            assert_eq!(info.svma, Some(s.addr + off));
            assert_eq!(info.offset, Some(off));
            assert_eq!(sym.functions()[info.function as usize].name, name);
            let Ok(out) = std::process::Command::new("addr2line")
                .arg("-e")
                .arg(&prog)
                .arg(format!("{:#x}", s.addr + off))
                .output()
            else {
                continue; // binutils not installed: names and offsets checked above
            };
            let want = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let want = want
                .split(" (discriminator")
                .next()
                .unwrap_or_default()
                .to_string();
            let got = info.source.map(|l| format!("{}:{}", l.file, l.line));
            assert_eq!(got.as_deref(), Some(want.as_str()), "{name}+{off:#x}");
            checked += 1;
        }
    }
    println!("{checked} addresses agree with binutils addr2line");
}

#[test]
fn folded_and_flamegraph() {
    let dir = scratch("flame");
    let (_prog, p) = standard(&dir);
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(
        lines,
        vec![
            ("prog;main;outer;cold_leaf".to_string(), 100),
            ("prog;main;outer;hot_leaf".to_string(), 900),
        ]
    );
    let by_period = folded_lines(
        &p,
        &FoldedOptions {
            weight: Weight::Period,
            include_comm: false,
            ..FoldedOptions::default()
        },
    );
    assert_eq!(
        by_period[1],
        ("main;outer;hot_leaf".to_string(), 900 * 100_000)
    );

    let mut svg = Vec::new();
    write_flamegraph(&p, &FlameGraphOptions::default(), &mut svg).expect("svg");
    let svg = String::from_utf8(svg).expect("utf8");
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("hot_leaf"));
    assert!(svg.contains("cold_leaf"));
    assert!(svg.contains("Flame Graph: cpu-clock"));
    if let Ok(path) = std::env::var("PMC_ANALYZE_SVG_OUT") {
        std::fs::write(path, &svg).expect("save svg");
    }
}

#[test]
fn top_by_function_and_object() {
    let dir = scratch("top");
    let (prog, p) = standard(&dir);
    let r = TopReport::build(&p, &TopOptions::default());
    assert_eq!(r.total, 1000);
    assert_eq!(r.functions[0].function, "hot_leaf");
    assert_eq!(r.functions[0].self_weight, 900);
    assert!((r.functions[0].self_percent - 90.0).abs() < 1e-9);
    // main only called the sampled functions: no row of 0 samples for it.
    assert!(
        r.functions
            .iter()
            .all(|f| f.self_weight > 0 && f.function != "main"),
        "{:?}",
        r.functions
    );
    assert!(
        r.objects.iter().all(|o| o.self_weight > 0),
        "{:?}",
        r.objects
    );
    assert_eq!(r.objects.len(), 1);
    assert_eq!(r.objects[0].object, prog.to_string_lossy());
    assert_eq!(r.objects[0].self_weight, 1000);

    let mut text = Vec::new();
    r.write_text(&mut text).expect("text");
    let text = String::from_utf8(text).expect("utf8");
    assert!(text.contains("hot_leaf"), "{text}");
    let mut json = Vec::new();
    r.write_json(&mut json).expect("json");
    let v: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
    assert_eq!(v["functions"][0]["function"], "hot_leaf");
    assert_eq!(v["functions"][0]["self"], 900);
    assert_eq!(v["objects"][0]["self_percent"], 100.0);
    let mut csv = Vec::new();
    r.write_csv(&mut csv).expect("csv");
    let csv = String::from_utf8(csv).expect("utf8");
    let row = csv.lines().nth(1).expect("first row");
    assert!(row.starts_with("function,1,hot_leaf,"), "{row}");
    assert!(row.contains(",900,90.0000,900,90.0000"), "{row}");
    assert!(csv.lines().any(|l| l.starts_with("object,1,")));
}

#[test]
fn kernel_frames_from_kallsyms() {
    let dir = scratch("kernel");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let a = addrs(&prog, PIE_BASE);
    let mut recs = vec![comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &[]));
    for _ in 0..10 {
        recs.push(sample(
            PID,
            vec![
                0xffff_ffff_8100_0110,
                0xffff_ffff_8100_0010,
                a.hot_leaf,
                a.outer,
                a.main,
            ],
            2,
        ));
    }
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(
        lines,
        vec![(
            "prog;main;outer;hot_leaf;_text_[k];fake_syscall_entry_[k]".to_string(),
            10
        )]
    );
    let f = p
        .functions
        .iter()
        .find(|f| f.name == "fake_syscall_entry")
        .expect("kfunc");
    assert!(f.kernel);
    assert_eq!(f.object.as_deref(), Some("[kernel.kallsyms]"));

    // Without kernel symbols, kernel frames are "[kernel]", user frames still resolve.
    let o = AnalyzeOptions {
        symbolize: SymbolizeOptions {
            kernel: KernelSymbols::Disabled,
            ..SymbolizeOptions::default()
        },
        ..AnalyzeOptions::default()
    };
    let p = Profile::from_log(&write_log(&recs), o).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(
        lines[0].0,
        "prog;main;outer;hot_leaf;[kernel]_[k];[kernel]_[k]"
    );

    // User-only filter drops the kernel frames.
    let o = AnalyzeOptions {
        filter: pmc_analyze::Filter {
            user_only: true,
            ..Default::default()
        },
        ..opts_with_kallsyms(&dir)
    };
    let p = Profile::from_log(&write_log(&recs), o).expect("profile");
    assert_eq!(
        folded_lines(&p, &FoldedOptions::default())[0].0,
        "prog;main;outer;hot_leaf"
    );
}

#[test]
fn non_pie_executable() {
    let dir = scratch("nopie");
    let prog = compile(&dir, "prog", &["-no-pie", "-fno-pie"]);
    assert!(!is_pie(&prog));
    let mut recs = vec![comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, 0, &build_id(&prog)));
    let a = addrs(&prog, 0);
    recs.extend(standard_samples(PID, &a));
    // Samples in outer itself: a "[self]" line under outer.
    for _ in 0..125 {
        recs.push(sample(PID, vec![a.outer, a.main], 0));
    }
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let tree = CallTree::build(&p, None, Order::Callers, Weight::Samples);
    check_sums(&tree);
    let hot = tree
        .find_path(&p, &["main", "outer", "hot_leaf"])
        .expect("path");
    assert_eq!(tree.nodes[hot].total, 900);
    let mut out = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut out).expect("write");
    let text = String::from_utf8(out).expect("utf8");
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.get(2), Some(&"100.00%  [1125]  main @ prog"));
    assert_eq!(lines.get(3), Some(&"  100.00%  [1125]  outer @ prog"));
    assert_eq!(lines.get(4), Some(&"    80.00%  [900]  hot_leaf @ prog"));
    assert_eq!(lines.get(5), Some(&"    8.89%  [100]  cold_leaf @ prog"));
    assert_eq!(lines.get(6), Some(&"    11.11%  [125]  [self]"));
}

#[test]
fn shared_object_bias() {
    let dir = scratch("shlib");
    // hot_leaf & co. in a shared object, loaded at an odd base.
    let lib = compile(&dir, "libhot.so", &["-shared", "-fPIC"]);
    let base = 0x7f12_3456_0000u64;
    let mut recs = vec![comm(PID, "app")];
    recs.extend(maps_for(PID, &lib, base, &build_id(&lib)));
    let a = addrs(&lib, base);
    for _ in 0..30 {
        recs.push(sample(PID, vec![a.hot_leaf, a.outer], 0));
    }
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines, vec![("app;outer;hot_leaf".to_string(), 30)]);
    let f = p
        .functions
        .iter()
        .find(|f| f.name == "hot_leaf")
        .expect("f");
    assert_eq!(f.object_basename(), Some("libhot.so"));

    // A shared object linked at a non-zero address (p_vaddr - p_offset =
    // 0x200000), as perf MMAP2 (with pgoff) and as hwpmc MAP_IN (no length).
    let odd = compile(
        &dir,
        "libodd.so",
        &["-shared", "-fPIC", "-Wl,-Ttext-segment=0x200000"],
    );
    let text = pmc_analyze::ElfObject::open(&odd, false)
        .expect("parse")
        .text_svma(4096)
        .expect("text");
    assert_eq!(text, 0x201000, "layout this test relies on");
    let a = addrs(&odd, base);
    let samples: Vec<Record<'_>> = (0..30)
        .map(|_| sample(PID, vec![a.hot_leaf, a.outer], 0))
        .collect();
    let mut recs = vec![comm(PID, "app")];
    recs.extend(maps_for(PID, &odd, base, &build_id(&odd)));
    recs.extend(samples.iter().cloned());
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines, vec![("app;outer;hot_leaf".to_string(), 30)]);
    let mut recs = vec![comm(PID, "app")];
    recs.push(Record::Map(pmc_log::record::Map {
        time: 1,
        pid: PID,
        start: base + text,
        len: 0,
        pgoff: 0,
        build_id: Default::default(),
        path: odd.to_string_lossy().into_owned().into(),
    }));
    recs.extend(samples.iter().cloned());
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines, vec![("app;outer;hot_leaf".to_string(), 30)]);
}

#[test]
fn hwpmc_style_map_without_length_and_exec() {
    let dir = scratch("hwpmc");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let path = prog.to_string_lossy().into_owned();
    let a = addrs(&prog, PIE_BASE);

    // PROCEXEC with the PIE's load base (pl_dyn).
    let mut recs = vec![Record::Exec(Exec {
        time: 1,
        pid: PID,
        pmc_id: Some(0),
        base: 0,
        dyn_base: PIE_BASE,
        flags: 0,
        path: path.clone().into(),
    })];
    recs.extend(standard_samples(PID, &a));
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines[1], ("prog;main;outer;hot_leaf".to_string(), 900));

    // MAP_IN: no length, start = where the text segment was mapped.
    let data = std::fs::read(&prog).expect("read");
    let elf = pmc_analyze::ElfObject::parse(&prog, data.into(), false).expect("parse");
    let text = elf.text_svma(4096).expect("text segment");
    let recs2: Vec<Record<'_>> = std::iter::once(comm(PID, "prog"))
        .chain(std::iter::once(Record::Map(pmc_log::record::Map {
            time: 1,
            pid: PID,
            start: PIE_BASE + text,
            len: 0,
            pgoff: 0,
            build_id: Default::default(),
            path: path.into(),
        })))
        .chain(standard_samples(PID, &a))
        .collect();
    let p = Profile::from_log(&write_log(&recs2), opts_with_kallsyms(&dir)).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines[1], ("prog;main;outer;hot_leaf".to_string(), 900));
}

#[test]
fn build_id_mismatch_is_reported_not_mis_symbolized() {
    let dir = scratch("buildid");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let mut wrong = build_id(&prog);
    assert!(!wrong.is_empty(), "Debian's cc emits build-ids");
    wrong[0] ^= 0xff;
    let mut recs = vec![comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &wrong));
    recs.extend(standard_samples(PID, &addrs(&prog, PIE_BASE)));
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    assert!(
        p.warnings
            .iter()
            .any(|w| matches!(w, Warning::BuildIdMismatch { .. })),
        "{:?}",
        p.warnings
    );
    assert!(
        p.warnings[0].to_string().contains("differs"),
        "{}",
        p.warnings[0]
    );
    assert!(!p.functions.iter().any(|f| f.name == "hot_leaf"));
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines, vec![("prog;[prog];[prog];[prog]".to_string(), 1000)]);
}

#[test]
fn bad_objects_and_logs_do_not_panic() {
    let dir = scratch("bad");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let garbage = dir.join("garbage.so");
    std::fs::write(&garbage, b"\x7fELF\x02\x01\x01garbage garbage garbage").expect("write");
    let truncated = dir.join("truncated");
    let bytes = std::fs::read(&prog).expect("read");
    std::fs::write(&truncated, &bytes[..bytes.len().min(700)]).expect("write");
    // A file full of repeated ELF headers with absurd counts.
    let mut weird = bytes[..64.min(bytes.len())].to_vec();
    weird.resize(4096, 0xff);
    let weird_path = dir.join("weird");
    std::fs::write(&weird_path, &weird).expect("write");

    let mut recs = vec![comm(PID, "prog")];
    for (i, p) in [&garbage, &truncated, &weird_path, &dir.join("missing")]
        .iter()
        .enumerate()
    {
        recs.push(Record::Map(pmc_log::record::Map {
            time: 1,
            pid: PID,
            start: 0x1000_0000 * (i as u64 + 1),
            len: 0x10000,
            pgoff: 0,
            build_id: Default::default(),
            path: p.to_string_lossy().into_owned().into(),
        }));
        recs.push(sample(
            PID,
            vec![0x1000_0000 * (i as u64 + 1) + 0x123, 0x10],
            0,
        ));
    }
    // Odd callchains: empty, markers, all kernel.
    recs.push(sample(PID, vec![], 0));
    recs.push(sample(PID, vec![u64::MAX - 10, 0x1234], 5));
    recs.push(sample(-1, vec![0xffff_ffff_8100_0000], 9));
    let p = Profile::from_log(&write_log(&recs), opts_with_kallsyms(&dir)).expect("profile");
    let unreadable = p
        .warnings
        .iter()
        .filter(|w| matches!(w, Warning::ObjectUnreadable { .. }))
        .count();
    assert_eq!(unreadable, 4, "{:#?}", p.warnings);
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert!(
        lines
            .iter()
            .any(|(s, _)| s == "prog;[unknown];[garbage.so]"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|(s, _)| s == "prog;[no callchain]" || s == "prog"),
        "{lines:?}"
    );
    let mut out = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut out).expect("report");
    let mut out = Vec::new();
    write_flamegraph(&p, &FlameGraphOptions::default(), &mut out).expect("svg");

    // Not a log at all.
    assert!(Profile::from_log(b"definitely not a log", AnalyzeOptions::default()).is_err());
    // A damaged log: flip bytes in the middle; the rest is still analysed.
    let mut log = write_log(&recs);
    let mid = log.len() / 2;
    for b in log.iter_mut().skip(mid).take(64) {
        *b ^= 0x5a;
    }
    let p = Profile::from_log(&log, opts_with_kallsyms(&dir)).expect("profile");
    assert!(p.stats.skipped_bytes > 0 || p.stats.samples < 7);
    // Empty profile still gives valid output.
    let p = Profile::from_log(&write_log(&[]), AnalyzeOptions::default()).expect("empty");
    let mut out = Vec::new();
    write_flamegraph(&p, &FlameGraphOptions::default(), &mut out).expect("svg");
    assert!(String::from_utf8_lossy(&out).contains("no samples"));
    let mut out = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut out).expect("report");
    assert!(out.is_empty());
}

#[inline(never)]
fn rust_marker_function(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

#[test]
fn rust_names_are_demangled() {
    assert_eq!(rust_marker_function(2), 6);
    let exe = std::env::current_exe().expect("current exe");
    let s = symbol_matching(&exe, |n| n.contains("rust_marker_function"));
    let bias = if is_pie(&exe) { PIE_BASE } else { 0 };
    let mut recs = vec![comm(PID, "analyze")];
    recs.extend(maps_for(PID, &exe, bias, &build_id(&exe)));
    recs.push(sample(PID, vec![bias + s.addr + s.size / 2], 0));
    let o = AnalyzeOptions {
        symbolize: SymbolizeOptions {
            debug_info: false,
            kernel: KernelSymbols::Disabled,
            ..SymbolizeOptions::default()
        },
        ..AnalyzeOptions::default()
    };
    let p = Profile::from_log(&write_log(&recs), o).expect("profile");
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(
        lines,
        vec![("analyze;analyze::rust_marker_function".to_string(), 1)]
    );
}

fn throughput(samples: usize) -> (f64, u64) {
    let dir = scratch("throughput");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let a = addrs(&prog, PIE_BASE);
    let sy = |n: &str| symbol(&prog, n);
    let (hot, cold) = (sy("hot_leaf"), sy("cold_leaf"));
    let mut w = pmc_log::Writer::new(Vec::new(), &header()).expect("writer");
    w.write(&pmc(0, "cpu-clock")).expect("w");
    w.write(&comm(PID, "prog")).expect("w");
    for m in maps_for(PID, &prog, PIE_BASE, &build_id(&prog)) {
        w.write(&m).expect("w");
    }
    // Many distinct PCs inside the leaves, plus a kernel part on some.
    for i in 0..samples as u64 {
        let leaf = if i % 10 == 0 {
            PIE_BASE + cold.addr + i % cold.size
        } else {
            PIE_BASE + hot.addr + i % hot.size
        };
        let r = if i % 4 == 0 {
            sample(
                PID,
                vec![0xffff_ffff_8100_0100 + i % 0x80, leaf, a.outer, a.main],
                1,
            )
        } else {
            sample(PID, vec![leaf, a.outer, a.main], 0)
        };
        w.write(&r).expect("w");
    }
    let log = w.finish().expect("finish");
    let t = std::time::Instant::now();
    let p = Profile::from_log(&log, opts_with_kallsyms(&dir)).expect("profile");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(p.stats.samples, samples as u64);
    let t = std::time::Instant::now();
    let tree = CallTree::build(&p, None, Order::Callers, Weight::Samples);
    let hot = tree
        .find_path(&p, &["main", "outer", "hot_leaf"])
        .expect("path");
    assert_eq!(
        tree.nodes[hot].total,
        samples as u64 - (samples as u64).div_ceil(10)
    );
    let mut sink = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut sink).expect("w");
    pmc_analyze::flame::write_folded(&p, &FoldedOptions::default(), &mut sink).expect("w");
    write_flamegraph(&p, &FlameGraphOptions::default(), &mut sink).expect("w");
    TopReport::build(&p, &TopOptions::default())
        .write_text(&mut sink)
        .expect("w");
    println!(
        "reports (call graph, folded, SVG, top) over {} distinct stacks: {:.3} s",
        p.stacks.len(),
        t.elapsed().as_secs_f64()
    );
    (secs, p.stats.frames)
}

#[test]
fn throughput_100k_samples() {
    let (secs, frames) = throughput(100_000);
    println!("100k samples ({frames} frames) read + symbolized + aggregated in {secs:.3} s");
}

/// `cargo test --release -p pmc-analyze --test analyze -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput_1m_samples() {
    let (secs, frames) = throughput(1_000_000);
    println!(
        "1M samples ({frames} frames) read + symbolized + aggregated in {secs:.3} s \
         ({:.0} samples/s)",
        1e6 / secs
    );
}

#[test]
fn stream_reader_fork_and_thread_names() {
    use pmc_log::record::{Comm, Fork};
    let dir = scratch("stream");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let mut recs = vec![pmc(0, "cpu-clock"), comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &build_id(&prog)));
    // A thread naming itself does not rename the process.
    recs.push(Record::Comm(Comm {
        time: 1,
        pid: PID,
        tid: PID + 1,
        exec: false,
        comm: "worker".into(),
    }));
    // A forked child shares the parent's mappings and name.
    recs.push(Record::Fork(Fork {
        time: 1,
        parent_pid: PID,
        parent_tid: PID,
        child_pid: PID + 100,
        child_tid: PID + 100,
    }));
    recs.extend(standard_samples(PID + 100, &addrs(&prog, PIE_BASE)));
    let log = write_log(&recs);
    let a = Profile::from_log(&log, opts_with_kallsyms(&dir)).expect("profile");
    let b = Profile::from_stream(&log[..], opts_with_kallsyms(&dir)).expect("stream profile");
    let fa = folded_lines(&a, &FoldedOptions::default());
    assert_eq!(fa, folded_lines(&b, &FoldedOptions::default()));
    assert_eq!(fa[1], ("prog;main;outer;hot_leaf".to_string(), 900));
    assert!(
        b.stats.closed_cleanly && b.warnings.is_empty(),
        "{:?}",
        b.warnings
    );
    // A truncated stream still gives the samples before the cut, and says so.
    let cut = &log[..log.len() - 100];
    let c = Profile::from_stream(cut, opts_with_kallsyms(&dir)).expect("truncated stream");
    assert!(c.warnings.contains(&Warning::NotClosed), "{:?}", c.warnings);
}

/// Corrupted ELF files (random byte flips over a real binary with DWARF)
/// and garbage kallsyms must never panic the library.
#[test]
fn corrupted_elf_and_kallsyms_never_panic() {
    let dir = scratch("corrupt");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let good = std::fs::read(&prog).expect("read");
    let hot = symbol(&prog, "hot_leaf");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut parsed = 0;
    for round in 0..300 {
        let mut bytes = good.clone();
        let flips = 1 + (next() % 64) as usize;
        for _ in 0..flips {
            let i = (next() % bytes.len() as u64) as usize;
            bytes[i] = next() as u8;
        }
        if round % 7 == 0 {
            let keep = (next() % bytes.len() as u64) as usize;
            bytes.truncate(keep);
        }
        let path = dir.join("mutant");
        if let Ok(elf) = pmc_analyze::ElfObject::parse(&path, bytes.into(), true) {
            parsed += 1;
            for a in [hot.addr, hot.addr + 7, 0, u64::MAX, next()] {
                let _ = elf.symbol(a);
                let _ = elf.location(a);
                let _ = elf.file_offset_to_svma(a);
            }
            let _ = (
                elf.svma_extent(),
                elf.text_svma(4096),
                elf.base_svma(u64::MAX),
            );
        }
    }
    println!("{parsed}/300 mutants parsed as ELF");
    for _ in 0..200 {
        let text: String = (0..(next() % 400))
            .map(|_| match next() % 8 {
                0 => '\n',
                1 => ' ',
                2 => '[',
                3 => ']',
                _ => char::from(b"0123456789abcdefTtWw_"[(next() % 21) as usize]),
            })
            .collect();
        let k = pmc_analyze::Kallsyms::parse(&text);
        for _ in 0..8 {
            let _ = k.lookup(next());
        }
    }
}

/// A FreeBSD hwpmc log (PROCEXEC with the PIE base, MAP_IN of a shared
/// object, CALLCHAIN records) through pmc-log's hwpmc importer.
#[test]
fn freebsd_hwpmc_log_through_the_importer() {
    use pmc_log::hwpmc::{convert, Encoder};
    let dir = scratch("hwpmc-import");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let lib = compile(
        &dir,
        "libodd.so",
        &["-shared", "-fPIC", "-Wl,-Ttext-segment=0x200000"],
    );
    let lib_base = 0x8_0060_0000u64;
    let a = addrs(&prog, PIE_BASE);
    let l = addrs(&lib, lib_base);

    let mut e = Encoder::new(Vec::new());
    e.initialize(
        0,
        0x0A01_0000,
        0x9D,
        1_000_000_000,
        0,
        0,
        "GenuineIntel-6-9A-4",
    )
    .expect("enc");
    e.pmc_allocate(1, 0x100, 0x1000, 0x10, 65536).expect("enc");
    let prog_path = prog.to_string_lossy().into_owned();
    let lib_path = lib.to_string_lossy().into_owned();
    e.procexec(2, PID, 0x100, 0, PIE_BASE, prog_path.as_bytes())
        .expect("enc");
    e.map_in(3, PID, lib_base + 0x201000, lib_path.as_bytes())
        .expect("enc");
    // An object that cannot be read, mapped below the others: it must not
    // hide them.
    e.map_in(4, PID, 0x1000, b"/nonexistent/libgone.so.1")
        .expect("enc");
    for i in 0..40u64 {
        e.callchain(
            10 + i,
            PID,
            PID,
            0x100,
            1,
            true,
            &[a.hot_leaf, a.outer, a.main],
        )
        .expect("enc");
    }
    for i in 0..10u64 {
        e.callchain(
            60 + i,
            PID,
            PID,
            0x100,
            0,
            true,
            &[l.hot_leaf, l.outer, a.main],
        )
        .expect("enc");
    }
    e.closelog(100).expect("enc");
    let (log, _report) = convert(&e.into_inner(), Vec::new()).expect("import");
    let p = Profile::from_log(&log, AnalyzeOptions::default()).expect("profile");
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        matches!(&p.warnings[0], Warning::ObjectUnreadable { path, .. } if path.contains("libgone")),
        "{:?}",
        p.warnings
    );
    // Same function names in two objects merge in the folded output.
    let lines = folded_lines(&p, &FoldedOptions::default());
    assert_eq!(lines, vec![("prog;main;outer;hot_leaf".to_string(), 50)]);
    let objs: Vec<_> = TopReport::build(&p, &TopOptions::default())
        .objects
        .into_iter()
        .map(|o| (o.object, o.self_weight))
        .collect();
    assert_eq!(objs, vec![(prog_path, 40), (lib_path, 10)]);
}

#[test]
fn kallsyms_of_another_kernel_is_not_used() {
    let mut w = pmc_log::Writer::new(
        Vec::new(),
        &pmc_log::record::Header {
            os: "Linux".into(),
            kernel_release: "0.0.1-not-this-kernel".into(),
            ..pmc_log::record::Header::default()
        },
    )
    .expect("writer");
    w.write(&sample(PID, vec![0xffff_ffff_8100_0010], 1))
        .expect("w");
    let log = w.finish().expect("finish");
    let p = Profile::from_log(&log, AnalyzeOptions::default()).expect("profile");
    assert!(
        p.warnings
            .iter()
            .any(|w| matches!(w, Warning::KallsymsSkipped { .. })),
        "{:?}",
        p.warnings
    );
    assert_eq!(
        folded_lines(&p, &FoldedOptions::default())[0].0,
        "pid:4242;[kernel]_[k]"
    );
}

#[test]
fn analysis_types_can_move_between_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Profile>();
    sync::<Profile>();
    send::<pmc_analyze::Symbolizer>();
    send::<pmc_analyze::ProfileBuilder>();
    send::<pmc_analyze::ElfObject>();
    sync::<pmc_analyze::ElfObject>();
}

#[test]
fn inlined_functions_as_frames() {
    let dir = scratch("inline");
    let src = dir.join("inl.c");
    std::fs::write(
        &src,
        "#include <stdint.h>\n\
         volatile uint64_t sink;\n\
         static inline __attribute__((always_inline)) void inner_work(uint64_t n)\n\
         {\n    for (uint64_t i = 0; i < n; i++)\n        sink += i * i;\n}\n\
         __attribute__((noinline)) void wrapper(uint64_t n) { inner_work(n); sink++; }\n\
         int main(void) { wrapper(1000); return 0; }\n",
    )
    .expect("write");
    let prog = dir.join("inl");
    let st = std::process::Command::new("cc")
        .args(["-g", "-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(st.success());
    let elf = pmc_analyze::ElfObject::open(&prog, true).expect("parse");
    let w = symbol(&prog, "wrapper");
    let m = symbol(&prog, "main");
    // An address of wrapper where DWARF says inner_work was inlined.
    let inl = (w.addr..w.addr + w.size)
        .find(|&a| elf.inlined_at(a).iter().any(|f| f.name == "inner_work"))
        .expect("inner_work inlined somewhere in wrapper");
    let bias = if is_pie(&prog) { PIE_BASE } else { 0 };
    let mut recs = vec![comm(PID, "inl")];
    recs.extend(maps_for(PID, &prog, bias, &build_id(&prog)));
    for _ in 0..5 {
        recs.push(sample(PID, vec![bias + inl, bias + m.addr + m.size / 2], 0));
    }
    let log = write_log(&recs);
    let with = AnalyzeOptions {
        symbolize: SymbolizeOptions {
            inlines: true,
            kernel: KernelSymbols::Disabled,
            ..SymbolizeOptions::default()
        },
        ..AnalyzeOptions::default()
    };
    let p = Profile::from_log(&log, with).expect("profile");
    assert_eq!(
        folded_lines(&p, &FoldedOptions::default()),
        // Marked as perf marks an inlined frame (pmcstat --folded, -G).
        vec![("inl;main;wrapper;inner_work (inlined)".to_string(), 5)]
    );
    let f = p
        .functions
        .iter()
        .find(|f| f.name == "inner_work")
        .expect("f");
    assert!(f.inlined);
    let mut out = Vec::new();
    write_callgraph(&p, &CallGraphOptions::default(), &mut out).expect("w");
    assert!(String::from_utf8_lossy(&out).contains("inner_work (inlined) @ inl"));
    // Off by default: the inlined code counts for wrapper.
    let p = Profile::from_log(&log, AnalyzeOptions::default()).expect("profile");
    assert_eq!(
        folded_lines(&p, &FoldedOptions::default()),
        vec![("inl;main;wrapper".to_string(), 5)]
    );
}

/// The standard profile with its sampled addresses kept (for gmon).
fn standard_with_pcs(dir: &Path) -> (std::path::PathBuf, Profile) {
    let prog = compile(dir, "prog", &["-pie", "-fPIE"]);
    let mut recs = vec![pmc(0, "cpu-clock"), comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &build_id(&prog)));
    recs.extend(standard_samples(PID, &addrs(&prog, PIE_BASE)));
    let log = write_log(&recs);
    let opts = AnalyzeOptions {
        keep_pcs: true,
        ..opts_with_kallsyms(dir)
    };
    (prog, Profile::from_log(&log, opts).expect("profile"))
}

/// A tool's stdout, or None (with a visible SKIP) when it is not installed.
fn run_tool(test: &str, tool: &str, args: &[&std::ffi::OsStr]) -> Option<String> {
    match std::process::Command::new(tool).args(args).output() {
        Ok(o) => {
            assert!(
                o.status.success(),
                "{tool} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8_lossy(&o.stdout).into_owned())
        }
        Err(e) => {
            pmc_testkit::skip!(name = test, "{tool} is not runnable here ({e})");
            None
        }
    }
}

#[test]
fn gmon_files_are_read_by_gnu_gprof() {
    let dir = scratch("gmon");
    let (prog, p) = standard_with_pcs(&dir);
    assert_eq!(p.pcs.iter().map(|pc| pc.samples).sum::<u64>(), 1000);
    let out = dir.join("samples");
    let report = pmc_analyze::gmon::write_gmon(
        &p,
        &pmc_analyze::gmon::GmonOptions {
            dir: out.clone(),
            max_depth: 16,
            ..Default::default()
        },
    )
    .expect("write gmon");
    assert_eq!(report.unattributed, 0);
    assert_eq!(report.files.len(), 1, "{report:?}");
    let gmon = out.join("cpu-clock").join("prog.gmon");
    assert_eq!(report.files[0].path, gmon);
    assert_eq!(report.files[0].samples, 1000);
    // The oracle: GNU gprof's flat profile and call graph.
    let Some(text) = run_tool(
        "gmon_files_are_read_by_gnu_gprof",
        "gprof",
        &["-b".as_ref(), prog.as_os_str(), gmon.as_os_str()],
    ) else {
        return;
    };
    println!("{text}");
    // Flat profile rows: "% time, cumulative, self seconds, calls, ..., name".
    // The profiling rate is 1 (no frequency in this log): seconds are samples.
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("gprof has no row for {name}:\n{text}"))
    };
    let hot = row("hot_leaf");
    assert_eq!(hot[0], "90.00", "{text}");
    assert_eq!(hot[2], "900.00", "{text}");
    let cold = row("cold_leaf");
    assert_eq!(cold[0], "10.00", "{text}");
    assert_eq!(cold[2], "100.00", "{text}");
    // First flat-profile row is the hot function.
    let first = text
        .lines()
        .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_default();
    assert!(first.ends_with("hot_leaf"), "{text}");
    // Arcs: outer calls hot_leaf (900 samples) and cold_leaf (100).
    assert!(
        text.lines()
            .any(|l| l.contains("900/900") && l.contains("hot_leaf")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("100/100") && l.contains("cold_leaf")),
        "{text}"
    );
}

#[test]
fn callgrind_file_is_read_by_callgrind_annotate() {
    let dir = scratch("callgrind");
    let (_prog, p) = standard(&dir);
    let file = dir.join("out.callgrind");
    let mut out = Vec::new();
    pmc_analyze::callgrind::write_callgrind(
        &p,
        &pmc_analyze::callgrind::CallgrindOptions::default(),
        &mut out,
    )
    .expect("write");
    std::fs::write(&file, &out).expect("save");
    let text = String::from_utf8(out).expect("utf8");
    assert!(
        text.starts_with("# callgrind format\nversion: 1\n"),
        "{text}"
    );
    assert!(
        text.contains("\nevents: cpu-clock\nsummary: 1000\n"),
        "{text}"
    );
    let Some(ann) = run_tool(
        "callgrind_file_is_read_by_callgrind_annotate",
        "callgrind_annotate",
        &[file.as_os_str()],
    ) else {
        return;
    };
    println!("{ann}");
    let cost = |name: &str| -> Option<String> {
        ann.lines()
            .find(|l| l.contains(&format!(":{name} ")))
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
    };
    assert!(ann.contains("1,000"), "total:\n{ann}");
    assert_eq!(cost("hot_leaf").as_deref(), Some("900"), "{ann}");
    assert_eq!(cost("cold_leaf").as_deref(), Some("100"), "{ann}");
    // Inclusive: main and outer carry all 1000 samples through the calls.
    let Some(inc) = run_tool(
        "callgrind_file_is_read_by_callgrind_annotate",
        "callgrind_annotate",
        &["--inclusive=yes".as_ref(), file.as_os_str()],
    ) else {
        return;
    };
    for f in ["main", "outer"] {
        assert!(
            inc.lines()
                .any(|l| l.contains(&format!(":{f} ")) && l.trim_start().starts_with("1,000")),
            "{f} inclusive:\n{inc}"
        );
    }
}
