//! The scalar types, the versions and limits, and the constants of
//! `sys/sys/pmc.h` and the `pmc_mdep.h` files: `PMC_OP_*`, states,
//! dispositions, capabilities, classes, CPU types, event anchors and the
//! machine-dependent configuration bits.

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

/// FreeBSD `MAXCOMLEN`.
pub const FBSD_MAXCOMLEN: usize = 19;
