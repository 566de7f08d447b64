//! The table against its sources: perf's mapfile selection, CPUID/cpuinfo
//! decoding, and (when the kernel JSON is extracted) every entry against the
//! JSON itself, read here with serde_json independently of gen.py.

use pmc_events::{sys::decode_leaf1, CpuId, Kind, Table, X86Vendor};

fn x86(vendor: X86Vendor, family: u32, model: u32, stepping: u32) -> Option<&'static str> {
    Table::for_cpu(&CpuId::X86 {
        vendor,
        family,
        model,
        stepping,
    })
    .map(|t| t.name())
}

#[test]
fn selection_follows_perfs_mapfile() {
    use X86Vendor::*;
    // x86/mapfile.csv rows (linux 6.12).
    assert_eq!(x86(Intel, 6, 0x4E, 3), Some("skylake"));
    assert_eq!(x86(Intel, 6, 0x9E, 10), Some("skylake"));
    assert_eq!(x86(Intel, 6, 0x7E, 5), Some("icelake"));
    assert_eq!(x86(Intel, 6, 0x8F, 8), Some("sapphirerapids"));
    assert_eq!(x86(Intel, 6, 0x97, 2), Some("alderlake"));
    assert_eq!(x86(Intel, 6, 0xBF, 2), Some("alderlake"));
    // The servers FreeBSD runs on: Skylake-SP steppings 0-4, Cascade Lake 5-F
    // (GenuineIntel-6-55-[01234] / -[56789ABCDEF]), Ice Lake-SP, Haswell and
    // Broadwell, Tiger/Rocket/Meteor Lake, Emerald and Granite Rapids.
    assert_eq!(x86(Intel, 6, 0x55, 4), Some("skylakex"));
    assert_eq!(x86(Intel, 6, 0x55, 7), Some("cascadelakex"));
    assert_eq!(x86(Intel, 6, 0x6A, 6), Some("icelakex"));
    assert_eq!(x86(Intel, 6, 0x3C, 3), Some("haswell"));
    assert_eq!(x86(Intel, 6, 0x3F, 2), Some("haswellx"));
    assert_eq!(x86(Intel, 6, 0x3D, 4), Some("broadwell"));
    assert_eq!(x86(Intel, 6, 0x4F, 1), Some("broadwellx"));
    assert_eq!(x86(Intel, 6, 0x56, 3), Some("broadwellde"));
    assert_eq!(x86(Intel, 6, 0x8C, 1), Some("tigerlake"));
    assert_eq!(x86(Intel, 6, 0xA7, 1), Some("rocketlake"));
    assert_eq!(x86(Intel, 6, 0xAA, 4), Some("meteorlake"));
    assert_eq!(x86(Intel, 6, 0xCF, 2), Some("emeraldrapids"));
    assert_eq!(x86(Intel, 6, 0xAD, 1), Some("graniterapids"));
    assert_eq!(x86(Intel, 6, 0x1C, 2), Some("bonnell"));
    assert_eq!(x86(Intel, 6, 0x8A, 1), None, "Lakefield: no row for it");
    // AuthenticAMD-23-([12][0-9A-F]|[0-9A-F]) is Zen 1 (first match).
    assert_eq!(x86(Amd, 23, 0x01, 1), Some("amdzen1"));
    assert_eq!(x86(Amd, 23, 0x18, 1), Some("amdzen1"));
    assert_eq!(x86(Amd, 23, 0x31, 0), Some("amdzen2"));
    assert_eq!(x86(Amd, 23, 0x71, 0), Some("amdzen2"));
    // AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]) is Zen 3, the rest Zen 4.
    assert_eq!(x86(Amd, 25, 0x01, 1), Some("amdzen3"));
    assert_eq!(x86(Amd, 25, 0x21, 0), Some("amdzen3"));
    assert_eq!(x86(Amd, 25, 0x50, 0), Some("amdzen3"));
    assert_eq!(x86(Amd, 25, 0x11, 0), Some("amdzen4"));
    assert_eq!(x86(Amd, 25, 0x61, 2), Some("amdzen4"));
    assert_eq!(x86(Amd, 26, 0x02, 0), Some("amdzen5"));
    // Hygon's family 0x18: the kernel's mapfile has no row, FreeBSD's maps
    // it to amdzen1 (gen.py EXTRA_X86).
    assert_eq!(x86(Amd, 24, 0x00, 0), Some("amdzen1"));
    assert_eq!(x86(Other, 6, 0x4E, 3), None);
    // arm64/mapfile.csv MIDRs; anything else gets the architected events.
    let arm = |midr| Table::for_cpu(&CpuId::from_midr(midr)).unwrap().name();
    assert_eq!(arm(0x410f_d070), "cortex-a57-a72");
    assert_eq!(arm(0x410f_d080), "cortex-a57-a72");
    assert_eq!(arm(0x413f_d0b0), "cortex-a76");
    assert_eq!(arm(0x414f_d0c0), "neoverse-n1");
    assert_eq!(arm(0x410f_d400), "neoverse-v1");
    assert_eq!(arm(0x410f_d490), "neoverse-n2-v2");
    assert_eq!(arm(0x000f_0510), "armv8-common", "QEMU -cpu max");
    assert_eq!(arm(0x410f_d030), "cortex-a53");
    assert_eq!(arm(0x410f_d020), "armv8-common", "Cortex-A34: no table");
}

