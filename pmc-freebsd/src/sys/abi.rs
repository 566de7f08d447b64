//! Raw hwpmc(4) ABI: the `PMC_OP_*` argument structs, the machine-dependent
//! allocation unions, and the constants of `sys/sys/pmc.h`,
//! `sys/amd64/include/pmc_mdep.h`, `sys/arm64/include/pmc_mdep.h` and
//! `sys/sys/pmclog.h` (FreeBSD 16.0-CURRENT, `PMC_VERSION` 0x0A030000; the
//! layouts are unchanged since 0x09030000).
//!
//! In file order: the scalar types ([`pmc_id_t`], ...), [`PMC_VERSION`] and its kin, the
//! `PMC_OP_*` numbers ([`PMC_OP_PMCALLOCATE`], ...), then each op's argument struct.
//!
//! This module is the workspace's one Rust declaration of hwpmc's ABI (the
//! log format's constants are pmc-log's, re-exported below); libpmc's C
//! headers come from their own table, tied to this module by the
//! `owner_ties` of libpmc's generated ABI.
//!
//! Items keep their exact C names so a search by C name finds them. Every
//! struct uses fixed-width integer types (never libc's OS-dependent ones), so
//! the definitions are identical on every host OS and can be layout-tested on
//! Linux. The sizes and offsets are pinned by compile-time assertions below
//! and by the table-driven tests in `tests/abi_layout.rs`.
//!
//! # References
//! hwpmc(4), pmc(3), `sys/sys/pmc.h`.
#![allow(non_camel_case_types, non_upper_case_globals)]

use core::mem::size_of;
#[cfg(target_pointer_width = "64")]
use core::mem::{align_of, offset_of};
use pmc_log::bytes::ByteCursor;

/// `pmc_id_t`: an opaque PMC handle returned by `PMC_OP_PMCALLOCATE`.
pub type pmc_id_t = u32;
/// `pmc_value_t`: a 64-bit counter value.
pub type pmc_value_t = u64;
/// `pid_t` on FreeBSD (`__int32_t`).
pub type fbsd_pid_t = i32;

// ---------------------------------------------------------------------------
// Versions and limits
// ---------------------------------------------------------------------------

/// `PMC_VERSION_MAJOR`.
pub const PMC_VERSION_MAJOR: u32 = 0x0A;
/// `PMC_VERSION_MINOR`.
pub const PMC_VERSION_MINOR: u32 = 0x03;
/// `PMC_VERSION_PATCH`.
pub const PMC_VERSION_PATCH: u32 = 0x0000;
/// `PMC_VERSION`: the ABI version this crate was written against.
pub const PMC_VERSION: u32 =
    (PMC_VERSION_MAJOR << 24) | (PMC_VERSION_MINOR << 16) | PMC_VERSION_PATCH;
/// `PMC_VERSION` of FreeBSD's 0x09 trees: the 2020 13-CURRENT tree,
/// `sobomax/freebsd14_vendor` and an `opnsense/src` tree of the 2023+ era
/// (Alder Lake cputypes, SPDX headers) all read 0x09030000 in
/// `sys/sys/pmc.h`, with the old PMC id layout (`PMC_ID_MAKE_ID`: mode 8 bits
/// at 12, class 4 bits at 8), no `PMC_F_EV_PMU`, no `PMC_OP_GETCAPS`, and
/// the legacy PROCEXEC record in `sys/sys/pmclog.h`. That is what a FreeBSD
/// 14.x kernel most likely reports; no 14-stable/releng-14 `pmc.h` was among
/// the stored sources, so it is not verified against a release branch.
/// The argument structs are the same as 0x0A's (checked in `abi-amd64.json`
/// field by field for 0x0A only).
pub const PMC_VERSION_0X09: u32 = 0x0903_0000;
/// `PMC_MODULE_NAME`: the name to pass to `modfind(2)`.
pub const PMC_MODULE_NAME: &str = "hwpmc";
/// `PMC_NAME_MAX`.
pub const PMC_NAME_MAX: usize = 64;
/// `PMC_CLASS_MAX`: bound of `pmc_op_getcpuinfo::pm_classes`.
pub const PMC_CLASS_MAX: usize = 8;
/// `PMC_CPUID_LEN`.
pub const PMC_CPUID_LEN: usize = 64;
/// `PMC_EV_DYN_COUNT`: bound of `pmc_op_getdyneventinfo::pm_events`.
pub const PMC_EV_DYN_COUNT: usize = 0x1000;
/// `PMC_CPU_ANY`: "any CPU", required for process-mode allocations.
pub const PMC_CPU_ANY: u32 = !0;
/// `PMC_ID_INVALID`.
pub const PMC_ID_INVALID: pmc_id_t = !0;
/// `MAXMODNAME` (`sys/sys/module.h`).
pub const MAXMODNAME: usize = 32;

// ---------------------------------------------------------------------------
// enum pmc_ops
// ---------------------------------------------------------------------------

/// `PMC_OP_CONFIGURELOG`.
pub const PMC_OP_CONFIGURELOG: i32 = 0;
/// `PMC_OP_FLUSHLOG`.
pub const PMC_OP_FLUSHLOG: i32 = 1;
/// `PMC_OP_GETCPUINFO`.
pub const PMC_OP_GETCPUINFO: i32 = 2;
/// `PMC_OP_GETDRIVERSTATS`.
pub const PMC_OP_GETDRIVERSTATS: i32 = 3;
/// `PMC_OP_GETMODULEVERSION`.
pub const PMC_OP_GETMODULEVERSION: i32 = 4;
/// `PMC_OP_GETPMCINFO`.
pub const PMC_OP_GETPMCINFO: i32 = 5;
/// `PMC_OP_PMCADMIN`.
pub const PMC_OP_PMCADMIN: i32 = 6;
/// `PMC_OP_PMCALLOCATE`.
pub const PMC_OP_PMCALLOCATE: i32 = 7;
/// `PMC_OP_PMCATTACH`.
pub const PMC_OP_PMCATTACH: i32 = 8;
/// `PMC_OP_PMCDETACH`.
pub const PMC_OP_PMCDETACH: i32 = 9;
/// `PMC_OP_PMCGETMSR` (`PMC_OP_PMCX86GETMSR` in hwpmc(4)).
pub const PMC_OP_PMCGETMSR: i32 = 10;
/// `PMC_OP_PMCRELEASE`.
pub const PMC_OP_PMCRELEASE: i32 = 11;
/// `PMC_OP_PMCRW`.
pub const PMC_OP_PMCRW: i32 = 12;
/// `PMC_OP_PMCSETCOUNT`.
pub const PMC_OP_PMCSETCOUNT: i32 = 13;
/// `PMC_OP_PMCSTART`.
pub const PMC_OP_PMCSTART: i32 = 14;
/// `PMC_OP_PMCSTOP`.
pub const PMC_OP_PMCSTOP: i32 = 15;
/// `PMC_OP_WRITELOG`.
pub const PMC_OP_WRITELOG: i32 = 16;
/// `PMC_OP_CLOSELOG`.
pub const PMC_OP_CLOSELOG: i32 = 17;
/// `PMC_OP_GETDYNEVENTINFO`.
pub const PMC_OP_GETDYNEVENTINFO: i32 = 18;
/// `PMC_OP_GETCAPS` (new in the 0x0A03 era; older kernels answer `EINVAL`).
pub const PMC_OP_GETCAPS: i32 = 19;

