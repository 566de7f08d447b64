//! hwpmc log constants (`sys/sys/pmclog.h`, `sys/sys/pmc.h`), amd64.
#![allow(missing_docs)] // Kernel names, documented in hwpmc.md §2.3 and §4.

pub const PMCLOG_HEADER_MAGIC: u8 = 0xEE;
pub const PMCLOG_HEADER_LEN: usize = 16;
/// `sizeof(union pmclog_entry)`: the largest record the kernel writes.
pub const PMCLOG_MAX_RECORD: usize = 4128;

pub const PMCLOG_TYPE_CLOSELOG: u8 = 1;
pub const PMCLOG_TYPE_DROPNOTIFY: u8 = 2;
pub const PMCLOG_TYPE_INITIALIZE: u8 = 3;
pub const PMCLOG_TYPE_MAPPINGCHANGE: u8 = 4;
pub const PMCLOG_TYPE_PMCALLOCATE: u8 = 5;
pub const PMCLOG_TYPE_PMCATTACH: u8 = 6;
pub const PMCLOG_TYPE_PMCDETACH: u8 = 7;
pub const PMCLOG_TYPE_PROCCSW: u8 = 8;
pub const PMCLOG_TYPE_PROCEXEC: u8 = 9;
pub const PMCLOG_TYPE_PROCEXIT: u8 = 10;
pub const PMCLOG_TYPE_PROCFORK: u8 = 11;
pub const PMCLOG_TYPE_SYSEXIT: u8 = 12;
pub const PMCLOG_TYPE_USERDATA: u8 = 13;
pub const PMCLOG_TYPE_MAP_IN: u8 = 14;
pub const PMCLOG_TYPE_MAP_OUT: u8 = 15;
pub const PMCLOG_TYPE_CALLCHAIN: u8 = 16;
pub const PMCLOG_TYPE_PMCALLOCATEDYN: u8 = 17;
pub const PMCLOG_TYPE_THR_CREATE: u8 = 18;
pub const PMCLOG_TYPE_THR_EXIT: u8 = 19;
pub const PMCLOG_TYPE_PROC_CREATE: u8 = 20;

pub const PMC_CC_F_USERSPACE: u32 = 1;
pub const PMC_CC_F_MULTIPART: u32 = 2;
pub const PMC_MULTIPART_HEADER_LENGTH: usize = 8;
pub const PMC_MULTIPART_HEADER_ENTRIES: usize = 4;
pub const PMC_CC_MULTIPART_NONE: u8 = 0;
pub const PMC_CC_MULTIPART_CALLCHAIN: u8 = 1;
pub const PMC_CC_MULTIPART_IBS_FETCH: u8 = 2;
pub const PMC_CC_MULTIPART_IBS_OP: u8 = 3;
pub const PMC_CALLCHAIN_DEPTH_MAX: usize = 512;
pub const FBSD_PATH_MAX: usize = 1024;

pub const PMC_F_DESCENDANTS: u32 = 0x2;
pub const PMC_F_LOG_PROCCSW: u32 = 0x4;
pub const PMC_F_LOG_PROCEXIT: u32 = 0x8;
pub const PMC_F_CALLCHAIN: u32 = 0x80;
pub const PMC_F_USERCALLCHAIN: u32 = 0x100;
pub const PMC_F_EV_PMU: u32 = 0x200;
/// Internal flag the kernel writes into `pl_flags` of allocation records.
pub const PMC_F_NEEDS_LOGFILE: u32 = 0x20000;

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
    pub cpu: u32,
    pub mode: u32,
    pub class: u32,
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

/// `enum pmc_mode`.
pub const PMC_MODE_SS: u32 = 0;
pub const PMC_MODE_SC: u32 = 1;
pub const PMC_MODE_TS: u32 = 2;
pub const PMC_MODE_TC: u32 = 3;

/// `pmc record` file header magic ("PMCL" as a little-endian u32).
pub const PMCL_MAGIC: u32 = 0x504D_434C;
pub const PMCL_INFO_DONE: u8 = 0;
pub const PMCL_INFO_SYSINFO: u8 = 1;
pub const PMCL_INFO_PMCINFO: u8 = 2;
pub const PMCL_INFO_CPUID: u8 = 3;
