//! Layout tests: every size, alignment and field offset of the hwpmc ABI
//! structs against the numbers of `abi-amd64.json` (FreeBSD/amd64, probed
//! with a C compiler), embedded below as the primary check. A second test
//! re-reads the JSON itself when the shared docs are present.
//!
//! The expected table was transcribed from the JSON; the actual numbers are
//! computed by the compiler from the Rust definitions.

#![allow(clippy::unnecessary_cast, clippy::type_complexity)]

use super::*;
use core::mem::{align_of, offset_of, size_of};

/// (C name, size, align, [(field, offset, size)]).
type Layout = (
    &'static str,
    usize,
    usize,
    &'static [(&'static str, usize, usize)],
);

/// Facts from abi-amd64.json ("structs" and "structs_arm64_md").
const EXPECTED: &[Layout] = &[
    (
        "struct pmc_md_amd_op_pmcallocate",
        16,
        8,
        &[("pm_amd_config", 0, 8), ("pm_amd_sub_class", 8, 4)],
    ),
    (
        "struct pmc_md_ibs_op_pmcallocate",
        24,
        8,
        &[
            ("ibs_flag", 0, 4),
            ("ibs_type", 4, 4),
            ("ibs_ctl", 8, 8),
            ("ibs_ctl2", 16, 8),
        ],
    ),
    (
        "struct pmc_md_iap_op_pmcallocate",
        16,
        8,
        &[("pm_iap_config", 0, 4), ("pm_iap_rsp", 8, 8)],
    ),
    (
        "struct pmc_md_ucf_op_pmcallocate",
        2,
        2,
        &[("pm_ucf_flags", 0, 2)],
    ),
    (
        "struct pmc_md_ucp_op_pmcallocate",
        4,
        4,
        &[("pm_ucp_config", 0, 4)],
    ),
    (
        "union pmc_md_op_pmcallocate",
        32,
        8,
        &[
            ("pm_amd", 0, 16),
            ("pm_ibs", 0, 24),
            ("pm_iap", 0, 16),
            ("pm_ucf", 0, 2),
            ("pm_ucp", 0, 4),
            ("__pad", 0, 32),
        ],
    ),
    (
        "struct pmc_op_pmcallocate",
        72,
        8,
        &[
            ("pm_caps", 0, 4),
            ("pm_cpu", 4, 4),
            ("pm_class", 8, 4),
            ("pm_ev", 12, 4),
            ("pm_flags", 16, 4),
            ("pm_mode", 20, 4),
            ("pm_pmcid", 24, 4),
            ("pm_count", 32, 8),
            ("pm_md", 40, 32),
        ],
    ),
    (
        "struct pmc_op_pmcadmin",
        16,
        4,
        &[
            ("pm_cpu", 0, 4),
            ("pm_flags", 4, 4),
            ("pm_pmc", 8, 4),
            ("pm_state", 12, 4),
        ],
    ),
    (
        "struct pmc_op_pmcattach",
        8,
        4,
        &[("pm_pmc", 0, 4), ("pm_pid", 4, 4)],
    ),
    (
        "struct pmc_op_pmcsetcount",
        16,
        8,
        &[("pm_count", 0, 8), ("pm_pmcid", 8, 4)],
    ),
    (
        "struct pmc_op_pmcrw",
        16,
        8,
        &[("pm_flags", 0, 4), ("pm_pmcid", 4, 4), ("pm_value", 8, 8)],
    ),
    (
        "struct pmc_info",
        104,
        8,
        &[
            ("pm_name", 0, 64),
            ("pm_class", 64, 4),
            ("pm_enabled", 68, 4),
            ("pm_rowdisp", 72, 4),
            ("pm_ownerpid", 76, 4),
            ("pm_mode", 80, 4),
            ("pm_event", 84, 4),
            ("pm_flags", 88, 4),
            ("pm_reloadcount", 96, 8),
        ],
    ),
    (
        "struct pmc_op_getpmcinfo",
        8,
        8,
        &[("pm_cpu", 0, 4), ("pm_pmcs", 8, 0)],
    ),
    (
        "struct pmc_classinfo",
        16,
        4,
        &[
            ("pm_class", 0, 4),
            ("pm_caps", 4, 4),
            ("pm_width", 8, 4),
            ("pm_num", 12, 4),
        ],
    ),
    (
        "struct pmc_op_getcpuinfo",
        144,
        4,
        &[
            ("pm_cputype", 0, 4),
            ("pm_ncpu", 4, 4),
            ("pm_npmc", 8, 4),
            ("pm_nclass", 12, 4),
            ("pm_classes", 16, 128),
        ],
    ),
    (
        "struct pmc_op_configurelog",
        8,
        4,
        &[("pm_flags", 0, 4), ("pm_logfd", 4, 4)],
    ),
    (
        "struct pmc_op_getdriverstats",
        32,
        4,
        &[
            ("pm_intr_ignored", 0, 4),
            ("pm_intr_processed", 4, 4),
            ("pm_intr_bufferfull", 8, 4),
            ("pm_syscalls", 12, 4),
            ("pm_syscall_errors", 16, 4),
            ("pm_buffer_requests", 20, 4),
            ("pm_buffer_requests_failed", 24, 4),
            ("pm_log_sweeps", 28, 4),
        ],
    ),
    ("struct pmc_op_simple", 4, 4, &[("pm_pmcid", 0, 4)]),
    ("struct pmc_op_writelog", 4, 4, &[("pm_userdata", 0, 4)]),
    (
        "struct pmc_op_getmsr",
        8,
        4,
        &[("pm_msr", 0, 4), ("pm_pmcid", 4, 4)],
    ),
    (
        "struct pmc_dyn_event_descr",
        68,
        4,
        &[("pm_ev_name", 0, 64), ("pm_ev_code", 64, 4)],
    ),
    (
        "struct pmc_op_getdyneventinfo",
        278536,
        4,
        &[
            ("pm_class", 0, 4),
            ("pm_nevent", 4, 4),
            ("pm_events", 8, 278528),
        ],
    ),
    (
        "struct pmc_op_caps",
        8,
        4,
        &[("pm_pmcid", 0, 4), ("pm_caps", 4, 4)],
    ),
    (
        "struct module_stat",
        56,
        8,
        &[
            ("version", 0, 4),
            ("name", 4, 32),
            ("refs", 36, 4),
            ("id", 40, 4),
            ("data", 48, 8),
        ],
    ),
    (
        "struct pmc_md_cmn600_pmu_op_pmcallocate",
        24,
        8,
        &[
            ("pma_cmn600_nodeid", 0, 8),
            ("pma_cmn600_occupancy", 8, 8),
            ("pma_cmn600_config", 16, 4),
        ],
    ),
    (
        "struct pmc_md_dmc620_pmu_op_pmcallocate",
        24,
        8,
        &[
            ("pm_dmc620_match", 0, 8),
            ("pm_dmc620_mask", 8, 8),
            ("pm_dmc620_config", 16, 4),
        ],
    ),
    (
        "union arm64_pmc_md_op_pmcallocate",
        32,
        8,
        &[
            ("pm_md_config", 0, 4),
            ("pm_cmn600", 0, 24),
            ("pm_dmc620", 0, 24),
            ("__pad", 0, 32),
        ],
    ),
    (
        "struct arm64_pmc_op_pmcallocate",
        72,
        8,
        &[("pm_count", 32, 8), ("pm_md", 40, 32)],
    ),
];