#[test]
fn names_are_case_insensitive_and_aliases_follow_libpmc() {
    let skl = Table::by_name("skylake").unwrap();
    let a = skl.find("inst_retired.any_p").unwrap();
    let b = skl.find("INST_RETIRED.ANY_P").unwrap();
    assert_eq!(a, b);
    assert_eq!((a.code, a.umask, a.config()), (0xC0, 0, 0xC0));
    let fixed = skl.find("inst_retired.any").unwrap();
    assert_eq!(fixed.intel_fixed_counter(), Some(0));
    assert_eq!(
        skl.find("cpu_clk_unhalted.ref_tsc")
            .unwrap()
            .intel_fixed_counter(),
        Some(2)
    );
    assert!(!a.desc.is_empty(), "Intel descriptions are kept");
    // libpmc_pmu_util.c pmu_intel_alias_table targets exist in each Intel table
    // (where the CPU has the event at all).
    for t in ["skylake", "icelake", "sapphirerapids", "alderlake"] {
        let t = Table::by_name(t).unwrap();
        for alias in [
            "BRANCH_INSTRUCTION_RETIRED",
            "BRANCH_MISSES_RETIRED",
            "instruction-retired",
        ] {
            assert!(
                pmc_events::lookup(t, alias).is_some(),
                "{} {alias}",
                t.name()
            );
        }
    }
    let (e, alias) = pmc_events::lookup(skl, "LLC_REFERENCE").unwrap();
    assert!(alias);
    assert_eq!(e.name, "LONGEST_LAT_CACHE.REFERENCE");
    let zen3 = Table::by_name("amdzen3").unwrap();
    assert_eq!(zen3.kind(), Kind::AmdZen);
    assert!(
        zen3.events().all(|e| e.desc.is_empty()),
        "AMD text is GPL-2.0: not copied"
    );
    assert_eq!(
        pmc_events::lookup(zen3, "unhalted-core-cycles")
            .unwrap()
            .0
            .name,
        "ls_not_halted_cyc"
    );
    let arm = Table::arm_common();
    assert_eq!(arm.find("inst_retired").unwrap().config(), 0x08);
    assert_eq!(pmc_events::lookup(arm, "dc-misses").unwrap().0.code, 0x03);
    assert!(pmc_events::is_known("ls_not_halted_cyc"));
    assert!(!pmc_events::is_known("ls_not_halted_cycx"));
    // Indices are positions.
    for t in Table::all() {
        for (i, e) in t.events().enumerate() {
            assert_eq!(e.index, i);
            assert!(!e.name.is_empty());
        }
    }
}

