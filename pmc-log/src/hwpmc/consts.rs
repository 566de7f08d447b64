//! hwpmc constants (`sys/sys/pmclog.h`, `sys/sys/pmc.h`, amd64/arm64) that
//! the log format and the hwpmc backend share: defined here once, with one
//! type each, and re-exported by `pmc_freebsd::sys::abi`. The values are
//! checked against FreeBSD's headers by pmc-freebsd's layout tests
//! (`abi-amd64.json`); libpmc's C-side table is tied to them (its
//! generated `owner_ties`).

/// `PMCLOG_HEADER_MAGIC`: top byte of every record's header word.
pub const PMCLOG_HEADER_MAGIC: u32 = 0xEE;
/// `sizeof(struct pmclog_header)`: header word, `pl_spare`, `pl_tsc`.
pub const PMCLOG_HEADER_LEN: usize = 16;
/// `sizeof(union pmclog_entry)`: the largest record the kernel writes.
pub const PMCLOG_MAX_RECORD: usize = 4128;

// `enum pmclog_type`: the type byte of a record's header word
// (`(PMCLOG_HEADER_MAGIC << 24) | (type << 16) | length`), `u32` as the
// header-word arithmetic and the kernel's enum.

/// `PMCLOG_TYPE_CLOSELOG`.
pub const PMCLOG_TYPE_CLOSELOG: u32 = 1;
/// `PMCLOG_TYPE_DROPNOTIFY`.
pub const PMCLOG_TYPE_DROPNOTIFY: u32 = 2;
/// `PMCLOG_TYPE_INITIALIZE`.
pub const PMCLOG_TYPE_INITIALIZE: u32 = 3;
/// `PMCLOG_TYPE_MAPPINGCHANGE` (obsolete, never written by a kernel read).
pub const PMCLOG_TYPE_MAPPINGCHANGE: u32 = 4;
/// `PMCLOG_TYPE_PMCALLOCATE`.
pub const PMCLOG_TYPE_PMCALLOCATE: u32 = 5;
/// `PMCLOG_TYPE_PMCATTACH`.
pub const PMCLOG_TYPE_PMCATTACH: u32 = 6;
/// `PMCLOG_TYPE_PMCDETACH`.
pub const PMCLOG_TYPE_PMCDETACH: u32 = 7;
/// `PMCLOG_TYPE_PROCCSW`.
pub const PMCLOG_TYPE_PROCCSW: u32 = 8;
/// `PMCLOG_TYPE_PROCEXEC`.
pub const PMCLOG_TYPE_PROCEXEC: u32 = 9;
/// `PMCLOG_TYPE_PROCEXIT`.
pub const PMCLOG_TYPE_PROCEXIT: u32 = 10;
/// `PMCLOG_TYPE_PROCFORK`.
pub const PMCLOG_TYPE_PROCFORK: u32 = 11;
/// `PMCLOG_TYPE_SYSEXIT`.
pub const PMCLOG_TYPE_SYSEXIT: u32 = 12;
/// `PMCLOG_TYPE_USERDATA`.
pub const PMCLOG_TYPE_USERDATA: u32 = 13;
/// `PMCLOG_TYPE_MAP_IN`.
pub const PMCLOG_TYPE_MAP_IN: u32 = 14;
/// `PMCLOG_TYPE_MAP_OUT`.
pub const PMCLOG_TYPE_MAP_OUT: u32 = 15;
/// `PMCLOG_TYPE_CALLCHAIN`.
pub const PMCLOG_TYPE_CALLCHAIN: u32 = 16;
/// `PMCLOG_TYPE_PMCALLOCATEDYN`.
pub const PMCLOG_TYPE_PMCALLOCATEDYN: u32 = 17;
/// `PMCLOG_TYPE_THR_CREATE`.
pub const PMCLOG_TYPE_THR_CREATE: u32 = 18;
/// `PMCLOG_TYPE_THR_EXIT`.
pub const PMCLOG_TYPE_THR_EXIT: u32 = 19;
/// `PMCLOG_TYPE_PROC_CREATE`.
pub const PMCLOG_TYPE_PROC_CREATE: u32 = 20;

