//! The Intel encodings on which libpfm4's tables disagree with ours, pinned
//! to Intel's own data (github.com/intel/perfmon), so that a regenerated
//! table which drifts away from Intel fails here. The reasoning, and what
//! libpfm4 says for each, is in `gen/INTEL-CROSSCHECK.md`.
//!
//! Citations: "perfmon" is intel/perfmon at commit
//! 6dadedf3aa483393943e044ba5ec88a4507cd040 (2026-08-13); "libpfm4" is
//! wcohen/libpfm4 (the GitHub mirror of perfmon2's libpfm4) at commit
//! 91970fe6eb4e80b63f77fb54a9592e28a207050c (2024-10-06). The quoted
//! fields are perfmon's JSON keys.

use pmc_events::{Event, ExtraMsr, Table};

/// What Intel's perfmon JSON says for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Enc {
    code: u16,
    umask: u8,
    cmask: u8,
    edge: bool,
    inv: bool,
    any: bool,
    msr: Option<ExtraMsr>,
}

const fn enc(code: u16, umask: u8) -> Enc {
    Enc {
        code,
        umask,
        cmask: 0,
        edge: false,
        inv: false,
        any: false,
        msr: None,
    }
}

impl Enc {
    const fn cmask(self, cmask: u8) -> Enc {
        Enc { cmask, ..self }
    }
    const fn inv(self) -> Enc {
        Enc { inv: true, ..self }
    }
    const fn edge(self) -> Enc {
        Enc { edge: true, ..self }
    }
    const fn any(self) -> Enc {
        Enc { any: true, ..self }
    }
    /// "MSRIndex": "0x3F7" (MSR_PEBS_FRONTEND), "MSRValue": v.
    const fn frontend(self, v: u32) -> Enc {
        Enc {
            msr: Some(ExtraMsr::Frontend(v)),
            ..self
        }
    }
    /// "MSRIndex": "0x3F6" (MSR_PEBS_LD_LAT_THRESHOLD), "MSRValue": v.
    const fn ldlat(self, v: u32) -> Enc {
        Enc {
            msr: Some(ExtraMsr::LoadLatency(v)),
            ..self
        }
    }
}

fn ours(table: &str, event: &str) -> Enc {
    let t = Table::by_name(table).unwrap_or_else(|| panic!("no table {table}"));
    let e: Event = t
        .find(event)
        .unwrap_or_else(|| panic!("{table}: {event} is no longer in the table"));
    Enc {
        code: e.code,
        umask: e.umask,
        cmask: e.cmask,
        edge: e.edge,
        inv: e.inv,
        any: e.any,
        msr: e.msr,
    }
}

const SKL_CLIENT_SERVER: &[&str] = &["skylake", "skylakex", "cascadelakex"];
const HSW_BDW: &[&str] = &[
    "haswell",
    "haswellx",
    "broadwell",
    "broadwellx",
    "broadwellde",
];
const ICL_FAMILY: &[&str] = &["icelake", "icelakex", "tigerlake", "rocketlake"];
const SPR_EMR: &[&str] = &["sapphirerapids", "emeraldrapids"];
const GLC_AND_LATER: &[&str] = &[
    "sapphirerapids",
    "emeraldrapids",
    "alderlake",
    "graniterapids",
];

