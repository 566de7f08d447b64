//! Raw hwpmc(4) ABI: the `PMC_OP_*` argument structs, the machine-dependent
//! allocation unions, and the constants of `sys/sys/pmc.h`,
//! `sys/amd64/include/pmc_mdep.h`, `sys/arm64/include/pmc_mdep.h` and
//! `sys/sys/pmclog.h` (FreeBSD 16.0-CURRENT, `PMC_VERSION` 0x0A030000; the
//! layouts are unchanged since 0x09030000).
//!
//! By file, all re-exported here: `abi/consts.rs` the scalar types ([`pmc_id_t`], ...),
//! [`PMC_VERSION`] and its kin, the `PMC_OP_*` numbers ([`PMC_OP_PMCALLOCATE`], ...) and
//! the other constants; `abi/md.rs` the machine-dependent allocation unions; `abi/ops.rs`
//! each op's argument struct; this file pmclog's constants (pmc-log's) and the layout pins.
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

mod consts;
mod md;
mod ops;

pub use consts::*;
pub use md::*;
pub use ops::*;

use core::mem::size_of;
#[cfg(target_pointer_width = "64")]
use core::mem::{align_of, offset_of};

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