// ---------------------------------------------------------------------------
// enum pmc_state, pmc_disp (enum pmc_mode: pmc-log's, re-exported below)
// ---------------------------------------------------------------------------

/// `PMC_STATE_DISABLED`.
pub const PMC_STATE_DISABLED: u32 = 0;
/// `PMC_STATE_FREE`.
pub const PMC_STATE_FREE: u32 = 1;
/// `PMC_STATE_ALLOCATED`.
pub const PMC_STATE_ALLOCATED: u32 = 2;
/// `PMC_STATE_STOPPED`.
pub const PMC_STATE_STOPPED: u32 = 3;
/// `PMC_STATE_RUNNING`.
pub const PMC_STATE_RUNNING: u32 = 4;
/// `PMC_STATE_DELETED`.
pub const PMC_STATE_DELETED: u32 = 5;
/// `PMC_STATE_MAX`.
pub const PMC_STATE_MAX: u32 = 6;

/// `PMC_DISP_STANDALONE`: row in use by system PMCs or partly disabled.
pub const PMC_DISP_STANDALONE: u32 = 0;
/// `PMC_DISP_FREE`: row free for either scope.
pub const PMC_DISP_FREE: u32 = 1;
/// `PMC_DISP_THREAD`: row reserved for process-scope PMCs.
pub const PMC_DISP_THREAD: u32 = 2;
/// `PMC_DISP_UNKNOWN`.
pub const PMC_DISP_UNKNOWN: u32 = 3;

// ---------------------------------------------------------------------------
// PMC_CAP_* (PMC_F_* and the callchain flags: pmc-log's, re-exported below)
// ---------------------------------------------------------------------------

/// `PMC_CAP_INTERRUPT`: can interrupt (sample).
pub const PMC_CAP_INTERRUPT: u32 = 1 << 0;
/// `PMC_CAP_USER`: can count user-mode events only.
pub const PMC_CAP_USER: u32 = 1 << 1;
/// `PMC_CAP_SYSTEM`: can count kernel-mode events only.
pub const PMC_CAP_SYSTEM: u32 = 1 << 2;
/// `PMC_CAP_EDGE`: edge detection.
pub const PMC_CAP_EDGE: u32 = 1 << 3;
/// `PMC_CAP_THRESHOLD`: counter mask / threshold.
pub const PMC_CAP_THRESHOLD: u32 = 1 << 4;
/// `PMC_CAP_READ`: readable.
pub const PMC_CAP_READ: u32 = 1 << 5;
/// `PMC_CAP_WRITE`: writable.
pub const PMC_CAP_WRITE: u32 = 1 << 6;
/// `PMC_CAP_INVERT`: invert the threshold comparison.
pub const PMC_CAP_INVERT: u32 = 1 << 7;
/// `PMC_CAP_QUALIFIER`: event qualifiers (unit masks).
pub const PMC_CAP_QUALIFIER: u32 = 1 << 8;
/// `PMC_CAP_PRECISE`.
pub const PMC_CAP_PRECISE: u32 = 1 << 9;
/// `PMC_CAP_TAGGING`.
pub const PMC_CAP_TAGGING: u32 = 1 << 10;
/// `PMC_CAP_CASCADE`.
pub const PMC_CAP_CASCADE: u32 = 1 << 11;
/// `PMC_CAP_SYSWIDE`: one counter per system (new).
pub const PMC_CAP_SYSWIDE: u32 = 1 << 12;
/// `PMC_CAP_DOMWIDE`: one counter per NUMA domain (new).
pub const PMC_CAP_DOMWIDE: u32 = 1 << 13;

// ---------------------------------------------------------------------------
// enum pmc_class
// ---------------------------------------------------------------------------

/// `PMC_CLASS_TSC`.
pub const PMC_CLASS_TSC: u32 = 0x00;
/// `PMC_CLASS_K8`: every AMD core/L3/DF counter.
pub const PMC_CLASS_K8: u32 = 0x02;
/// `PMC_CLASS_IBS`.
pub const PMC_CLASS_IBS: u32 = 0x03;
/// `PMC_CLASS_IAF`: Intel fixed-function counters.
pub const PMC_CLASS_IAF: u32 = 0x06;
/// `PMC_CLASS_IAP`: Intel programmable counters.
pub const PMC_CLASS_IAP: u32 = 0x07;
/// `PMC_CLASS_UCF`.
pub const PMC_CLASS_UCF: u32 = 0x08;
/// `PMC_CLASS_UCP`.
pub const PMC_CLASS_UCP: u32 = 0x09;
/// `PMC_CLASS_PPC7450`.
pub const PMC_CLASS_PPC7450: u32 = 0x0D;
/// `PMC_CLASS_PPC970`.
pub const PMC_CLASS_PPC970: u32 = 0x0E;
/// `PMC_CLASS_SOFT`: software events.
pub const PMC_CLASS_SOFT: u32 = 0x0F;
/// `PMC_CLASS_ARMV7`.
pub const PMC_CLASS_ARMV7: u32 = 0x10;
/// `PMC_CLASS_ARMV8`.
pub const PMC_CLASS_ARMV8: u32 = 0x11;
/// `PMC_CLASS_E500`.
pub const PMC_CLASS_E500: u32 = 0x13;
/// `PMC_CLASS_POWER8`.
pub const PMC_CLASS_POWER8: u32 = 0x15;
/// `PMC_CLASS_DMC620_PMU_CD2`.
pub const PMC_CLASS_DMC620_PMU_CD2: u32 = 0x16;
/// `PMC_CLASS_DMC620_PMU_C`.
pub const PMC_CLASS_DMC620_PMU_C: u32 = 0x17;
/// `PMC_CLASS_CMN600_PMU`.
pub const PMC_CLASS_CMN600_PMU: u32 = 0x18;
/// `PMC_CLASS_RAPL`.
pub const PMC_CLASS_RAPL: u32 = 0x19;
/// `PMC_CLASS_PERF` (APERF/MPERF).
pub const PMC_CLASS_PERF: u32 = 0x1A;

// ---------------------------------------------------------------------------
// enum pmc_cputype (selection)
// ---------------------------------------------------------------------------

