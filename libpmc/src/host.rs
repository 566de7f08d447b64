//! The machine as this library describes it (`pmc_cpuinfo`, `pmc_ncpu`, the
//! hardware class, the `pmc_pmu_*` table), asked of those that already read it:
//! the CPU of pmc-events (CPUID) or of the backend's one `/proc/cpuinfo` reader,
//! the PMU and the online CPUs of the backend's facts. The one module whose
//! answers depend on the OS: Linux's are the backend's; elsewhere (a build
//! target only: FreeBSD has its own libpmc) the CPU is CPUID's, no hardware
//! class, every CPU online.

use std::sync::OnceLock;

use pmc_events::CpuId;

/// pmc_start(3)'s `EDOOFUS` ("a PMC that requires a log file and no log file
/// was configured"): FreeBSD's own; on Linux, which has none, `EBADFD`, the
/// value `<pmc.h>` defines `EDOOFUS` as there.
#[cfg(target_os = "freebsd")]
pub(crate) const EDOOFUS: i32 = libc::EDOOFUS;
/// pmc_start(3)'s `EDOOFUS` ("a PMC that requires a log file and no log file
/// was configured"): FreeBSD's own; on Linux, which has none, `EBADFD`, the
/// value `<pmc.h>` defines `EDOOFUS` as there.
#[cfg(not(target_os = "freebsd"))]
pub(crate) const EDOOFUS: i32 = libc::EBADFD;

/// This machine's CPU, found once: CPUID on x86_64, else the backend's
/// `/proc/cpuinfo`.
pub(crate) fn cpu() -> Option<CpuId> {
    static HOST: OnceLock<Option<CpuId>> = OnceLock::new();
    *HOST.get_or_init(|| pmc_events::sys::host().or_else(os::cpu_from_kernel))
}

/// Whether the kernel drives a core hardware PMU (the backend's test: `cpu`,
/// `cpu_core`/`cpu_atom` or an Arm PMU under `/sys/bus/event_source/devices`).
pub(crate) fn has_hardware_pmu() -> bool {
    os::has_hardware_pmu()
}

/// CPUs configured, online or not, as FreeBSD's `mp_maxid + 1` counts them
/// (0 when unknown).
pub(crate) fn cpus_configured() -> u32 {
    os::cpus_configured()
}

/// Whether CPU `cpu` is online (the backend's reading of
/// `/sys/devices/system/cpu/online`). FreeBSD's hwpmc: "a disabled or absent
/// CPU" is ENXIO.
pub(crate) fn cpu_online(cpu: u32) -> bool {
    os::cpu_online(cpu)
}

#[cfg(target_os = "linux")]
mod os {
    use pmc_events::CpuId;
    use pmc_facade::native::{env, RealSys, Sys as _};

    pub(super) fn cpu_from_kernel() -> Option<CpuId> {
        CpuId::from_proc_cpuinfo(&RealSys.cpuinfo())
    }

    pub(super) fn has_hardware_pmu() -> bool {
        env::has_hardware_pmu()
    }

    pub(super) fn cpus_configured() -> u32 {
        use nix::unistd::{sysconf, SysconfVar};
        sysconf(SysconfVar::_NPROCESSORS_CONF)
            .ok()
            .flatten()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    }

    pub(super) fn cpu_online(cpu: u32) -> bool {
        env::online_cpus().contains(&cpu)
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use pmc_events::CpuId;

    pub(super) fn cpu_from_kernel() -> Option<CpuId> {
        None
    }

    pub(super) fn has_hardware_pmu() -> bool {
        false
    }

    pub(super) fn cpus_configured() -> u32 {
        std::thread::available_parallelism().map_or(0, |n| u32::try_from(n.get()).unwrap_or(0))
    }

    pub(super) fn cpu_online(_cpu: u32) -> bool {
        true
    }
}