/// (tables, event, Intel's encoding). Each group's comment cites perfmon
/// and says what libpfm4 has instead.
const PINS: &[(&[&str], &str, Enc)] = &[
    // perfmon SKL/events/skylake_core.json (v59), SKX/.../skylakex_core.json
    // (v1.37), CLX/.../cascadelakex_core.json (v1.25): "EventCode": "0xC2",
    // "UMask": "0x02", "CounterMask": "1", "Invert": "1" (0x02 is
    // UOPS_RETIRED.RETIRE_SLOTS). Same in perfmon's first SKL file,
    // 9f4ff0fa4b23 (2022-10-06). libpfm4 intel_skl_events.h: umask 0x01
    // ("0x100 | INTEL_X86_MOD_INV | (1 << INTEL_X86_CMASK_BIT)").
    (
        SKL_CLIENT_SERVER,
        "UOPS_RETIRED.STALL_CYCLES",
        enc(0xC2, 0x02).cmask(1).inv(),
    ),
    // Same files: "UMask": "0x02", "CounterMask": "16", "Invert": "1".
    // libpfm4: umask 0x01, cmask 10.
    (
        SKL_CLIENT_SERVER,
        "UOPS_RETIRED.TOTAL_CYCLES",
        enc(0xC2, 0x02).cmask(16).inv(),
    ),
    // Ice Lake agrees everywhere (perfmon ICL/events/icelake_core.json v1.24
    // "UMask": "0x02", "CounterMask": "1", "Invert": "1"; libpfm4 the same):
    // pinned because the issue names it.
    (
        ICL_FAMILY,
        "UOPS_RETIRED.STALL_CYCLES",
        enc(0xC2, 0x02).cmask(1).inv(),
    ),
    // Sapphire Rapids and later: perfmon marks UOPS_RETIRED.STALL_CYCLES
    // "Deprecated": "1" (since fd4660155095, 2022-10-24), so gen.py leaves
    // it out; its replacement, same encoding (SPR v1.39, GNR v1.20):
    (
        GLC_AND_LATER,
        "UOPS_RETIRED.STALLS",
        enc(0xC2, 0x02).cmask(1).inv(),
    ),
    // perfmon HSW/events/haswell_core.json (v36), HSX v29, BDW v30, BDX v23,
    // BDW-DE v12: "UMask": "0x01", "CounterMask": "16", "Invert": "1" (BDW
    // had "10" until v27, 4c81b3eabdf4, 2023-03-21). libpfm4
    // intel_hsw_events.h / intel_bdw_events.h: cmask 10.
    (
        HSW_BDW,
        "UOPS_RETIRED.TOTAL_CYCLES",
        enc(0xC2, 0x01).cmask(16).inv(),
    ),
    // perfmon HSW v36, HSX v29: "UMask": "0x01", "CounterMask": "1",
    // "Invert": "1", "AnyThread": "1". libpfm4 intel_hsw_events.h: no
    // INTEL_X86_MOD_ANY in the ucode (its own uequiv says "t=1").
    (
        &["haswell", "haswellx"],
        "UOPS_RETIRED.CORE_STALL_CYCLES",
        enc(0xC2, 0x01).cmask(1).inv().any(),
    ),
    // perfmon HSW v36 / HSX v29 / BDW v30 / BDX v23 / BDW-DE v12, event 0x24:
    // DEMAND_DATA_RD_HIT "0xc1", RFO_HIT "0xc2", CODE_RD_HIT "0xc4",
    // L2_PF_HIT "0xd0", L2_PF_MISS "0x30". libpfm4: 0x41, 0x42, 0x44, 0xd8,
    // 0x38.
    (HSW_BDW, "L2_RQSTS.DEMAND_DATA_RD_HIT", enc(0x24, 0xC1)),
    (HSW_BDW, "L2_RQSTS.RFO_HIT", enc(0x24, 0xC2)),
    (HSW_BDW, "L2_RQSTS.CODE_RD_HIT", enc(0x24, 0xC4)),
    (HSW_BDW, "L2_RQSTS.L2_PF_HIT", enc(0x24, 0xD0)),
    (HSW_BDW, "L2_RQSTS.L2_PF_MISS", enc(0x24, 0x30)),
    // perfmon SKL v59 / SKX v1.37 / CLX v1.25: "UMask": "0xc2". libpfm4
    // intel_skl_events.h: 0x42.
    (SKL_CLIENT_SERVER, "L2_RQSTS.RFO_HIT", enc(0x24, 0xC2)),
    // perfmon ICL v1.24 (added in v1.18, 13041c718469), ICX v1.30, TGL
    // v1.19, RKL v1.04: "EventCode": "0xd4", "UMask": "0x04". libpfm4
    // intel_icl_events.h: event MEM_LOAD_MISC_RETIRED ".code = 0xc4".
    (ICL_FAMILY, "MEM_LOAD_MISC_RETIRED.UC", enc(0xD4, 0x04)),
    // perfmon ICL/ICX/TGL/RKL, SPR v1.39, EMR v1.24, GNR v1.20, ADL v1.40:
    // "EventCode": "0xa4" with "UMask" 0x02/0x04/0x08/0x10 (only
    // TOPDOWN.SLOTS is "EventCode": "0x00", the fixed counter). libpfm4:
    // event code 0x00 for these umasks (intel_icl/spr/gnr_events.h), or the
    // PERF_METRICS pseudo-events 0x83/0x81/0x85/0x87 (intel_adl_glc_events.h).
    (ICL_FAMILY, "TOPDOWN.BACKEND_BOUND_SLOTS", enc(0xA4, 0x02)),
    (
        GLC_AND_LATER,
        "TOPDOWN.BACKEND_BOUND_SLOTS",
        enc(0xA4, 0x02),
    ),
    (GLC_AND_LATER, "TOPDOWN.BAD_SPEC_SLOTS", enc(0xA4, 0x04)),
    (
        GLC_AND_LATER,
        "TOPDOWN.BR_MISPREDICT_SLOTS",
        enc(0xA4, 0x08),
    ),
    (GLC_AND_LATER, "TOPDOWN.MEMORY_BOUND_SLOTS", enc(0xA4, 0x10)),
    // perfmon SPR v1.39 (and EMR, ADL, GNR): "EventCode": "0xc2", "UMask":
    // "0x04", "MSRIndex": "0x3F7", "MSRValue": "0x8". libpfm4: umask 0x08,
    // no MSR (the MSR value in the umask field).
    (
        GLC_AND_LATER,
        "UOPS_RETIRED.MS",
        enc(0xC2, 0x04).frontend(0x8),
    ),
    // Same files: "EventCode": "0xad", "UMask": "0x40", "MSRIndex": "0x3F7",
    // "MSRValue": "0x7". libpfm4: umask 0x07, no MSR.
    (
        GLC_AND_LATER,
        "INT_MISC.UNKNOWN_BRANCH_CYCLES",
        enc(0xAD, 0x40).frontend(0x7),
    ),
    // Same files: "EventCode": "0xcd", "UMask": "0x02". libpfm4: the event's
    // ".code = 0x01cd" hard-wires umask bit 0, which pfmlib_intel_x86.c ORs
    // into every umask: 0x03.
    (
        GLC_AND_LATER,
        "MEM_TRANS_RETIRED.STORE_SAMPLE",
        enc(0xCD, 0x02),
    ),
    // perfmon SPR v1.39 / EMR v1.24: "EventCode": "0xb0", "UMask": "0x08",
    // "CounterMask": "1" (since SPR v1.12, a084a4187342, 2023-04-10; "0"
    // before). libpfm4 intel_spr_events.h: no cmask.
    (SPR_EMR, "ARITH.IDIV_ACTIVE", enc(0xB0, 0x08).cmask(1)),
    // perfmon GNR/events/graniterapids_core.json v1.20: "EventCode": "0xb7",
    // "UMask": "0x02". libpfm4 intel_gnr_events.h: ".code = 0x01b7" | 0x02.
    (&["graniterapids"], "EXE.AMX_BUSY", enc(0xB7, 0x02)),
    // GNR v1.20: "EventCode": "0xc6", "UMask": "0x02", "MSRIndex": "0x3F7",
    // "MSRValue": "0x9". libpfm4: FRONTEND_RETIRED ".code = 0x03c6", so
    // umask 0x03 (= FRONTEND_RETIRED.ANY_ANT).
    (
        &["graniterapids"],
        "FRONTEND_RETIRED.MISP_ANT",
        enc(0xC6, 0x02).frontend(0x9),
    ),
    // ADL v1.40: "EventCode": "0xec" with these umasks. libpfm4
    // intel_adl_glc_events.h: CPU_CLK_UNHALTED ".code = 0x003c", no code
    // override on these umasks.
    (&["alderlake"], "CPU_CLK_UNHALTED.C01", enc(0xEC, 0x10)),
    (&["alderlake"], "CPU_CLK_UNHALTED.C02", enc(0xEC, 0x20)),
    (&["alderlake"], "CPU_CLK_UNHALTED.C0_WAIT", enc(0xEC, 0x70)),
    (
        &["alderlake"],
        "CPU_CLK_UNHALTED.DISTRIBUTED",
        enc(0xEC, 0x02),
    ),
    (&["alderlake"], "CPU_CLK_UNHALTED.PAUSE", enc(0xEC, 0x40)),
    (
        &["alderlake"],
        "CPU_CLK_UNHALTED.PAUSE_INST",
        enc(0xEC, 0x40).cmask(1).edge(),
    ),
    // ADL v1.40 / GNR v1.20: "EventCode": "0xcd", "UMask": "0x01",
    // "MSRIndex": "0x3F6", "MSRValue": N. libpfm4: the threshold in the
    // umask field (ADL) or dropped (GNR).
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4",
        enc(0xCD, 0x01).ldlat(4),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8",
        enc(0xCD, 0x01).ldlat(8),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16",
        enc(0xCD, 0x01).ldlat(16),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32",
        enc(0xCD, 0x01).ldlat(32),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64",
        enc(0xCD, 0x01).ldlat(64),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128",
        enc(0xCD, 0x01).ldlat(128),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256",
        enc(0xCD, 0x01).ldlat(256),
    ),
    (
        &["alderlake", "graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512",
        enc(0xCD, 0x01).ldlat(512),
    ),
    (
        &["graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_1024",
        enc(0xCD, 0x01).ldlat(1024),
    ),
    (
        &["graniterapids"],
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_2048",
        enc(0xCD, 0x01).ldlat(2048),
    ),
    // Fixed-counter events, ADL v1.40: INST_RETIRED.ANY / PREC_DIST
    // "EventCode": "0x00", "UMask": "0x01"; CPU_CLK_UNHALTED.THREAD 0x00/0x02;
    // REF_TSC 0x00/0x03 (perf's fixed-counter pseudo-encodings). libpfm4
    // writes them with the general-counter code (0xc0, 0x3c): a modelling
    // difference, pinned so that ours keeps Intel's form.
    (&["alderlake"], "INST_RETIRED.ANY", enc(0x00, 0x01)),
    (&["alderlake"], "INST_RETIRED.PREC_DIST", enc(0x00, 0x01)),
    (&["alderlake"], "CPU_CLK_UNHALTED.THREAD", enc(0x00, 0x02)),
    (&["alderlake"], "CPU_CLK_UNHALTED.REF_TSC", enc(0x00, 0x03)),
];

#[test]
fn disputed_encodings_follow_intel_perfmon() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for (tables, event, intel) in PINS {
        for table in *tables {
            checked += 1;
            let got = ours(table, event);
            if got != *intel {
                bad.push(format!("{table} {event}: ours {got:x?}, Intel {intel:x?}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {checked}:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(
        checked, 117,
        "the pin list changed size: update INTEL-CROSSCHECK.md"
    );
}

/// The one place where the kernel's JSON is behind Intel, corrected by
/// gen/corrections.json. perfmon GNR v1.02 (0ff9f681bd07, 2024-05-13; the
/// version Linux 6.12's mapfile names, "v1.02") had FRONTEND_RETIRED.LATE_SWPF
/// as "UMask": "0x03", "MSRValue": "0x9", the same encoding as
/// FRONTEND_RETIRED.ANY_ANT, so counting it counted ANY_ANT; v1.03
/// (bc74a895e461, 2024-08-22) and every later version, up to v1.20, say
/// "MSRValue": "0xA". libpfm4 has 0xA (its fd3191c, "Fix
/// FRONTEND_RETIRED.LATE_SWPF encoding on Intel GNR").
#[test]
fn graniterapids_late_swpf_has_intels_fixed_encoding() {
    let intel = enc(0xC6, 0x03).frontend(0xA);
    let got = ours("graniterapids", "FRONTEND_RETIRED.LATE_SWPF");
    assert_eq!(
        got, intel,
        "gen/corrections.json's LATE_SWPF fix is not in the table"
    );
    assert_ne!(
        got,
        ours("graniterapids", "FRONTEND_RETIRED.ANY_ANT"),
        "LATE_SWPF must not count ANY_ANT (v1.02's encoding)"
    );
}
