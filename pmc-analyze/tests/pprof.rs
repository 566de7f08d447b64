//! pprof export: the gzipped output decoded back with prost, its tables
//! checked for pprof's invariants (every id referenced exists, ids are
//! non-zero and unique, string_table[0] is ""), and its contents against
//! the log and the other reports. `go tool pprof` as the oracle is in
//! pmcstat/tests/cli_pprof.rs.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use common::*;
use pmc_analyze::pprof::{export_log, proto, PprofExport};
use pmc_analyze::top::{TopOptions, TopReport};
use pmc_analyze::{AnalyzeOptions, KernelSymbols, Profile, SymbolizeOptions};
use pmc_log::record::{Lost, Record};
use prost::Message;

const PIE_BASE: u64 = 0x5555_5555_0000;
const PID: i32 = 4242;

fn opts(dir: &Path) -> AnalyzeOptions {
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

/// Gzip, then decode back: what a pprof reader sees.
fn roundtrip(e: &PprofExport) -> proto::Profile {
    let mut gz = Vec::new();
    e.write_gzip(&mut gz).expect("write");
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .expect("gunzip");
    let p = proto::Profile::decode(&raw[..]).expect("decode profile.proto");
    assert_eq!(p, e.profile);
    p
}

fn s(p: &proto::Profile, i: i64) -> &str {
    &p.string_table[usize::try_from(i).expect("non-negative string index")]
}

/// pprof's own validity rules (profile.go CheckValid, postDecode), and ours:
/// a deduplicated string table.
fn check_invariants(p: &proto::Profile) {
    assert_eq!(p.string_table.first().map(String::as_str), Some(""));
    let distinct: HashSet<&String> = p.string_table.iter().collect();
    assert_eq!(distinct.len(), p.string_table.len(), "duplicate strings");
    let n = p.string_table.len() as i64;
    let str_ok = |i: i64| (0..n).contains(&i);
    let ids = |v: Vec<u64>, what: &str| -> HashSet<u64> {
        let set: HashSet<u64> = v.iter().copied().collect();
        assert_eq!(set.len(), v.len(), "duplicate {what} ids");
        assert!(!set.contains(&0), "{what} id 0");
        set
    };
    let mappings = ids(p.mapping.iter().map(|m| m.id).collect(), "mapping");
    let functions = ids(p.function.iter().map(|f| f.id).collect(), "function");
    let locations = ids(p.location.iter().map(|l| l.id).collect(), "location");
    for t in p.sample_type.iter().chain(&p.period_type) {
        assert!(str_ok(t.r#type) && str_ok(t.unit) && t.r#type != 0 && t.unit != 0);
    }
    let types: HashSet<&str> = p.sample_type.iter().map(|t| s(p, t.r#type)).collect();
    assert_eq!(types.len(), p.sample_type.len(), "sample type names clash");
    for m in &p.mapping {
        assert!(str_ok(m.filename) && str_ok(m.build_id));
        assert!(m.memory_start < m.memory_limit, "{m:?}");
    }
    for f in &p.function {
        assert!(str_ok(f.name) && f.name != 0 && str_ok(f.filename) && str_ok(f.system_name));
    }
    for l in &p.location {
        assert!(
            l.mapping_id == 0 || mappings.contains(&l.mapping_id),
            "{l:?}"
        );
        assert!(!l.line.is_empty(), "location without a function: {l:?}");
        for line in &l.line {
            assert!(functions.contains(&line.function_id), "{l:?}");
        }
        if let Some(m) = p.mapping.iter().find(|m| m.id == l.mapping_id) {
            assert!(
                (m.memory_start..m.memory_limit).contains(&l.address),
                "{l:?} outside {m:?}"
            );
        }
    }
    for sm in &p.sample {
        assert_eq!(sm.value.len(), p.sample_type.len());
        assert!(!sm.location_id.is_empty());
        for id in &sm.location_id {
            assert!(locations.contains(id), "sample names location {id}");
        }
        for l in &sm.label {
            assert!(str_ok(l.key) && l.key != 0 && str_ok(l.str) && str_ok(l.num_unit));
        }
    }
    for &c in &p.comment {
        assert!(str_ok(c));
    }
}

/// Self weight (samples) by function name: the innermost line of each
/// sample's leaf location, or, with `outer`, its last (non-inlined) line.
fn flat(p: &proto::Profile, outer: bool) -> HashMap<String, i64> {
    let locs: HashMap<u64, &proto::Location> = p.location.iter().map(|l| (l.id, l)).collect();
    let funcs: HashMap<u64, &proto::Function> = p.function.iter().map(|f| (f.id, f)).collect();
    let mut out = HashMap::new();
    for sm in &p.sample {
        let l = locs[&sm.location_id[0]];
        let line = if outer { l.line.last() } else { l.line.first() };
        let f = funcs[&line.expect("line").function_id];
        *out.entry(s(p, f.name).to_string()).or_insert(0) += sm.value[0];
    }
    out
}

fn label<'a>(p: &'a proto::Profile, sm: &proto::Sample, key: &str) -> Option<(&'a str, i64)> {
    sm.label
        .iter()
        .find(|l| s(p, l.key) == key)
        .map(|l| (s(p, l.str), l.num))
}

#[test]
fn decoded_export_is_consistent_and_matches_the_summary() {
    let dir = scratch("pprof");
    let prog = compile(&dir, "prog", &["-pie", "-fPIE"]);
    let bid = build_id(&prog);
    let a = addrs(&prog, PIE_BASE);
    let mut recs = vec![pmc(0, "cpu-clock"), comm(PID, "prog")];
    recs.extend(maps_for(PID, &prog, PIE_BASE, &bid));
    recs.extend(standard_samples(PID, &a));
    // A syscall: two kernel frames above the user stack.
    for _ in 0..7 {
        recs.push(sample(
            PID,
            vec![
                0xffff_ffff_8100_0110,
                0xffff_ffff_8100_0180,
                a.hot_leaf,
                a.outer,
                a.main,
            ],
            2,
        ));
    }
    // An address no mapping covers.
    for _ in 0..3 {
        recs.push(sample(PID, vec![0x1234, a.main], 0));
    }
    recs.push(Record::Lost(Lost {
        time: 3,
        pmc_id: Some(0),
        cpu: Some(0),
        count: 11,
    }));
    let log = write_log(&recs);
    let e = export_log(&log, opts(&dir)).expect("export");
    let p = roundtrip(&e);
    check_invariants(&p);

    // Sample types: the count first, then the event in nanoseconds; one
    // PMC at a fixed period: period_type/period.
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(&p, t.r#type), s(&p, t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu-clock", "nanoseconds")]);
    let pt = p.period_type.expect("period_type");
    assert_eq!(
        (s(&p, pt.r#type), s(&p, pt.unit), p.period),
        ("cpu-clock", "nanoseconds", 100_000)
    );
    let total: i64 = p.sample.iter().map(|x| x.value[0]).sum();
    let total_period: i64 = p.sample.iter().map(|x| x.value[1]).sum();
    assert_eq!((total, total_period), (1010, 1010 * 100_000));
    // Samples with one stack and labels are summed into one.
    assert_eq!(p.sample.len(), 4, "{:?}", p.sample);

    // Flat profile = --summary's self column, function by function.
    let top = TopReport::build(
        &Profile::from_log(&log, opts(&dir)).expect("profile"),
        &TopOptions::default(),
    );
    let want: HashMap<String, i64> = top
        .functions
        .iter()
        .filter(|r| r.self_weight > 0)
        .map(|r| (r.function.clone(), r.self_weight as i64))
        .collect();
    assert_eq!(flat(&p, false), want);
    assert_eq!(want["hot_leaf"], 900);
    assert_eq!(want["fake_syscall_entry"], 7);
    assert_eq!(want["[unknown]"], 3);

    // Labels.
    for sm in &p.sample {
        assert_eq!(label(&p, sm, "comm"), Some(("prog", 0)));
        assert_eq!(label(&p, sm, "pid").map(|l| l.1), Some(PID as i64));
        assert_eq!(label(&p, sm, "tid").map(|l| l.1), Some(PID as i64));
    }

    // Mappings: the executable first, with its build-id in hex and what
    // was resolved; the kernel's spans its kallsyms-resolved frames.
    let m0 = &p.mapping[0];
    assert_eq!(s(&p, m0.filename), prog.to_string_lossy());
    let hex: String = bid.iter().map(|b| format!("{b:02x}")).collect();
    assert!(!hex.is_empty());
    assert_eq!(s(&p, m0.build_id), hex);
    assert!(m0.has_functions && m0.has_filenames && m0.has_line_numbers && m0.has_inline_frames);
    let km = p
        .mapping
        .iter()
        .find(|m| s(&p, m.filename) == "[kernel.kallsyms]")
        .expect("kernel mapping");
    assert_eq!(
        (km.memory_start, km.memory_limit),
        (0xffff_ffff_8100_0110, 0xffff_ffff_8100_0181)
    );
    // The text segment's mapping starts at its page-aligned file offset.
    let text = p
        .mapping
        .iter()
        .find(|m| (m.memory_start..m.memory_limit).contains(&a.hot_leaf))
        .expect("text mapping");
    assert_eq!(text.file_offset % 4096, 0);
    assert_eq!(
        text.memory_start - PIE_BASE,
        text.file_offset,
        "gcc's PIE text: vaddr = offset"
    );

    // Locations: addresses as sampled, functions with file and lines.
    let hot = p
        .location
        .iter()
        .find(|l| l.address == a.hot_leaf)
        .expect("hot_leaf location");
    assert_eq!(hot.mapping_id, text.id);
    let f = p
        .function
        .iter()
        .find(|f| f.id == hot.line[0].function_id)
        .expect("f");
    assert_eq!(s(&p, f.name), "hot_leaf");
    assert!(
        s(&p, f.filename).ends_with("prog.c"),
        "{}",
        s(&p, f.filename)
    );
    assert_eq!(f.start_line, i64::from(HOT_LEAF_LINE));
    assert!(hot.line[0].line > i64::from(HOT_LEAF_LINE), "{hot:?}");
    let unknown = p
        .location
        .iter()
        .find(|l| l.address == 0x1234)
        .expect("unmapped");
    assert_eq!(unknown.mapping_id, 0);
    // Leaf order: each sample's first location is its leaf.
    let by_id: HashMap<u64, &proto::Location> = p.location.iter().map(|l| (l.id, l)).collect();
    let main_loc = p
        .location
        .iter()
        .find(|l| l.address == a.main)
        .expect("main");
    for sm in &p.sample {
        assert_eq!(sm.location_id.last(), Some(&main_loc.id));
        assert!(by_id.contains_key(&sm.location_id[0]));
    }
    // Nothing lost silently: the warning is in the comments.
    let comments: Vec<&str> = p.comment.iter().map(|&c| s(&p, c)).collect();
    assert!(
        comments.iter().any(|c| c.contains("11 samples lost")),
        "{comments:?}"
    );
    assert!(
        comments.iter().any(|c| c.starts_with("pmc-log from Linux")),
        "{comments:?}"
    );
    assert_eq!(e.stats.lost, 11);
}

#[test]
fn inlined_functions_are_line_entries_innermost_first() {
    let dir = scratch("pprof-inline");
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
    let inl = (w.addr..w.addr + w.size)
        .find(|&a| elf.inlined_at(a).iter().any(|f| f.name == "inner_work"))
        .expect("inner_work inlined somewhere in wrapper");
    let bias = if is_pie(&prog) { PIE_BASE } else { 0 };
    let mut recs = vec![pmc(0, "page-faults"), comm(PID, "inl")];
    recs.extend(maps_for(PID, &prog, bias, &build_id(&prog)));
    for _ in 0..5 {
        recs.push(sample(PID, vec![bias + inl, bias + m.addr + m.size / 2], 0));
    }
    let log = write_log(&recs);
    // Whatever the inlines option says (it shapes the other reports).
    let p = roundtrip(&export_log(&log, AnalyzeOptions::default()).expect("export"));
    check_invariants(&p);
    assert_eq!(
        s(&p, p.sample_type[1].unit),
        "events",
        "page-faults are not time"
    );
    let loc = p
        .location
        .iter()
        .find(|l| l.address == bias + inl)
        .expect("loc");
    let names: Vec<&str> = loc
        .line
        .iter()
        .map(|l| {
            let f = p
                .function
                .iter()
                .find(|f| f.id == l.function_id)
                .expect("f");
            s(&p, f.name)
        })
        .collect();
    assert_eq!(names, ["inner_work", "wrapper"]);
    // inner_work's line is inside its body (lines 4-7); wrapper's is the
    // call on line 8.
    assert!((4..=7).contains(&loc.line[0].line), "{loc:?}");
    assert_eq!(loc.line[1].line, 8, "{loc:?}");
    let inner = p
        .function
        .iter()
        .find(|f| f.id == loc.line[0].function_id)
        .expect("f");
    assert!(s(&p, inner.filename).ends_with("inl.c"));
    assert_eq!(flat(&p, true)["wrapper"], 5);
    assert_eq!(flat(&p, false)["inner_work"], 5);
}

#[test]
fn freebsd_hwpmc_log_exports_through_the_importer() {
    use pmc_log::hwpmc::{convert, Encoder};
    let dir = scratch("pprof-hwpmc");
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
            &[l.cold_leaf, l.outer, a.main],
        )
        .expect("enc");
    }
    e.closelog(100).expect("enc");
    let (log, _) = convert(&e.into_inner(), Vec::new()).expect("import");
    let p = roundtrip(&export_log(&log, AnalyzeOptions::default()).expect("export"));
    check_invariants(&p);
    let fl = flat(&p, true);
    assert_eq!((fl["hot_leaf"], fl["cold_leaf"]), (40, 10), "{fl:?}");
    let files: Vec<&str> = p.mapping.iter().map(|m| s(&p, m.filename)).collect();
    assert_eq!(files.first(), Some(&prog_path.as_str()), "{files:?}");
    assert!(files.contains(&lib_path.as_str()), "{files:?}");
    let lib_loc = p
        .location
        .iter()
        .find(|x| x.address == l.cold_leaf)
        .expect("lib loc");
    let lm = p
        .mapping
        .iter()
        .find(|m| m.id == lib_loc.mapping_id)
        .expect("lib mapping");
    assert_eq!(s(&p, lm.filename), lib_path);
    assert!(lm.has_functions);
    // hwpmc's PMC descriptor has its own name; periods are events.
    assert_eq!(s(&p, p.sample_type[1].unit), "events");
}

/// Issue 32 item 5: past `MAX_VALUE_COLUMNS` PMCs, the rest share one value column
/// (`other_events`), each of their samples labelled `event` with its PMC's name: a sample
/// holds 66 values, not one per PMC, and no sample's weight is lost.
#[test]
fn pmcs_past_the_cap_share_one_column() {
    use pmc_analyze::pprof::{MAX_VALUE_COLUMNS, OTHER_EVENTS};
    let n = MAX_VALUE_COLUMNS as u32 + 36;
    let mut recs = vec![comm(PID, "prog")];
    for id in 0..n {
        recs.push(pmc(id, &format!("ev{id}")));
    }
    for id in 0..n {
        let mut s = sample(PID, vec![0x1000 + u64::from(id) * 16], 0);
        if let Record::Sample(x) = &mut s {
            x.pmc_id = id;
        }
        recs.push(s);
    }
    let e = export_log(&write_log(&recs), AnalyzeOptions::default()).expect("export");
    let p = roundtrip(&e);
    check_invariants(&p);
    assert_eq!(p.sample_type.len(), MAX_VALUE_COLUMNS + 2);
    assert_eq!(
        s(&p, p.sample_type[MAX_VALUE_COLUMNS + 1].r#type),
        OTHER_EVENTS
    );
    assert_eq!(p.sample.len(), n as usize);
    let mut shared = HashSet::new();
    for sm in &p.sample {
        assert_eq!(sm.value[0], 1, "one sample each");
        let period: i64 = sm.value[1..].iter().sum();
        assert_eq!(period, 100_000, "{sm:?}");
        if let Some((name, _)) = label(&p, sm, "event") {
            assert_eq!(sm.value[MAX_VALUE_COLUMNS + 1], 100_000);
            shared.insert(name.to_owned());
        }
    }
    let want: HashSet<String> = (MAX_VALUE_COLUMNS as u32..n)
        .map(|i| format!("ev{i}"))
        .collect();
    assert_eq!(shared, want);
    assert!(p.comment.iter().any(|&c| s(&p, c).contains(OTHER_EVENTS)));
}
