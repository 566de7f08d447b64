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

/// The library over Linux's backend on pmc-linux's fake perf_event kernel,
/// which has a PMU: presets over hardware events, derived presets, the
/// group and multiplexed paths, overflow delivery, with the counts the
/// test gives each event.
#[cfg(target_os = "linux")]
mod fake_kernel {
    use std::sync::Arc;

    use pmc_linux::internals::fake::{FakeKernel, SampleSpec};

    use crate::abi::*;
    use crate::eventset::Action;
    use crate::presets;
    use crate::state::Lib;

    type FakeLib = Lib<pmc_linux::Backend<Arc<FakeKernel>>>;

    fn lib() -> (Arc<FakeKernel>, FakeLib) {
        let k = Arc::new(FakeKernel::new());
        (k.clone(), Lib::new(Ok(pmc_linux::Backend::with_sys(k))))
    }

    const HW: u32 = 0; // PERF_TYPE_HARDWARE
    const HW_CACHE: u32 = 3; // PERF_TYPE_HW_CACHE
    const INSTRUCTIONS: u64 = 1; // PERF_COUNT_HW_INSTRUCTIONS
    const BRANCHES: u64 = 4;
    const BRANCH_MISSES: u64 = 5;
    /// L1D read access and write access (`id | op << 8 | result << 16`).
    const L1D_LOADS: u64 = 0;
    const L1D_STORES: u64 = 1 << 8;

    fn preset(lib: &mut FakeLib, name: &str) -> u32 {
        let code = lib.name_to_code(name).unwrap();
        assert!(lib.entry(code).is_ok(), "{name} exists on the fake PMU");
        code
    }

    /// Gives each enabled event of (type, config) `n` more counts.
    fn count(k: &FakeKernel, type_: u32, config: u64, n: u64) {
        for e in k.events().iter().filter(|e| e.enabled) {
            if e.attr.type_ == type_ && e.attr.config == config {
                k.add_count(e.fd, n);
            }
        }
    }

    #[test]
    fn presets_and_derived_presets_count_on_a_pmu() {
        let (k, mut lib) = lib();
        let ins = preset(&mut lib, "PAPI_TOT_INS");
        let br = preset(&mut lib, "PAPI_BR_INS");
        let msp = preset(&mut lib, "PAPI_BR_MSP");
        let dca = preset(&mut lib, "PAPI_L1_DCA");
        let i = presets::index("PAPI_L1_DCA").unwrap();
        assert_eq!(
            lib.presets().get(i).unwrap().codes.len(),
            2,
            "loads + stores"
        );
        let id = lib.create_eventset().unwrap();
        for c in [ins, br, msp, dca] {
            lib.add_event(id, c).unwrap();
        }
        lib.start_impl(id, true).unwrap();
        let group: Vec<_> = k.events().into_iter().filter(|e| e.enabled).collect();
        assert_eq!(group.len(), 5, "four presets, five natives, one group");
        assert!(group.iter().all(|e| e.leader == group[0].fd));
        k.tick(100, 0, 1_000);
        count(&k, HW, INSTRUCTIONS, 1_000_000);
        count(&k, HW, BRANCHES, 200_000);
        count(&k, HW, BRANCH_MISSES, 3_000);
        count(&k, HW_CACHE, L1D_LOADS, 250_000);
        count(&k, HW_CACHE, L1D_STORES, 50_000);
        let (v, _) = lib.stop(id).unwrap();
        // The fake's tick counts its 1000 ns into every running event.
        assert_eq!(v, vec![1_001_000, 201_000, 4_000, 302_000]);
        // PAPI_DOM_USER: the hardware events exclude the kernel.
        assert!(group.iter().all(|e| e.attr.exclude_kernel() == 1));
    }

    #[test]
    fn a_multiplexed_set_scales_its_counts() {
        let (k, mut lib) = lib();
        let ins = preset(&mut lib, "PAPI_TOT_INS");
        let id = lib.create_eventset().unwrap();
        lib.assign_component(id, 0).unwrap();
        lib.set_multiplex(id).unwrap();
        lib.add_event(id, ins).unwrap();
        lib.start_impl(id, true).unwrap();
        for e in k.events() {
            k.multiplex(e.fd, 25);
        }
        k.tick(100, 0, 4_000);
        count(&k, HW, INSTRUCTIONS, 999_000);
        // Ran a quarter of the time: 1000 + 999,000 counted, scaled by 4.
        assert_eq!(lib.read(id).unwrap(), vec![4_000_000]);
        assert_eq!(lib.state(id).unwrap(), PAPI_RUNNING | PAPI_MULTIPLEXING);
        lib.stop(id).unwrap();
    }