/// Builds a record's header word: `(0xEE << 24) | (type << 16) | (len & 0xFFFF)`
/// (`PMCLOG_HEADER_TO_*`'s inverse).
pub const fn pmclog_header_word(ty: u32, len: u32) -> u32 {
    (PMCLOG_HEADER_MAGIC << 24) | ((ty & 0xFF) << 16) | (len & 0xFFFF)
}

/// The type of a header word (`PMCLOG_HEADER_TO_TYPE`).
pub const fn pmclog_header_type(word: u32) -> u32 {
    (word >> 16) & 0xFF
}

/// True if a header word starts with [`PMCLOG_HEADER_MAGIC`]
/// (`PMCLOG_HEADER_CHECK_MAGIC`).
pub const fn pmclog_header_magic_ok(word: u32) -> bool {
    word >> 24 == PMCLOG_HEADER_MAGIC
}

/// `PMC_CC_F_USERSPACE`: callchain PCs are user addresses.
pub const PMC_CC_F_USERSPACE: u32 = 0x01;
/// `PMC_CC_F_MULTIPART`: the callchain record is multipart (IBS).
pub const PMC_CC_F_MULTIPART: u32 = 0x02;
/// `PMC_MULTIPART_HEADER_LENGTH`: bytes of a multipart callchain's header.
pub const PMC_MULTIPART_HEADER_LENGTH: usize = 8;
/// `PMC_MULTIPART_HEADER_ENTRIES`: (type, length) pairs in that header.
pub const PMC_MULTIPART_HEADER_ENTRIES: usize = 4;
/// `PMC_CC_MULTIPART_NONE`.
pub const PMC_CC_MULTIPART_NONE: u8 = 0;
/// `PMC_CC_MULTIPART_CALLCHAIN`.
pub const PMC_CC_MULTIPART_CALLCHAIN: u8 = 1;
/// `PMC_CC_MULTIPART_IBS_FETCH`.
pub const PMC_CC_MULTIPART_IBS_FETCH: u8 = 2;
/// `PMC_CC_MULTIPART_IBS_OP`.
pub const PMC_CC_MULTIPART_IBS_OP: u8 = 3;
/// `PMC_CALLCHAIN_DEPTH_MAX`: frames a callchain record holds at most.
pub const PMC_CALLCHAIN_DEPTH_MAX: usize = 512;
/// `PATH_MAX` of FreeBSD (`sys/sys/syslimits.h`): paths in records are cut
/// to `PATH_MAX - 1` bytes plus their NUL.
pub const FBSD_PATH_MAX: usize = 1024;

// `PMC_F_*`: `pm_flags` of PMC_OP_PMCALLOCATE, `pl_flags` of the allocation
// records.

/// `PMC_F_UNUSED1` (old `PMC_F_FORCE_MSR`).
pub const PMC_F_UNUSED1: u32 = 0x0000_0001;
/// `PMC_F_DESCENDANTS`: also track descendants (process mode only).
pub const PMC_F_DESCENDANTS: u32 = 0x0000_0002;
/// `PMC_F_LOG_PROCCSW`: log per-context-switch counts (process mode only).
pub const PMC_F_LOG_PROCCSW: u32 = 0x0000_0004;
/// `PMC_F_LOG_PROCEXIT`: log per-process counts at exit (process mode only).
pub const PMC_F_LOG_PROCEXIT: u32 = 0x0000_0008;
/// `PMC_F_NEWVALUE`: `PMC_OP_PMCRW` writes `pm_value`.
pub const PMC_F_NEWVALUE: u32 = 0x0000_0010;
/// `PMC_F_OLDVALUE`: `PMC_OP_PMCRW` returns the old value in `pm_value`.
pub const PMC_F_OLDVALUE: u32 = 0x0000_0020;
/// `PMC_F_CALLCHAIN`: sampling PMCs record call chains.
pub const PMC_F_CALLCHAIN: u32 = 0x0000_0080;
/// `PMC_F_USERCALLCHAIN`: add user call chains to kernel samples.
pub const PMC_F_USERCALLCHAIN: u32 = 0x0000_0100;
/// `PMC_F_EV_PMU`: `pm_ev` is a pmu-events index and `pm_md` carries the
/// programming (PMC_VERSION major 0x0A and later).
pub const PMC_F_EV_PMU: u32 = 0x0000_0200;
/// `PMC_F_ATTACHED_TO_OWNER` (kernel internal).
pub const PMC_F_ATTACHED_TO_OWNER: u32 = 0x0001_0000;
/// `PMC_F_NEEDS_LOGFILE` (kernel internal; the kernel writes it into
/// `pl_flags` of allocation records).
pub const PMC_F_NEEDS_LOGFILE: u32 = 0x0002_0000;
/// `PMC_F_ATTACH_DONE` (kernel internal).
pub const PMC_F_ATTACH_DONE: u32 = 0x0004_0000;