/// `PMC_CPU_AMD_K8`: every modern AMD CPU.
pub const PMC_CPU_AMD_K8: u32 = 0x01;
/// `PMC_CPU_INTEL_CORE`.
pub const PMC_CPU_INTEL_CORE: u32 = 0x87;
/// `PMC_CPU_INTEL_CORE2`.
pub const PMC_CPU_INTEL_CORE2: u32 = 0x88;
/// `PMC_CPU_INTEL_CORE2EXTREME`.
pub const PMC_CPU_INTEL_CORE2EXTREME: u32 = 0x89;
/// `PMC_CPU_INTEL_ATOM`.
pub const PMC_CPU_INTEL_ATOM: u32 = 0x8A;
/// `PMC_CPU_INTEL_COREI7`.
pub const PMC_CPU_INTEL_COREI7: u32 = 0x8B;
/// `PMC_CPU_INTEL_WESTMERE`.
pub const PMC_CPU_INTEL_WESTMERE: u32 = 0x8C;
/// `PMC_CPU_INTEL_SANDYBRIDGE`.
pub const PMC_CPU_INTEL_SANDYBRIDGE: u32 = 0x8D;
/// `PMC_CPU_INTEL_IVYBRIDGE`.
pub const PMC_CPU_INTEL_IVYBRIDGE: u32 = 0x8E;
/// `PMC_CPU_INTEL_SANDYBRIDGE_XEON`.
pub const PMC_CPU_INTEL_SANDYBRIDGE_XEON: u32 = 0x8F;
/// `PMC_CPU_INTEL_IVYBRIDGE_XEON`.
pub const PMC_CPU_INTEL_IVYBRIDGE_XEON: u32 = 0x90;
/// `PMC_CPU_INTEL_HASWELL`.
pub const PMC_CPU_INTEL_HASWELL: u32 = 0x91;
/// `PMC_CPU_INTEL_ATOM_SILVERMONT`.
pub const PMC_CPU_INTEL_ATOM_SILVERMONT: u32 = 0x92;
/// `PMC_CPU_INTEL_NEHALEM_EX`.
pub const PMC_CPU_INTEL_NEHALEM_EX: u32 = 0x93;
/// `PMC_CPU_INTEL_WESTMERE_EX`.
pub const PMC_CPU_INTEL_WESTMERE_EX: u32 = 0x94;
/// `PMC_CPU_INTEL_HASWELL_XEON`.
pub const PMC_CPU_INTEL_HASWELL_XEON: u32 = 0x95;
/// `PMC_CPU_INTEL_BROADWELL`.
pub const PMC_CPU_INTEL_BROADWELL: u32 = 0x96;
/// `PMC_CPU_INTEL_BROADWELL_XEON`.
pub const PMC_CPU_INTEL_BROADWELL_XEON: u32 = 0x97;
/// `PMC_CPU_INTEL_SKYLAKE`.
pub const PMC_CPU_INTEL_SKYLAKE: u32 = 0x98;
/// `PMC_CPU_INTEL_SKYLAKE_XEON`.
pub const PMC_CPU_INTEL_SKYLAKE_XEON: u32 = 0x99;
/// `PMC_CPU_INTEL_ATOM_GOLDMONT`.
pub const PMC_CPU_INTEL_ATOM_GOLDMONT: u32 = 0x9A;
/// `PMC_CPU_INTEL_ICELAKE`.
pub const PMC_CPU_INTEL_ICELAKE: u32 = 0x9B;
/// `PMC_CPU_INTEL_ICELAKE_XEON`.
pub const PMC_CPU_INTEL_ICELAKE_XEON: u32 = 0x9C;
/// `PMC_CPU_INTEL_ALDERLAKE`.
pub const PMC_CPU_INTEL_ALDERLAKE: u32 = 0x9D;
/// `PMC_CPU_INTEL_ATOM_GOLDMONT_P`.
pub const PMC_CPU_INTEL_ATOM_GOLDMONT_P: u32 = 0x9E;
/// `PMC_CPU_INTEL_ATOM_TREMONT`.
pub const PMC_CPU_INTEL_ATOM_TREMONT: u32 = 0x9F;
/// `PMC_CPU_INTEL_EMERALD_RAPIDS`.
pub const PMC_CPU_INTEL_EMERALD_RAPIDS: u32 = 0xA0;
/// `PMC_CPU_INTEL_ALDERLAKEN`.
pub const PMC_CPU_INTEL_ALDERLAKEN: u32 = 0xA1;
/// `PMC_CPU_INTEL_GRANITE_RAPIDS`.
pub const PMC_CPU_INTEL_GRANITE_RAPIDS: u32 = 0xA2;
/// `PMC_CPU_INTEL_METEOR_LAKE`.
pub const PMC_CPU_INTEL_METEOR_LAKE: u32 = 0xA3;
/// `PMC_CPU_INTEL_SAPPHIRE_RAPIDS`.
pub const PMC_CPU_INTEL_SAPPHIRE_RAPIDS: u32 = 0xA4;
/// `PMC_CPU_PPC_7450`.
pub const PMC_CPU_PPC_7450: u32 = 0x300;
/// `PMC_CPU_PPC_E500`.
pub const PMC_CPU_PPC_E500: u32 = 0x340;
/// `PMC_CPU_PPC_970`.
pub const PMC_CPU_PPC_970: u32 = 0x380;
/// `PMC_CPU_PPC_POWER8`.
pub const PMC_CPU_PPC_POWER8: u32 = 0x390;
/// `PMC_CPU_GENERIC`: no hardware PMCs (TSC/SOFT only).
pub const PMC_CPU_GENERIC: u32 = 0x400;
/// `PMC_CPU_ARMV7_CORTEX_A5`.
pub const PMC_CPU_ARMV7_CORTEX_A5: u32 = 0x500;
/// `PMC_CPU_ARMV7_CORTEX_A7`.
pub const PMC_CPU_ARMV7_CORTEX_A7: u32 = 0x501;
/// `PMC_CPU_ARMV7_CORTEX_A8`.
pub const PMC_CPU_ARMV7_CORTEX_A8: u32 = 0x502;
/// `PMC_CPU_ARMV7_CORTEX_A9`.
pub const PMC_CPU_ARMV7_CORTEX_A9: u32 = 0x503;
/// `PMC_CPU_ARMV7_CORTEX_A15`.
pub const PMC_CPU_ARMV7_CORTEX_A15: u32 = 0x504;
/// `PMC_CPU_ARMV7_CORTEX_A17`.
pub const PMC_CPU_ARMV7_CORTEX_A17: u32 = 0x505;
/// `PMC_CPU_ARMV8_CORTEX_A53`.
pub const PMC_CPU_ARMV8_CORTEX_A53: u32 = 0x600;
/// `PMC_CPU_ARMV8_CORTEX_A57`.
pub const PMC_CPU_ARMV8_CORTEX_A57: u32 = 0x601;
/// `PMC_CPU_ARMV8_CORTEX_A76`.
pub const PMC_CPU_ARMV8_CORTEX_A76: u32 = 0x602;

// ---------------------------------------------------------------------------
// enum pmc_event anchors
// ---------------------------------------------------------------------------

