//! The types, enums and constants of FreeBSD's `<sys/pmc.h>` and
//! `<pmc.h>` that libpmc's API uses, with FreeBSD's values (checked against
//! `abi-amd64.json` by `tests/header.rs`): the enums ([`pmc_mode`], [`pmc_class`],
//! [`pmc_event`], ...), the `*Arg` wrappers C passes them as, and the info structs
//! ([`pmc_cpuinfo`], [`pmc_pmcinfo`], ...).
//!
//! The C header `include/pmc.h` is generated from this module by cbindgen.
//! Enums travel through the C API as their 32-bit value: a function argument
//! or a struct field C writes is an `*Arg` (a transparent `u32` that the header
//! names `enum pmc_mode` and so on), so a value outside the enum never becomes
//! an invalid Rust enum.

#![allow(non_camel_case_types, non_upper_case_globals)]

use std::ffi::c_char;

/// `pmc_id_t`: a PMC's id, `cpu << 24 | mode << 16 | class << 8 | row`.
pub type pmc_id_t = u32;
/// `pmc_value_t`: a PMC's count or reload value.
pub type pmc_value_t = u64;
/// Extension: `pmc_measure_t`, the handle of a measurement
/// (`pmc_measure_begin`); never 0.
pub type pmc_measure_t = u32;

/// `PMC_VERSION`: the hwpmc ABI this header describes (10.3.0).
pub const PMC_VERSION: u32 = 0x0A03_0000;
/// `PMC_NAME_MAX`: the size of `pmc_info::pm_name`.
pub const PMC_NAME_MAX: usize = 64;
/// `PMC_CLASS_MAX`: the size of `pmc_cpuinfo::pm_classes`.
pub const PMC_CLASS_MAX: usize = 8;
/// `PMC_CPUID_LEN`.
pub const PMC_CPUID_LEN: usize = 64;
/// `PMC_CPU_ANY`: "any CPU", the `cpu` of a process-mode allocation.
pub const PMC_CPU_ANY: i32 = -1;
/// `PMC_ID_INVALID`.
pub const PMC_ID_INVALID: u32 = 0xFFFF_FFFF;
/// `PMC_EV_DYN_COUNT`.
pub const PMC_EV_DYN_COUNT: u32 = 0x1000;

/// `PMC_F_DESCENDANTS`: also count the target's descendants.
pub const PMC_F_DESCENDANTS: u32 = 0x0000_0002;
/// `PMC_F_LOG_PROCCSW`: log counts at each context switch.
pub const PMC_F_LOG_PROCCSW: u32 = 0x0000_0004;
/// `PMC_F_LOG_PROCEXIT`: log counts at each process exit.
pub const PMC_F_LOG_PROCEXIT: u32 = 0x0000_0008;
/// `PMC_F_NEWVALUE`: `PMC_OP_PMCRW` writes a new value.
pub const PMC_F_NEWVALUE: u32 = 0x0000_0010;
/// `PMC_F_OLDVALUE`: `PMC_OP_PMCRW` returns the old value.
pub const PMC_F_OLDVALUE: u32 = 0x0000_0020;
/// `PMC_F_CALLCHAIN`: record callchains with samples.
pub const PMC_F_CALLCHAIN: u32 = 0x0000_0080;
/// `PMC_F_USERCALLCHAIN`: user callchains below kernel ones.
pub const PMC_F_USERCALLCHAIN: u32 = 0x0000_0100;
/// `PMC_F_EV_PMU`: the event was named by a pmu-events name.
pub const PMC_F_EV_PMU: u32 = 0x0000_0200;
/// `PMC_F_ATTACHED_TO_OWNER` (kernel internal).
pub const PMC_F_ATTACHED_TO_OWNER: u32 = 0x0001_0000;
/// `PMC_F_NEEDS_LOGFILE` (kernel internal).
pub const PMC_F_NEEDS_LOGFILE: u32 = 0x0002_0000;
/// `PMC_F_ATTACH_DONE` (kernel internal).
pub const PMC_F_ATTACH_DONE: u32 = 0x0004_0000;

