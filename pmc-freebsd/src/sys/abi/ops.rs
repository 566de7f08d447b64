//! The `PMC_OP_*` argument structs, one per operation, and the structs
//! they carry (`pmc_info`, `pmc_classinfo`, `module_stat`, ...).

use super::consts::{
    fbsd_pid_t, pmc_id_t, pmc_value_t, MAXMODNAME, PMC_CLASS_MAX, PMC_EV_DYN_COUNT, PMC_NAME_MAX,
};
use super::md::{arm64_pmc_md_op_pmcallocate, pmc_md_op_pmcallocate};
use core::mem::size_of;
use pmc_log::bytes::ByteCursor;

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
