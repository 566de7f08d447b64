//! hwpmc import: kernel layouts (checked against abi-amd64.json), a golden
//! text dump of a fixture covering every record type, and damage.

use std::path::PathBuf;

use pmc_log::hwpmc::{self, Encoder, Event, Importer, Parser};
use pmc_log::record::Record;
use pmc_log::Reader;
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn layouts() -> Value {
    let text = std::fs::read_to_string(data_dir().join("data/abi-amd64-pmclog.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Check that `rec` holds `value` (little-endian, `size` bytes from the
/// JSON) at the JSON offset of `field` of `st`.
fn field(l: &Value, st: &str, rec: &[u8], name: &str, value: u64) {
    let f = &l["pmclog"]["records"][st]["fields"][name];
    let off = f["offset"]
        .as_u64()
        .unwrap_or_else(|| panic!("{st}.{name} not in JSON")) as usize;
    let size = f["size"].as_u64().unwrap() as usize;
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&rec[off..off + size]);
    assert_eq!(u64::from_le_bytes(b), value, "{st}.{name} at offset {off}");
}

fn string(l: &Value, st: &str, rec: &[u8], name: &str, s: &[u8]) {
    let off = l["pmclog"]["records"][st]["fields"][name]["offset"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(&rec[off..off + s.len()], s, "{st}.{name}");
    assert_eq!(rec[off + s.len()], 0, "{st}.{name} NUL");
}

fn header(l: &Value, st: &str, rec: &[u8], ty: u64, tsc: u64) {
    let len = rec.len() as u64;
    field(l, st, rec, "pl_header", 0xEE << 24 | ty << 16 | len);
    field(l, st, rec, "pl_tsc", tsc);
    assert_eq!(len % 4, 0, "{st}: length {len} not a multiple of 4");
    let max = l["pmclog"]["records"][st]["size"].as_u64().unwrap();
    assert!(len <= max, "{st}: length {len} > struct size {max}");
}

fn one(f: impl FnOnce(&mut Encoder<Vec<u8>>) -> std::io::Result<()>) -> Vec<u8> {
    let mut e = Encoder::new(Vec::new());
    f(&mut e).unwrap();
    e.into_inner()
}

#[test]
fn encoder_layouts_match_abi_json() {
    let l = layouts();
    let c = &l["pmclog"]["constants"];
    assert_eq!(c["PMCLOG_HEADER_MAGIC"], 0xEE);
    assert_eq!(
        c["sizeof_union_pmclog_entry"].as_u64(),
        Some(hwpmc::PMCLOG_MAX_RECORD as u64)
    );
    assert_eq!(
        c["PMC_CC_MULTIPART_IBS_OP"].as_u64(),
        Some(u64::from(hwpmc::PMC_CC_MULTIPART_IBS_OP))
    );
    for (name, v) in [
        ("PMCLOG_TYPE_CLOSELOG", hwpmc::PMCLOG_TYPE_CLOSELOG),
        ("PMCLOG_TYPE_CALLCHAIN", hwpmc::PMCLOG_TYPE_CALLCHAIN),
        ("PMCLOG_TYPE_PROC_CREATE", hwpmc::PMCLOG_TYPE_PROC_CREATE),
        (
            "PMCLOG_TYPE_PMCALLOCATEDYN",
            hwpmc::PMCLOG_TYPE_PMCALLOCATEDYN,
        ),
    ] {
        assert_eq!(c[name].as_u64(), Some(u64::from(v)), "{name}");
    }
    let t = 0x1122_3344_5566_7788u64;

    let r = one(|e| {
        e.initialize(
            t,
            0x0A01_0000,
            0x9D,
            0xAABB_CCDD_0011,
            1_700_000_000,
            123,
            "GenuineIntel-6-9A-4",
        )
    });
    let st = "struct pmclog_initialize";
    header(&l, st, &r, 3, t);
    assert_eq!(r.len(), 112);
    field(&l, st, &r, "pl_version", 0x0A01_0000);
    field(&l, st, &r, "pl_cpu", 0x9D);
    field(&l, st, &r, "pl_tsc_freq", 0xAABB_CCDD_0011);
    assert_eq!(&r[32..40], &1_700_000_000u64.to_le_bytes());
    assert_eq!(&r[40..48], &123u64.to_le_bytes());
    string(&l, st, &r, "pl_cpuid", b"GenuineIntel-6-9A-4");

    let r = one(|e| e.closelog(t));
    header(&l, "struct pmclog_closelog", &r, 1, t);
    assert_eq!(r.len(), 16);
    let r = one(|e| e.dropnotify(t));
    header(&l, "struct pmclog_dropnotify", &r, 2, t);

    let r = one(|e| e.pmc_allocate(t, 0x0102_0304, 0x1000, 0x280, 65536));
    let st = "struct pmclog_pmcallocate";
    header(&l, st, &r, 5, t);
    assert_eq!(r.len(), 40);
    field(&l, st, &r, "pl_pmcid", 0x0102_0304);
    field(&l, st, &r, "pl_event", 0x1000);
    field(&l, st, &r, "pl_flags", 0x280);
    field(&l, st, &r, "pl_pad", 0);
    field(&l, st, &r, "pl_rate", 65536);

    // The kernel does not write the struct's layout: pad@28, the reload
    // count@32, the name@40 (hwpmc_logging.c:pmclog_process_pmcallocate).
    let r = one(|e| e.pmc_allocate_dyn(t, 7, 0x20001, 0x80, 12345, "SOFT-CLOCK.HARD"));
    let st = "struct pmclog_pmcallocatedyn";
    header(&l, st, &r, 17, t);
    assert_eq!(r.len(), 96);
    field(&l, st, &r, "pl_pmcid", 7);
    field(&l, st, &r, "pl_event", 0x20001);
    assert_eq!(u64::from_le_bytes(r[32..40].try_into().unwrap()), 12345);
    assert_eq!(&r[40..56], b"SOFT-CLOCK.HARD\0");

    let r = one(|e| e.pmc_attach(t, 9, 4242, b"/usr/bin/yes"));
    let st = "struct pmclog_pmcattach";
    header(&l, st, &r, 6, t);
    assert_eq!(r.len(), (24 + 13usize).div_ceil(4) * 4);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_pid", 4242);
    string(&l, st, &r, "pl_pathname", b"/usr/bin/yes");

    let r = one(|e| e.pmc_detach(t, 9, 4242));
    let st = "struct pmclog_pmcdetach";
    header(&l, st, &r, 7, t);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_pid", 4242);

    let r = one(|e| e.proccsw(t, 9, 10, 100010, 0xDEAD_BEEF_0000_0001));
    let st = "struct pmclog_proccsw";
    header(&l, st, &r, 8, t);
    assert_eq!(r.len(), 40);
    field(&l, st, &r, "pl_value", 0xDEAD_BEEF_0000_0001);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_tid", 100010);

    let r = one(|e| e.procexec(t, 10, 9, 0x8000_0000_1000, 0x20_0000, b"/bin/ls"));
    let st = "struct pmclog_procexec";
    header(&l, st, &r, 9, t);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_base", 0x8000_0000_1000);
    field(&l, st, &r, "pl_dyn", 0x20_0000);
    string(&l, st, &r, "pl_pathname", b"/bin/ls");

    let r = one(|e| e.procexec_legacy(t, 10, 9, 0x40_1000, b"/bin/ls"));
    let st = "struct pmclog_procexec_legacy";
    header(&l, st, &r, 9, t);
    field(&l, st, &r, "pl_start", 0x40_1000);
    string(&l, st, &r, "pl_pathname", b"/bin/ls");

    let r = one(|e| e.procexit(t, 9, 10, 77));
    let st = "struct pmclog_procexit";
    header(&l, st, &r, 10, t);
    assert_eq!(r.len(), 32);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_value", 77);

    let r = one(|e| e.procfork(t, 10, 11));
    let st = "struct pmclog_procfork";
    header(&l, st, &r, 11, t);
    field(&l, st, &r, "pl_oldpid", 10);
    field(&l, st, &r, "pl_newpid", 11);

    let r = one(|e| e.sysexit(t, 10));
    header(&l, "struct pmclog_sysexit", &r, 12, t);
    field(&l, "struct pmclog_sysexit", &r, "pl_pid", 10);

    let r = one(|e| e.userdata(t, 0xCAFE));
    header(&l, "struct pmclog_userdata", &r, 13, t);
    field(&l, "struct pmclog_userdata", &r, "pl_userdata", 0xCAFE);

    let r = one(|e| e.map_in(t, -1, 0xffff_ffff_8020_0000, b"/boot/kernel/kernel"));
    let st = "struct pmclog_map_in";
    header(&l, st, &r, 14, t);
    field(&l, st, &r, "pl_pid", 0xFFFF_FFFF);
    field(&l, st, &r, "pl_start", 0xffff_ffff_8020_0000);
    string(&l, st, &r, "pl_pathname", b"/boot/kernel/kernel");

    let r = one(|e| e.map_out(t, 10, 0x1000, 0x2000));
    let st = "struct pmclog_map_out";
    header(&l, st, &r, 15, t);
    assert_eq!(r.len(), 40);
    field(&l, st, &r, "pl_start", 0x1000);
    field(&l, st, &r, "pl_end", 0x2000);

    let r = one(|e| {
        e.callchain(
            t,
            10,
            100010,
            9,
            3,
            true,
            &[0x40_1000, 0x40_2000, 0x40_3000],
        )
    });
    let st = "struct pmclog_callchain";
    header(&l, st, &r, 16, t);
    assert_eq!(r.len(), 32 + 24);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_tid", 100010);
    field(&l, st, &r, "pl_pmcid", 9);
    field(&l, st, &r, "pl_cpuflags", 3 << 16 | 1);
    assert_eq!(&r[40..48], &0x40_2000u64.to_le_bytes());

    let r = one(|e| e.thr_create(t, 100010, 10, 1, b"worker"));
    let st = "struct pmclog_threadcreate";
    header(&l, st, &r, 18, t);
    assert_eq!(r.len(), 52);
    field(&l, st, &r, "pl_tid", 100010);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_flags", 1);
    string(&l, st, &r, "pl_tdname", b"worker");

    let r = one(|e| e.thr_exit(t, 100010));
    header(&l, "struct pmclog_threadexit", &r, 19, t);
    field(&l, "struct pmclog_threadexit", &r, "pl_tid", 100010);

    let r = one(|e| e.proc_create(t, 10, 2, b"sh"));
    let st = "struct pmclog_proccreate";
    header(&l, st, &r, 20, t);
    assert_eq!(r.len(), 44);
    field(&l, st, &r, "pl_pid", 10);
    field(&l, st, &r, "pl_flags", 2);
    string(&l, st, &r, "pl_pcomm", b"sh");
}

/// Every record type, the quirks, and one unknown type: the golden fixture.
fn fixture() -> Vec<u8> {
    let mut e = Encoder::new(Vec::new());
    let mut t = 5_000_000u64;
    let mut tick = || {
        t += 1000;
        t
    };
    e.pmc_record_prefix(
        1,
        Some((
            "Intel(R) Core(TM) i7-1185G7 @ 3.00GHz",
            "15.0-RELEASE",
            "0123abcd",
        )),
    )
    .unwrap();
    e.initialize(
        tick(),
        0x0A01_0000,
        0x9D,
        3_000_000_000,
        1_750_000_000,
        500,
        "GenuineIntel-6-8C-1",
    )
    .unwrap();
    // Process-sampling PMC (new id layout: CPU ANY, mode TS=2, class IAP) with callchains, descendants, procexit, proccsw.
    e.pmc_allocate(tick(), 0xFFF2_0700, 0x1000, 0x80 | 0x2 | 0x8 | 0x4, 65536)
        .unwrap();
    // System-counting dynamic PMC on CPU 1 (mode SC=1), kernel quirk layout.
    e.pmc_allocate_dyn(tick(), 0x0011_0F00, 0x20000, 0, 0, "SOFT-CLOCK.HARD")
        .unwrap();
    e.proc_create(tick(), 1, 0, b"init").unwrap();
    e.thr_create(tick(), 100001, 1, 0, b"init main").unwrap();
    e.pmc_attach(tick(), 0xFFF2_0700, 4242, b"/usr/bin/yes")
        .unwrap();
    e.map_in(tick(), -1, 0xffff_ffff_8020_0000, b"/boot/kernel/kernel")
        .unwrap();
    e.procexec(
        tick(),
        4242,
        0xFFF2_0700,
        0x8002_1000,
        0x20_0000,
        b"/usr/bin/yes",
    )
    .unwrap();
    e.map_in(tick(), 4242, 0x20_0000, b"/usr/bin/yes").unwrap();
    e.map_in(tick(), 4242, 0x8002_1000, b"/libexec/ld-elf.so.1")
        .unwrap();
    e.callchain(
        tick(),
        4242,
        104242,
        0xFFF2_0700,
        1,
        true,
        &[0x20_1234, 0x20_0100, 0x8002_1500],
    )
    .unwrap();
    e.callchain(
        tick(),
        4242,
        104242,
        0xFFF2_0700,
        0,
        false,
        &[0xffff_ffff_8020_1000, 0xffff_ffff_8020_2000],
    )
    .unwrap();
    e.callchain_multipart(
        tick(),
        4242,
        104242,
        0xFFF2_0700,
        1,
        true,
        &[
            (hwpmc::PMC_CC_MULTIPART_IBS_OP, &[0x1111, 0x2222, 0x3333]),
            (hwpmc::PMC_CC_MULTIPART_CALLCHAIN, &[0x20_1234, 0x20_0100]),
        ],
    )
    .unwrap();
    e.proccsw(tick(), 0xFFF2_0700, 4242, 104242, 123_456)
        .unwrap();
    // An unknown future record type: skipped by length.
    e.raw(&[
        0x18, 0, 99, 0xEE, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9,
    ])
    .unwrap();
    e.procfork(tick(), 4242, 4243).unwrap();
    e.userdata(tick(), 0xC0FFEE).unwrap();
    e.dropnotify(tick()).unwrap();
    e.map_out(tick(), 4242, 0x8002_1000, 0x8004_0000).unwrap();
    e.thr_exit(tick(), 104242).unwrap();
    e.procexit(tick(), 0xFFF2_0700, 4242, 9_999_999).unwrap();
    e.sysexit(tick(), 4242).unwrap();
    e.pmc_detach(tick(), 0xFFF2_0700, 4242).unwrap();
    e.closelog(tick()).unwrap();
    e.into_inner()
}

fn golden(name: &str, actual: &str) {
    let path = data_dir().join("fixtures/pmclog").join(name);
    if std::env::var_os("PMC_UPDATE_EXPECTED").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with PMC_UPDATE_EXPECTED=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        for (i, (a, b)) in expected.lines().zip(actual.lines()).enumerate() {
            if a != b {
                panic!("{name} line {}:\nexpected: {a}\nactual:   {b}\n(PMC_UPDATE_EXPECTED=1 regenerates; review the diff)", i + 1);
            }
        }
        panic!(
            "{name}: line count differs: expected {}, actual {}",
            expected.lines().count(),
            actual.lines().count()
        );
    }
}

#[test]
fn fixture_bytes_are_stable() {
    let path = data_dir().join("fixtures/pmclog/synthetic-amd64-all-types.pmclog");
    let bytes = fixture();
    if std::env::var_os("PMC_UPDATE_EXPECTED").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(
        on_disk, bytes,
        "Encoder output changed; PMC_UPDATE_EXPECTED=1 regenerates"
    );
}

#[test]
fn hwpmc_fixture_to_pmc_log_to_text_matches_golden() {
    let log = fixture();
    let (file, report) = hwpmc::convert(&log, Vec::new()).unwrap();
    assert_eq!(report.unknown_types, 1, "{report:?}");
    assert!(report.skipped.is_empty(), "{report:?}");
    assert!(report.closed_cleanly && report.pmc_record_prefix);
    assert_eq!(report.version, Some(0x0A01_0000));
    let reader = Reader::new(&file).unwrap();
    let mut it = reader.records();
    let mut text = Vec::new();
    pmc_log::export::text::write_all(it.by_ref(), &mut text).unwrap();
    assert!(it.report().is_clean(), "{}", it.report());
    golden(
        "synthetic-amd64-all-types.expected",
        &String::from_utf8(text).unwrap(),
    );
}

#[test]
fn quirks_are_decoded() {
    let log = fixture();
    let recs: Vec<Record<'_>> = Importer::new(&log).unwrap().collect();
    let Record::Header(h) = &recs[0] else {
        panic!("no header")
    };
    assert_eq!(h.cpu_model, "Intel(R) Core(TM) i7-1185G7 @ 3.00GHz");
    assert_eq!(h.kernel_release, "15.0-RELEASE");
    assert_eq!(h.arch, "amd64");
    assert_eq!(h.ticks_per_second, 3_000_000_000);
    assert_eq!(h.start_wall_ns, 1_750_000_000_000_000_500);
    let dyn_name = recs.iter().find_map(|r| match r {
        Record::Pmc(p) if p.pmc_id == 0x0011_0F00 => Some(p.clone()),
        _ => None,
    });
    let p = dyn_name.unwrap();
    assert_eq!(p.canonical_name, "SOFT-CLOCK.HARD");
    assert_eq!(p.scope, pmc_log::record::Scope::System);
    assert_eq!(p.cpu, Some(1));
    let execs: Vec<_> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Exec(e) => Some(e.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(execs[0].path.as_bytes(), b"/usr/bin/yes");
    assert_eq!(
        (execs[0].base, execs[0].dyn_base, execs[0].flags),
        (0x8002_1000, 0x20_0000, 0)
    );
    assert_eq!(execs.len(), 1, "one PROCEXEC layout per log version");
    let samples: Vec<_> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Sample(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[0].kernel_frames, 0);
    assert_eq!(samples[1].kernel_frames, 2);
    assert_eq!(samples[2].callchain.to_vec(), vec![0x20_1234, 0x20_0100]);
    assert_eq!(samples[2].raw.len(), 8 + 24, "part header + IBS part");
    assert_eq!(samples[0].period, 65536);
}

/// Issue 14 item 7: the reload count at 32 is kept, and its bytes never
/// become the name (12345 = 0x3039 read as text is "90").
#[test]
fn pmcallocatedyn_keeps_the_reload_count_and_the_name_at_40() {
    let log = one(|e| e.pmc_allocate_dyn(1, 0xFFF2_0F00, 0x20001, 0x80, 12345, "CLOCK.PROF"));
    let ev: Vec<Event<'_>> = Parser::new(&log).unwrap().collect();
    assert!(
        matches!(&ev[0], Event::PmcAllocateDyn { evname, rate: 12345, .. } if *evname == b"CLOCK.PROF"),
        "{ev:?}"
    );
    let mut e = Encoder::new(Vec::new());
    e.initialize(0, 0x0A03_0000, 0x98, 1, 0, 0, "").unwrap();
    // A TS SOFT PMC (new id layout: mode 2 at 16, class 0x0F at 8).
    e.pmc_allocate_dyn(1, 0xFFF2_0F00, 0x20001, 0x80, 12345, "CLOCK.PROF")
        .unwrap();
    e.callchain(2, 5, 500, 0xFFF2_0F00, 0, true, &[0x40_1000])
        .unwrap();
    let log = e.into_inner();
    let recs: Vec<Record<'_>> = Importer::new(&log).unwrap().collect();
    let Record::Pmc(p) = &recs[1] else {
        panic!("{recs:?}")
    };
    assert_eq!(p.canonical_name, "CLOCK.PROF");
    assert_eq!(p.mode, pmc_log::record::Mode::SamplingPeriod(12345));
    let Record::Sample(s) = &recs[2] else {
        panic!("{recs:?}")
    };
    assert_eq!(s.period, 12345);
}

#[test]
fn not_hwpmc_is_a_clear_error() {
    let e = Importer::new(b"\x7fELF....").err().unwrap();
    assert!(e.to_string().contains("pmcstat -O"), "{e}");
    let mut old = Encoder::new(Vec::new());
    old.initialize(0, 0x0300_0000, 0, 0, 0, 0, "").unwrap();
    let log = old.into_inner();
    let e = hwpmc::convert(&log, Vec::new()).err().unwrap();
    assert!(
        matches!(
            e,
            hwpmc::HwpmcError::UnsupportedVersion {
                version: 0x0300_0000
            }
        ),
        "{e}"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn truncated_and_damaged_hwpmc_never_panics() {
    let log = fixture();
    let full: Vec<Record<'_>> = Importer::new(&log).unwrap().collect();
    for cut in 0..log.len() {
        let Ok(imp) = Importer::new(&log[..cut]) else {
            continue;
        };
        let got: Vec<Record<'_>> = imp.collect();
        // A prefix of the records (the header is synthesized if INITIALIZE was cut).
        assert!(got.len() <= full.len());
        for (a, b) in got.iter().zip(&full).skip(1) {
            assert_eq!(a, b, "cut {cut}");
        }
    }
    let mut rng = crate::util::Rng(99);
    for _ in 0..2000 {
        let mut d = log.clone();
        for _ in 0..=rng.below(4) {
            let i = rng.below(d.len() as u64) as usize;
            d[i] ^= rng.next() as u8;
        }
        if let Ok(mut imp) = Importer::new(&d) {
            let _ = imp.by_ref().count();
            let _ = imp.report();
        }
    }
}

fn init(e: &mut Encoder<Vec<u8>>, version: u32) {
    e.initialize(0, version, 0x98, 1_000_000_000, 0, 0, "GenuineIntel-6-5E-3")
        .unwrap();
}

/// Issue 14 item 6: a legacy (0x09) PROCEXEC whose path has '/' at byte 8
/// of the path (`/usr/bin/true`: byte 40 of the record) is read by the
/// log's version, not by looking for '/' at 40.
#[test]
fn legacy_procexec_is_decoded_by_version() {
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0903_0000);
    e.procexec_legacy(1, 42, 0xFFF3_0711, 0x40_1000, b"/usr/bin/true")
        .unwrap();
    e.procexec_legacy(2, 42, 0xFFF3_0711, 0x40_1000, b"/usr/lib/libc.so.7")
        .unwrap();
    let log = e.into_inner();
    let ev: Vec<Event<'_>> = Parser::new(&log).unwrap().collect();
    let paths: Vec<(&[u8], bool, u64)> = ev
        .iter()
        .filter_map(|e| match e {
            Event::ProcExec {
                path, legacy, base, ..
            } => Some((*path, *legacy, *base)),
            _ => None,
        })
        .collect();
    assert_eq!(
        paths,
        vec![
            (&b"/usr/bin/true"[..], true, 0x40_1000),
            (&b"/usr/lib/libc.so.7"[..], true, 0x40_1000)
        ]
    );
    // 0x0A: the current layout, even when the dynamic base's bytes look
    // like a path.
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0A03_0000);
    e.procexec(1, 42, 0xFFF3_0711, 0x8002_1000, 0x2f2f_2f2f, b"/bin/sh")
        .unwrap();
    let log = e.into_inner();
    let ev: Vec<Event<'_>> = Parser::new(&log).unwrap().collect();
    assert!(
        ev.iter().any(|e| matches!(e,
        Event::ProcExec { path, legacy: false, dyn_base: 0x2f2f_2f2f, .. } if *path == b"/bin/sh"))
    );
    // No INITIALIZE: the record's length decides, and an undecidable one
    // is reported, not guessed silently.
    let mut e = Encoder::new(Vec::new());
    e.procexec_legacy(1, 42, 0xFFF3_0711, 0x40_1000, b"/bin/sh")
        .unwrap();
    e.procexec_legacy(1, 42, 0xFFF3_0711, 0x40_1000, b"/usr/bin/true")
        .unwrap();
    let log = e.into_inner();
    let mut p = Parser::new(&log).unwrap();
    let ev: Vec<Event<'_>> = p.by_ref().collect();
    assert!(matches!(&ev[0], Event::ProcExec { path, legacy: true, .. } if *path == b"/bin/sh"));
    assert!(
        matches!(&ev[1], Event::ProcExec { path, legacy: true, .. } if *path == b"/usr/bin/true")
    );
    assert!(
        p.report()
            .notes
            .iter()
            .any(|n| n.contains("PROCEXEC layout ambiguous")),
        "{:?}",
        p.report()
    );
}

fn pmcs(log: &[u8]) -> (Vec<pmc_log::record::PmcDescriptor<'_>>, hwpmc::ImportReport) {
    let mut imp = Importer::new(log).unwrap();
    let out = imp
        .by_ref()
        .filter_map(|r| match r {
            Record::Pmc(p) => Some(p),
            _ => None,
        })
        .collect();
    (out, imp.report())
}

/// Issue 14 item 3: both id layouts exist under 0x09; the importer decodes
/// from the evidence in the log and says when it cannot.
#[test]
fn pmc_id_layout_is_decoded_from_evidence() {
    use hwpmc::IdLayout::{New, Old};
    use pmc_log::record::{Mode, Scope};
    // FreeBSD's own 0x09 (old layout): TC and TS IAP process PMCs, an SC
    // TSC PMC on CPU 1.
    let tc = Old.make(0xFFF, 3, 7, 17);
    let ts = Old.make(0xFFF, 2, 7, 18);
    let sc = Old.make(1, 1, 0, 16);
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0903_0000);
    e.pmc_allocate(1, tc, 0x1000, 0, 0).unwrap();
    e.pmc_allocate(2, ts, 0x1000, 0x80, 65536).unwrap();
    e.pmc_allocate(3, sc, 0x1000, 0, 0).unwrap();
    let log = e.into_inner();
    let (p, report) = pmcs(&log);
    assert_eq!((p[0].scope, p[0].mode), (Scope::Process, Mode::Counting));
    assert_eq!(
        (p[1].scope, p[1].mode),
        (Scope::Process, Mode::SamplingPeriod(65536))
    );
    assert_eq!(
        (p[2].scope, p[2].cpu, p[2].mode),
        (Scope::System, Some(1), Mode::Counting)
    );
    assert!(report.notes.is_empty(), "{report:?}");
    // CheriBSD's 0x09 (new layout): decoded, and the surprise is noted.
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0903_0000);
    e.pmc_allocate(1, New.make(0xFFF, 2, 7, 17), 0x1000, 0x80, 65536)
        .unwrap();
    let log = e.into_inner();
    let (p, report) = pmcs(&log);
    assert_eq!(
        (p[0].scope, p[0].mode),
        (Scope::Process, Mode::SamplingPeriod(65536))
    );
    assert!(
        report.notes.iter().any(|n| n.contains("New id layout")),
        "{report:?}"
    );
    // An id both layouts read as a valid but different PMC: old SC class 0
    // on CPU 2 is new SS class 0x10. Decoded by the version, and noted.
    let amb = Old.make(2, 1, 0, 3);
    assert_eq!(amb, New.make(2, 0, 0x10, 3));
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0903_0000);
    e.pmc_allocate(1, amb, 0x1000, 0, 5000).unwrap();
    let log = e.into_inner();
    let (p, report) = pmcs(&log);
    assert_eq!((p[0].scope, p[0].mode), (Scope::System, Mode::Counting));
    assert!(
        report.notes.iter().any(|n| n.contains("both id layouts")),
        "{report:?}"
    );
}