/// Extension: events this library names that have no FreeBSD code (a CPU's
/// own events, tracepoints) get codes from here on, as they are allocated;
/// `pmc_name_of_event` names them.
pub const PMC_EV_LINUX_FIRST: u32 = 0x30000;

/// `enum pmc_mode`: counting or sampling, process or system.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_mode {
    /// System-wide sampling.
    PMC_MODE_SS = 0,
    /// System-wide counting.
    PMC_MODE_SC = 1,
    /// Process (thread) sampling.
    PMC_MODE_TS = 2,
    /// Process (thread) counting.
    PMC_MODE_TC = 3,
}

/// `enum pmc_state`: a PMC row's state.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_state {
    /// Disabled by the administrator.
    PMC_STATE_DISABLED = 0,
    /// Free to allocate.
    PMC_STATE_FREE = 1,
    /// Allocated.
    PMC_STATE_ALLOCATED = 2,
    /// Allocated and stopped.
    PMC_STATE_STOPPED = 3,
    /// Counting.
    PMC_STATE_RUNNING = 4,
    /// Being deleted.
    PMC_STATE_DELETED = 5,
}

/// `enum pmc_disp`: a PMC row's disposition.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_disp {
    /// Used by a system-mode PMC.
    PMC_DISP_STANDALONE = 0,
    /// Free.
    PMC_DISP_FREE = 1,
    /// Used by process-mode PMCs.
    PMC_DISP_THREAD = 2,
    /// Unknown.
    PMC_DISP_UNKNOWN = 3,
}

/// `enum pmc_caps`: a PMC class's capabilities, one bit each.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_caps {
    /// Can interrupt (sample).
    PMC_CAP_INTERRUPT = 1 << 0,
    /// Can count user mode.
    PMC_CAP_USER = 1 << 1,
    /// Can count kernel mode.
    PMC_CAP_SYSTEM = 1 << 2,
    /// Edge detection.
    PMC_CAP_EDGE = 1 << 3,
    /// Threshold comparison.
    PMC_CAP_THRESHOLD = 1 << 4,
    /// Readable.
    PMC_CAP_READ = 1 << 5,
    /// Writable.
    PMC_CAP_WRITE = 1 << 6,
    /// Inverted comparison.
    PMC_CAP_INVERT = 1 << 7,
    /// Qualifiers.
    PMC_CAP_QUALIFIER = 1 << 8,
    /// Precise sampling.
    PMC_CAP_PRECISE = 1 << 9,
    /// Tagging.
    PMC_CAP_TAGGING = 1 << 10,
    /// Cascading.
    PMC_CAP_CASCADE = 1 << 11,
    /// System-wide counter.
    PMC_CAP_SYSWIDE = 1 << 12,
    /// NUMA-domain-wide counter.
    PMC_CAP_DOMWIDE = 1 << 13,
}

/// `enum pmc_class`: a kind of PMC.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_class {
    /// CPU timestamp counter.
    PMC_CLASS_TSC = 0x00,
    /// AMD K8 and later.
    PMC_CLASS_K8 = 0x02,
    /// AMD instruction-based sampling.
    PMC_CLASS_IBS = 0x03,
    /// Intel fixed-function counters.
    PMC_CLASS_IAF = 0x06,
    /// Intel programmable counters.
    PMC_CLASS_IAP = 0x07,
    /// Intel uncore fixed-function.
    PMC_CLASS_UCF = 0x08,
    /// Intel uncore programmable.
    PMC_CLASS_UCP = 0x09,
    /// PowerPC 7450.
    PMC_CLASS_PPC7450 = 0x0D,
    /// PowerPC 970.
    PMC_CLASS_PPC970 = 0x0E,
    /// Software events (Linux: perf's software events and tracepoints).
    PMC_CLASS_SOFT = 0x0F,
    /// ARMv7.
    PMC_CLASS_ARMV7 = 0x10,
    /// ARMv8.
    PMC_CLASS_ARMV8 = 0x11,
    /// Freescale e500.
    PMC_CLASS_E500 = 0x13,
    /// IBM POWER8.
    PMC_CLASS_POWER8 = 0x15,
    /// ARM DMC-620 (clkdiv2).
    PMC_CLASS_DMC620_PMU_CD2 = 0x16,
    /// ARM DMC-620 (clk).
    PMC_CLASS_DMC620_PMU_C = 0x17,
    /// ARM CMN-600.
    PMC_CLASS_CMN600_PMU = 0x18,
    /// Intel RAPL energy counters.
    PMC_CLASS_RAPL = 0x19,
    /// MPERF/APERF.
    PMC_CLASS_PERF = 0x1A,
}

