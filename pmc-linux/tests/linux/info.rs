//! `list_events(true)` lists every tracepoint in tracefs and decides their
//! availability with one probe per subsystem; checked here against opening
//! a sample of them one by one through the backend.
#![cfg(target_os = "linux")]

use pmc_core::info::{Availability, EventSource};
use pmc_core::{Allocation, Backend as _};
use pmc_linux::Backend;

#[test]
fn tracepoint_listing_agrees_with_opening_each() {
    let Some(root) = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(std::path::Path::new)
        .find(|d| d.join("events").is_dir())
    else {
        pmc_testkit::skip!("tracefs is not mounted");
        return;
    };
    let in_tracefs = std::fs::read_dir(root.join("events"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|sub| {
            std::fs::read_dir(sub.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|e| e.path().join("id").exists())
        .count();
    let b = Backend::open().unwrap();
    let listed: Vec<_> = b
        .list_events(true)
        .into_iter()
        .filter(|e| e.source == EventSource::Tracepoint)
        .collect();
    assert_eq!(listed.len(), in_tracefs, "every tracepoint is listed");
    // Every 53rd tracepoint, and every one of ftrace's (whose events differ).
    let sample = listed
        .iter()
        .enumerate()
        .filter(|(i, e)| i % 53 == 0 || e.name.starts_with("ftrace:"));
    let mut checked = 0;
    for (_, e) in sample {
        let opened = e
            .name
            .parse()
            .ok()
            .and_then(|spec| b.allocate(&Allocation::counting(spec)).ok())
            .is_some();
        let available = e.availability == Availability::Available;
        assert_eq!(opened, available, "{}: listed {:?}", e.name, e.availability);
        checked += 1;
    }
    assert!(checked > 10, "{checked} tracepoints checked");
}
