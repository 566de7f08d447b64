//! Performance counters for Prometheus: a [`prometheus_client`] collector that
//! reads pmc counters when it is scraped, and (feature `server`) an HTTP server for it
//! made to stay up beside hostile clients.
//!
//! [`PmcCollector`] (this process, the system, or [`Selector`]-chosen processes) is the
//! collector; `serve` / `bind` (feature `server`) / [`render`] answer `/metrics`; [`metric_name`] names the
//! series. Details and an example follow.
//!
//! - [`PmcCollector::this_process`]: a Rust service registers it in its own
//!   [`Registry`](prometheus_client::registry::Registry) to export its own process's counters (every thread, and the
//!   threads it starts later).
//! - [`PmcCollector::system`]: per-CPU system-wide counters (`cpu` label);
//!   `pmcstat --metrics` serves it.
//! - [`PmcCollector::processes`]: per-process counters for a pid or for every
//!   process whose command name matches a pattern (`pid` and `comm` labels),
//!   attached as they appear, at most [`PmcCollector::max_targets`] of them.
//!
//! Reads happen at scrape time, one group read per target (a CPU or a process),
//! with no background thread. Counts are scaled for multiplexing and exported
//! as monotonic `_total` counters; time events (`cpu-clock`, `task-clock`) in
//! seconds; each event's time enabled and running beside them; IPC and miss
//! ratios as gauges where their events are counted. The series are listed in
//! pmcstat's reference, `docs/pmcstat.md` ("Prometheus exporter").
//!
//! `serve` (feature `server`: hyper 1 and tokio, about 40 s more of a first build; a program
//! that serves its own registry leaves it off and calls [`render`]) answers `/metrics` in
//! OpenMetrics 1.0 or the Prometheus text format 0.0.4, by the request's `Accept` header,
//! within bounds on connections, time and memory (`Limits`).
//!
//! ```no_run
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let collector = pmc_exporter::PmcCollector::this_process(&["task-clock", "page-faults"])?;
//! registry.register_collector(Box::new(collector));
//! let text = pmc_exporter::render(&registry, pmc_exporter::Format::OpenMetrics)
//!     .expect("prometheus_client encodes into a String");
//! assert!(text.contains("pmc_process_page_faults_total"));
//!
//! // Or serve it, until the flag is set (a signal handler, a shutdown path).
//! let stop = std::sync::atomic::AtomicBool::new(false);
//! pmc_exporter::serve(&registry, "127.0.0.1:9464", &|| stop.load(std::sync::atomic::Ordering::Relaxed))?;
//! # Ok::<(), pmc::Error>(())
//! ```
#![warn(unreachable_pub, unnameable_types)]
#![forbid(unsafe_code)]

mod cgroups;
mod collector;
mod http;
mod names;
mod selfmetrics;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "tls")]
mod webconfig;

pub use collector::{Labels, PmcCollector, Selector, DEFAULT_MAX_TARGETS};
pub use http::{render, Format};
pub use names::metric_name;
pub use selfmetrics::SelfCollector;
#[cfg(feature = "server")]
pub use server::{bind, serve, Limits, Listener};
#[cfg(feature = "tls")]
pub use webconfig::WebConfig;