/// `enum pmc_cputype`: the kind of CPU (`pmc_cpuinfo::pm_cputype`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_cputype {
    /// AMD K8 and later.
    PMC_CPU_AMD_K8 = 0x01,
    /// Intel Core.
    PMC_CPU_INTEL_CORE = 0x87,
    /// Intel Core 2.
    PMC_CPU_INTEL_CORE2 = 0x88,
    /// Intel Core 2 Extreme.
    PMC_CPU_INTEL_CORE2EXTREME = 0x89,
    /// Intel Atom.
    PMC_CPU_INTEL_ATOM = 0x8A,
    /// Intel Core i7.
    PMC_CPU_INTEL_COREI7 = 0x8B,
    /// Intel Westmere.
    PMC_CPU_INTEL_WESTMERE = 0x8C,
    /// Intel Sandy Bridge.
    PMC_CPU_INTEL_SANDYBRIDGE = 0x8D,
    /// Intel Ivy Bridge.
    PMC_CPU_INTEL_IVYBRIDGE = 0x8E,
    /// Intel Sandy Bridge Xeon.
    PMC_CPU_INTEL_SANDYBRIDGE_XEON = 0x8F,
    /// Intel Ivy Bridge Xeon.
    PMC_CPU_INTEL_IVYBRIDGE_XEON = 0x90,
    /// Intel Haswell.
    PMC_CPU_INTEL_HASWELL = 0x91,
    /// Intel Atom Silvermont.
    PMC_CPU_INTEL_ATOM_SILVERMONT = 0x92,
    /// Intel Nehalem-EX.
    PMC_CPU_INTEL_NEHALEM_EX = 0x93,
    /// Intel Westmere-EX.
    PMC_CPU_INTEL_WESTMERE_EX = 0x94,
    /// Intel Haswell Xeon.
    PMC_CPU_INTEL_HASWELL_XEON = 0x95,
    /// Intel Broadwell.
    PMC_CPU_INTEL_BROADWELL = 0x96,
    /// Intel Broadwell Xeon.
    PMC_CPU_INTEL_BROADWELL_XEON = 0x97,
    /// Intel Skylake.
    PMC_CPU_INTEL_SKYLAKE = 0x98,
    /// Intel Skylake Xeon.
    PMC_CPU_INTEL_SKYLAKE_XEON = 0x99,
    /// Intel Atom Goldmont.
    PMC_CPU_INTEL_ATOM_GOLDMONT = 0x9A,
    /// Intel Ice Lake.
    PMC_CPU_INTEL_ICELAKE = 0x9B,
    /// Intel Ice Lake Xeon.
    PMC_CPU_INTEL_ICELAKE_XEON = 0x9C,
    /// Intel Alder Lake.
    PMC_CPU_INTEL_ALDERLAKE = 0x9D,
    /// Intel Atom Goldmont Plus.
    PMC_CPU_INTEL_ATOM_GOLDMONT_P = 0x9E,
    /// Intel Atom Tremont.
    PMC_CPU_INTEL_ATOM_TREMONT = 0x9F,
    /// Intel Emerald Rapids.
    PMC_CPU_INTEL_EMERALD_RAPIDS = 0xA0,
    /// Intel Alder Lake-N.
    PMC_CPU_INTEL_ALDERLAKEN = 0xA1,
    /// Intel Granite Rapids.
    PMC_CPU_INTEL_GRANITE_RAPIDS = 0xA2,
    /// Intel Meteor Lake.
    PMC_CPU_INTEL_METEOR_LAKE = 0xA3,
    /// Intel Sapphire Rapids.
    PMC_CPU_INTEL_SAPPHIRE_RAPIDS = 0xA4,
    /// PowerPC 7450.
    PMC_CPU_PPC_7450 = 0x300,
    /// PowerPC e500.
    PMC_CPU_PPC_E500 = 0x340,
    /// PowerPC 970.
    PMC_CPU_PPC_970 = 0x380,
    /// IBM POWER8.
    PMC_CPU_PPC_POWER8 = 0x390,
    /// No CPU-specific support: SOFT events only (this library's answer).
    PMC_CPU_GENERIC = 0x400,
    /// Cortex-A5.
    PMC_CPU_ARMV7_CORTEX_A5 = 0x500,
    /// Cortex-A7.
    PMC_CPU_ARMV7_CORTEX_A7 = 0x501,
    /// Cortex-A8.
    PMC_CPU_ARMV7_CORTEX_A8 = 0x502,
    /// Cortex-A9.
    PMC_CPU_ARMV7_CORTEX_A9 = 0x503,
    /// Cortex-A15.
    PMC_CPU_ARMV7_CORTEX_A15 = 0x504,
    /// Cortex-A17.
    PMC_CPU_ARMV7_CORTEX_A17 = 0x505,
    /// Cortex-A53.
    PMC_CPU_ARMV8_CORTEX_A53 = 0x600,
    /// Cortex-A57.
    PMC_CPU_ARMV8_CORTEX_A57 = 0x601,
    /// Cortex-A76.
    PMC_CPU_ARMV8_CORTEX_A76 = 0x602,
}