/// Issue 14 item 11 (merged USERCALLCHAIN chains): with
/// PMC_F_USERCALLCHAIN the kernel appends the user stack to a kernel-mode
/// chain, USERSPACE clear; only the leading kernel addresses are kernel
/// frames.
#[test]
fn merged_user_callchains_count_only_kernel_frames_as_kernel() {
    let id = hwpmc::IdLayout::New.make(0xFFF, 2, 7, 1);
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0A03_0000);
    e.pmc_allocate(1, id, 0x1000, 0x80 | 0x100, 65536).unwrap();
    e.callchain(
        2,
        5,
        500,
        id,
        0,
        false,
        &[
            0xffff_ffff_8020_1000,
            0xffff_ffff_8020_2000,
            0x40_1000,
            0x40_2000,
        ],
    )
    .unwrap();
    let log = e.into_inner();
    let s: Vec<_> = Importer::new(&log)
        .unwrap()
        .filter_map(|r| match r {
            Record::Sample(s) => Some(s.kernel_frames),
            _ => None,
        })
        .collect();
    assert_eq!(s, vec![2]);
}

/// A 4,000-sample log (callchains of 1 to 8 frames) and its record offsets.
fn many_samples() -> (Vec<u8>, Vec<usize>) {
    let id = hwpmc::IdLayout::New.make(0xFFF, 2, 7, 1);
    let mut e = Encoder::new(Vec::new());
    init(&mut e, 0x0A03_0000);
    e.pmc_allocate(1, id, 0x1000, 0x80, 65536).unwrap();
    let mut offsets = Vec::new();
    for i in 0..4000u64 {
        offsets.push(e.get_ref().len());
        let pcs: Vec<u64> = (0..1 + i % 8).map(|k| 0x40_0000 + i * 16 + k).collect();
        e.callchain(10 + i, 42, 4200, id, (i % 4) as u16, true, &pcs)
            .unwrap();
    }
    e.closelog(5000).unwrap();
    (e.into_inner(), offsets)
}

