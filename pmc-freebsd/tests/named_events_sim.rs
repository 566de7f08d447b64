//! pmu-events table names through the whole backend on the simulated hwpmc:
//! allocation, counting, the `native_config` the user sees with -v, and the
//! `-L` listing (issue 14, "one table of named events").

use pmc_core::{Allocation, Backend as _, ErrorKind, Pmc as _, Target};
use pmc_freebsd::sys::sim::{SimConfig, SimCpu, SimDriver, Work};
use pmc_freebsd::Backend;
use std::sync::Arc;

fn backend(cpu: SimCpu) -> (Arc<SimDriver>, Backend<Arc<SimDriver>>) {
    let sim = Arc::new(SimDriver::new(SimConfig {
        cpu,
        ..SimConfig::default()
    }));
    let b = Backend::with_sys(sim.clone()).expect("handshake with the simulator");
    (sim, b)
}

fn field(p: &impl pmc_core::Pmc, name: &str) -> String {
    p.native_config()
        .into_iter()
        .find(|f| f.name == name)
        .map(|f| f.value)
        .unwrap_or_default()
}

#[test]
fn table_names_allocate_and_count_on_intel() {
    let (sim, b) = backend(SimCpu::IntelSkylake);
    // The table is the host CPU's when it is an Intel one, else Skylake's
    // (pm_cputype); inst_retired.any and BR_INST_RETIRED.ALL_BRANCHES are in
    // every Intel table.
    let mut p = b
        .allocate(&Allocation::counting(
            "inst_retired.any,usr".parse().unwrap(),
        ))
        .expect("inst_retired.any allocates");
    assert!(
        field(&p, "event").contains("INST_RETIRED.ANY"),
        "{:?}",
        p.native_config()
    );
    assert_eq!(field(&p, "pm_class"), "0x6", "IAF");
    sim.spawn(2000, 1000, true, "/bin/sh");
    p.attach(Target::Pid(2000)).unwrap();
    p.start().unwrap();
    sim.run(Work {
        pid: 2000,
        instructions: 12345,
        ..Work::default()
    });
    p.stop().unwrap();
    assert_eq!(p.read().unwrap().value, 12345, "counted as instructions");
    let q = b
        .allocate(&Allocation::counting(
            "iap-br_inst_retired.all_branches".parse().unwrap(),
        ))
        .expect("class-prefixed name allocates");
    assert_eq!(field(&q, "pm_class"), "0x7", "IAP");
    let c = b
        .allocate(&Allocation::counting("cycles".parse().unwrap()))
        .unwrap();
    assert!(
        field(&c, "event").contains("core cycles"),
        "{:?}",
        c.native_config()
    );
    let t = b
        .allocate(&Allocation::counting("tsc".parse().unwrap()).system(pmc_core::Cpus::One(0)))
        .expect("tsc allocates");
    assert_eq!(field(&t, "pm_class"), "0x0", "TSC");
}

#[test]
fn table_names_on_amd_and_without_a_pmu() {
    let (_, b) = backend(SimCpu::AmdZen);
    // The sim's cpuid is a Zen 1; on an AMD host the host's CPUID picks the
    // table, else pm_cputype (K8) cannot name a Zen generation.
    match b.allocate(&Allocation::counting("ex_ret_instr".parse().unwrap())) {
        Ok(p) => assert_eq!(field(&p, "pm_class"), "0x2", "K8"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}"),
    }
    let (_, vm) = backend(SimCpu::Generic);
    let e = vm
        .allocate(&Allocation::counting("inst_retired.any".parse().unwrap()))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoPmu, "a known name on a VM: {e}");
    let e = vm
        .allocate(&Allocation::counting("no_such.event_name".parse().unwrap()))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchEvent, "{e}");
}

#[test]
fn listing_shows_the_cpu_table_with_availability() {
    let (_, b) = backend(SimCpu::IntelSkylake);
    let list = b.list_events(false);
    let table: Vec<_> = list
        .iter()
        .filter(|e| e.source.to_string().contains("pmu-events"))
        .collect();
    assert!(table.len() > 100, "{} table events", table.len());
    let inst = table
        .iter()
        .find(|e| e.name == "INST_RETIRED.ANY")
        .expect("INST_RETIRED.ANY listed");
    assert_eq!(inst.availability, pmc_core::info::Availability::Available);
    assert!(inst.description.contains("IAF"), "{}", inst.description);
}