/// Facts from abi-amd64.json ("constants" and "pmclog.constants").
const EXPECTED_CONSTANTS: &[(&str, u64)] = &[
    ("PMC_VERSION", 167968768),
    ("PMC_VERSION_MAJOR", 10),
    ("PMC_VERSION_MINOR", 3),
    ("PMC_VERSION_PATCH", 0),
    ("PMC_NAME_MAX", 64),
    ("PMC_CLASS_MAX", 8),
    ("PMC_CPUID_LEN", 64),
    ("PMC_CALLCHAIN_DEPTH_MAX", 512),
    ("PMC_EV_DYN_COUNT", 4096),
    ("PMC_EV_SOFT_FIRST", 131072),
    ("PMC_EV_SOFT_LAST", 135167),
    ("PMC_CPU_ANY_u32", 4294967295),
    ("PMC_ID_INVALID", 4294967295),
    ("PMC_OP_CONFIGURELOG", 0),
    ("PMC_OP_FLUSHLOG", 1),
    ("PMC_OP_GETCPUINFO", 2),
    ("PMC_OP_GETDRIVERSTATS", 3),
    ("PMC_OP_GETMODULEVERSION", 4),
    ("PMC_OP_GETPMCINFO", 5),
    ("PMC_OP_PMCADMIN", 6),
    ("PMC_OP_PMCALLOCATE", 7),
    ("PMC_OP_PMCATTACH", 8),
    ("PMC_OP_PMCDETACH", 9),
    ("PMC_OP_PMCGETMSR", 10),
    ("PMC_OP_PMCRELEASE", 11),
    ("PMC_OP_PMCRW", 12),
    ("PMC_OP_PMCSETCOUNT", 13),
    ("PMC_OP_PMCSTART", 14),
    ("PMC_OP_PMCSTOP", 15),
    ("PMC_OP_WRITELOG", 16),
    ("PMC_OP_CLOSELOG", 17),
    ("PMC_OP_GETDYNEVENTINFO", 18),
    ("PMC_OP_GETCAPS", 19),
    ("PMC_MODE_SS", 0),
    ("PMC_MODE_SC", 1),
    ("PMC_MODE_TS", 2),
    ("PMC_MODE_TC", 3),
    ("PMC_STATE_DISABLED", 0),
    ("PMC_STATE_FREE", 1),
    ("PMC_STATE_ALLOCATED", 2),
    ("PMC_STATE_STOPPED", 3),
    ("PMC_STATE_RUNNING", 4),
    ("PMC_STATE_DELETED", 5),
    ("PMC_STATE_MAX", 6),
    ("PMC_DISP_STANDALONE", 0),
    ("PMC_DISP_FREE", 1),
    ("PMC_DISP_THREAD", 2),
    ("PMC_DISP_UNKNOWN", 3),
    ("PMC_CAP_INTERRUPT", 1),
    ("PMC_CAP_USER", 2),
    ("PMC_CAP_SYSTEM", 4),
    ("PMC_CAP_EDGE", 8),
    ("PMC_CAP_THRESHOLD", 16),
    ("PMC_CAP_READ", 32),
    ("PMC_CAP_WRITE", 64),
    ("PMC_CAP_INVERT", 128),
    ("PMC_CAP_QUALIFIER", 256),
    ("PMC_CAP_PRECISE", 512),
    ("PMC_CAP_TAGGING", 1024),
    ("PMC_CAP_CASCADE", 2048),
    ("PMC_CAP_SYSWIDE", 4096),
    ("PMC_CAP_DOMWIDE", 8192),
    ("PMC_F_UNUSED1", 1),
    ("PMC_F_DESCENDANTS", 2),
    ("PMC_F_LOG_PROCCSW", 4),
    ("PMC_F_LOG_PROCEXIT", 8),
    ("PMC_F_NEWVALUE", 16),
    ("PMC_F_OLDVALUE", 32),
    ("PMC_F_CALLCHAIN", 128),
    ("PMC_F_USERCALLCHAIN", 256),
    ("PMC_F_EV_PMU", 512),
    ("PMC_F_ATTACHED_TO_OWNER", 65536),
    ("PMC_F_NEEDS_LOGFILE", 131072),
    ("PMC_F_ATTACH_DONE", 262144),
    ("PMC_CC_F_USERSPACE", 1),
    ("PMC_CC_F_MULTIPART", 2),
    ("PMC_CLASS_TSC", 0),
    ("PMC_CLASS_K8", 2),
    ("PMC_CLASS_IBS", 3),
    ("PMC_CLASS_IAF", 6),
    ("PMC_CLASS_IAP", 7),
    ("PMC_CLASS_UCF", 8),
    ("PMC_CLASS_UCP", 9),
    ("PMC_CLASS_PPC7450", 13),
    ("PMC_CLASS_PPC970", 14),
    ("PMC_CLASS_SOFT", 15),
    ("PMC_CLASS_ARMV7", 16),
    ("PMC_CLASS_ARMV8", 17),
    ("PMC_CLASS_E500", 19),
    ("PMC_CLASS_POWER8", 21),
    ("PMC_CLASS_DMC620_PMU_CD2", 22),
    ("PMC_CLASS_DMC620_PMU_C", 23),
    ("PMC_CLASS_CMN600_PMU", 24),
    ("PMC_CLASS_RAPL", 25),
    ("PMC_CLASS_PERF", 26),
    ("PMC_CPU_AMD_K8", 1),
    ("PMC_CPU_INTEL_CORE", 135),
    ("PMC_CPU_INTEL_CORE2", 136),
    ("PMC_CPU_INTEL_CORE2EXTREME", 137),
    ("PMC_CPU_INTEL_ATOM", 138),
    ("PMC_CPU_INTEL_COREI7", 139),
    ("PMC_CPU_INTEL_WESTMERE", 140),
    ("PMC_CPU_INTEL_SANDYBRIDGE", 141),
    ("PMC_CPU_INTEL_IVYBRIDGE", 142),
    ("PMC_CPU_INTEL_SANDYBRIDGE_XEON", 143),
    ("PMC_CPU_INTEL_IVYBRIDGE_XEON", 144),
    ("PMC_CPU_INTEL_HASWELL", 145),
    ("PMC_CPU_INTEL_ATOM_SILVERMONT", 146),
    ("PMC_CPU_INTEL_NEHALEM_EX", 147),
    ("PMC_CPU_INTEL_WESTMERE_EX", 148),
    ("PMC_CPU_INTEL_HASWELL_XEON", 149),
    ("PMC_CPU_INTEL_BROADWELL", 150),
    ("PMC_CPU_INTEL_BROADWELL_XEON", 151),
    ("PMC_CPU_INTEL_SKYLAKE", 152),
    ("PMC_CPU_INTEL_SKYLAKE_XEON", 153),
    ("PMC_CPU_INTEL_ATOM_GOLDMONT", 154),
    ("PMC_CPU_INTEL_ICELAKE", 155),
    ("PMC_CPU_INTEL_ICELAKE_XEON", 156),
    ("PMC_CPU_INTEL_ALDERLAKE", 157),
    ("PMC_CPU_INTEL_ATOM_GOLDMONT_P", 158),
    ("PMC_CPU_INTEL_ATOM_TREMONT", 159),
    ("PMC_CPU_INTEL_EMERALD_RAPIDS", 160),
    ("PMC_CPU_INTEL_ALDERLAKEN", 161),
    ("PMC_CPU_INTEL_GRANITE_RAPIDS", 162),
    ("PMC_CPU_INTEL_METEOR_LAKE", 163),
    ("PMC_CPU_INTEL_SAPPHIRE_RAPIDS", 164),
    ("PMC_CPU_PPC_7450", 768),
    ("PMC_CPU_PPC_E500", 832),
    ("PMC_CPU_PPC_970", 896),
    ("PMC_CPU_PPC_POWER8", 912),
    ("PMC_CPU_GENERIC", 1024),
    ("PMC_CPU_ARMV7_CORTEX_A5", 1280),
    ("PMC_CPU_ARMV7_CORTEX_A7", 1281),
    ("PMC_CPU_ARMV7_CORTEX_A8", 1282),
    ("PMC_CPU_ARMV7_CORTEX_A9", 1283),
    ("PMC_CPU_ARMV7_CORTEX_A15", 1284),
    ("PMC_CPU_ARMV7_CORTEX_A17", 1285),
    ("PMC_CPU_ARMV8_CORTEX_A53", 1536),
    ("PMC_CPU_ARMV8_CORTEX_A57", 1537),
    ("PMC_CPU_ARMV8_CORTEX_A76", 1538),
    ("PMC_EV_TSC_TSC", 4096),
    ("PMC_EV_IBS_FETCH", 8192),
    ("PMC_EV_IBS_OP", 8193),
    ("PMC_EV_K8_FIRST", 8320),
    ("PMC_EV_K8_LAST", 8399),
    ("PMC_EV_K8_BU_CPU_CLK_UNHALTED", 8344),
    ("PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS", 8358),
    ("PMC_EV_IAF_INSTR_RETIRED_ANY", 65536),
    ("PMC_EV_IAF_CPU_CLK_UNHALTED_CORE", 65537),
    ("PMC_EV_IAF_CPU_CLK_UNHALTED_REF", 65538),
    ("PMC_EV_RAPL_ENERGY_PKG", 83712),
    ("PMC_EV_RAPL_ENERGY_CORES", 83713),
    ("PMC_EV_RAPL_ENERGY_DRAM", 83714),
    ("PMC_EV_PERF_MPERF", 83968),
    ("PMC_EV_PERF_APERF", 83969),
    ("PMC_EV_PPC7450_FIRST", 77824),
    ("PMC_EV_ARMV7_FIRST", 81920),
    ("PMC_EV_ARMV8_FIRST", 82176),
    ("PMC_EV_CMN600_PMU_FIRST", 83456),
    ("PMC_EV_DMC620_PMU_CD2_FIRST", 83200),
    ("PMC_EV_DMC620_PMU_C_FIRST", 83232),
    ("PMC_EV_E500_FIRST", 78592),
    ("PMC_EV_PPC970_FIRST", 78080),
    ("PMC_AMD_SUB_CLASS_CORE", 0),
    ("PMC_AMD_SUB_CLASS_L3_CACHE", 1),
    ("PMC_AMD_SUB_CLASS_DATA_FABRIC", 2),
    ("AMD_PMC_USR", 65536),
    ("AMD_PMC_OS", 131072),
    ("AMD_PMC_EDGE", 262144),
    ("AMD_PMC_PC", 524288),
    ("AMD_PMC_INT", 1048576),
    ("AMD_PMC_ENABLE", 4194304),
    ("AMD_PMC_INVERT", 8388608),
    ("AMD_PMC_COUNTERMASK", 4278190080),
    ("AMD_PMC_UNITMASK", 65280),
    ("AMD_PMC_EVENTMASK", 64424509695),
    ("IBS_PMC_FETCH", 0),
    ("IBS_PMC_OP", 1),
    ("IAF_OS", 1),
    ("IAF_USR", 2),
    ("IAF_ANY", 4),
    ("IAF_PMI", 8),
    ("IAP_USR", 65536),
    ("IAP_OS", 131072),
    ("IAP_EDGE", 262144),
    ("IAP_INT", 1048576),
    ("IAP_ANY", 2097152),
    ("IAP_EN", 4194304),
    ("IAP_INV", 8388608),
    ("PMCLOG_HEADER_MAGIC", 238),
    ("PMCLOG_TYPE_CLOSELOG", 1),
    ("PMCLOG_TYPE_DROPNOTIFY", 2),
    ("PMCLOG_TYPE_INITIALIZE", 3),
    ("PMCLOG_TYPE_PMCALLOCATE", 5),
    ("PMCLOG_TYPE_PMCATTACH", 6),
    ("PMCLOG_TYPE_PMCDETACH", 7),
    ("PMCLOG_TYPE_PROCCSW", 8),
    ("PMCLOG_TYPE_PROCEXEC", 9),
    ("PMCLOG_TYPE_PROCEXIT", 10),
    ("PMCLOG_TYPE_PROCFORK", 11),
    ("PMCLOG_TYPE_SYSEXIT", 12),
    ("PMCLOG_TYPE_USERDATA", 13),
    ("PMCLOG_TYPE_MAP_IN", 14),
    ("PMCLOG_TYPE_MAP_OUT", 15),
    ("PMCLOG_TYPE_CALLCHAIN", 16),
    ("PMCLOG_TYPE_PMCALLOCATEDYN", 17),
    ("PMCLOG_TYPE_THR_CREATE", 18),
    ("PMCLOG_TYPE_THR_EXIT", 19),
    ("PMCLOG_TYPE_PROC_CREATE", 20),
    ("PMC_MULTIPART_HEADER_LENGTH", 8),
    ("PMC_MULTIPART_HEADER_ENTRIES", 4),
    ("PMC_CC_MULTIPART_NONE", 0),
    ("PMC_CC_MULTIPART_CALLCHAIN", 1),
    ("PMC_CC_MULTIPART_IBS_FETCH", 2),
    ("PMC_CC_MULTIPART_IBS_OP", 3),
    ("FBSD_PATH_MAX", 1024),
    ("FBSD_MAXCOMLEN", 19),
    ("sizeof_union_pmclog_entry", 4128),
];

