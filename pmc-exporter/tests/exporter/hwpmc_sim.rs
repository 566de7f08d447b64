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

/// Process mode on hwpmc: a target named by pid (a real child of this test, which the
/// simulator is told exists under the same pid) is attached at the first scrape; the work the
/// simulator gives it comes out of its series exactly, and its series goes when it exits.
#[test]
fn simulated_hwpmc_counts_a_target_process() {
    let sim = Arc::new(SimDriver::new(SimConfig {
        cpu: SimCpu::IntelSkylake,
        ..SimConfig::default()
    }));
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let pid = child.id();
    sim.spawn(pid as i32, 1, true, "/bin/sleep");
    let backend = pmc_freebsd::Backend::with_sys(sim.clone()).expect("the simulator");
    let c = PmcCollector::processes_on(
        backend,
        &["instructions", "branches"],
        pmc_exporter::Selector::Pid(pid),
    )
    .expect("process PMCs on the simulator");
    let mut registry = Registry::default();
    registry.register_collector(Box::new(c));
    let first = render(&registry, Format::PrometheusText).expect("render");
    let series = |name: &str| format!("{name}{{pid=\"{pid}\",comm=\"sleep\"}}");
    let ins = series("pmc_process_instructions_total");
    assert_eq!(value(&first, &ins), Some(0.0), "{first}");
    sim.run(Work {
        pid: pid as i32,
        cpu: 0,
        nanos: 1_000_000,
        instructions: 7_000_000,
        branches: 900_000,
        ..Work::default()
    });
    // Another process's work is not its.
    sim.run(Work {
        pid: 4242,
        cpu: 1,
        nanos: 1_000_000,
        instructions: 5_000_000,
        ..Work::default()
    });
    let text = render(&registry, Format::PrometheusText).expect("render");
    assert_eq!(value(&text, &ins), Some(7_000_000.0), "{text}");
    assert_eq!(
        value(&text, &series("pmc_process_branches_total")),
        Some(900_000.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "pmc_process_exporter_targets"),
        Some(1.0),
        "{text}"
    );
    let _ = child.kill();
    let _ = child.wait();
    sim.exit(pid as i32);
    let gone = render(&registry, Format::PrometheusText).expect("render");
    assert!(!gone.contains(&ins), "{gone}");
}