/// `PMC_CPU_ANY & 0xFFF`: the CPU field of a process-mode PMC id.
pub const PMC_ID_CPU_ANY: u32 = 0xFFF;

/// The two layouts of a PMC id (`pmc_id_t`) in `sys/sys/pmc.h`. Both exist
/// under `PMC_VERSION` 0x09: FreeBSD's own 0x09 trees (the 2020 tree, the
/// 14-era trees read) use [`IdLayout::Old`], CheriBSD's 0x09 tree and every
/// 0x0A tree use [`IdLayout::New`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdLayout {
    /// `PMC_ID_MAKE_ID`: CPU 12 bits at 20, mode 8 bits at 12, class 4
    /// bits at 8, row 8 bits.
    Old,
    /// CPU 12 bits at 20, mode 4 bits at 16, class 8 bits at 8, row 8 bits.
    New,
}

/// A PMC id's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmcIdFields {
    /// CPU (`PMC_ID_TO_CPU`; [`PMC_ID_CPU_ANY`] for process PMCs).
    pub cpu: u32,
    /// `enum pmc_mode` (`PMC_ID_TO_MODE`).
    pub mode: u32,
    /// `enum pmc_class` (`PMC_ID_TO_CLASS`).
    pub class: u32,
    /// Row index (`PMC_ID_TO_ROWINDEX`).
    pub row: u32,
}

impl IdLayout {
    /// `PMC_ID_MAKE_ID` of this layout.
    pub fn make(self, cpu: u32, mode: u32, class: u32, row: u32) -> u32 {
        let cpu = (cpu & 0xFFF) << 20;
        match self {
            IdLayout::Old => cpu | ((mode & 0xFF) << 12) | ((class & 0xF) << 8) | (row & 0xFF),
            IdLayout::New => cpu | ((mode & 0xF) << 16) | ((class & 0xFF) << 8) | (row & 0xFF),
        }
    }

    /// `PMC_ID_TO_*` of this layout.
    pub fn split(self, id: u32) -> PmcIdFields {
        let (mode, class) = match self {
            IdLayout::Old => ((id >> 12) & 0xFF, (id >> 8) & 0xF),
            IdLayout::New => ((id >> 16) & 0xF, (id >> 8) & 0xFF),
        };
        PmcIdFields {
            cpu: id >> 20,
            mode,
            class,
            row: id & 0xFF,
        }
    }
}

/// `enum pmc_class` values any tree read defines (`sys/sys/pmc.h`, 2020
/// tree to 16-CURRENT): TSC 0 .. POWER8 0x15, DMC620 0x16/0x17, CMN600
/// 0x18; newer trees add a few more below 0x20.
pub const PMC_CLASS_LAST_KNOWN: u32 = 0x1F;

/// `PMC_MODE_SS` (`enum pmc_mode`): system-scope sampling.
pub const PMC_MODE_SS: u32 = 0;
/// `PMC_MODE_SC`: system-scope counting.
pub const PMC_MODE_SC: u32 = 1;
/// `PMC_MODE_TS`: process-scope ("thread") sampling.
pub const PMC_MODE_TS: u32 = 2;
/// `PMC_MODE_TC`: process-scope ("thread") counting.
pub const PMC_MODE_TC: u32 = 3;