/// Issue 10 defect 4: one damaged length loses only the damaged record,
/// whatever the damage (a length the type cannot have, a callchain made
/// longer so that it swallows the next records, or shorter), and the
/// report lists every skipped range; near the end of the file it is not
/// reported as truncation.
#[test]
#[cfg_attr(miri, ignore)] // 24 imports of a 150 KB log: minutes under Miri
fn one_flipped_length_byte_loses_only_the_damaged_record() {
    let (log, offsets) = many_samples();
    let samples = |bytes: &[u8]| {
        let mut imp = Importer::new(bytes).unwrap();
        let n = imp
            .by_ref()
            .filter(|r| matches!(r, Record::Sample(_)))
            .count();
        (n, imp.report())
    };
    assert_eq!(samples(&log).0, 4000);
    let mut worst = 4000;
    for rec in [1, 2000, 3998, 3999] {
        for (byte, mask) in [
            (0, 0x40u8),
            (0, 0x08),
            (1, 0x01),
            (1, 0x04),
            (1, 0x80),
            (0, 0x20),
        ] {
            let mut bad = log.clone();
            bad[offsets[rec] + byte] ^= mask;
            let (n, report) = samples(&bad);
            worst = worst.min(n);
            assert!(
                n >= 3999,
                "record {rec}, byte {byte} ^ {mask:#x}: {n} samples; {report:?}"
            );
            assert!(
                !report.skipped.is_empty(),
                "record {rec}, byte {byte} ^ {mask:#x}: damage not reported"
            );
            assert!(
                report.closed_cleanly,
                "record {rec}, byte {byte} ^ {mask:#x}: CLOSELOG lost; {report:?}"
            );
            assert!(
                report
                    .skipped
                    .iter()
                    .all(|s| s.reason != "input ends inside a record"),
                "record {rec}, byte {byte} ^ {mask:#x}: reported as truncation; {report:?}"
            );
            let rec_len = offsets.get(rec + 1).copied().unwrap_or(log.len() - 16) - offsets[rec];
            assert!(
                report.skipped_bytes() <= rec_len as u64,
                "record {rec}, byte {byte} ^ {mask:#x}: {} bytes skipped for a {rec_len}-byte record; {report:?}",
                report.skipped_bytes()
            );
        }
    }
    println!("flipped length byte: at least {worst} of 4000 samples recovered");
}

