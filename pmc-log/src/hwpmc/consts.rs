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