/// `PMC_EV_TSC_TSC`.
pub const PMC_EV_TSC_TSC: u32 = 0x1000;
/// `PMC_EV_IBS_FETCH`.
pub const PMC_EV_IBS_FETCH: u32 = 0x2000;
/// `PMC_EV_IBS_OP`.
pub const PMC_EV_IBS_OP: u32 = 0x2001;
/// `PMC_EV_K8_FIRST`.
pub const PMC_EV_K8_FIRST: u32 = 0x2080;
/// `PMC_EV_K8_LAST`.
pub const PMC_EV_K8_LAST: u32 = 0x20CF;
/// `PMC_EV_K8_BU_CPU_CLK_UNHALTED`.
pub const PMC_EV_K8_BU_CPU_CLK_UNHALTED: u32 = 0x2098;
/// `PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS`.
pub const PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS: u32 = 0x20A6;
/// `PMC_EV_IAF_INSTR_RETIRED_ANY`.
pub const PMC_EV_IAF_INSTR_RETIRED_ANY: u32 = 0x10000;
/// `PMC_EV_IAF_CPU_CLK_UNHALTED_CORE`.
pub const PMC_EV_IAF_CPU_CLK_UNHALTED_CORE: u32 = 0x10001;
/// `PMC_EV_IAF_CPU_CLK_UNHALTED_REF`.
pub const PMC_EV_IAF_CPU_CLK_UNHALTED_REF: u32 = 0x10002;
/// `PMC_EV_PPC7450_FIRST`.
pub const PMC_EV_PPC7450_FIRST: u32 = 0x13000;
/// `PMC_EV_PPC970_FIRST`.
pub const PMC_EV_PPC970_FIRST: u32 = 0x13100;
/// `PMC_EV_E500_FIRST`.
pub const PMC_EV_E500_FIRST: u32 = 0x13300;
/// `PMC_EV_ARMV7_FIRST`.
pub const PMC_EV_ARMV7_FIRST: u32 = 0x14000;
/// `PMC_EV_ARMV8_FIRST`.
pub const PMC_EV_ARMV8_FIRST: u32 = 0x14100;
/// `PMC_EV_DMC620_PMU_CD2_FIRST`.
pub const PMC_EV_DMC620_PMU_CD2_FIRST: u32 = 0x14500;
/// `PMC_EV_DMC620_PMU_C_FIRST`.
pub const PMC_EV_DMC620_PMU_C_FIRST: u32 = 0x14520;
/// `PMC_EV_CMN600_PMU_FIRST`.
pub const PMC_EV_CMN600_PMU_FIRST: u32 = 0x14600;
/// `PMC_EV_RAPL_ENERGY_PKG`.
pub const PMC_EV_RAPL_ENERGY_PKG: u32 = 0x14700;
/// `PMC_EV_RAPL_ENERGY_CORES`.
pub const PMC_EV_RAPL_ENERGY_CORES: u32 = 0x14701;
/// `PMC_EV_RAPL_ENERGY_DRAM`.
pub const PMC_EV_RAPL_ENERGY_DRAM: u32 = 0x14702;
/// `PMC_EV_PERF_MPERF`.
pub const PMC_EV_PERF_MPERF: u32 = 0x14800;
/// `PMC_EV_PERF_APERF`.
pub const PMC_EV_PERF_APERF: u32 = 0x14801;
/// `PMC_EV_SOFT_FIRST`: first dynamically registered software event.
pub const PMC_EV_SOFT_FIRST: u32 = 0x20000;
/// `PMC_EV_SOFT_LAST`.
pub const PMC_EV_SOFT_LAST: u32 = PMC_EV_SOFT_FIRST + PMC_EV_DYN_COUNT as u32 - 1;

// ---------------------------------------------------------------------------
// Machine-dependent configuration bits
// ---------------------------------------------------------------------------

/// `PMC_AMD_SUB_CLASS_CORE`.
pub const PMC_AMD_SUB_CLASS_CORE: u32 = 0;
/// `PMC_AMD_SUB_CLASS_L3_CACHE`.
pub const PMC_AMD_SUB_CLASS_L3_CACHE: u32 = 1;
/// `PMC_AMD_SUB_CLASS_DATA_FABRIC`.
pub const PMC_AMD_SUB_CLASS_DATA_FABRIC: u32 = 2;
/// `AMD_PMC_USR`.
pub const AMD_PMC_USR: u64 = 1 << 16;
/// `AMD_PMC_OS`.
pub const AMD_PMC_OS: u64 = 1 << 17;
/// `AMD_PMC_EDGE`.
pub const AMD_PMC_EDGE: u64 = 1 << 18;
/// `AMD_PMC_PC`.
pub const AMD_PMC_PC: u64 = 1 << 19;
/// `AMD_PMC_INT`.
pub const AMD_PMC_INT: u64 = 1 << 20;
/// `AMD_PMC_ENABLE`.
pub const AMD_PMC_ENABLE: u64 = 1 << 22;
/// `AMD_PMC_INVERT`.
pub const AMD_PMC_INVERT: u64 = 1 << 23;
/// `AMD_PMC_COUNTERMASK` (bits 24..31).
pub const AMD_PMC_COUNTERMASK: u64 = 0xFF00_0000;
/// `AMD_PMC_UNITMASK` (bits 8..15).
pub const AMD_PMC_UNITMASK: u64 = 0xFF00;
/// `AMD_PMC_EVENTMASK`: 12-bit event select split over bits 0..7 and 32..35.
pub const AMD_PMC_EVENTMASK: u64 = 0xF_0000_00FF;
/// `IBS_PMC_FETCH`.
pub const IBS_PMC_FETCH: u32 = 0;
/// `IBS_PMC_OP`.
pub const IBS_PMC_OP: u32 = 1;
/// `IAF_OS`.
pub const IAF_OS: u32 = 0x1;
/// `IAF_USR`.
pub const IAF_USR: u32 = 0x2;
/// `IAF_ANY`.
pub const IAF_ANY: u32 = 0x4;
/// `IAF_PMI`.
pub const IAF_PMI: u32 = 0x8;
/// `IAP_EVSEL` mask (bits 0..7).
pub const IAP_EVSEL_MASK: u32 = 0xFF;
/// `IAP_UMASK` mask (bits 8..15).
pub const IAP_UMASK_MASK: u32 = 0xFF00;
/// `IAP_USR`.
pub const IAP_USR: u32 = 1 << 16;
/// `IAP_OS`.
pub const IAP_OS: u32 = 1 << 17;
/// `IAP_EDGE`.
pub const IAP_EDGE: u32 = 1 << 18;
/// `IAP_INT`.
pub const IAP_INT: u32 = 1 << 20;
/// `IAP_ANY`.
pub const IAP_ANY: u32 = 1 << 21;
/// `IAP_EN`.
pub const IAP_EN: u32 = 1 << 22;
/// `IAP_INV`.
pub const IAP_INV: u32 = 1 << 23;
/// `IAP_CMASK` mask (bits 24..31).
pub const IAP_CMASK_MASK: u32 = 0xFF00_0000;

// ---------------------------------------------------------------------------
// pmclog (sys/sys/pmclog.h)
// ---------------------------------------------------------------------------

