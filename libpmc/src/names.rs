//! The names `pmc_name_of_*` return: libpmc's tables (`libpmc.c`'s
//! `pmc_class_names`, `pmc_mode_names`... built from `<sys/pmc.h>`'s
//! `__PMC_*` lists, each the symbol's name without its prefix).

use std::ffi::CStr;

/// `pmc_name_of_capability`: one capability bit's name.
pub(crate) fn capability(bit: u32) -> Option<&'static CStr> {
    if !bit.is_power_of_two() {
        return None;
    }
    const NAMES: [&CStr; 14] = [
        c"INTERRUPT",
        c"USER",
        c"SYSTEM",
        c"EDGE",
        c"THRESHOLD",
        c"READ",
        c"WRITE",
        c"INVERT",
        c"QUALIFIER",
        c"PRECISE",
        c"TAGGING",
        c"CASCADE",
        c"SYSWIDE",
        c"DOMWIDE",
    ];
    NAMES.get(bit.trailing_zeros() as usize).copied()
}

/// `pmc_name_of_class`.
pub(crate) fn class(c: u32) -> Option<&'static CStr> {
    Some(match c {
        0x00 => c"TSC",
        0x02 => c"K8",
        0x03 => c"IBS",
        0x06 => c"IAF",
        0x07 => c"IAP",
        0x08 => c"UCF",
        0x09 => c"UCP",
        0x0D => c"PPC7450",
        0x0E => c"PPC970",
        0x0F => c"SOFT",
        0x10 => c"ARMV7",
        0x11 => c"ARMV8",
        0x13 => c"E500",
        0x15 => c"POWER8",
        0x16 => c"DMC620_PMU_CD2",
        0x17 => c"DMC620_PMU_C",
        0x18 => c"CMN600_PMU",
        0x19 => c"RAPL",
        0x1A => c"PERF",
        _ => return None,
    })
}

/// `pmc_name_of_mode`.
pub(crate) fn mode(m: u32) -> Option<&'static CStr> {
    [c"SS", c"SC", c"TS", c"TC"].get(m as usize).copied()
}

/// `pmc_name_of_state`.
pub(crate) fn state(s: u32) -> Option<&'static CStr> {
    [
        c"DISABLED",
        c"FREE",
        c"ALLOCATED",
        c"STOPPED",
        c"RUNNING",
        c"DELETED",
    ]
    .get(s as usize)
    .copied()
}

/// `pmc_name_of_disposition`.
pub(crate) fn disposition(d: u32) -> Option<&'static CStr> {
    [c"STANDALONE", c"FREE", c"THREAD", c"UNKNOWN"]
        .get(d as usize)
        .copied()
}

/// `pmc_name_of_cputype`.
pub(crate) fn cputype(t: u32) -> Option<&'static CStr> {
    Some(match t {
        0x01 => c"AMD_K8",
        0x87 => c"INTEL_CORE",
        0x88 => c"INTEL_CORE2",
        0x89 => c"INTEL_CORE2EXTREME",
        0x8A => c"INTEL_ATOM",
        0x8B => c"INTEL_COREI7",
        0x8C => c"INTEL_WESTMERE",
        0x8D => c"INTEL_SANDYBRIDGE",
        0x8E => c"INTEL_IVYBRIDGE",
        0x8F => c"INTEL_SANDYBRIDGE_XEON",
        0x90 => c"INTEL_IVYBRIDGE_XEON",
        0x91 => c"INTEL_HASWELL",
        0x92 => c"INTEL_ATOM_SILVERMONT",
        0x93 => c"INTEL_NEHALEM_EX",
        0x94 => c"INTEL_WESTMERE_EX",
        0x95 => c"INTEL_HASWELL_XEON",
        0x96 => c"INTEL_BROADWELL",
        0x97 => c"INTEL_BROADWELL_XEON",
        0x98 => c"INTEL_SKYLAKE",
        0x99 => c"INTEL_SKYLAKE_XEON",
        0x9A => c"INTEL_ATOM_GOLDMONT",
        0x9B => c"INTEL_ICELAKE",
        0x9C => c"INTEL_ICELAKE_XEON",
        0x9D => c"INTEL_ALDERLAKE",
        0x9E => c"INTEL_ATOM_GOLDMONT_P",
        0x9F => c"INTEL_ATOM_TREMONT",
        0xA0 => c"INTEL_EMERALD_RAPIDS",
        0xA1 => c"INTEL_ALDERLAKEN",
        0xA2 => c"INTEL_GRANITE_RAPIDS",
        0xA3 => c"INTEL_METEOR_LAKE",
        0xA4 => c"INTEL_SAPPHIRE_RAPIDS",
        0x300 => c"PPC_7450",
        0x340 => c"PPC_E500",
        0x380 => c"PPC_970",
        0x390 => c"PPC_POWER8",
        0x400 => c"GENERIC",
        0x500 => c"ARMV7_CORTEX_A5",
        0x501 => c"ARMV7_CORTEX_A7",
        0x502 => c"ARMV7_CORTEX_A8",
        0x503 => c"ARMV7_CORTEX_A9",
        0x504 => c"ARMV7_CORTEX_A15",
        0x505 => c"ARMV7_CORTEX_A17",
        0x600 => c"ARMV8_CORTEX_A53",
        0x601 => c"ARMV8_CORTEX_A57",
        0x602 => c"ARMV8_CORTEX_A76",
        _ => return None,
    })
}