/// The Rust constants, by their C name.
const ACTUAL_CONSTANTS: &[(&str, u64)] = &[
    ("PMC_VERSION", PMC_VERSION as u64),
    ("PMC_VERSION_MAJOR", PMC_VERSION_MAJOR as u64),
    ("PMC_VERSION_MINOR", PMC_VERSION_MINOR as u64),
    ("PMC_VERSION_PATCH", PMC_VERSION_PATCH as u64),
    ("PMC_NAME_MAX", PMC_NAME_MAX as u64),
    ("PMC_CLASS_MAX", PMC_CLASS_MAX as u64),
    ("PMC_CPUID_LEN", PMC_CPUID_LEN as u64),
    ("PMC_CALLCHAIN_DEPTH_MAX", PMC_CALLCHAIN_DEPTH_MAX as u64),
    ("PMC_EV_DYN_COUNT", PMC_EV_DYN_COUNT as u64),
    ("PMC_EV_SOFT_FIRST", PMC_EV_SOFT_FIRST as u64),
    ("PMC_EV_SOFT_LAST", PMC_EV_SOFT_LAST as u64),
    ("PMC_CPU_ANY_u32", PMC_CPU_ANY as u64),
    ("PMC_ID_INVALID", PMC_ID_INVALID as u64),
    ("PMC_OP_CONFIGURELOG", PMC_OP_CONFIGURELOG as u64),
    ("PMC_OP_FLUSHLOG", PMC_OP_FLUSHLOG as u64),
    ("PMC_OP_GETCPUINFO", PMC_OP_GETCPUINFO as u64),
    ("PMC_OP_GETDRIVERSTATS", PMC_OP_GETDRIVERSTATS as u64),
    ("PMC_OP_GETMODULEVERSION", PMC_OP_GETMODULEVERSION as u64),
    ("PMC_OP_GETPMCINFO", PMC_OP_GETPMCINFO as u64),
    ("PMC_OP_PMCADMIN", PMC_OP_PMCADMIN as u64),
    ("PMC_OP_PMCALLOCATE", PMC_OP_PMCALLOCATE as u64),
    ("PMC_OP_PMCATTACH", PMC_OP_PMCATTACH as u64),
    ("PMC_OP_PMCDETACH", PMC_OP_PMCDETACH as u64),
    ("PMC_OP_PMCGETMSR", PMC_OP_PMCGETMSR as u64),
    ("PMC_OP_PMCRELEASE", PMC_OP_PMCRELEASE as u64),
    ("PMC_OP_PMCRW", PMC_OP_PMCRW as u64),
    ("PMC_OP_PMCSETCOUNT", PMC_OP_PMCSETCOUNT as u64),
    ("PMC_OP_PMCSTART", PMC_OP_PMCSTART as u64),
    ("PMC_OP_PMCSTOP", PMC_OP_PMCSTOP as u64),
    ("PMC_OP_WRITELOG", PMC_OP_WRITELOG as u64),
    ("PMC_OP_CLOSELOG", PMC_OP_CLOSELOG as u64),
    ("PMC_OP_GETDYNEVENTINFO", PMC_OP_GETDYNEVENTINFO as u64),
    ("PMC_OP_GETCAPS", PMC_OP_GETCAPS as u64),
    ("PMC_MODE_SS", PMC_MODE_SS as u64),
    ("PMC_MODE_SC", PMC_MODE_SC as u64),
    ("PMC_MODE_TS", PMC_MODE_TS as u64),
    ("PMC_MODE_TC", PMC_MODE_TC as u64),
    ("PMC_STATE_DISABLED", PMC_STATE_DISABLED as u64),
    ("PMC_STATE_FREE", PMC_STATE_FREE as u64),
    ("PMC_STATE_ALLOCATED", PMC_STATE_ALLOCATED as u64),
    ("PMC_STATE_STOPPED", PMC_STATE_STOPPED as u64),
    ("PMC_STATE_RUNNING", PMC_STATE_RUNNING as u64),
    ("PMC_STATE_DELETED", PMC_STATE_DELETED as u64),
    ("PMC_STATE_MAX", PMC_STATE_MAX as u64),
    ("PMC_DISP_STANDALONE", PMC_DISP_STANDALONE as u64),
    ("PMC_DISP_FREE", PMC_DISP_FREE as u64),
    ("PMC_DISP_THREAD", PMC_DISP_THREAD as u64),
    ("PMC_DISP_UNKNOWN", PMC_DISP_UNKNOWN as u64),
    ("PMC_CAP_INTERRUPT", PMC_CAP_INTERRUPT as u64),
    ("PMC_CAP_USER", PMC_CAP_USER as u64),
    ("PMC_CAP_SYSTEM", PMC_CAP_SYSTEM as u64),
    ("PMC_CAP_EDGE", PMC_CAP_EDGE as u64),
    ("PMC_CAP_THRESHOLD", PMC_CAP_THRESHOLD as u64),
    ("PMC_CAP_READ", PMC_CAP_READ as u64),
    ("PMC_CAP_WRITE", PMC_CAP_WRITE as u64),
    ("PMC_CAP_INVERT", PMC_CAP_INVERT as u64),
    ("PMC_CAP_QUALIFIER", PMC_CAP_QUALIFIER as u64),
    ("PMC_CAP_PRECISE", PMC_CAP_PRECISE as u64),
    ("PMC_CAP_TAGGING", PMC_CAP_TAGGING as u64),
    ("PMC_CAP_CASCADE", PMC_CAP_CASCADE as u64),
    ("PMC_CAP_SYSWIDE", PMC_CAP_SYSWIDE as u64),
    ("PMC_CAP_DOMWIDE", PMC_CAP_DOMWIDE as u64),
    ("PMC_F_UNUSED1", PMC_F_UNUSED1 as u64),
    ("PMC_F_DESCENDANTS", PMC_F_DESCENDANTS as u64),
    ("PMC_F_LOG_PROCCSW", PMC_F_LOG_PROCCSW as u64),
    ("PMC_F_LOG_PROCEXIT", PMC_F_LOG_PROCEXIT as u64),
    ("PMC_F_NEWVALUE", PMC_F_NEWVALUE as u64),
    ("PMC_F_OLDVALUE", PMC_F_OLDVALUE as u64),
    ("PMC_F_CALLCHAIN", PMC_F_CALLCHAIN as u64),
    ("PMC_F_USERCALLCHAIN", PMC_F_USERCALLCHAIN as u64),
    ("PMC_F_EV_PMU", PMC_F_EV_PMU as u64),
    ("PMC_F_ATTACHED_TO_OWNER", PMC_F_ATTACHED_TO_OWNER as u64),
    ("PMC_F_NEEDS_LOGFILE", PMC_F_NEEDS_LOGFILE as u64),
    ("PMC_F_ATTACH_DONE", PMC_F_ATTACH_DONE as u64),
    ("PMC_CC_F_USERSPACE", PMC_CC_F_USERSPACE as u64),
    ("PMC_CC_F_MULTIPART", PMC_CC_F_MULTIPART as u64),
    ("PMC_CLASS_TSC", PMC_CLASS_TSC as u64),
    ("PMC_CLASS_K8", PMC_CLASS_K8 as u64),
    ("PMC_CLASS_IBS", PMC_CLASS_IBS as u64),
    ("PMC_CLASS_IAF", PMC_CLASS_IAF as u64),
    ("PMC_CLASS_IAP", PMC_CLASS_IAP as u64),
    ("PMC_CLASS_UCF", PMC_CLASS_UCF as u64),
    ("PMC_CLASS_UCP", PMC_CLASS_UCP as u64),
    ("PMC_CLASS_PPC7450", PMC_CLASS_PPC7450 as u64),
    ("PMC_CLASS_PPC970", PMC_CLASS_PPC970 as u64),
    ("PMC_CLASS_SOFT", PMC_CLASS_SOFT as u64),
    ("PMC_CLASS_ARMV7", PMC_CLASS_ARMV7 as u64),
    ("PMC_CLASS_ARMV8", PMC_CLASS_ARMV8 as u64),
    ("PMC_CLASS_E500", PMC_CLASS_E500 as u64),
    ("PMC_CLASS_POWER8", PMC_CLASS_POWER8 as u64),
    ("PMC_CLASS_DMC620_PMU_CD2", PMC_CLASS_DMC620_PMU_CD2 as u64),
    ("PMC_CLASS_DMC620_PMU_C", PMC_CLASS_DMC620_PMU_C as u64),
    ("PMC_CLASS_CMN600_PMU", PMC_CLASS_CMN600_PMU as u64),
    ("PMC_CLASS_RAPL", PMC_CLASS_RAPL as u64),
    ("PMC_CLASS_PERF", PMC_CLASS_PERF as u64),
    ("PMC_CPU_AMD_K8", PMC_CPU_AMD_K8 as u64),
    ("PMC_CPU_INTEL_CORE", PMC_CPU_INTEL_CORE as u64),
    ("PMC_CPU_INTEL_CORE2", PMC_CPU_INTEL_CORE2 as u64),
    (
        "PMC_CPU_INTEL_CORE2EXTREME",
        PMC_CPU_INTEL_CORE2EXTREME as u64,
    ),
    ("PMC_CPU_INTEL_ATOM", PMC_CPU_INTEL_ATOM as u64),
    ("PMC_CPU_INTEL_COREI7", PMC_CPU_INTEL_COREI7 as u64),
    ("PMC_CPU_INTEL_WESTMERE", PMC_CPU_INTEL_WESTMERE as u64),
    (
        "PMC_CPU_INTEL_SANDYBRIDGE",
        PMC_CPU_INTEL_SANDYBRIDGE as u64,
    ),
    ("PMC_CPU_INTEL_IVYBRIDGE", PMC_CPU_INTEL_IVYBRIDGE as u64),
    (
        "PMC_CPU_INTEL_SANDYBRIDGE_XEON",
        PMC_CPU_INTEL_SANDYBRIDGE_XEON as u64,
    ),
    (
        "PMC_CPU_INTEL_IVYBRIDGE_XEON",
        PMC_CPU_INTEL_IVYBRIDGE_XEON as u64,
    ),
    ("PMC_CPU_INTEL_HASWELL", PMC_CPU_INTEL_HASWELL as u64),
    (
        "PMC_CPU_INTEL_ATOM_SILVERMONT",
        PMC_CPU_INTEL_ATOM_SILVERMONT as u64,
    ),
    ("PMC_CPU_INTEL_NEHALEM_EX", PMC_CPU_INTEL_NEHALEM_EX as u64),
    (
        "PMC_CPU_INTEL_WESTMERE_EX",
        PMC_CPU_INTEL_WESTMERE_EX as u64,
    ),
    (
        "PMC_CPU_INTEL_HASWELL_XEON",
        PMC_CPU_INTEL_HASWELL_XEON as u64,
    ),
    ("PMC_CPU_INTEL_BROADWELL", PMC_CPU_INTEL_BROADWELL as u64),
    (
        "PMC_CPU_INTEL_BROADWELL_XEON",
        PMC_CPU_INTEL_BROADWELL_XEON as u64,
    ),
    ("PMC_CPU_INTEL_SKYLAKE", PMC_CPU_INTEL_SKYLAKE as u64),
    (
        "PMC_CPU_INTEL_SKYLAKE_XEON",
        PMC_CPU_INTEL_SKYLAKE_XEON as u64,
    ),
    (
        "PMC_CPU_INTEL_ATOM_GOLDMONT",
        PMC_CPU_INTEL_ATOM_GOLDMONT as u64,
    ),
    ("PMC_CPU_INTEL_ICELAKE", PMC_CPU_INTEL_ICELAKE as u64),
    (
        "PMC_CPU_INTEL_ICELAKE_XEON",
        PMC_CPU_INTEL_ICELAKE_XEON as u64,
    ),
    ("PMC_CPU_INTEL_ALDERLAKE", PMC_CPU_INTEL_ALDERLAKE as u64),
    (
        "PMC_CPU_INTEL_ATOM_GOLDMONT_P",
        PMC_CPU_INTEL_ATOM_GOLDMONT_P as u64,
    ),
    (
        "PMC_CPU_INTEL_ATOM_TREMONT",
        PMC_CPU_INTEL_ATOM_TREMONT as u64,
    ),
    (
        "PMC_CPU_INTEL_EMERALD_RAPIDS",
        PMC_CPU_INTEL_EMERALD_RAPIDS as u64,
    ),
    ("PMC_CPU_INTEL_ALDERLAKEN", PMC_CPU_INTEL_ALDERLAKEN as u64),
    (
        "PMC_CPU_INTEL_GRANITE_RAPIDS",
        PMC_CPU_INTEL_GRANITE_RAPIDS as u64,
    ),
    (
        "PMC_CPU_INTEL_METEOR_LAKE",
        PMC_CPU_INTEL_METEOR_LAKE as u64,
    ),
    (
        "PMC_CPU_INTEL_SAPPHIRE_RAPIDS",
        PMC_CPU_INTEL_SAPPHIRE_RAPIDS as u64,
    ),
    ("PMC_CPU_PPC_7450", PMC_CPU_PPC_7450 as u64),
    ("PMC_CPU_PPC_E500", PMC_CPU_PPC_E500 as u64),
    ("PMC_CPU_PPC_970", PMC_CPU_PPC_970 as u64),
    ("PMC_CPU_PPC_POWER8", PMC_CPU_PPC_POWER8 as u64),
    ("PMC_CPU_GENERIC", PMC_CPU_GENERIC as u64),
    ("PMC_CPU_ARMV7_CORTEX_A5", PMC_CPU_ARMV7_CORTEX_A5 as u64),
    ("PMC_CPU_ARMV7_CORTEX_A7", PMC_CPU_ARMV7_CORTEX_A7 as u64),
    ("PMC_CPU_ARMV7_CORTEX_A8", PMC_CPU_ARMV7_CORTEX_A8 as u64),
    ("PMC_CPU_ARMV7_CORTEX_A9", PMC_CPU_ARMV7_CORTEX_A9 as u64),
    ("PMC_CPU_ARMV7_CORTEX_A15", PMC_CPU_ARMV7_CORTEX_A15 as u64),
    ("PMC_CPU_ARMV7_CORTEX_A17", PMC_CPU_ARMV7_CORTEX_A17 as u64),
    ("PMC_CPU_ARMV8_CORTEX_A53", PMC_CPU_ARMV8_CORTEX_A53 as u64),
    ("PMC_CPU_ARMV8_CORTEX_A57", PMC_CPU_ARMV8_CORTEX_A57 as u64),
    ("PMC_CPU_ARMV8_CORTEX_A76", PMC_CPU_ARMV8_CORTEX_A76 as u64),
    ("PMC_EV_TSC_TSC", PMC_EV_TSC_TSC as u64),
    ("PMC_EV_IBS_FETCH", PMC_EV_IBS_FETCH as u64),
    ("PMC_EV_IBS_OP", PMC_EV_IBS_OP as u64),
    ("PMC_EV_K8_FIRST", PMC_EV_K8_FIRST as u64),
    ("PMC_EV_K8_LAST", PMC_EV_K8_LAST as u64),
    (
        "PMC_EV_K8_BU_CPU_CLK_UNHALTED",
        PMC_EV_K8_BU_CPU_CLK_UNHALTED as u64,
    ),
    (
        "PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS",
        PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS as u64,
    ),
    (
        "PMC_EV_IAF_INSTR_RETIRED_ANY",
        PMC_EV_IAF_INSTR_RETIRED_ANY as u64,
    ),
    (
        "PMC_EV_IAF_CPU_CLK_UNHALTED_CORE",
        PMC_EV_IAF_CPU_CLK_UNHALTED_CORE as u64,
    ),
    (
        "PMC_EV_IAF_CPU_CLK_UNHALTED_REF",
        PMC_EV_IAF_CPU_CLK_UNHALTED_REF as u64,
    ),
    ("PMC_EV_RAPL_ENERGY_PKG", PMC_EV_RAPL_ENERGY_PKG as u64),
    ("PMC_EV_RAPL_ENERGY_CORES", PMC_EV_RAPL_ENERGY_CORES as u64),
    ("PMC_EV_RAPL_ENERGY_DRAM", PMC_EV_RAPL_ENERGY_DRAM as u64),
    ("PMC_EV_PERF_MPERF", PMC_EV_PERF_MPERF as u64),
    ("PMC_EV_PERF_APERF", PMC_EV_PERF_APERF as u64),
    ("PMC_EV_PPC7450_FIRST", PMC_EV_PPC7450_FIRST as u64),
    ("PMC_EV_ARMV7_FIRST", PMC_EV_ARMV7_FIRST as u64),
    ("PMC_EV_ARMV8_FIRST", PMC_EV_ARMV8_FIRST as u64),
    ("PMC_EV_CMN600_PMU_FIRST", PMC_EV_CMN600_PMU_FIRST as u64),
    (
        "PMC_EV_DMC620_PMU_CD2_FIRST",
        PMC_EV_DMC620_PMU_CD2_FIRST as u64,
    ),
    (
        "PMC_EV_DMC620_PMU_C_FIRST",
        PMC_EV_DMC620_PMU_C_FIRST as u64,
    ),
    ("PMC_EV_E500_FIRST", PMC_EV_E500_FIRST as u64),
    ("PMC_EV_PPC970_FIRST", PMC_EV_PPC970_FIRST as u64),
    ("PMC_AMD_SUB_CLASS_CORE", PMC_AMD_SUB_CLASS_CORE as u64),
    (
        "PMC_AMD_SUB_CLASS_L3_CACHE",
        PMC_AMD_SUB_CLASS_L3_CACHE as u64,
    ),
    (
        "PMC_AMD_SUB_CLASS_DATA_FABRIC",
        PMC_AMD_SUB_CLASS_DATA_FABRIC as u64,
    ),
    ("AMD_PMC_USR", AMD_PMC_USR as u64),
    ("AMD_PMC_OS", AMD_PMC_OS as u64),
    ("AMD_PMC_EDGE", AMD_PMC_EDGE as u64),
    ("AMD_PMC_PC", AMD_PMC_PC as u64),
    ("AMD_PMC_INT", AMD_PMC_INT as u64),
    ("AMD_PMC_ENABLE", AMD_PMC_ENABLE as u64),
    ("AMD_PMC_INVERT", AMD_PMC_INVERT as u64),
    ("AMD_PMC_COUNTERMASK", AMD_PMC_COUNTERMASK as u64),
    ("AMD_PMC_UNITMASK", AMD_PMC_UNITMASK as u64),
    ("AMD_PMC_EVENTMASK", AMD_PMC_EVENTMASK as u64),
    ("IBS_PMC_FETCH", IBS_PMC_FETCH as u64),
    ("IBS_PMC_OP", IBS_PMC_OP as u64),
    ("IAF_OS", IAF_OS as u64),
    ("IAF_USR", IAF_USR as u64),
    ("IAF_ANY", IAF_ANY as u64),
    ("IAF_PMI", IAF_PMI as u64),
    ("IAP_USR", IAP_USR as u64),
    ("IAP_OS", IAP_OS as u64),
    ("IAP_EDGE", IAP_EDGE as u64),
    ("IAP_INT", IAP_INT as u64),
    ("IAP_ANY", IAP_ANY as u64),
    ("IAP_EN", IAP_EN as u64),
    ("IAP_INV", IAP_INV as u64),
    ("PMCLOG_HEADER_MAGIC", PMCLOG_HEADER_MAGIC as u64),
    ("PMCLOG_TYPE_CLOSELOG", PMCLOG_TYPE_CLOSELOG as u64),
    ("PMCLOG_TYPE_DROPNOTIFY", PMCLOG_TYPE_DROPNOTIFY as u64),
    ("PMCLOG_TYPE_INITIALIZE", PMCLOG_TYPE_INITIALIZE as u64),
    ("PMCLOG_TYPE_PMCALLOCATE", PMCLOG_TYPE_PMCALLOCATE as u64),
    ("PMCLOG_TYPE_PMCATTACH", PMCLOG_TYPE_PMCATTACH as u64),
    ("PMCLOG_TYPE_PMCDETACH", PMCLOG_TYPE_PMCDETACH as u64),
    ("PMCLOG_TYPE_PROCCSW", PMCLOG_TYPE_PROCCSW as u64),
    ("PMCLOG_TYPE_PROCEXEC", PMCLOG_TYPE_PROCEXEC as u64),
    ("PMCLOG_TYPE_PROCEXIT", PMCLOG_TYPE_PROCEXIT as u64),
    ("PMCLOG_TYPE_PROCFORK", PMCLOG_TYPE_PROCFORK as u64),
    ("PMCLOG_TYPE_SYSEXIT", PMCLOG_TYPE_SYSEXIT as u64),
    ("PMCLOG_TYPE_USERDATA", PMCLOG_TYPE_USERDATA as u64),
    ("PMCLOG_TYPE_MAP_IN", PMCLOG_TYPE_MAP_IN as u64),
    ("PMCLOG_TYPE_MAP_OUT", PMCLOG_TYPE_MAP_OUT as u64),
    ("PMCLOG_TYPE_CALLCHAIN", PMCLOG_TYPE_CALLCHAIN as u64),
    (
        "PMCLOG_TYPE_PMCALLOCATEDYN",
        PMCLOG_TYPE_PMCALLOCATEDYN as u64,
    ),
    ("PMCLOG_TYPE_THR_CREATE", PMCLOG_TYPE_THR_CREATE as u64),
    ("PMCLOG_TYPE_THR_EXIT", PMCLOG_TYPE_THR_EXIT as u64),
    ("PMCLOG_TYPE_PROC_CREATE", PMCLOG_TYPE_PROC_CREATE as u64),
    (
        "PMC_MULTIPART_HEADER_LENGTH",
        PMC_MULTIPART_HEADER_LENGTH as u64,
    ),
    (
        "PMC_MULTIPART_HEADER_ENTRIES",
        PMC_MULTIPART_HEADER_ENTRIES as u64,
    ),
    ("PMC_CC_MULTIPART_NONE", PMC_CC_MULTIPART_NONE as u64),
    (
        "PMC_CC_MULTIPART_CALLCHAIN",
        PMC_CC_MULTIPART_CALLCHAIN as u64,
    ),
    (
        "PMC_CC_MULTIPART_IBS_FETCH",
        PMC_CC_MULTIPART_IBS_FETCH as u64,
    ),
    ("PMC_CC_MULTIPART_IBS_OP", PMC_CC_MULTIPART_IBS_OP as u64),
    ("FBSD_PATH_MAX", FBSD_PATH_MAX as u64),
    ("FBSD_MAXCOMLEN", FBSD_MAXCOMLEN as u64),
    ("sizeof_union_pmclog_entry", PMCLOG_MAX_RECORD as u64),
];