#[test]
fn cpu_identity_parsers() {
    let intel = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R)\nstepping\t: 7\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\n";
    assert_eq!(
        CpuId::from_proc_cpuinfo(intel),
        Some(CpuId::X86 {
            vendor: X86Vendor::Intel,
            family: 6,
            model: 0x55,
            stepping: 7
        })
    );
    let arm = "processor\t: 0\nBogoMIPS\t: 125.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
    assert_eq!(
        CpuId::from_proc_cpuinfo(arm),
        Some(CpuId::Arm {
            implementer: 0x41,
            part: 0xd0c
        })
    );
    // QEMU `-cpu max` (target/arm/tcg/cpu64.c aarch64_max_tcg_initfn: MIDR
    // implementer 0, architecture 0xf, part 'Q'): the architected events.
    let qemu = "processor\t: 0\nCPU implementer\t: 0x00\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0x051\nCPU revision\t: 0\n";
    let cpu = CpuId::from_proc_cpuinfo(qemu).unwrap();
    assert_eq!(cpu, CpuId::from_midr(0x000f_0510));
    assert_eq!(Table::for_cpu(&cpu).unwrap().name(), "armv8-common");
    assert_eq!(CpuId::from_proc_cpuinfo("garbage\n:::\n"), None);
    assert_eq!(
        CpuId::from_hwpmc_cpuid("AuthenticAMD-25-21-0"),
        Some(CpuId::X86 {
            vendor: X86Vendor::Amd,
            family: 25,
            model: 0x21,
            stepping: 0
        })
    );
    assert_eq!(
        CpuId::from_hwpmc_cpuid("GenuineIntel-6-55"),
        Some(CpuId::X86 {
            vendor: X86Vendor::Intel,
            family: 6,
            model: 0x55,
            stepping: 0
        })
    );
    assert_eq!(
        CpuId::from_hwpmc_cpuid("0x00000000410fd0c0"),
        Some(CpuId::from_midr(0x410f_d0c0))
    );
    // CPUID.1:EAX decoding (Intel SDM / AMD APM): Skylake-SP 0x50654,
    // Zen 3 (EPYC 7763) 0xA00F11, Zen 2 (Rome) 0x830F10.
    assert_eq!(
        decode_leaf1(X86Vendor::Intel, 0x0005_0654),
        CpuId::X86 {
            vendor: X86Vendor::Intel,
            family: 6,
            model: 0x55,
            stepping: 4
        }
    );
    assert_eq!(
        decode_leaf1(X86Vendor::Amd, 0x00A0_0F11),
        CpuId::X86 {
            vendor: X86Vendor::Amd,
            family: 25,
            model: 0x01,
            stepping: 1
        }
    );
    assert_eq!(
        decode_leaf1(X86Vendor::Amd, 0x0083_0F10),
        CpuId::X86 {
            vendor: X86Vendor::Amd,
            family: 23,
            model: 0x31,
            stepping: 0
        }
    );
    // On this x86_64 host, CPUID agrees with /proc/cpuinfo.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let text = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        assert_eq!(pmc_events::sys::host(), CpuId::from_proc_cpuinfo(&text));
    }
}

#[test]
fn compact_in_the_binary() {
    // Static data only: events x the row's bytes + the string blob. The
    // figure is printed for the record (see pmc-events/gen/SOURCES.md).
    let events: usize = Table::all().map(|t| t.len()).sum();
    let per = pmc_events::EVENT_ROW;
    println!("{events} events x {per} bytes + strings");
    assert!(per <= 20, "an event row grew to {per} bytes");
    assert!(events > 12000 && events < 14000, "{events}");
}

/// freebsd-audit-3 section 4: the CPUs FreeBSD's own pmu-events mapfile names
/// (its x86 one, CheriBSD's arm64 one) select their tables here too: the
/// older servers, Atom and pre-Haswell clients, FreeBSD's `tremontx` (the
/// kernel's `snowridgex`), Hygon family 24 (FreeBSD maps it to `amdzen1`,
/// which the kernel's mapfile lacks), and the Arm cores FreeBSD/arm64 runs.
/// The entries themselves are judged by [`every_entry_matches_the_kernel_json`].
#[test]
fn the_cpus_freebsds_mapfile_names_select_their_tables() {
    let name = |c: CpuId| Table::for_cpu(&c).map(|t| t.name());
    let intel = |model, stepping| {
        name(CpuId::X86 {
            vendor: X86Vendor::Intel,
            family: 6,
            model,
            stepping,
        })
    };
    for (model, table) in [
        (0x3E, "ivytown"),
        (0x2D, "jaketown"),
        (0x57, "knightslanding"),
        (0x85, "knightslanding"),
        (0x86, "snowridgex"),
        (0x2E, "nehalemex"),
        (0x2F, "westmereex"),
        (0x1A, "nehalemep"),
        (0x2C, "westmereep-dp"),
        (0x25, "westmereep-sp"),
        (0x2A, "sandybridge"),
        (0x3A, "ivybridge"),
        (0x1C, "bonnell"),
        (0x37, "silvermont"),
        (0x5C, "goldmont"),
        (0x7A, "goldmontplus"),
        (0x96, "elkhartlake"),
        (0xBE, "alderlaken"),
    ] {
        assert_eq!(intel(model, 1), Some(table), "model {model:#x}");
    }
    let hygon = CpuId::from_hwpmc_cpuid("HygonGenuine-24-00-1").unwrap();
    assert_eq!(
        name(hygon),
        Some("amdzen1"),
        "Hygon family 24, as FreeBSD maps it"
    );
    for (midr, table) in [
        (0x410f_d030, "cortex-a53"),
        (0x410f_d050, "cortex-a55"),
        (0x410f_d040, "cortex-a35"),
        (0x410f_d090, "cortex-a73"),
        (0x410f_d0a0, "cortex-a75"),
        (0x410f_d0d0, "cortex-a77"),
        (0x410f_d410, "cortex-a78"),
        (0x410f_d440, "cortex-x1"),
        (0x410f_d480, "cortex-x2"),
        (0x410f_d460, "cortex-a510"),
        (0x410f_d470, "cortex-a710"),
        (0x410f_d4a0, "cortex-a65-e1"),
        (0x430f_0af0, "thunderx2"),
        (0x460f_0010, "a64fx"),
        (0x480f_d010, "hip08"),
        (0x500f_0000, "emag"),
    ] {
        assert_eq!(name(CpuId::from_midr(midr)), Some(table), "MIDR {midr:#x}");
    }
    // The first tables keep their indices (a log names its table by index).
    let first: Vec<&str> = Table::all().take(3).map(|t| t.name()).collect();
    assert_eq!(first, ["skylake", "icelake", "sapphirerapids"]);
}