// The log record types, header magic and word, callchain flags and limits,
// `PATH_MAX`, `PMC_F_*` and `enum pmc_mode` are pmc-log's (one definition
// for the log format and this backend, `pmc_log::hwpmc`); they are
// re-exported here so the ABI reads as one module, and
// `abi_layout_tests.rs` checks them against `abi-amd64.json` like the rest.
pub use pmc_log::hwpmc::{
    pmclog_header_word, FBSD_PATH_MAX, PMCLOG_HEADER_MAGIC, PMCLOG_MAX_RECORD,
    PMCLOG_TYPE_CALLCHAIN, PMCLOG_TYPE_CLOSELOG, PMCLOG_TYPE_DROPNOTIFY, PMCLOG_TYPE_INITIALIZE,
    PMCLOG_TYPE_MAP_IN, PMCLOG_TYPE_MAP_OUT, PMCLOG_TYPE_PMCALLOCATE, PMCLOG_TYPE_PMCALLOCATEDYN,
    PMCLOG_TYPE_PMCATTACH, PMCLOG_TYPE_PMCDETACH, PMCLOG_TYPE_PROCCSW, PMCLOG_TYPE_PROCEXEC,
    PMCLOG_TYPE_PROCEXIT, PMCLOG_TYPE_PROCFORK, PMCLOG_TYPE_PROC_CREATE, PMCLOG_TYPE_SYSEXIT,
    PMCLOG_TYPE_THR_CREATE, PMCLOG_TYPE_THR_EXIT, PMCLOG_TYPE_USERDATA, PMC_CALLCHAIN_DEPTH_MAX,
    PMC_CC_F_MULTIPART, PMC_CC_F_USERSPACE, PMC_CC_MULTIPART_CALLCHAIN, PMC_CC_MULTIPART_IBS_FETCH,
    PMC_CC_MULTIPART_IBS_OP, PMC_CC_MULTIPART_NONE, PMC_F_ATTACHED_TO_OWNER, PMC_F_ATTACH_DONE,
    PMC_F_CALLCHAIN, PMC_F_DESCENDANTS, PMC_F_EV_PMU, PMC_F_LOG_PROCCSW, PMC_F_LOG_PROCEXIT,
    PMC_F_NEEDS_LOGFILE, PMC_F_NEWVALUE, PMC_F_OLDVALUE, PMC_F_UNUSED1, PMC_F_USERCALLCHAIN,
    PMC_MODE_SC, PMC_MODE_SS, PMC_MODE_TC, PMC_MODE_TS, PMC_MULTIPART_HEADER_ENTRIES,
    PMC_MULTIPART_HEADER_LENGTH,
};

/// FreeBSD `MAXCOMLEN`.
pub const FBSD_MAXCOMLEN: usize = 19;

// ---------------------------------------------------------------------------
// Machine-dependent allocation unions
// ---------------------------------------------------------------------------

/// `struct pmc_md_amd_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_amd_op_pmcallocate {
    /// `pm_amd_config`: the PERF_CTL value (event select, unit mask, USR/OS/...).
    pub pm_amd_config: u64,
    /// `pm_amd_sub_class`: `PMC_AMD_SUB_CLASS_*`.
    pub pm_amd_sub_class: u32,
}

/// `struct pmc_md_ibs_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ibs_op_pmcallocate {
    /// `ibs_flag`.
    pub ibs_flag: u32,
    /// `ibs_type`: `IBS_PMC_FETCH` or `IBS_PMC_OP`.
    pub ibs_type: u32,
    /// `ibs_ctl`.
    pub ibs_ctl: u64,
    /// `ibs_ctl2`.
    pub ibs_ctl2: u64,
}

/// `struct pmc_md_iap_op_pmcallocate` (amd64; also used by IAF).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_iap_op_pmcallocate {
    /// `pm_iap_config`: the IA32_PERFEVTSELx value.
    pub pm_iap_config: u32,
    /// `pm_iap_rsp`: offcore response MSR value.
    pub pm_iap_rsp: u64,
}

/// `struct pmc_md_ucf_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucf_op_pmcallocate {
    /// `pm_ucf_flags`.
    pub pm_ucf_flags: u16,
}

/// `struct pmc_md_ucp_op_pmcallocate` (amd64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_ucp_op_pmcallocate {
    /// `pm_ucp_config`.
    pub pm_ucp_config: u32,
}

/// `union pmc_md_op_pmcallocate` for amd64 (32 bytes, fixed by `__pad`).
///
/// The members are private so that every value is fully initialised: build
/// one with [`amd`](Self::amd), [`iap`](Self::iap), [`ibs`](Self::ibs),
/// [`ucf`](Self::ucf), [`ucp`](Self::ucp) or [`from_words`](Self::from_words)
/// and read it back with the accessors. The layout is exactly the C union.
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmc_md_op_pmcallocate {
    pm_amd: pmc_md_amd_op_pmcallocate,
    pm_ibs: pmc_md_ibs_op_pmcallocate,
    pm_iap: pmc_md_iap_op_pmcallocate,
    pm_ucf: pmc_md_ucf_op_pmcallocate,
    pm_ucp: pmc_md_ucp_op_pmcallocate,
    __pad: [u64; 4],
}

impl Default for pmc_md_op_pmcallocate {
    fn default() -> Self {
        Self { __pad: [0; 4] }
    }
}

impl core::fmt::Debug for pmc_md_op_pmcallocate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("pmc_md_op_pmcallocate")
            .field("__pad", &self.words())
            .finish()
    }
}

impl PartialEq for pmc_md_op_pmcallocate {
    fn eq(&self, other: &Self) -> bool {
        self.words() == other.words()
    }
}

fn bytes_of_words(w: [u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, x) in w.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&x.to_ne_bytes());
    }
    out
}

fn words_of_bytes(b: [u8; 32]) -> [u64; 4] {
    [0, 8, 16, 24].map(|off| u64_at(&b, off))
}

// The union's bytes at offsets below 32 (always present), read through
// pmc-log's bounded cursor: it cannot fail here, and would read 0 if it did.
fn u16_at(b: &[u8; 32], off: usize) -> u16 {
    ByteCursor::ne(b).u16_at(off).unwrap_or_default()
}

fn u32_at(b: &[u8; 32], off: usize) -> u32 {
    ByteCursor::ne(b).u32_at(off).unwrap_or_default()
}

fn u64_at(b: &[u8; 32], off: usize) -> u64 {
    ByteCursor::ne(b).u64_at(off).unwrap_or_default()
}

impl pmc_md_op_pmcallocate {
    /// The union as its four native-endian words (`__pad`).
    pub fn words(&self) -> [u64; 4] {
        // SAFETY: the members are private and every constructor initialises
        // all 32 bytes through `__pad`, so `__pad` is always initialised; any
        // bit pattern is a valid `[u64; 4]`.
        unsafe { self.__pad }
    }

    /// The union's 32 bytes, native-endian.
    pub fn to_bytes(self) -> [u8; 32] {
        bytes_of_words(self.words())
    }

    /// Builds the union from its four words.
    pub fn from_words(words: [u64; 4]) -> Self {
        Self { __pad: words }
    }