macro_rules! layout {
    ($c:expr, $t:ty; $($cf:expr => $f:ident : $ft:ty),* $(,)?) => {
        ($c, size_of::<$t>(), align_of::<$t>(), vec![$(($cf, offset_of!($t, $f), size_of::<$ft>())),*])
    };
}

/// The compiler's numbers for the Rust definitions, by C name.
fn actual() -> Vec<(
    &'static str,
    usize,
    usize,
    Vec<(&'static str, usize, usize)>,
)> {
    vec![
        layout!("struct pmc_md_amd_op_pmcallocate", pmc_md_amd_op_pmcallocate; "pm_amd_config" => pm_amd_config: u64, "pm_amd_sub_class" => pm_amd_sub_class: u32),
        layout!("struct pmc_md_ibs_op_pmcallocate", pmc_md_ibs_op_pmcallocate; "ibs_flag" => ibs_flag: u32, "ibs_type" => ibs_type: u32, "ibs_ctl" => ibs_ctl: u64, "ibs_ctl2" => ibs_ctl2: u64),
        layout!("struct pmc_md_iap_op_pmcallocate", pmc_md_iap_op_pmcallocate; "pm_iap_config" => pm_iap_config: u32, "pm_iap_rsp" => pm_iap_rsp: u64),
        layout!("struct pmc_md_ucf_op_pmcallocate", pmc_md_ucf_op_pmcallocate; "pm_ucf_flags" => pm_ucf_flags: u16),
        layout!("struct pmc_md_ucp_op_pmcallocate", pmc_md_ucp_op_pmcallocate; "pm_ucp_config" => pm_ucp_config: u32),
        layout!("union pmc_md_op_pmcallocate", pmc_md_op_pmcallocate; "pm_amd" => pm_amd: pmc_md_amd_op_pmcallocate, "pm_ibs" => pm_ibs: pmc_md_ibs_op_pmcallocate, "pm_iap" => pm_iap: pmc_md_iap_op_pmcallocate, "pm_ucf" => pm_ucf: pmc_md_ucf_op_pmcallocate, "pm_ucp" => pm_ucp: pmc_md_ucp_op_pmcallocate, "__pad" => __pad: [u64; 4]),
        layout!("struct pmc_op_pmcallocate", pmc_op_pmcallocate; "pm_caps" => pm_caps: u32, "pm_cpu" => pm_cpu: u32, "pm_class" => pm_class: u32, "pm_ev" => pm_ev: u32, "pm_flags" => pm_flags: u32, "pm_mode" => pm_mode: u32, "pm_pmcid" => pm_pmcid: pmc_id_t, "pm_count" => pm_count: pmc_value_t, "pm_md" => pm_md: pmc_md_op_pmcallocate),
        layout!("struct pmc_op_pmcadmin", pmc_op_pmcadmin; "pm_cpu" => pm_cpu: i32, "pm_flags" => pm_flags: u32, "pm_pmc" => pm_pmc: i32, "pm_state" => pm_state: u32),
        layout!("struct pmc_op_pmcattach", pmc_op_pmcattach; "pm_pmc" => pm_pmc: pmc_id_t, "pm_pid" => pm_pid: fbsd_pid_t),
        layout!("struct pmc_op_pmcsetcount", pmc_op_pmcsetcount; "pm_count" => pm_count: pmc_value_t, "pm_pmcid" => pm_pmcid: pmc_id_t),
        layout!("struct pmc_op_pmcrw", pmc_op_pmcrw; "pm_flags" => pm_flags: u32, "pm_pmcid" => pm_pmcid: pmc_id_t, "pm_value" => pm_value: pmc_value_t),
        layout!("struct pmc_info", pmc_info; "pm_name" => pm_name: [u8; PMC_NAME_MAX], "pm_class" => pm_class: u32, "pm_enabled" => pm_enabled: i32, "pm_rowdisp" => pm_rowdisp: u32, "pm_ownerpid" => pm_ownerpid: fbsd_pid_t, "pm_mode" => pm_mode: u32, "pm_event" => pm_event: u32, "pm_flags" => pm_flags: u32, "pm_reloadcount" => pm_reloadcount: pmc_value_t),
        layout!("struct pmc_op_getpmcinfo", pmc_op_getpmcinfo; "pm_cpu" => pm_cpu: i32, "pm_pmcs" => pm_pmcs: [pmc_info; 0]),
        layout!("struct pmc_classinfo", pmc_classinfo; "pm_class" => pm_class: u32, "pm_caps" => pm_caps: u32, "pm_width" => pm_width: u32, "pm_num" => pm_num: u32),
        layout!("struct pmc_op_getcpuinfo", pmc_op_getcpuinfo; "pm_cputype" => pm_cputype: u32, "pm_ncpu" => pm_ncpu: u32, "pm_npmc" => pm_npmc: u32, "pm_nclass" => pm_nclass: u32, "pm_classes" => pm_classes: [pmc_classinfo; PMC_CLASS_MAX]),
        layout!("struct pmc_op_configurelog", pmc_op_configurelog; "pm_flags" => pm_flags: u32, "pm_logfd" => pm_logfd: i32),
        layout!("struct pmc_op_getdriverstats", pmc_op_getdriverstats; "pm_intr_ignored" => pm_intr_ignored: u32, "pm_intr_processed" => pm_intr_processed: u32, "pm_intr_bufferfull" => pm_intr_bufferfull: u32, "pm_syscalls" => pm_syscalls: u32, "pm_syscall_errors" => pm_syscall_errors: u32, "pm_buffer_requests" => pm_buffer_requests: u32, "pm_buffer_requests_failed" => pm_buffer_requests_failed: u32, "pm_log_sweeps" => pm_log_sweeps: u32),
        layout!("struct pmc_op_simple", pmc_op_simple; "pm_pmcid" => pm_pmcid: pmc_id_t),
        layout!("struct pmc_op_writelog", pmc_op_writelog; "pm_userdata" => pm_userdata: u32),
        layout!("struct pmc_op_getmsr", pmc_op_getmsr; "pm_msr" => pm_msr: u32, "pm_pmcid" => pm_pmcid: pmc_id_t),
        layout!("struct pmc_dyn_event_descr", pmc_dyn_event_descr; "pm_ev_name" => pm_ev_name: [u8; PMC_NAME_MAX], "pm_ev_code" => pm_ev_code: u32),
        layout!("struct pmc_op_getdyneventinfo", pmc_op_getdyneventinfo; "pm_class" => pm_class: u32, "pm_nevent" => pm_nevent: u32, "pm_events" => pm_events: [pmc_dyn_event_descr; PMC_EV_DYN_COUNT]),
        layout!("struct pmc_op_caps", pmc_op_caps; "pm_pmcid" => pm_pmcid: pmc_id_t, "pm_caps" => pm_caps: u32),
        layout!("struct module_stat", module_stat; "version" => version: i32, "name" => name: [u8; MAXMODNAME], "refs" => refs: i32, "id" => id: i32, "data" => data: u64),
        layout!("struct pmc_md_cmn600_pmu_op_pmcallocate", pmc_md_cmn600_pmu_op_pmcallocate; "pma_cmn600_nodeid" => pma_cmn600_nodeid: u64, "pma_cmn600_occupancy" => pma_cmn600_occupancy: u64, "pma_cmn600_config" => pma_cmn600_config: u32),
        layout!("struct pmc_md_dmc620_pmu_op_pmcallocate", pmc_md_dmc620_pmu_op_pmcallocate; "pm_dmc620_match" => pm_dmc620_match: u64, "pm_dmc620_mask" => pm_dmc620_mask: u64, "pm_dmc620_config" => pm_dmc620_config: u32),
        layout!("union arm64_pmc_md_op_pmcallocate", arm64_pmc_md_op_pmcallocate; "pm_md_config" => pm_md: arm64_pmc_md_config, "pm_cmn600" => pm_cmn600: pmc_md_cmn600_pmu_op_pmcallocate, "pm_dmc620" => pm_dmc620: pmc_md_dmc620_pmu_op_pmcallocate, "__pad" => __pad: [u64; 4]),
        layout!("struct arm64_pmc_op_pmcallocate", arm64_pmc_op_pmcallocate; "pm_count" => pm_count: pmc_value_t, "pm_md" => pm_md: arm64_pmc_md_op_pmcallocate),
    ]
}

/// For plain structs, the declared field types in `actual()` must be the
/// real field types (a typo there would make the size check meaningless):
/// a test so that it compiles, and it is used.
#[test]
fn field_types_are_real() {
    let _: fn(&pmc_md_amd_op_pmcallocate) -> &u64 = |s| &s.pm_amd_config;
    let _: fn(&pmc_md_amd_op_pmcallocate) -> &u32 = |s| &s.pm_amd_sub_class;
    let _: fn(&pmc_md_ibs_op_pmcallocate) -> &u32 = |s| &s.ibs_flag;
    let _: fn(&pmc_md_ibs_op_pmcallocate) -> &u32 = |s| &s.ibs_type;
    let _: fn(&pmc_md_ibs_op_pmcallocate) -> &u64 = |s| &s.ibs_ctl;
    let _: fn(&pmc_md_ibs_op_pmcallocate) -> &u64 = |s| &s.ibs_ctl2;
    let _: fn(&pmc_md_iap_op_pmcallocate) -> &u32 = |s| &s.pm_iap_config;
    let _: fn(&pmc_md_iap_op_pmcallocate) -> &u64 = |s| &s.pm_iap_rsp;
    let _: fn(&pmc_md_ucf_op_pmcallocate) -> &u16 = |s| &s.pm_ucf_flags;
    let _: fn(&pmc_md_ucp_op_pmcallocate) -> &u32 = |s| &s.pm_ucp_config;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_caps;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_cpu;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_class;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_ev;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_flags;
    let _: fn(&pmc_op_pmcallocate) -> &u32 = |s| &s.pm_mode;
    let _: fn(&pmc_op_pmcallocate) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_op_pmcallocate) -> &pmc_value_t = |s| &s.pm_count;
    let _: fn(&pmc_op_pmcallocate) -> &pmc_md_op_pmcallocate = |s| &s.pm_md;
    let _: fn(&pmc_op_pmcadmin) -> &i32 = |s| &s.pm_cpu;
    let _: fn(&pmc_op_pmcadmin) -> &u32 = |s| &s.pm_flags;
    let _: fn(&pmc_op_pmcadmin) -> &i32 = |s| &s.pm_pmc;
    let _: fn(&pmc_op_pmcadmin) -> &u32 = |s| &s.pm_state;
    let _: fn(&pmc_op_pmcattach) -> &pmc_id_t = |s| &s.pm_pmc;
    let _: fn(&pmc_op_pmcattach) -> &fbsd_pid_t = |s| &s.pm_pid;
    let _: fn(&pmc_op_pmcsetcount) -> &pmc_value_t = |s| &s.pm_count;
    let _: fn(&pmc_op_pmcsetcount) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_op_pmcrw) -> &u32 = |s| &s.pm_flags;
    let _: fn(&pmc_op_pmcrw) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_op_pmcrw) -> &pmc_value_t = |s| &s.pm_value;
    let _: fn(&pmc_info) -> &[u8; PMC_NAME_MAX] = |s| &s.pm_name;
    let _: fn(&pmc_info) -> &u32 = |s| &s.pm_class;
    let _: fn(&pmc_info) -> &i32 = |s| &s.pm_enabled;
    let _: fn(&pmc_info) -> &u32 = |s| &s.pm_rowdisp;
    let _: fn(&pmc_info) -> &fbsd_pid_t = |s| &s.pm_ownerpid;
    let _: fn(&pmc_info) -> &u32 = |s| &s.pm_mode;
    let _: fn(&pmc_info) -> &u32 = |s| &s.pm_event;
    let _: fn(&pmc_info) -> &u32 = |s| &s.pm_flags;
    let _: fn(&pmc_info) -> &pmc_value_t = |s| &s.pm_reloadcount;
    let _: fn(&pmc_op_getpmcinfo) -> &i32 = |s| &s.pm_cpu;
    let _: fn(&pmc_op_getpmcinfo) -> &[pmc_info; 0] = |s| &s.pm_pmcs;
    let _: fn(&pmc_classinfo) -> &u32 = |s| &s.pm_class;
    let _: fn(&pmc_classinfo) -> &u32 = |s| &s.pm_caps;
    let _: fn(&pmc_classinfo) -> &u32 = |s| &s.pm_width;
    let _: fn(&pmc_classinfo) -> &u32 = |s| &s.pm_num;
    let _: fn(&pmc_op_getcpuinfo) -> &u32 = |s| &s.pm_cputype;
    let _: fn(&pmc_op_getcpuinfo) -> &u32 = |s| &s.pm_ncpu;
    let _: fn(&pmc_op_getcpuinfo) -> &u32 = |s| &s.pm_npmc;
    let _: fn(&pmc_op_getcpuinfo) -> &u32 = |s| &s.pm_nclass;
    let _: fn(&pmc_op_getcpuinfo) -> &[pmc_classinfo; PMC_CLASS_MAX] = |s| &s.pm_classes;
    let _: fn(&pmc_op_configurelog) -> &u32 = |s| &s.pm_flags;
    let _: fn(&pmc_op_configurelog) -> &i32 = |s| &s.pm_logfd;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_intr_ignored;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_intr_processed;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_intr_bufferfull;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_syscalls;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_syscall_errors;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_buffer_requests;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_buffer_requests_failed;
    let _: fn(&pmc_op_getdriverstats) -> &u32 = |s| &s.pm_log_sweeps;
    let _: fn(&pmc_op_simple) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_op_writelog) -> &u32 = |s| &s.pm_userdata;
    let _: fn(&pmc_op_getmsr) -> &u32 = |s| &s.pm_msr;
    let _: fn(&pmc_op_getmsr) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_dyn_event_descr) -> &[u8; PMC_NAME_MAX] = |s| &s.pm_ev_name;
    let _: fn(&pmc_dyn_event_descr) -> &u32 = |s| &s.pm_ev_code;
    let _: fn(&pmc_op_getdyneventinfo) -> &u32 = |s| &s.pm_class;
    let _: fn(&pmc_op_getdyneventinfo) -> &u32 = |s| &s.pm_nevent;
    let _: fn(&pmc_op_getdyneventinfo) -> &[pmc_dyn_event_descr; PMC_EV_DYN_COUNT] =
        |s| &s.pm_events;
    let _: fn(&pmc_op_caps) -> &pmc_id_t = |s| &s.pm_pmcid;
    let _: fn(&pmc_op_caps) -> &u32 = |s| &s.pm_caps;
    let _: fn(&module_stat) -> &i32 = |s| &s.version;
    let _: fn(&module_stat) -> &[u8; MAXMODNAME] = |s| &s.name;
    let _: fn(&module_stat) -> &i32 = |s| &s.refs;
    let _: fn(&module_stat) -> &i32 = |s| &s.id;
    let _: fn(&module_stat) -> &u64 = |s| &s.data;
    let _: fn(&pmc_md_cmn600_pmu_op_pmcallocate) -> &u64 = |s| &s.pma_cmn600_nodeid;
    let _: fn(&pmc_md_cmn600_pmu_op_pmcallocate) -> &u64 = |s| &s.pma_cmn600_occupancy;
    let _: fn(&pmc_md_cmn600_pmu_op_pmcallocate) -> &u32 = |s| &s.pma_cmn600_config;
    let _: fn(&pmc_md_dmc620_pmu_op_pmcallocate) -> &u64 = |s| &s.pm_dmc620_match;
    let _: fn(&pmc_md_dmc620_pmu_op_pmcallocate) -> &u64 = |s| &s.pm_dmc620_mask;
    let _: fn(&pmc_md_dmc620_pmu_op_pmcallocate) -> &u32 = |s| &s.pm_dmc620_config;
    let _: fn(&arm64_pmc_op_pmcallocate) -> &pmc_value_t = |s| &s.pm_count;
    let _: fn(&arm64_pmc_op_pmcallocate) -> &arm64_pmc_md_op_pmcallocate = |s| &s.pm_md;
}