    /// On a Cortex-A57 (the PMU lab's QEMU CPU), the presets are PAPI's own
    /// definitions for it (`papi_events.csv`'s arm_ac57), over the core's
    /// events from pmc-events' table: the 21 presets PAPI's library offers
    /// there, its derived ones derived the same way.
    #[test]
    fn a_cortex_a57_gets_papis_arm_ac57_presets() {
        let k = Arc::new(FakeKernel::new());
        k.set_file(
            "/proc/cpuinfo",
            "processor\t: 0\nBogoMIPS\t: 125.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n\
             CPU variant\t: 0x1\nCPU part\t: 0xd07\nCPU revision\t: 0\n\n",
        );
        let mut lib: FakeLib = Lib::new(Ok(pmc_linux::Backend::with_sys(k)));
        let papi_arm_ac57 = [
            "PAPI_TOT_INS",
            "PAPI_TOT_IIS",
            "PAPI_TOT_CYC",
            "PAPI_FP_INS",
            "PAPI_VEC_INS",
            "PAPI_BR_INS",
            "PAPI_BR_MSP",
            "PAPI_LD_INS",
            "PAPI_SR_INS",
            "PAPI_L1_DCA",
            "PAPI_L1_DCM",
            "PAPI_L1_DCR",
            "PAPI_L1_DCW",
            "PAPI_L1_ICA",
            "PAPI_L1_ICM",
            "PAPI_L2_DCH",
            "PAPI_L2_DCM",
            "PAPI_L2_DCR",
            "PAPI_L2_DCW",
            "PAPI_L2_LDM",
            "PAPI_L2_STM",
        ];
        for p in papi_arm_ac57 {
            let m = lib.presets().get(presets::index(p).unwrap()).cloned();
            let m = m.unwrap_or_else(|| panic!("{p} on a Cortex-A57"));
            assert!(m.note.contains("arm_ac57"), "{p}: {}", m.note);
        }
        let dcm = lib
            .presets()
            .get(presets::index("PAPI_L1_DCM").unwrap())
            .unwrap()
            .clone();
        assert_eq!(
            dcm.codes.len(),
            2,
            "L1D refills of reads + of writes, DERIVED_ADD"
        );
        let names: Vec<String> = dcm
            .codes
            .iter()
            .map(|c| lib.natives.get(*c).unwrap().name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "cortex-a57-a72::L1D_CACHE_REFILL_RD",
                "cortex-a57-a72::L1D_CACHE_REFILL_WR"
            ]
        );
    }

    extern "C" fn handler(
        _: std::ffi::c_int,
        _: *mut std::ffi::c_void,
        _: i64,
        _: *mut std::ffi::c_void,
    ) {
    }

    #[test]
    fn overflow_samples_become_handler_calls_at_stop() {
        let (k, mut lib) = lib();
        let ins = preset(&mut lib, "PAPI_TOT_INS");
        let br = preset(&mut lib, "PAPI_BR_INS");
        let id = lib.create_eventset().unwrap();
        lib.add_event(id, ins).unwrap();
        lib.add_event(id, br).unwrap();
        lib.overflow(id, br, 100_000, Some(handler as crate::eventset::Handler))
            .unwrap();
        assert_eq!(lib.state(id).unwrap(), PAPI_STOPPED | PAPI_OVERFLOWING);
        lib.start_impl(id, true).unwrap();
        let sampler = k
            .events()
            .into_iter()
            .find(|e| e.enabled && e.attr.config == BRANCHES)
            .expect("the sampling PMC");
        assert_ne!(sampler.attr.sample_type, 0);
        for n in 0..3 {
            let s = SampleSpec {
                ip: 0x40_1000 + n,
                pid: 100,
                tid: 100,
                time: n,
                cpu: 0,
            };
            assert_eq!(k.sample(sampler.fd, s), Some(true));
        }
        let (_, calls) = lib.stop(id).unwrap();
        assert_eq!(calls.len(), 3);
        assert!(calls
            .iter()
            .all(|c| c.vector == 1 << 1 && matches!(c.action, Action::Handler(_))));
        assert_eq!(calls[2].address, 0x40_1002);
        assert_eq!(lib.overflow_indices(id, 2).unwrap(), vec![1]);
    }
}
