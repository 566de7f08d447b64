//! The exporter's own process, as Prometheus client libraries export theirs
//! (`process_*`), and its `pmc_exporter_build_info`.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// A collector of this process's own figures, named as the Prometheus client libraries name
/// them (node_exporter has the same): `process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_threads`, `process_start_time_seconds` (Linux's `/proc/self`;
/// each left out where it cannot be read), and `pmc_exporter_build_info{version, os, arch}`
/// (always).
///
/// ```
/// let mut registry = prometheus_client::registry::Registry::default();
/// registry.register_collector(Box::new(pmc_exporter::SelfCollector::default()));
/// let text = pmc_exporter::render(&registry, pmc_exporter::Format::PrometheusText)?;
/// assert!(text.contains("pmc_exporter_build_info{"));
/// # #[cfg(target_os = "linux")]
/// assert!(text.contains("process_cpu_seconds_total "));
/// # Ok::<(), std::fmt::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct SelfCollector {
    _private: (),
}

/// USER_HZ: the unit of `/proc` CPU times (100 on every Linux architecture pmc builds for).
const TICKS: f64 = 100.0;

struct Figures {
    cpu: Option<f64>,
    rss: Option<u64>,
    vsize: Option<u64>,
    threads: Option<u64>,
    fds: Option<u64>,
    max_fds: Option<u64>,
    start: Option<f64>,
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn figures() -> Figures {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name's closing parenthesis, from field 3 (state) on.
    let after: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| after.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let cpu = field(14)
        .zip(field(15))
        .map(|(u, s)| (u + s) as f64 / TICKS);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // The boot time, once: /proc/stat lists every CPU and interrupt, costly on a big machine.
    static BTIME: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let btime = *BTIME.get_or_init(|| {
        std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
    });
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find_map(|l| l.strip_prefix("Max open files"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        });
    Figures {
        cpu,
        rss: status_kib(&status, "VmRSS:").map(|k| k * 1024),
        vsize: status_kib(&status, "VmSize:").map(|k| k * 1024),
        threads: status_kib(&status, "Threads:"),
        fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
        max_fds,
        start: btime
            .zip(field(22))
            .map(|(b, s)| b as f64 + s as f64 / TICKS),
    }
}

impl Collector for SelfCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let f = figures();
        if let Some(v) = f.cpu {
            let mut m = encoder.encode_descriptor(
                "process_cpu",
                "Total user and system CPU time spent in seconds.",
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            m.encode_counter::<NoLabelSet, f64, f64>(&v, None)?;
        }
        for (name, help, unit, v) in [
            (
                "process_resident_memory",
                "Resident memory size in bytes.",
                Some(Unit::Bytes),
                f.rss,
            ),
            (
                "process_virtual_memory",
                "Virtual memory size in bytes.",
                Some(Unit::Bytes),
                f.vsize,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                None,
                f.fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                None,
                f.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                None,
                f.threads,
            ),
        ] {
            if let Some(v) = v {
                let mut m =
                    encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
                m.encode_gauge(&(v as i64))?;
            }
        }
        if let Some(v) = f.start {
            let mut m = encoder.encode_descriptor(
                "process_start_time",
                "Start time of the process since unix epoch in seconds.",
                Some(&Unit::Seconds),
                MetricType::Gauge,
            )?;
            m.encode_gauge(&v)?;
        }
        let m = encoder.encode_descriptor(
            "pmc_exporter_build",
            "A metric with a constant '1' value labeled by the version, OS and architecture pmc was built for.",
            None,
            MetricType::Info,
        )?;
        let labels = [
            ("version", env!("CARGO_PKG_VERSION")),
            ("os", std::env::consts::OS),
            ("arch", std::env::consts::ARCH),
        ];
        let mut m = m;
        m.encode_info(&labels)?;
        Ok(())
    }
}