/// hwpmc writes one PROCFORK per `PMC_F_DESCENDANTS` PMC attached to the
/// parent (hwpmc_mod.c pmc_process_fork logs inside its loop over the
/// parent's PMCs): the duplicates become one fork, in both importers; a
/// fork of a reused pid after the child's exit stays.
#[test]
fn duplicate_procforks_of_descendants_pmcs_merge() {
    let mut e = Encoder::new(Vec::new());
    e.initialize(1, 0x0A00_0000, 0x90, 1_000_000_000, 0, 0, "")
        .unwrap();
    // Three DESCENDANTS PMCs on pid 100: three PROCFORKs for one fork.
    for t in 2..5 {
        e.procfork(t, 100, 101).unwrap();
    }
    e.procfork(5, 100, 102).unwrap();
    e.procfork(6, 100, 102).unwrap();
    e.sysexit(7, 101).unwrap();
    e.procfork(8, 100, 101).unwrap(); // pid 101 reused
    e.closelog(9).unwrap();
    let log = e.into_inner();
    let forks = |recs: &[Record<'_>]| -> Vec<(u64, i32, i32)> {
        recs.iter()
            .filter_map(|r| match r {
                Record::Fork(f) => Some((f.time, f.parent_pid, f.child_pid)),
                _ => None,
            })
            .collect()
    };
    let want = vec![(2, 100, 101), (5, 100, 102), (8, 100, 101)];
    let mut imp = Importer::new(&log).unwrap();
    let recs: Vec<Record<'_>> = imp.by_ref().collect();
    assert_eq!(forks(&recs), want);
    assert!(
        imp.report().notes.iter().any(|n| n.contains("PROCFORK")),
        "{:?}",
        imp.report()
    );
    let (file, report) = hwpmc::convert(&log, Vec::new()).unwrap();
    assert!(report.notes.iter().any(|n| n.contains("PROCFORK")));
    let reader = Reader::new(&file).unwrap();
    let recs: Vec<Record<'_>> = reader.records().collect();
    assert_eq!(forks(&recs), want);
}