    /// Builds the union from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self::from_words(words_of_bytes(bytes))
    }

    /// A union holding `pm_amd` (`pm_amd_config`, `pm_amd_sub_class`).
    pub fn amd(config: u64, sub_class: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&config.to_ne_bytes());
        b[8..12].copy_from_slice(&sub_class.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_iap` (`pm_iap_config`, `pm_iap_rsp`); IAF too.
    pub fn iap(config: u32, rsp: u64) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        b[8..16].copy_from_slice(&rsp.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ibs`.
    pub fn ibs(v: pmc_md_ibs_op_pmcallocate) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&v.ibs_flag.to_ne_bytes());
        b[4..8].copy_from_slice(&v.ibs_type.to_ne_bytes());
        b[8..16].copy_from_slice(&v.ibs_ctl.to_ne_bytes());
        b[16..24].copy_from_slice(&v.ibs_ctl2.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ucf`.
    pub fn ucf(flags: u16) -> Self {
        let mut b = [0u8; 32];
        b[0..2].copy_from_slice(&flags.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// A union holding `pm_ucp`.
    pub fn ucp(config: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        Self::from_bytes(b)
    }

    /// `pm_amd` as read from the bytes.
    pub fn as_amd(&self) -> pmc_md_amd_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_amd_op_pmcallocate {
            pm_amd_config: u64_at(&b, 0),
            pm_amd_sub_class: u32_at(&b, 8),
        }
    }

    /// `pm_iap` as read from the bytes.
    pub fn as_iap(&self) -> pmc_md_iap_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_iap_op_pmcallocate {
            pm_iap_config: u32_at(&b, 0),
            pm_iap_rsp: u64_at(&b, 8),
        }
    }

    /// `pm_ibs` as read from the bytes.
    pub fn as_ibs(&self) -> pmc_md_ibs_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_ibs_op_pmcallocate {
            ibs_flag: u32_at(&b, 0),
            ibs_type: u32_at(&b, 4),
            ibs_ctl: u64_at(&b, 8),
            ibs_ctl2: u64_at(&b, 16),
        }
    }

    /// `pm_ucp` as read from the bytes.
    pub fn as_ucp(&self) -> pmc_md_ucp_op_pmcallocate {
        pmc_md_ucp_op_pmcallocate {
            pm_ucp_config: u32_at(&self.to_bytes(), 0),
        }
    }

    /// `pm_ucf` as read from the bytes.
    pub fn as_ucf(&self) -> pmc_md_ucf_op_pmcallocate {
        let b = self.to_bytes();
        pmc_md_ucf_op_pmcallocate {
            pm_ucf_flags: u16_at(&b, 0),
        }
    }
}

/// `struct pmc_md_cmn600_pmu_op_pmcallocate` (arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_cmn600_pmu_op_pmcallocate {
    /// `pma_cmn600_nodeid`.
    pub pma_cmn600_nodeid: u64,
    /// `pma_cmn600_occupancy`.
    pub pma_cmn600_occupancy: u64,
    /// `pma_cmn600_config`.
    pub pma_cmn600_config: u32,
}

/// `struct pmc_md_dmc620_pmu_op_pmcallocate` (arm64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_md_dmc620_pmu_op_pmcallocate {
    /// `pm_dmc620_match`.
    pub pm_dmc620_match: u64,
    /// `pm_dmc620_mask`.
    pub pm_dmc620_mask: u64,
    /// `pm_dmc620_config`.
    pub pm_dmc620_config: u32,
}

/// The anonymous `struct { uint32_t pm_md_config; }` member of the arm64 union.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct arm64_pmc_md_config {
    /// `pm_md_config`: raw ARMv8 event number when `PMC_F_EV_PMU` is set.
    pub pm_md_config: u32,
}

/// `union pmc_md_op_pmcallocate` for arm64 (32 bytes, fixed by `__pad`).
///
/// Members are private for the same reason as in [`pmc_md_op_pmcallocate`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union arm64_pmc_md_op_pmcallocate {
    pm_md: arm64_pmc_md_config,
    pm_cmn600: pmc_md_cmn600_pmu_op_pmcallocate,
    pm_dmc620: pmc_md_dmc620_pmu_op_pmcallocate,
    __pad: [u64; 4],
}

impl Default for arm64_pmc_md_op_pmcallocate {
    fn default() -> Self {
        Self { __pad: [0; 4] }
    }
}

impl core::fmt::Debug for arm64_pmc_md_op_pmcallocate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("arm64_pmc_md_op_pmcallocate")
            .field("__pad", &self.words())
            .finish()
    }
}

impl arm64_pmc_md_op_pmcallocate {
    /// The union as its four native-endian words (`__pad`).
    pub fn words(&self) -> [u64; 4] {
        // SAFETY: members are private and every constructor initialises all
        // 32 bytes through `__pad`; any bit pattern is a valid `[u64; 4]`.
        unsafe { self.__pad }
    }

    /// A union holding `pm_md_config` (raw ARMv8 event with `PMC_F_EV_PMU`).
    pub fn md_config(config: u32) -> Self {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&config.to_ne_bytes());
        Self {
            __pad: words_of_bytes(b),
        }
    }

    /// `pm_md_config` as read from the bytes.
    pub fn as_md_config(&self) -> u32 {
        u32_at(&bytes_of_words(self.words()), 0)
    }
}

// ---------------------------------------------------------------------------
// PMC_OP_* argument structs
// ---------------------------------------------------------------------------

/// `struct pmc_op_pmcallocate` (PMC_OP_PMCALLOCATE), amd64 layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct pmc_op_pmcallocate {
    /// `pm_caps`: requested `PMC_CAP_*`.
    pub pm_caps: u32,
    /// `pm_cpu`: CPU number, or `PMC_CPU_ANY` for process modes.
    pub pm_cpu: u32,
    /// `pm_class`: `PMC_CLASS_*`.
    pub pm_class: u32,
    /// `pm_ev`: `enum pmc_event`, or a pmu-events index with `PMC_F_EV_PMU`.
    pub pm_ev: u32,
    /// `pm_flags`: `PMC_F_*`.
    pub pm_flags: u32,
    /// `pm_mode`: `PMC_MODE_*`.
    pub pm_mode: u32,
    /// `pm_pmcid` (out): the new handle.
    pub pm_pmcid: pmc_id_t,
    /// Padding the C compiler inserts before `pm_count`.
    pub __pad0: u32,
    /// `pm_count`: initial count, or sampling reload count.
    pub pm_count: pmc_value_t,
    /// `pm_md`: machine-dependent programming.
    pub pm_md: pmc_md_op_pmcallocate,
}

/// `struct pmc_op_pmcallocate` with the arm64 MD union (same 72-byte layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct arm64_pmc_op_pmcallocate {
    /// `pm_caps`.
    pub pm_caps: u32,
    /// `pm_cpu`.
    pub pm_cpu: u32,
    /// `pm_class`.
    pub pm_class: u32,
    /// `pm_ev`.
    pub pm_ev: u32,
    /// `pm_flags`.
    pub pm_flags: u32,
    /// `pm_mode`.
    pub pm_mode: u32,
    /// `pm_pmcid`.
    pub pm_pmcid: pmc_id_t,
    /// Padding before `pm_count`.
    pub __pad0: u32,
    /// `pm_count`.
    pub pm_count: pmc_value_t,
    /// `pm_md`.
    pub pm_md: arm64_pmc_md_op_pmcallocate,
}

/// `struct pmc_op_pmcadmin` (PMC_OP_PMCADMIN).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcadmin {
    /// `pm_cpu`.
    pub pm_cpu: i32,
    /// `pm_flags`.
    pub pm_flags: u32,
    /// `pm_pmc`: row index.
    pub pm_pmc: i32,
    /// `pm_state`: `PMC_STATE_FREE` (enable) or `PMC_STATE_DISABLED`.
    pub pm_state: u32,
}

/// `struct pmc_op_pmcattach` (PMC_OP_PMCATTACH and PMC_OP_PMCDETACH).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcattach {
    /// `pm_pmc`.
    pub pm_pmc: pmc_id_t,
    /// `pm_pid`: target process; 0 means the caller.
    pub pm_pid: fbsd_pid_t,
}

/// `struct pmc_op_pmcsetcount` (PMC_OP_PMCSETCOUNT).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcsetcount {
    /// `pm_count`.
    pub pm_count: pmc_value_t,
    /// `pm_pmcid`.
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_op_pmcrw` (PMC_OP_PMCRW).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcrw {
    /// `pm_flags`: `PMC_F_OLDVALUE` and/or `PMC_F_NEWVALUE`.
    pub pm_flags: u32,
    /// `pm_pmcid`.
    pub pm_pmcid: pmc_id_t,
    /// `pm_value`: new value in, old value out.
    pub pm_value: pmc_value_t,
}

/// `struct pmc_op_simple` (PMC_OP_PMCSTART, PMC_OP_PMCSTOP, PMC_OP_PMCRELEASE).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_simple {
    /// `pm_pmcid`.
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_op_configurelog` (PMC_OP_CONFIGURELOG).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_configurelog {
    /// `pm_flags`.
    pub pm_flags: u32,
    /// `pm_logfd`: writable fd, or -1 to deconfigure.
    pub pm_logfd: i32,
}

/// `struct pmc_op_writelog` (PMC_OP_WRITELOG).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_writelog {
    /// `pm_userdata`.
    pub pm_userdata: u32,
}

/// `struct pmc_op_getmsr` (PMC_OP_PMCGETMSR).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getmsr {
    /// `pm_msr` (out): the RDPMC index.
    pub pm_msr: u32,
    /// `pm_pmcid` (in).
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_op_getdriverstats` (PMC_OP_GETDRIVERSTATS).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getdriverstats {
    /// `pm_intr_ignored`.
    pub pm_intr_ignored: u32,
    /// `pm_intr_processed`.
    pub pm_intr_processed: u32,
    /// `pm_intr_bufferfull`.
    pub pm_intr_bufferfull: u32,
    /// `pm_syscalls`.
    pub pm_syscalls: u32,
    /// `pm_syscall_errors`.
    pub pm_syscall_errors: u32,
    /// `pm_buffer_requests`.
    pub pm_buffer_requests: u32,
    /// `pm_buffer_requests_failed`.
    pub pm_buffer_requests_failed: u32,
    /// `pm_log_sweeps`.
    pub pm_log_sweeps: u32,
}

/// `struct pmc_classinfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_classinfo {
    /// `pm_class`.
    pub pm_class: u32,
    /// `pm_caps`.
    pub pm_caps: u32,
    /// `pm_width`: counter width in bits.
    pub pm_width: u32,
    /// `pm_num`: rows of this class per CPU.
    pub pm_num: u32,
}