/// `enum pmc_event`: the events whose codes are fixed (FreeBSD's full
/// table has thousands; the ones here are those the ABI facts pin, and the
/// SOFT range, whose codes the kernel hands out).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pmc_event {
    /// The timestamp counter.
    PMC_EV_TSC_TSC = 0x1000,
    /// AMD IBS fetch.
    PMC_EV_IBS_FETCH = 0x2000,
    /// AMD IBS op.
    PMC_EV_IBS_OP = 0x2001,
    /// First AMD K8 event.
    PMC_EV_K8_FIRST = 0x2080,
    /// AMD K8 unhalted cycles.
    PMC_EV_K8_BU_CPU_CLK_UNHALTED = 0x2098,
    /// AMD K8 retired instructions.
    PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS = 0x20A6,
    /// Last AMD K8 event.
    PMC_EV_K8_LAST = 0x20CF,
    /// Intel fixed: instructions retired.
    PMC_EV_IAF_INSTR_RETIRED_ANY = 0x10000,
    /// Intel fixed: core cycles.
    PMC_EV_IAF_CPU_CLK_UNHALTED_CORE = 0x10001,
    /// Intel fixed: reference cycles.
    PMC_EV_IAF_CPU_CLK_UNHALTED_REF = 0x10002,
    /// First PowerPC 7450 event.
    PMC_EV_PPC7450_FIRST = 0x13000,
    /// First PowerPC 970 event.
    PMC_EV_PPC970_FIRST = 0x13100,
    /// First e500 event.
    PMC_EV_E500_FIRST = 0x13300,
    /// First ARMv7 event.
    PMC_EV_ARMV7_FIRST = 0x14000,
    /// First ARMv8 event.
    PMC_EV_ARMV8_FIRST = 0x14100,
    /// First DMC-620 (clkdiv2) event.
    PMC_EV_DMC620_PMU_CD2_FIRST = 0x14500,
    /// First DMC-620 (clk) event.
    PMC_EV_DMC620_PMU_C_FIRST = 0x14520,
    /// First CMN-600 event.
    PMC_EV_CMN600_PMU_FIRST = 0x14600,
    /// RAPL package energy.
    PMC_EV_RAPL_ENERGY_PKG = 0x14700,
    /// RAPL cores energy.
    PMC_EV_RAPL_ENERGY_CORES = 0x14701,
    /// RAPL DRAM energy.
    PMC_EV_RAPL_ENERGY_DRAM = 0x14702,
    /// MPERF.
    PMC_EV_PERF_MPERF = 0x14800,
    /// APERF.
    PMC_EV_PERF_APERF = 0x14801,
    /// First SOFT event (`PMC_EV_SOFT_FIRST`); the SOFT codes this library
    /// hands out are `pmc_event_names_of_class(PMC_CLASS_SOFT)`'s order.
    PMC_EV_SOFT_FIRST = 0x20000,
    /// Last SOFT event (`PMC_EV_SOFT_LAST`).
    PMC_EV_SOFT_LAST = 0x20FFF,
}