/// The SOFT events of FreeBSD's kernel that Linux can count, in code order
/// from `PMC_EV_SOFT_FIRST` (the kernel hands SOFT codes out as it
/// registers them; these are this library's). Linux's other software events
/// (`context-switches`, `minor-faults`...) and tracepoints are SOFT too, with
/// codes from `PMC_EV_LINUX_FIRST`.
pub(crate) const SOFT_EVENTS: [&CStr; 4] = [
    c"SOFT-PAGE_FAULT.ALL",
    c"SOFT-CLOCK.HARD",
    c"SOFT-CLOCK.STAT",
    c"SOFT-CLOCK.PROF",
];

/// The SOFT code of a FreeBSD SOFT name (`SOFT-PAGE_FAULT.ALL`,
/// `PAGE_FAULT.ALL`, any case), if it is one of [`SOFT_EVENTS`].
pub(crate) fn soft_code(spec: &str) -> Option<u32> {
    let up = spec.to_ascii_uppercase().replace('_', "-");
    let bare = up.strip_prefix("SOFT-").unwrap_or(&up);
    SOFT_EVENTS
        .iter()
        .position(|n| {
            let n = n.to_str().unwrap_or("").replace('_', "-");
            n.strip_prefix("SOFT-") == Some(bare)
        })
        .and_then(|i| u32::try_from(i).ok())
        .map(|i| 0x20000 + i)
}

/// `pmc_name_of_event` for the fixed codes of `enum pmc_event`.
pub(crate) fn fixed_event(e: u32) -> Option<&'static CStr> {
    Some(match e {
        0x1000 => c"TSC",
        0x2000 => c"IBS_FETCH",
        0x2001 => c"IBS_OP",
        0x2098 => c"K8_BU_CPU_CLK_UNHALTED",
        0x20A6 => c"K8_FR_RETIRED_X86_INSTRUCTIONS",
        0x10000 => c"INSTR_RETIRED_ANY",
        0x10001 => c"CPU_CLK_UNHALTED_CORE",
        0x10002 => c"CPU_CLK_UNHALTED_REF",
        0x14700 => c"RAPL_ENERGY_PKG",
        0x14701 => c"RAPL_ENERGY_CORES",
        0x14702 => c"RAPL_ENERGY_DRAM",
        0x14800 => c"MPERF",
        0x14801 => c"APERF",
        _ => {
            let i = e.checked_sub(0x20000)? as usize;
            return SOFT_EVENTS.get(i).copied();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_libpmc_tables() {
        assert_eq!(capability(1 << 5), Some(c"READ"));
        assert_eq!(capability(3), None);
        assert_eq!(capability(0), None);
        assert_eq!(capability(1 << 14), None);
        assert_eq!(class(0x0F), Some(c"SOFT"));
        assert_eq!(class(0x01), None);
        assert_eq!(mode(3), Some(c"TC"));
        assert_eq!(mode(4), None);
        assert_eq!(state(4), Some(c"RUNNING"));
        assert_eq!(disposition(2), Some(c"THREAD"));
        assert_eq!(cputype(0x400), Some(c"GENERIC"));
        assert_eq!(fixed_event(0x20000), Some(c"SOFT-PAGE_FAULT.ALL"));
        assert_eq!(fixed_event(0x20000 + 4), None);
        assert_eq!(soft_code("page_fault.all"), Some(0x20000));
        assert_eq!(soft_code("SOFT-CLOCK.PROF"), Some(0x20003));
        assert_eq!(soft_code("page-faults"), None);
    }
}