#[test]
fn every_struct_matches_the_embedded_table() {
    let actual = actual();
    assert_eq!(
        actual.len(),
        EXPECTED.len(),
        "one Rust definition per C struct"
    );
    for (name, size, align, fields) in EXPECTED {
        let Some((_, asize, aalign, afields)) = actual.iter().find(|a| a.0 == *name) else {
            panic!("{name}: no Rust definition");
        };
        assert_eq!(asize, size, "{name}: size");
        assert_eq!(aalign, align, "{name}: align");
        assert_eq!(afields.len(), fields.len(), "{name}: field count");
        for (f, off, fsize) in *fields {
            let Some((_, aoff, afsize)) = afields.iter().find(|a| a.0 == *f) else {
                panic!("{name}.{f}: missing");
            };
            assert_eq!(aoff, off, "{name}.{f}: offset");
            assert_eq!(afsize, fsize, "{name}.{f}: size");
        }
    }
}

#[test]
fn every_constant_matches_the_embedded_table() {
    assert_eq!(ACTUAL_CONSTANTS.len(), EXPECTED_CONSTANTS.len());
    for ((n, v), (an, av)) in EXPECTED_CONSTANTS.iter().zip(ACTUAL_CONSTANTS) {
        assert_eq!(n, an);
        assert_eq!(v, av, "{n}");
    }
}

