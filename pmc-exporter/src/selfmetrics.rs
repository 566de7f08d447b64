//! The exporter's own process, as Prometheus client libraries export theirs
//! (`process_*`), and its `pmc_exporter_build_info`.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

/// A collector of this process's own figures, named as the Prometheus client libraries name
/// them (node_exporter has the same): `process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_threads`, `process_start_time_seconds` (each scrape: one
/// read of `/proc/self/stat`, kept open; the size of `/proc/self/fd`; `getrlimit`; each
/// left out where it cannot be read), and `pmc_exporter_build_info{version, os, arch}`
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
#[derive(Debug)]
pub struct SelfCollector {
    /// `/proc/self/stat`, opened once and read again from its start at each scrape (the
    /// kernel writes it anew for each read at offset 0): no path lookup per scrape.
    stat: Option<std::fs::File>,
}

impl Default for SelfCollector {
    fn default() -> SelfCollector {
        SelfCollector {
            stat: std::fs::File::open("/proc/self/stat").ok(),
        }
    }
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

/// `/proc/self/stat` read from its start through `file`.
fn read_stat(file: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt as _;
    let mut buf = vec![0u8; 1024];
    let mut len = 0;
    loop {
        let n = file.read_at(&mut buf[len..], len as u64).ok()?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            // A stat line is a few hundred bytes; a longer one is not what is expected.
            if buf.len() >= 64 * 1024 {
                return None;
            }
            buf.resize(buf.len() * 2, 0);
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// The open file descriptors: the size `stat(2)` gives `/proc/self/fd` (Linux 6.2 on: the
/// count, without listing them; the listing made each fd's dentry, a sixth of a scrape's
/// CPU), else its entries counted (those of older kernels, whose size is 0).
fn open_fds() -> Option<u64> {
    match std::fs::metadata("/proc/self/fd").map(|m| m.len()) {
        Ok(n) if n > 0 => Some(n),
        _ => std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
    }
}

/// One scrape's figures, as the Prometheus client libraries take them: one read of
/// `/proc/self/stat` (CPU time, threads, start time, virtual and resident size), the
/// count of `/proc/self/fd` ([`open_fds`]), and `RLIMIT_NOFILE`'s soft limit.
fn figures(stat_file: Option<&std::fs::File>) -> Figures {
    let stat = stat_file.and_then(read_stat).unwrap_or_default();
    // The fields after the command name's closing parenthesis, from field 3 (state) on.
    let after: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| after.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let cpu = field(14)
        .zip(field(15))
        .map(|(u, s)| (u + s) as f64 / TICKS);
    // The boot time, once: /proc/stat lists every CPU and interrupt, costly on a big machine.
    static BTIME: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let btime = *BTIME.get_or_init(|| {
        std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
    });
    static PAGE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let page = *PAGE.get_or_init(|| {
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .and_then(|p| u64::try_from(p).ok())
    });
    // rlim_t is u64 on Linux, i64 on FreeBSD.
    #[allow(clippy::useless_conversion, clippy::unnecessary_fallible_conversions)]
    let max_fds = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
        .filter(|&soft| soft != nix::sys::resource::RLIM_INFINITY)
        .and_then(|soft| u64::try_from(soft).ok());
    Figures {
        cpu,
        rss: field(24).zip(page).map(|(p, size)| p * size),
        vsize: field(23),
        threads: field(20),
        fds: open_fds(),
        max_fds,
        start: btime
            .zip(field(22))
            .map(|(b, s)| b as f64 + s as f64 / TICKS),
    }
}

impl Collector for SelfCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let f = figures(self.stat.as_ref());
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A `/proc/self/status` field (kB for sizes).
    fn status(key: &str) -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").expect("status");
        s.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect(key)
    }

    /// The figures agree with the kernel's other views of the process: `/proc/self/status`
    /// (sizes, threads), `/proc/self/limits`, the entries of `/proc/self/fd`.
    #[test]
    fn figures_agree_with_status_limits_and_the_fd_listing() {
        let c = SelfCollector::default();
        let f = figures(c.stat.as_ref());
        let near = |a: u64, b: u64| a.abs_diff(b) <= b / 10 + (1 << 20);
        let rss = f.rss.expect("rss");
        let vsize = f.vsize.expect("vsize");
        assert!(near(rss, status("VmRSS:") * 1024), "rss {rss}");
        assert!(near(vsize, status("VmSize:") * 1024), "vsize {vsize}");
        let threads = f.threads.expect("threads");
        assert!(
            threads.abs_diff(status("Threads:")) <= 4,
            "threads {threads}"
        );
        let soft: Option<u64> = std::fs::read_to_string("/proc/self/limits")
            .expect("limits")
            .lines()
            .find_map(|l| l.strip_prefix("Max open files"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok());
        assert_eq!(f.max_fds, soft);
        // The listing holds its own descriptor of the directory too.
        let listed = std::fs::read_dir("/proc/self/fd").expect("fd").count() as u64;
        let fds = f.fds.expect("fds");
        assert!(fds.abs_diff(listed) <= 4, "fds {fds}, listed {listed}");
        assert!(f.cpu.is_some() && f.start.is_some_and(|s| s > 1e9));
    }
}