/// `struct pmc_op_getcpuinfo` (PMC_OP_GETCPUINFO).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getcpuinfo {
    /// `pm_cputype`: `PMC_CPU_*`.
    pub pm_cputype: u32,
    /// `pm_ncpu`: highest possible CPU number + 1.
    pub pm_ncpu: u32,
    /// `pm_npmc`: rows per CPU over all classes.
    pub pm_npmc: u32,
    /// `pm_nclass`: valid entries of `pm_classes`.
    pub pm_nclass: u32,
    /// `pm_classes`.
    pub pm_classes: [pmc_classinfo; PMC_CLASS_MAX],
}

/// `struct pmc_info`: one row of `PMC_OP_GETPMCINFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_info {
    /// `pm_name`: NUL-terminated row name.
    pub pm_name: [u8; PMC_NAME_MAX],
    /// `pm_class`.
    pub pm_class: u32,
    /// `pm_enabled`.
    pub pm_enabled: i32,
    /// `pm_rowdisp`: `PMC_DISP_*`.
    pub pm_rowdisp: u32,
    /// `pm_ownerpid`.
    pub pm_ownerpid: fbsd_pid_t,
    /// `pm_mode`.
    pub pm_mode: u32,
    /// `pm_event`.
    pub pm_event: u32,
    /// `pm_flags`.
    pub pm_flags: u32,
    /// Padding before `pm_reloadcount`.
    pub __pad0: u32,
    /// `pm_reloadcount`.
    pub pm_reloadcount: pmc_value_t,
}

impl Default for pmc_info {
    fn default() -> Self {
        Self {
            pm_name: [0; PMC_NAME_MAX],
            pm_class: 0,
            pm_enabled: 0,
            pm_rowdisp: 0,
            pm_ownerpid: 0,
            pm_mode: 0,
            pm_event: 0,
            pm_flags: 0,
            __pad0: 0,
            pm_reloadcount: 0,
        }
    }
}

/// `struct pmc_op_getpmcinfo` header; `pm_pmcs[]` (flexible array of
/// [`pmc_info`]) follows at offset 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getpmcinfo {
    /// `pm_cpu`.
    pub pm_cpu: i32,
    /// Padding: `pm_pmcs` is 8-aligned.
    pub __pad0: u32,
    /// `pm_pmcs[]`: zero-sized marker for the flexible array.
    pub pm_pmcs: [pmc_info; 0],
}

/// `struct pmc_dyn_event_descr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_dyn_event_descr {
    /// `pm_ev_name`: NUL-terminated event name.
    pub pm_ev_name: [u8; PMC_NAME_MAX],
    /// `pm_ev_code`.
    pub pm_ev_code: u32,
}

impl Default for pmc_dyn_event_descr {
    fn default() -> Self {
        Self {
            pm_ev_name: [0; PMC_NAME_MAX],
            pm_ev_code: 0,
        }
    }
}

/// `struct pmc_op_getdyneventinfo` (PMC_OP_GETDYNEVENTINFO). 278536 bytes:
/// allocate it on the heap ([`pmc_op_getdyneventinfo::new_boxed`]).
#[repr(C)]
#[derive(Debug, PartialEq, Eq)]
pub struct pmc_op_getdyneventinfo {
    /// `pm_class` (in): must be `PMC_CLASS_SOFT`.
    pub pm_class: u32,
    /// `pm_nevent` (out).
    pub pm_nevent: u32,
    /// `pm_events` (out).
    pub pm_events: [pmc_dyn_event_descr; PMC_EV_DYN_COUNT],
}

impl pmc_op_getdyneventinfo {
    /// A zeroed request for `class`, allocated directly on the heap (the
    /// struct is too large for the stack).
    pub fn new_boxed(class: u32) -> Box<Self> {
        let layout = std::alloc::Layout::new::<Self>();
        // SAFETY: `layout` has a non-zero size (278536 bytes).
        let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Self>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `p` was just allocated by the global allocator with the
        // layout of `Self` and is zero-filled; the struct consists only of
        // integers and integer arrays, for which all-zero is a valid value.
        let mut b = unsafe { Box::from_raw(p) };
        b.pm_class = class;
        b
    }
}

