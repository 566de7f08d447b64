//! Facts about this machine that decide what can be counted, read from
//! `/proc` and `/sys` (never cached: they can change at run time).

use std::path::Path;

/// `CAP_SYS_ADMIN`'s bit number.
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON`'s bit number (Linux 5.8+).
pub const CAP_PERFMON: u32 = 38;

/// `kernel.perf_event_paranoid`, from `/proc/sys/kernel/perf_event_paranoid`.
///
/// | level | unprivileged users may |
/// |---|---|
/// | -1 | everything, raw tracepoints included |
/// | 0 | CPU-wide (system) events, no raw tracepoint access |
/// | 1 | kernel and user profiling of their own processes |
/// | 2 | user-space-only profiling of their own processes |
/// | 3+ (Debian, Android) | nothing |
pub fn paranoid_level() -> Option<i32> {
    read_trimmed("/proc/sys/kernel/perf_event_paranoid")?
        .parse()
        .ok()
}

/// `kernel.perf_event_max_sample_rate`.
pub fn max_sample_rate() -> Option<u64> {
    read_trimmed("/proc/sys/kernel/perf_event_max_sample_rate")?
        .parse()
        .ok()
}

/// `kernel.perf_event_mlock_kb`.
pub fn mlock_kb() -> Option<u64> {
    read_trimmed("/proc/sys/kernel/perf_event_mlock_kb")?
        .parse()
        .ok()
}

/// Whether the process has CAP_PERFMON or CAP_SYS_ADMIN in its effective set.
pub fn has_perfmon() -> bool {
    crate::sys::effective_caps()
        .is_some_and(|c| c & (1 << CAP_PERFMON) != 0 || c & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether the kernel exposes a core hardware PMU (`/sys/bus/event_source/devices/cpu`,
/// or `cpu_core`/`cpu_atom` on hybrid Intel, or an `armv8_*` PMU). VMs without a
/// virtual PMU have none.
pub fn has_hardware_pmu() -> bool {
    let dir = Path::new("/sys/bus/event_source/devices");
    if ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .any(|p| dir.join(p).exists())
    {
        return true;
    }
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("armv8") || n.starts_with("armv7") || n.contains("_pmu")
        })
    })
}

/// The CPUs that are online, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Vec<u32> {
    match read_trimmed("/sys/devices/system/cpu/online").map(|s| pmc_core::Cpus::parse_list(&s)) {
        Some(Ok(pmc_core::Cpus::One(c))) => vec![c],
        Some(Ok(pmc_core::Cpus::List(l))) => l,
        _ => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        }
    }
}

pub(crate) fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    Some(s.trim().to_owned())
}

/// `RLIMIT_MEMLOCK`'s soft limit in bytes, or `None` when unlimited.
pub fn memlock_limit() -> Option<u64> {
    crate::sys::rlimit_soft(crate::sys::Rlimit::MemLock)
}
