//! The self-test on the FreeBSD backend, driven by pmc-freebsd's simulated
//! hwpmc (runs on any OS, so CI exercises the FreeBSD path): the simulator
//! counts what each workload did, and counts that are wrong make their rows
//! FAIL.

use std::sync::Arc;

use pmc_freebsd::sys::sim::{SimConfig, SimCpu, SimDriver, Work};
use pmc_selftest::{self as selftest, Options, Ran, Report, Verdict};

/// The self-test on a simulated machine that retires `insn_factor` times
/// the loop's instructions and takes `fault_factor` times its page faults.
fn run(cpu: SimCpu, insn_factor: u64, fault_factor: u64) -> Report {
    let sim = Arc::new(SimDriver::new(SimConfig {
        cpu,
        ..SimConfig::default()
    }));
    let backend =
        pmc_freebsd::Backend::with_sys(sim.clone()).expect("handshake with the simulator");
    let s = sim.clone();
    let options = Options::default()
        .iterations(1_000_000)
        .on_workload(move |ran: &Ran| {
            s.run(Work {
                nanos: ran.cpu_ns.max(1_000),
                instructions: ran.instructions * insn_factor,
                branches: ran.branches,
                page_faults_write: ran.pages * fault_factor,
                ..Work::default()
            });
        });
    let report = selftest::run(&backend, &options);
    eprintln!("{report}");
    assert_eq!(report.backend, "freebsd-hwpmc");
    assert_eq!(report.rows.len(), 10, "one row per check");
    report
}

fn row<'a>(r: &'a Report, check: &str) -> &'a selftest::Row {
    r.row(check).unwrap_or_else(|| panic!("no {check} row"))
}

#[test]
fn simulated_hwpmc_counts_pass_and_the_rest_skip_with_reasons() {
    let r = run(SimCpu::IntelSkylake, 1, 1);
    for c in [
        "instructions",
        "branches",
        "cycles",
        "page faults",
        "log round trip",
    ] {
        assert_eq!(row(&r, c).verdict, Verdict::Pass, "{:?}", row(&r, c));
    }
    assert_eq!(row(&r, "instructions").measured, Some(2_000_000));
    assert_eq!(
        row(&r, "cycles").ratio(),
        Some(3.0),
        "the simulator's 3 cycles per ns"
    );
    // hwpmc does not multiplex, has no in-process samples, no rdpmc path in
    // pmc, and no migration event: SKIPs, each saying why.
    for c in [
        "multiplexing",
        "sampling period",
        "user-space reads",
        "cpu migrations",
    ] {
        let x = row(&r, c);
        assert_eq!(x.verdict, Verdict::Skip, "{x:?}");
        assert!(!x.note.is_empty(), "{x:?}");
    }
    assert!(row(&r, "multiplexing").note.contains("does not multiplex"));
    assert!(r.passed(), "{r}");
}

#[test]
fn wrong_simulated_counts_fail() {
    let r = run(SimCpu::AmdZen, 2, 3);
    assert_eq!(row(&r, "instructions").verdict, Verdict::Fail);
    assert_eq!(row(&r, "instructions").measured, Some(4_000_000));
    assert_eq!(row(&r, "page faults").verdict, Verdict::Fail);
    assert_eq!(row(&r, "branches").verdict, Verdict::Pass);
    assert!(!r.passed());
}

#[test]
fn a_machine_without_hardware_pmcs_skips_the_hardware_rows() {
    // hwpmc on a CPU it does not know: SOFT events only.
    let r = run(SimCpu::Generic, 1, 1);
    for x in r.rows.iter().filter(|x| x.hardware) {
        assert_eq!(x.verdict, Verdict::Skip, "{x:?}");
    }
    assert_eq!(row(&r, "page faults").verdict, Verdict::Pass);
    assert!(r.passed());
}

/// freebsd-audit-3 finding I: on a CPU the kernel's hwpmc does not know (a
/// Sapphire Rapids under a FreeBSD 14-era kernel) the hardware rows say so,
/// by name, rather than "no hardware PMCs".
#[test]
fn a_cpu_the_kernel_does_not_know_is_named_by_the_hardware_rows() {
    let r = run(SimCpu::UnknownIntel(0x8F), 1, 1);
    let hw: Vec<_> = r.rows.iter().filter(|x| x.hardware).collect();
    assert!(!hw.is_empty());
    for x in hw {
        assert_eq!(x.verdict, Verdict::Skip, "{x:?}");
        let said = std::iter::once(&x.note).chain(&x.causes);
        assert!(said.clone().any(|t| t.contains("Sapphire Rapids")), "{x:?}");
    }
    assert!(r.passed());
}