/// Every generated entry equals the kernel JSON's, read with serde_json.
/// Needs the extracted JSON: `pmc-events/gen/fetch.sh DIR` and
/// `PMC_EVENTS_ARCH=DIR/linux-source-6.12/tools/perf/pmu-events/arch`.
#[test]
fn every_entry_matches_the_kernel_json() {
    let Some(arch) = std::env::var_os("PMC_EVENTS_ARCH").map(std::path::PathBuf::from) else {
        pmc_testkit::skip!("PMC_EVENTS_ARCH is not set (run ci/pmu-events-data.sh)");
        return;
    };
    if !arch.join("x86/mapfile.csv").exists() {
        pmc_testkit::skip!("{} has no x86/mapfile.csv", arch.display());
        return;
    }
    use serde_json::Value;
    let num = |v: Option<&Value>| -> u64 {
        let s = v.and_then(Value::as_str).unwrap_or("0").trim().to_owned();
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => s.parse().unwrap(),
        }
    };
    let load = |p: &std::path::Path| -> Vec<Value> {
        serde_json::from_str::<Value>(&std::fs::read_to_string(p).unwrap())
            .unwrap()
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let mut std_events = std::collections::HashMap::new();
    for f in ["arm64/common-and-microarch.json", "arm64/recommended.json"] {
        for e in load(&arch.join(f)) {
            if let (Some(n), Some(_)) = (e["EventName"].as_str(), e.get("EventCode")) {
                std_events.entry(n.to_owned()).or_insert(e.clone());
            }
        }
    }
    // The kernel JSON's known-stale encodings, which gen.py corrects: each must still be
    // what the kernel says (else gen.py refuses), and the table must hold the correction.
    let corrections: Vec<Value> =
        serde_json::from_str(include_str!("../../gen/corrections.json")).unwrap();
    let mut corrected = 0;
    let mut checked = 0;
    for t in Table::all() {
        let path = arch.join(t.source());
        let files: Vec<std::path::PathBuf> = if path.is_file() {
            vec![path]
        } else {
            std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect()
        };
        let mut json = std::collections::HashMap::new();
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "json"))
        {
            for e in load(f) {
                let e = match e["ArchStdEvent"].as_str() {
                    Some(std) => {
                        // gen.py skips the few that name no architected event.
                        let Some(base) = std_events.get(std) else {
                            continue;
                        };
                        let mut base = base.clone();
                        base["EventName"] = Value::from(std);
                        base
                    }
                    None => e,
                };
                // Alder Lake lists E-core (cpu_atom) events under the same
                // names; the table is the P-core's (cpu_core).
                if e["Unit"].as_str().is_some_and(|u| u != "cpu_core") {
                    continue;
                }
                if let Some(n) = e["EventName"].as_str() {
                    let key = n.to_ascii_lowercase();
                    let mut e = e.clone();
                    if !json.contains_key(&key) {
                        for c in &corrections {
                            if c["table"] == t.name()
                                && c["event"].as_str().map(str::to_ascii_lowercase)
                                    == Some(key.clone())
                            {
                                let field = c["field"].as_str().unwrap();
                                assert_eq!(
                                    num(e.get(field)),
                                    num(c.get("kernel")),
                                    "{} {n}: the kernel JSON changed",
                                    t.name()
                                );
                                e[field] = c["corrected"].clone();
                                corrected += 1;
                            }
                        }
                    }
                    json.entry(key).or_insert(e);
                }
            }
        }
        for ev in t.events() {
            let j = json
                .get(&ev.name.to_ascii_lowercase())
                .unwrap_or_else(|| panic!("{}: {} not in the JSON", t.name(), ev.name));
            let what = format!("{} {}", t.name(), ev.name);
            assert_eq!(u64::from(ev.code), num(j.get("EventCode")), "{what}");
            assert_eq!(u64::from(ev.umask), num(j.get("UMask")), "{what}");
            assert_eq!(u64::from(ev.cmask), num(j.get("CounterMask")), "{what}");
            assert_eq!(ev.edge, num(j.get("EdgeDetect")) != 0, "{what}");
            assert_eq!(ev.inv, num(j.get("Invert")) != 0, "{what}");
            assert_eq!(
                ev.config1(),
                if ev.msr.is_some() {
                    num(j.get("MSRValue"))
                } else {
                    0
                },
                "{what}"
            );
            checked += 1;
        }
    }
    assert_eq!(
        corrected,
        corrections.len(),
        "every correction in gen/corrections.json applies once"
    );
    println!(
        "{checked} entries match the kernel JSON ({corrected} corrected, gen/corrections.json)"
    );
    assert!(checked > 2000);
}