/// A `enum pmc_mode` as C passes it (any 32-bit value).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeArg(pub u32);
/// A `enum pmc_class` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassArg(pub u32);
/// A `enum pmc_state` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateArg(pub u32);
/// A `enum pmc_disp` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispArg(pub u32);
/// A `enum pmc_event` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventArg(pub u32);
/// A `enum pmc_cputype` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTypeArg(pub u32);

/// `struct pmc_classinfo`: one class of PMCs on this CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_classinfo {
    /// The class.
    pub pm_class: ClassArg,
    /// Its capabilities (`PMC_CAP_*`).
    pub pm_caps: u32,
    /// Counter width in bits.
    pub pm_width: u32,
    /// Rows of this class per CPU.
    pub pm_num: u32,
}

/// `struct pmc_cpuinfo`: what `pmc_cpuinfo` returns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_cpuinfo {
    /// The kind of CPU.
    pub pm_cputype: CpuTypeArg,
    /// Number of CPUs.
    pub pm_ncpu: u32,
    /// PMC rows per CPU.
    pub pm_npmc: u32,
    /// Valid entries of `pm_classes`.
    pub pm_nclass: u32,
    /// The classes.
    pub pm_classes: [pmc_classinfo; PMC_CLASS_MAX],
}

/// `struct pmc_info`: one PMC row (`pmc_pmcinfo`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_info {
    /// The row's name, NUL-terminated.
    pub pm_name: [c_char; PMC_NAME_MAX],
    /// Its class.
    pub pm_class: ClassArg,
    /// Whether it is enabled.
    pub pm_enabled: i32,
    /// Its disposition.
    pub pm_rowdisp: DispArg,
    /// The owner's pid, when allocated.
    pub pm_ownerpid: libc::pid_t,
    /// The allocated PMC's mode.
    pub pm_mode: ModeArg,
    /// The allocated PMC's event.
    pub pm_event: EventArg,
    /// The allocated PMC's flags.
    pub pm_flags: u32,
    /// The allocated PMC's reload count (sampling modes).
    pub pm_reloadcount: pmc_value_t,
}

/// `struct pmc_pmcinfo`: what `pmc_pmcinfo` returns, `pm_pmcs` holding
/// `pmc_npmc(cpu)` rows; free it with `free(3)`.
#[repr(C)]
#[derive(Debug)]
pub struct pmc_pmcinfo {
    /// The CPU.
    pub pm_cpu: i32,
    /// The rows (a flexible array member).
    pub pm_pmcs: [pmc_info; 0],
}

/// `struct pmc_driverstats`: the driver's statistics
/// (`pmc_get_driver_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_driverstats {
    /// Interrupts ignored.
    pub pm_intr_ignored: i32,
    /// Interrupts processed.
    pub pm_intr_processed: i32,
    /// Interrupts that found the buffer full.
    pub pm_intr_bufferfull: i32,
    /// Calls into the driver.
    pub pm_syscalls: i32,
    /// Calls that failed.
    pub pm_syscall_errors: i32,
    /// Buffer requests.
    pub pm_buffer_requests: i32,
    /// Failed buffer requests.
    pub pm_buffer_requests_failed: i32,
    /// Sample buffer sweeps.
    pub pm_log_sweeps: i32,
}
