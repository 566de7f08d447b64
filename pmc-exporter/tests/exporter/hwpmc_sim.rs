//! The exporter on FreeBSD's hwpmc, through pmc-freebsd's simulated driver
//! (which runs anywhere): the counts the simulator was told to produce come out
//! of the exposition per CPU, with IPC derived from them.

use std::sync::Arc;

use pmc_exporter::{render, Format, PmcCollector};
use pmc_freebsd::sys::sim::{SimConfig, SimCpu, SimDriver, Work};
use prometheus_client::registry::Registry;

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn simulated_hwpmc_counts_are_exported_per_cpu() {
    let sim = Arc::new(SimDriver::new(SimConfig {
        cpu: SimCpu::IntelSkylake,
        ..SimConfig::default()
    }));
    let backend = pmc_freebsd::Backend::with_sys(sim.clone()).expect("the simulator");
    let c = PmcCollector::system_on(backend, &["instructions", "cycles", "branches"])
        .expect("system PMCs on the simulator");
    assert!(c.unsupported().is_empty(), "{:?}", c.unsupported());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(c));
    let before = render(&registry, Format::PrometheusText).expect("render");
    sim.run(Work {
        cpu: 1,
        nanos: 1_000_000,
        instructions: 3_000_000,
        branches: 500_000,
        ..Work::default()
    });
    let text = render(&registry, Format::PrometheusText).expect("render");
    eprintln!("{text}");
    let grew =
        |series: &str| value(&text, series).unwrap_or(-1.0) - value(&before, series).unwrap_or(0.0);
    assert_eq!(
        grew("pmc_instructions_total{cpu=\"1\"}"),
        3_000_000.0,
        "{text}"
    );
    assert_eq!(grew("pmc_branches_total{cpu=\"1\"}"), 500_000.0, "{text}");
    assert_eq!(grew("pmc_instructions_total{cpu=\"0\"}"), 0.0, "{text}");
    assert!(
        value(&text, "pmc_ipc{cpu=\"1\"}").is_some_and(|v| v > 0.0),
        "{text}"
    );
    assert!(value(
        &text,
        "pmc_time_enabled_seconds_total{cpu=\"1\",event=\"cycles\"}"
    )
    .is_some());
}

/// hwpmc has no cgroup filter: a cgroup collector is refused with the backend's reason (not
/// "none of the events can be counted").
#[test]
fn a_cgroup_collector_on_hwpmc_is_refused_with_the_reason() {
    let sim = Arc::new(SimDriver::new(SimConfig::default()));
    let backend = pmc_freebsd::Backend::with_sys(sim.clone()).expect("the simulator");
    let e = PmcCollector::system_cgroup_on(backend, &["instructions"], "pmctest")
        .expect_err("no cgroup filter in hwpmc");
    assert_eq!(e.kind(), pmc::ErrorKind::NotSupported, "{e}");
    assert!(e.to_string().contains("cgroup"), "{e}");
    assert_eq!(sim.allocated(), 0);
}
