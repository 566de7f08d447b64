//! The machine's facts the error messages and attr defaults depend on, read through a [`Sys`]
//! (`/proc`, `/sys`, `getrlimit`), so the fake kernel can answer them too.

use std::path::Path;

use super::{Rlimit, Sys};

/// `CAP_SYS_ADMIN`'s bit number.
pub(crate) const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON`'s bit number (Linux 5.8+).
pub(crate) const CAP_PERFMON: u32 = 38;

/// Where the kernel lists its PMUs.
pub(crate) const PMU_DIR: &str = "/sys/bus/event_source/devices";

/// The facts the errno mapping depends on, read from the machine (or given, in tests).
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    /// `kernel.perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// CAP_PERFMON or CAP_SYS_ADMIN.
    pub privileged: bool,
    /// A hardware PMU exists.
    pub has_pmu: bool,
    /// `RLIMIT_NOFILE` soft limit.
    pub nofile: Option<u64>,
    /// `kernel.perf_event_max_sample_rate`.
    pub max_sample_rate: Option<u64>,
    /// Number of online CPUs.
    pub ncpus: usize,
}

impl Facts {
    /// Reads the facts through `sys`.
    pub(crate) fn probe(sys: &(impl Sys + ?Sized)) -> Facts {
        Facts {
            paranoid: paranoid_level(sys),
            privileged: has_perfmon(sys),
            has_pmu: has_hardware_pmu(sys),
            nofile: sys.rlimit_soft(Rlimit::NoFile),
            max_sample_rate: max_sample_rate(sys),
            ncpus: sys.online_cpus().len(),
        }
    }
}

/// A `/proc` or `/sys` file's text, trimmed; `None` if it cannot be read.
pub(crate) fn read_trimmed(sys: &(impl Sys + ?Sized), path: impl AsRef<Path>) -> Option<String> {
    let b = sys.read_file(path.as_ref()).ok()?;
    Some(String::from_utf8_lossy(&b).trim().to_owned())
}

/// `kernel.perf_event_paranoid`.
pub(crate) fn paranoid_level(sys: &(impl Sys + ?Sized)) -> Option<i32> {
    read_trimmed(sys, "/proc/sys/kernel/perf_event_paranoid")?
        .parse()
        .ok()
}

/// `kernel.perf_event_max_sample_rate`.
pub(crate) fn max_sample_rate(sys: &(impl Sys + ?Sized)) -> Option<u64> {
    read_trimmed(sys, "/proc/sys/kernel/perf_event_max_sample_rate")?
        .parse()
        .ok()
}

/// `kernel.perf_event_mlock_kb`.
pub(crate) fn mlock_kb(sys: &(impl Sys + ?Sized)) -> Option<u64> {
    read_trimmed(sys, "/proc/sys/kernel/perf_event_mlock_kb")?
        .parse()
        .ok()
}

/// The process's effective capabilities from `/proc/self/status` (`CapEff`).
pub(crate) fn effective_caps(sys: &(impl Sys + ?Sized)) -> Option<u64> {
    let s = sys.read_file(Path::new("/proc/self/status")).ok()?;
    let s = String::from_utf8_lossy(&s);
    let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

/// Whether the process has CAP_PERFMON or CAP_SYS_ADMIN in its effective set.
pub(crate) fn has_perfmon(sys: &(impl Sys + ?Sized)) -> bool {
    effective_caps(sys)
        .is_some_and(|c| c & (1 << CAP_PERFMON) != 0 || c & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether the process has `CAP_IPC_LOCK`: the kernel then maps ring buffers beyond
/// `perf_event_mlock_kb` and `RLIMIT_MEMLOCK` (`perf_mmap`).
#[cfg(feature = "sampling")]
pub(crate) fn has_ipc_lock(sys: &(impl Sys + ?Sized)) -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    effective_caps(sys).is_some_and(|c| c & (1 << CAP_IPC_LOCK) != 0)
}

/// Whether the kernel exposes a core hardware PMU (`cpu`, or `cpu_core`/`cpu_atom` on hybrid
/// Intel, or an `armv8_*` PMU). VMs without a virtual PMU have none.
pub(crate) fn has_hardware_pmu(sys: &(impl Sys + ?Sized)) -> bool {
    let dir = Path::new(PMU_DIR);
    if ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .any(|p| sys.metadata(&dir.join(p)).is_ok())
    {
        return true;
    }
    sys.read_dir(dir).is_ok_and(|names| {
        names
            .iter()
            .any(|n| n.starts_with("armv8") || n.starts_with("armv7") || n.contains("_pmu"))
    })
}

/// The CPUs that are online, from `/sys/devices/system/cpu/online` (every CPU the standard
/// library sees when it cannot be read).
pub(crate) fn online_cpus(sys: &(impl Sys + ?Sized)) -> Vec<u32> {
    match read_trimmed(sys, "/sys/devices/system/cpu/online")
        .map(|s| pmc_core::Cpus::parse_list(&s))
    {
        Some(Ok(pmc_core::Cpus::One(c))) => vec![c],
        Some(Ok(pmc_core::Cpus::List(l))) => l,
        _ => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        }
    }
}