/// The ABI facts probed on FreeBSD/amd64 (a copy of the project's shared
/// `freebsd/abi-amd64.json`, kept in the repository so every checkout and CI
/// run checks against it).
fn json_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/abi-amd64.json")
}

#[test]
fn every_struct_and_constant_matches_the_abi_json() {
    let path = json_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the ABI facts are part of the repository)",
            path.display()
        )
    });
    let j: serde_json::Value = serde_json::from_str(&text).expect("abi-amd64.json parses");
    let actual = actual();
    let mut checked = 0;
    for sect in ["structs", "structs_arm64_md"] {
        let obj = j[sect].as_object().expect("structs object");
        for (name, d) in obj {
            let (_, size, align, fields) = actual
                .iter()
                .find(|a| a.0 == name)
                .unwrap_or_else(|| panic!("{name}: no Rust definition"));
            assert_eq!(Some(*size as u64), d["size"].as_u64(), "{name}: size");
            assert_eq!(Some(*align as u64), d["align"].as_u64(), "{name}: align");
            for (f, fd) in d["fields"].as_object().expect("fields") {
                let (_, off, fsize) = fields
                    .iter()
                    .find(|a| a.0 == f)
                    .unwrap_or_else(|| panic!("{name}.{f}: missing"));
                assert_eq!(
                    Some(*off as u64),
                    fd["offset"].as_u64(),
                    "{name}.{f}: offset"
                );
                assert_eq!(Some(*fsize as u64), fd["size"].as_u64(), "{name}.{f}: size");
            }
            checked += 1;
        }
    }
    let consts = j["constants"].as_object().expect("constants");
    let log_consts = j["pmclog"]["constants"]
        .as_object()
        .expect("pmclog constants");
    for (n, v) in consts.iter().chain(log_consts) {
        let (_, av) = ACTUAL_CONSTANTS
            .iter()
            .find(|a| a.0 == n)
            .unwrap_or_else(|| panic!("constant {n} missing"));
        assert_eq!(Some(*av), v.as_u64(), "{n}");
        checked += 1;
    }
    assert_eq!(checked, 28 + 189 + 29);
}