/// `struct pmc_op_caps` (PMC_OP_GETCAPS).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_caps {
    /// `pm_pmcid` (in).
    pub pm_pmcid: pmc_id_t,
    /// `pm_caps` (out).
    pub pm_caps: u32,
}

/// `struct module_stat` (`sys/sys/module.h`), the `modstat(2)` argument, amd64.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct module_stat {
    /// `version`: set to `size_of::<module_stat>()` (56) before the call.
    pub version: i32,
    /// `name`.
    pub name: [u8; MAXMODNAME],
    /// `refs`.
    pub refs: i32,
    /// `id`.
    pub id: i32,
    /// Padding before `data`.
    pub __pad0: u32,
    /// `data`: `union modspecific`; for a syscall module, `intval` (the low
    /// 32 bits on little-endian) is the syscall number.
    pub data: u64,
}

impl Default for module_stat {
    fn default() -> Self {
        Self {
            version: size_of::<Self>() as i32,
            name: [0; MAXMODNAME],
            refs: 0,
            id: 0,
            __pad0: 0,
            data: 0,
        }
    }
}

impl module_stat {
    /// `data.intval`: the dynamically assigned syscall number.
    pub fn intval(&self) -> i32 {
        let b = self.data.to_ne_bytes();
        let off = if cfg!(target_endian = "little") { 0 } else { 4 };
        ByteCursor::ne(&b).i32_at(off).unwrap_or_default()
    }
}

/// `struct pmclog_header` (16 bytes; records are `__packed` on disk, this
/// struct is only used for its layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmclog_header {
    /// `pl_header`: `(0xEE << 24) | (type << 16) | length`.
    pub pl_header: u32,
    /// `pl_spare`.
    pub pl_spare: u32,
    /// `pl_tsc`.
    pub pl_tsc: u64,
}

// ---------------------------------------------------------------------------
// Compile-time layout pins (amd64/arm64 LP64 numbers from abi-amd64.json).
// ---------------------------------------------------------------------------

// The numbers are LP64's (FreeBSD amd64 and arm64, the only ABIs this crate
// supports); on 32-bit hosts `u64` is 4-aligned and the pins do not apply.
#[cfg(target_pointer_width = "64")]
macro_rules! pin {
    ($t:ty, size $s:expr, align $a:expr $(, $f:ident @ $o:expr)*) => {
        const _: () = assert!(size_of::<$t>() == $s);
        const _: () = assert!(align_of::<$t>() == $a);
        $( const _: () = assert!(offset_of!($t, $f) == $o); )*
    };
}
#[cfg(not(target_pointer_width = "64"))]
macro_rules! pin {
    ($($t:tt)*) => {};
}

pin!(pmc_md_amd_op_pmcallocate, size 16, align 8, pm_amd_config @ 0, pm_amd_sub_class @ 8);
pin!(pmc_md_ibs_op_pmcallocate, size 24, align 8, ibs_flag @ 0, ibs_type @ 4, ibs_ctl @ 8, ibs_ctl2 @ 16);
pin!(pmc_md_iap_op_pmcallocate, size 16, align 8, pm_iap_config @ 0, pm_iap_rsp @ 8);
pin!(pmc_md_ucf_op_pmcallocate, size 2, align 2, pm_ucf_flags @ 0);
pin!(pmc_md_ucp_op_pmcallocate, size 4, align 4, pm_ucp_config @ 0);
pin!(pmc_md_op_pmcallocate, size 32, align 8);
pin!(pmc_op_pmcallocate, size 72, align 8, pm_caps @ 0, pm_cpu @ 4, pm_class @ 8, pm_ev @ 12,
     pm_flags @ 16, pm_mode @ 20, pm_pmcid @ 24, pm_count @ 32, pm_md @ 40);
pin!(pmc_op_pmcadmin, size 16, align 4, pm_cpu @ 0, pm_flags @ 4, pm_pmc @ 8, pm_state @ 12);
pin!(pmc_op_pmcattach, size 8, align 4, pm_pmc @ 0, pm_pid @ 4);
pin!(pmc_op_pmcsetcount, size 16, align 8, pm_count @ 0, pm_pmcid @ 8);
pin!(pmc_op_pmcrw, size 16, align 8, pm_flags @ 0, pm_pmcid @ 4, pm_value @ 8);
pin!(pmc_info, size 104, align 8, pm_name @ 0, pm_class @ 64, pm_enabled @ 68, pm_rowdisp @ 72,
     pm_ownerpid @ 76, pm_mode @ 80, pm_event @ 84, pm_flags @ 88, pm_reloadcount @ 96);
pin!(pmc_op_getpmcinfo, size 8, align 8, pm_cpu @ 0, pm_pmcs @ 8);
pin!(pmc_classinfo, size 16, align 4, pm_class @ 0, pm_caps @ 4, pm_width @ 8, pm_num @ 12);
pin!(pmc_op_getcpuinfo, size 144, align 4, pm_cputype @ 0, pm_ncpu @ 4, pm_npmc @ 8, pm_nclass @ 12,
     pm_classes @ 16);
pin!(pmc_op_configurelog, size 8, align 4, pm_flags @ 0, pm_logfd @ 4);
pin!(pmc_op_getdriverstats, size 32, align 4, pm_intr_ignored @ 0, pm_intr_processed @ 4,
     pm_intr_bufferfull @ 8, pm_syscalls @ 12, pm_syscall_errors @ 16, pm_buffer_requests @ 20,
     pm_buffer_requests_failed @ 24, pm_log_sweeps @ 28);
pin!(pmc_op_simple, size 4, align 4, pm_pmcid @ 0);
pin!(pmc_op_writelog, size 4, align 4, pm_userdata @ 0);
pin!(pmc_op_getmsr, size 8, align 4, pm_msr @ 0, pm_pmcid @ 4);
pin!(pmc_dyn_event_descr, size 68, align 4, pm_ev_name @ 0, pm_ev_code @ 64);
pin!(pmc_op_getdyneventinfo, size 278536, align 4, pm_class @ 0, pm_nevent @ 4, pm_events @ 8);
pin!(pmc_op_caps, size 8, align 4, pm_pmcid @ 0, pm_caps @ 4);
pin!(module_stat, size 56, align 8, version @ 0, name @ 4, refs @ 36, id @ 40, data @ 48);
pin!(pmclog_header, size 16, align 8, pl_header @ 0, pl_spare @ 4, pl_tsc @ 8);
pin!(pmc_md_cmn600_pmu_op_pmcallocate, size 24, align 8, pma_cmn600_nodeid @ 0,
     pma_cmn600_occupancy @ 8, pma_cmn600_config @ 16);
pin!(pmc_md_dmc620_pmu_op_pmcallocate, size 24, align 8, pm_dmc620_match @ 0, pm_dmc620_mask @ 8,
     pm_dmc620_config @ 16);
pin!(arm64_pmc_md_op_pmcallocate, size 32, align 8);
pin!(arm64_pmc_op_pmcallocate, size 72, align 8, pm_count @ 32, pm_md @ 40);
const _: () = assert!(PMC_VERSION == 0x0A03_0000);

#[cfg(all(test, target_pointer_width = "64"))]
#[path = "abi_layout_tests.rs"]
mod layout_tests;
