//! The library over FreeBSD's hwpmc, on pmc-freebsd's simulated driver
//! (which runs anywhere): the natives it lists, presets mapped to hwpmc's
//! events, an event set counting the process (hwpmc counts processes) as
//! the simulator was told to run.

use std::sync::Arc;

use pmc_freebsd::sys::sim::{SimConfig, SimCpu, SimDriver, Work};

use crate::abi::*;
use crate::state::Lib;

fn lib(cpu: SimCpu) -> (Arc<SimDriver>, Lib<pmc_freebsd::Backend<Arc<SimDriver>>>) {
    let sim = Arc::new(SimDriver::new(SimConfig {
        cpu,
        ..SimConfig::default()
    }));
    let backend = pmc_freebsd::Backend::with_sys(sim.clone()).expect("the simulator");
    (sim, Lib::new(Ok(backend)))
}

#[test]
fn natives_and_presets_come_from_hwpmc() {
    let (_sim, mut lib) = lib(SimCpu::IntelSkylake);
    lib.ensure_listed();
    let names: Vec<String> = lib
        .natives
        .listed_codes()
        .filter_map(|c| lib.natives.get(c).map(|n| n.name.clone()))
        .collect();
    eprintln!(
        "{} natives: {:?}",
        names.len(),
        &names[..names.len().min(40)]
    );
    assert!(!names.is_empty());
    let ins = lib.name_to_code("PAPI_TOT_INS").expect("PAPI_TOT_INS");
    assert!(
        lib.entry(ins).is_ok(),
        "instructions count on a simulated Skylake"
    );
    assert_eq!(
        lib.granularities() & PAPI_GRN_THR,
        0,
        "hwpmc counts processes"
    );
}

#[test]
fn an_event_set_counts_the_process_on_hwpmc() {
    let (sim, mut lib) = lib(SimCpu::IntelSkylake);
    let ins = lib.name_to_code("PAPI_TOT_INS").unwrap();
    let br = lib.name_to_code("PAPI_BR_INS").unwrap();
    let id = lib.create_eventset().unwrap();
    lib.add_event(id, ins).unwrap();
    lib.add_event(id, br).unwrap();
    lib.start_impl(id, true).unwrap();
    sim.run(Work {
        pid: 0,
        cpu: 1,
        nanos: 1_000_000,
        instructions: 3_000_000,
        branches: 400_000,
        ..Work::default()
    });
    let (v, calls) = lib.stop(id).unwrap();
    assert!(calls.is_empty());
    assert_eq!(v, vec![3_000_000, 400_000]);
    assert_eq!(lib.read(id).unwrap(), v, "a stopped set keeps its counts");
    lib.cleanup_eventset(id).unwrap();
    let mut id2 = id;
    lib.destroy_eventset(id2).unwrap();
    id2 = -1;
    assert_eq!(id2, PAPI_NULL);
}