/// `pmc record` file header magic ("PMCL" as a little-endian u32).
pub const PMCL_MAGIC: u32 = 0x504D_434C;
/// `pmc record` info block: end of the prefix.
pub const PMCL_INFO_DONE: u8 = 0;
/// `pmc record` info block: system information.
pub const PMCL_INFO_SYSINFO: u8 = 1;
/// `pmc record` info block: one PMC's description.
pub const PMCL_INFO_PMCINFO: u8 = 2;
/// `pmc record` info block: the CPU id string.
pub const PMCL_INFO_CPUID: u8 = 3;

/// `pmc_name_of_cputype()`: the name FreeBSD's `pmcstat -R` prints in its
/// `initlog` line (`usr.sbin/pmcstat/pmcstat_log.c` `pmcstat_print_log()`:
/// `PMCSTAT_PRINT_ENTRY("initlog","0x%x \"%s\"", ev.pl_u.pl_i.pl_version,
/// pmc_name_of_cputype(ev.pl_u.pl_i.pl_arch))`). libpmc's table is
/// `{ .pm_cputype = PMC_CPU_##S, .pm_name = #S }` over `__PMC_CPUS()`
/// (`lib/libpmc/libpmc.c`), so the name is the enum's suffix. The list is
/// 15-CURRENT's `sys/sys/pmc.h` (`fel1x-developer/freebsd-src`@2d614aa2)
/// and HEAD's later Intel entries (0xA0-0xA4, `abi-amd64.json`). `None`
/// for a type the list lacks, where `pmc_name_of_cputype()` returns NULL
/// (FreeBSD's printf prints `(null)`).
pub fn cputype_name(cputype: u32) -> Option<&'static str> {
    Some(match cputype {
        0x01 => "AMD_K8",
        0x87 => "INTEL_CORE",
        0x88 => "INTEL_CORE2",
        0x89 => "INTEL_CORE2EXTREME",
        0x8A => "INTEL_ATOM",
        0x8B => "INTEL_COREI7",
        0x8C => "INTEL_WESTMERE",
        0x8D => "INTEL_SANDYBRIDGE",
        0x8E => "INTEL_IVYBRIDGE",
        0x8F => "INTEL_SANDYBRIDGE_XEON",
        0x90 => "INTEL_IVYBRIDGE_XEON",
        0x91 => "INTEL_HASWELL",
        0x92 => "INTEL_ATOM_SILVERMONT",
        0x93 => "INTEL_NEHALEM_EX",
        0x94 => "INTEL_WESTMERE_EX",
        0x95 => "INTEL_HASWELL_XEON",
        0x96 => "INTEL_BROADWELL",
        0x97 => "INTEL_BROADWELL_XEON",
        0x98 => "INTEL_SKYLAKE",
        0x99 => "INTEL_SKYLAKE_XEON",
        0x9A => "INTEL_ATOM_GOLDMONT",
        0x9B => "INTEL_ICELAKE",
        0x9C => "INTEL_ICELAKE_XEON",
        0x9D => "INTEL_ALDERLAKE",
        0x9E => "INTEL_ATOM_GOLDMONT_P",
        0x9F => "INTEL_ATOM_TREMONT",
        0xA0 => "INTEL_EMERALD_RAPIDS",
        0xA1 => "INTEL_ALDERLAKEN",
        0xA2 => "INTEL_GRANITE_RAPIDS",
        0xA3 => "INTEL_METEOR_LAKE",
        0xA4 => "INTEL_SAPPHIRE_RAPIDS",
        0x100 => "INTEL_XSCALE",
        0x300 => "PPC_7450",
        0x340 => "PPC_E500",
        0x380 => "PPC_970",
        0x390 => "PPC_POWER8",
        0x400 => "GENERIC",
        0x500 => "ARMV7_CORTEX_A5",
        0x501 => "ARMV7_CORTEX_A7",
        0x502 => "ARMV7_CORTEX_A8",
        0x503 => "ARMV7_CORTEX_A9",
        0x504 => "ARMV7_CORTEX_A15",
        0x505 => "ARMV7_CORTEX_A17",
        0x600 => "ARMV8_CORTEX_A53",
        0x601 => "ARMV8_CORTEX_A57",
        0x602 => "ARMV8_CORTEX_A76",
        _ => return None,
    })
}