proptest::proptest! {
    /// The outside-input parsers never panic, on any text.
    #[test]
    fn cpu_parsers_never_panic(s in "(?s).{0,400}", midr: u64, eax: u32) {
        let _ = CpuId::from_proc_cpuinfo(&s);
        let _ = CpuId::from_hwpmc_cpuid(&s);
        let c = CpuId::from_midr(midr);
        proptest::prop_assert!(Table::for_cpu(&c).is_some(), "every Arm CPU gets a table");
        let _ = Table::for_cpu(&decode_leaf1(X86Vendor::Intel, eax));
        let _ = pmc_events::is_known(&s);
    }

    #[test]
    fn cpuinfo_fields_round_trip(family in 0u32..300, model in 0u32..256, stepping in 0u32..16) {
        let text = format!("vendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model}\nstepping\t: {stepping}\n");
        let want = CpuId::X86 { vendor: X86Vendor::Amd, family, model, stepping };
        proptest::prop_assert_eq!(CpuId::from_proc_cpuinfo(&text), Some(want));
        proptest::prop_assert_eq!(CpuId::from_hwpmc_cpuid(&want.to_string()), Some(want));
    }
}

/// Issue 24: pmc.k8(3)'s events without a generic counterpart name the Zen
/// event of the same event code in every Zen table; the generic ones are
/// known by name (libpmc_generic) whatever the CPU.
#[test]
fn k8_legacy_names_reach_zen_events_or_generic_ones() {
    for zen in ["amdzen2", "amdzen3", "amdzen4"] {
        let t = Table::by_name(zen).unwrap();
        for (k8, code) in [
            ("fr-retired-uops", 0xC1),
            ("fr-retired-taken-branches", 0xC4),
            ("fr-retired-taken-branches-mispredicted", 0xC5),
            ("fr-retired-far-control-transfers", 0xC6),
            ("fr-retired-near-returns", 0xC8),
            ("fr-retired-near-returns-mispredicted", 0xC9),
        ] {
            let (e, alias) = pmc_events::lookup(t, k8).unwrap_or_else(|| panic!("{zen} {k8}"));
            assert!(alias, "{zen} {k8}");
            assert_eq!(e.config() & 0xFF, code, "{zen} {k8}: {}", e.name);
        }
    }
    assert_eq!(
        pmc_events::libpmc_generic("K8-FR-RETIRED-X86-INSTRUCTIONS"),
        Some("instructions")
    );
    assert_eq!(
        pmc_events::libpmc_generic("k8-dc-miss"),
        Some("L1-dcache-load-misses")
    );
    assert_eq!(
        pmc_events::libpmc_generic("dc-miss"),
        None,
        "K8 names keep their prefix"
    );
    assert_eq!(pmc_events::libpmc_generic("k8-fp-dispatched-fpu-ops"), None);
}