/// One mapping between pmc-log's `FLAG_*` and FreeBSD's `PMC_F_*` (the
/// values of FreeBSD 14's `<sys/pmc.h>`, as `abi-amd64.json` has them:
/// DESCENDANTS 0x2, LOG_PROCCSW 0x4, LOG_PROCEXIT 0x8, CALLCHAIN 0x80,
/// USERCALLCHAIN 0x100), both ways: an imported PMC_F_USERCALLCHAIN was
/// dropped before (pmc-analyze then took the log's kernel samples for
/// chains without their user callers), and `pl_flags` gives an imported
/// PMC's flags as written (EV_PMU kept) and pmc's own as PMC_F_*.
#[test]
fn flags_map_to_freebsds_pmc_f_both_ways() {
    use pmc_log::record::*;
    for (bit, pmc_f) in [
        (FLAG_DESCENDANTS, 0x2),
        (FLAG_LOG_PROCCSW, 0x4),
        (FLAG_LOG_PROCEXIT, 0x8),
        (FLAG_CALLCHAIN, 0x80),
        (FLAG_USERCALLCHAIN, 0x100),
    ] {
        assert_eq!(hwpmc::map_flags(pmc_f), bit, "PMC_F {pmc_f:#x}");
        assert_eq!(hwpmc::pmc_f_flags(bit), pmc_f, "FLAG {bit:#x}");
    }
    assert_eq!(hwpmc::pmc_f_flags(FLAG_DWARF_CALLCHAIN), 0);
    let mut e = Encoder::new(Vec::new());
    e.initialize(0, 0x0A03_0000, 0x98, 1, 0, 0, "").unwrap();
    // PMC_F_EV_PMU | USERCALLCHAIN | CALLCHAIN on a TS PMC.
    e.pmc_allocate(1, 0xFFF2_0700, 0x1000, 0x380, 1000).unwrap();
    let log = e.into_inner();
    let recs: Vec<Record<'_>> = Importer::new(&log).unwrap().collect();
    let Record::Pmc(p) = &recs[1] else {
        panic!("{recs:?}")
    };
    assert_eq!(p.flags, FLAG_CALLCHAIN | FLAG_USERCALLCHAIN);
    assert_eq!(hwpmc::pl_flags(p), 0x380);
    assert_eq!(hwpmc::imported_allocation(p), Some((0x1000, 0x380)));
    let own = PmcDescriptor {
        flags: FLAG_DESCENDANTS | FLAG_LOG_PROCEXIT,
        native_config: "type=1,config=0x2".into(),
        ..p.clone()
    };
    assert_eq!(hwpmc::imported_allocation(&own), None);
    assert_eq!(hwpmc::pl_flags(&own), 0xa);
}