#[test]
fn md_union_accessors_round_trip() {
    let m = pmc_md_op_pmcallocate::amd(0xF_0000_00C0 | AMD_PMC_USR, PMC_AMD_SUB_CLASS_L3_CACHE);
    assert_eq!(m.as_amd().pm_amd_config, 0xF_0000_00C0 | AMD_PMC_USR);
    assert_eq!(m.as_amd().pm_amd_sub_class, 1);
    let i = pmc_md_op_pmcallocate::iap(0xC0 | IAP_USR, 0x1234);
    assert_eq!(
        i.as_iap(),
        pmc_md_iap_op_pmcallocate {
            pm_iap_config: 0xC0 | IAP_USR,
            pm_iap_rsp: 0x1234
        }
    );
    assert_eq!(i.to_bytes()[0], 0xC0);
    let ibs = pmc_md_ibs_op_pmcallocate {
        ibs_flag: 1,
        ibs_type: IBS_PMC_OP,
        ibs_ctl: 2,
        ibs_ctl2: 3,
    };
    assert_eq!(pmc_md_op_pmcallocate::ibs(ibs).as_ibs(), ibs);
    assert_eq!(pmc_md_op_pmcallocate::ucf(7).as_ucf().pm_ucf_flags, 7);
    assert_eq!(pmc_md_op_pmcallocate::ucp(9).as_ucp().pm_ucp_config, 9);
    assert_eq!(pmc_md_op_pmcallocate::from_bytes(i.to_bytes()), i);
    assert_eq!(
        arm64_pmc_md_op_pmcallocate::md_config(0x11).as_md_config(),
        0x11
    );
    let st = module_stat {
        data: 210,
        ..module_stat::default()
    };
    assert_eq!(st.version, 56);
    assert_eq!(st.intval(), 210);
    assert_eq!(pmclog_header_word(PMCLOG_TYPE_CLOSELOG, 16), 0xEE01_0010);
    let big = pmc_op_getdyneventinfo::new_boxed(PMC_CLASS_SOFT);
    assert_eq!(big.pm_class, PMC_CLASS_SOFT);
    assert_eq!(big.pm_nevent, 0);
}
