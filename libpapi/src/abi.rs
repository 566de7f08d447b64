//! `papi.h`'s constants and structures, laid out as PAPI 7's (`#[repr(C)]`,
//! the same field order and sizes; `tests/header.rs` compares the layouts
//! with Debian's header). The constants keep PAPI's names.
#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

/// `PAPI_VERSION`: 7.0.0.0.
pub const PAPI_VERSION: c_int = 7 << 24;
/// `PAPI_VER_CURRENT`: major and minor, what `PAPI_library_init` takes.
pub const PAPI_VER_CURRENT: c_int = PAPI_VERSION & 0xffff_0000u32 as c_int;

pub const PAPI_OK: c_int = 0;
pub const PAPI_EINVAL: c_int = -1;
pub const PAPI_ENOMEM: c_int = -2;
pub const PAPI_ESYS: c_int = -3;
pub const PAPI_ECMP: c_int = -4;
pub const PAPI_ECLOST: c_int = -5;
pub const PAPI_EBUG: c_int = -6;
pub const PAPI_ENOEVNT: c_int = -7;
pub const PAPI_ECNFLCT: c_int = -8;
pub const PAPI_ENOTRUN: c_int = -9;
pub const PAPI_EISRUN: c_int = -10;
pub const PAPI_ENOEVST: c_int = -11;
pub const PAPI_ENOTPRESET: c_int = -12;
pub const PAPI_ENOCNTR: c_int = -13;
pub const PAPI_EMISC: c_int = -14;
pub const PAPI_EPERM: c_int = -15;
pub const PAPI_ENOINIT: c_int = -16;
pub const PAPI_ENOCMP: c_int = -17;
pub const PAPI_ENOSUPP: c_int = -18;
pub const PAPI_ENOIMPL: c_int = -19;
pub const PAPI_EBUF: c_int = -20;
pub const PAPI_EINVAL_DOM: c_int = -21;
pub const PAPI_EATTR: c_int = -22;
pub const PAPI_ECOUNT: c_int = -23;
pub const PAPI_ECOMBO: c_int = -24;
pub const PAPI_ECMP_DISABLED: c_int = -25;
pub const PAPI_EDELAY_INIT: c_int = -26;
pub const PAPI_EMULPASS: c_int = -27;
pub const PAPI_NUM_ERRORS: c_int = 28;

pub const PAPI_NOT_INITED: c_int = 0;
pub const PAPI_LOW_LEVEL_INITED: c_int = 1;
pub const PAPI_HIGH_LEVEL_INITED: c_int = 2;
pub const PAPI_THREAD_LEVEL_INITED: c_int = 4;

pub const PAPI_NULL: c_int = -1;

pub const PAPI_DOM_USER: c_int = 0x1;
pub const PAPI_DOM_KERNEL: c_int = 0x2;
pub const PAPI_DOM_OTHER: c_int = 0x4;
pub const PAPI_DOM_SUPERVISOR: c_int = 0x8;
pub const PAPI_DOM_ALL: c_int = 0xf;

pub const PAPI_NUM_TLS: c_int = 3;
pub const PAPI_TLS_ALL_THREADS: c_int = 0x10;
pub const PAPI_NUM_LOCK: c_int = 2;

pub const PAPI_VENDOR_UNKNOWN: c_int = 0;
pub const PAPI_VENDOR_INTEL: c_int = 1;
pub const PAPI_VENDOR_AMD: c_int = 2;
pub const PAPI_VENDOR_IBM: c_int = 3;
pub const PAPI_VENDOR_ARM_ARM: c_int = 0x41;

pub const PAPI_GRN_THR: c_int = 0x1;
pub const PAPI_GRN_PROC: c_int = 0x2;
pub const PAPI_GRN_PROCG: c_int = 0x4;
pub const PAPI_GRN_SYS: c_int = 0x8;
pub const PAPI_GRN_SYS_CPU: c_int = 0x10;

pub const PAPI_STOPPED: c_int = 0x01;
pub const PAPI_RUNNING: c_int = 0x02;
pub const PAPI_OVERFLOWING: c_int = 0x10;
pub const PAPI_PROFILING: c_int = 0x20;
pub const PAPI_MULTIPLEXING: c_int = 0x40;
pub const PAPI_ATTACHED: c_int = 0x80;
pub const PAPI_CPU_ATTACHED: c_int = 0x100;

pub const PAPI_QUIET: c_int = 0;
pub const PAPI_VERB_ECONT: c_int = 1;
pub const PAPI_VERB_ESTOP: c_int = 2;

pub const PAPI_PROFIL_RANDOM: c_int = 0x1;
pub const PAPI_PROFIL_WEIGHTED: c_int = 0x2;
pub const PAPI_PROFIL_COMPRESS: c_int = 0x4;
pub const PAPI_PROFIL_BUCKET_16: c_int = 0x8;
pub const PAPI_PROFIL_BUCKET_32: c_int = 0x10;
pub const PAPI_PROFIL_BUCKET_64: c_int = 0x20;
pub const PAPI_PROFIL_FORCE_SW: c_int = 0x40;
pub const PAPI_PROFIL_DATA_EAR: c_int = 0x80;
pub const PAPI_PROFIL_INST_EAR: c_int = 0x100;

pub const PAPI_OVERFLOW_FORCE_SW: c_int = 0x40;
pub const PAPI_OVERFLOW_HARDWARE: c_int = 0x80;

pub const PAPI_INHERIT_ALL: c_int = 1;
pub const PAPI_INHERIT_NONE: c_int = 0;

pub const PAPI_DETACH: c_int = 1;
pub const PAPI_DEBUG: c_int = 2;
pub const PAPI_MULTIPLEX: c_int = 3;
pub const PAPI_DEFDOM: c_int = 4;
pub const PAPI_DOMAIN: c_int = 5;
pub const PAPI_DEFGRN: c_int = 6;
pub const PAPI_GRANUL: c_int = 7;
pub const PAPI_DEF_MPX_NS: c_int = 8;
pub const PAPI_MAX_MPX_CTRS: c_int = 11;
pub const PAPI_PROFIL: c_int = 12;
pub const PAPI_PRELOAD: c_int = 13;
pub const PAPI_CLOCKRATE: c_int = 14;
pub const PAPI_MAX_HWCTRS: c_int = 15;
pub const PAPI_HWINFO: c_int = 16;
pub const PAPI_EXEINFO: c_int = 17;
pub const PAPI_MAX_CPUS: c_int = 18;
pub const PAPI_ATTACH: c_int = 19;
pub const PAPI_SHLIBINFO: c_int = 20;
pub const PAPI_LIB_VERSION: c_int = 21;
pub const PAPI_COMPONENTINFO: c_int = 22;
pub const PAPI_DATA_ADDRESS: c_int = 23;
pub const PAPI_INSTR_ADDRESS: c_int = 24;
pub const PAPI_DEF_ITIMER: c_int = 25;
pub const PAPI_DEF_ITIMER_NS: c_int = 26;
pub const PAPI_CPU_ATTACH: c_int = 27;
pub const PAPI_INHERIT: c_int = 28;
pub const PAPI_USER_EVENTS_FILE: c_int = 29;

pub const PAPI_MIN_STR_LEN: usize = 64;
pub const PAPI_MAX_STR_LEN: usize = 128;
pub const PAPI_2MAX_STR_LEN: usize = 256;
pub const PAPI_HUGE_STR_LEN: usize = 1024;
pub const PAPI_PMU_MAX: usize = 80;
pub const PAPI_MAX_INFO_TERMS: usize = 12;
pub const PAPI_MH_MAX_LEVELS: usize = 6;
pub const PAPI_MAX_MEM_HIERARCHY_LEVELS: usize = 4;

pub const PAPI_ENUM_EVENTS: c_int = 0;
pub const PAPI_ENUM_FIRST: c_int = 1;
pub const PAPI_PRESET_ENUM_AVAIL: c_int = 2;
pub const PAPI_PRESET_ENUM_MSC: c_int = 3;
pub const PAPI_PRESET_ENUM_FP: c_int = 14;
pub const PAPI_NTV_ENUM_UMASKS: c_int = 15;

pub const PAPI_PRESET_MASK: u32 = 0x8000_0000;
pub const PAPI_NATIVE_MASK: u32 = 0x4000_0000;

pub const PAPI_MH_TYPE_INST: c_int = 0x1;
pub const PAPI_MH_TYPE_DATA: c_int = 0x2;
pub const PAPI_MH_TYPE_UNIFIED: c_int = 0x3;
pub const PAPI_MH_TYPE_WB: c_int = 0x10;
pub const PAPI_MH_TYPE_LRU: c_int = 0x100;
pub const PAPI_MH_TYPE_TLB: c_int = 0x1000;

pub const PAPI_LOCATION_CPU: c_int = 1;
pub const PAPI_DATATYPE_INT64: c_int = 0;
pub const PAPI_VALUETYPE_RUNNING_SUM: c_int = 0;

/// `PAPI_overflow_handler_t` (C function pointers are declared in `sys`).
pub type PAPI_overflow_handler_t = Option<crate::sys::OverflowHandler>;
/// `PAPI_debug_handler_t`.
pub type PAPI_debug_handler_t = Option<crate::sys::DebugHandler>;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_sprofil_t {
    pub pr_base: *mut c_void,
    pub pr_size: c_uint,
    pub pr_off: *mut c_void,
    pub pr_scale: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_itimer_option_t {
    pub itimer_num: c_int,
    pub itimer_sig: c_int,
    pub ns: c_int,
    pub flags: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_inherit_option_t {
    pub eventset: c_int,
    pub inherit: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_domain_option_t {
    pub def_cidx: c_int,
    pub eventset: c_int,
    pub domain: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_granularity_option_t {
    pub def_cidx: c_int,
    pub eventset: c_int,
    pub granularity: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_preload_info_t {
    pub lib_preload_env: [c_char; PAPI_MAX_STR_LEN],
    pub lib_preload_sep: c_char,
    pub lib_dir_env: [c_char; PAPI_MAX_STR_LEN],
    pub lib_dir_sep: c_char,
}

/// `PAPI_component_info_t`. The 13 one-bit flags after `reserved` are one
/// `unsigned int` (`flags`), allocated from the least significant bit as
/// GCC and Clang do on little-endian targets (see the `CMP_*` bits).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_component_info_t {
    pub name: [c_char; PAPI_MAX_STR_LEN],
    pub short_name: [c_char; PAPI_MIN_STR_LEN],
    pub description: [c_char; PAPI_MAX_STR_LEN],
    pub version: [c_char; PAPI_MIN_STR_LEN],
    pub support_version: [c_char; PAPI_MIN_STR_LEN],
    pub kernel_version: [c_char; PAPI_MIN_STR_LEN],
    pub disabled_reason: [c_char; PAPI_HUGE_STR_LEN],
    pub disabled: c_int,
    pub initialized: c_int,
    pub CmpIdx: c_int,
    pub num_cntrs: c_int,
    pub num_mpx_cntrs: c_int,
    pub num_preset_events: c_int,
    pub num_native_events: c_int,
    pub default_domain: c_int,
    pub available_domains: c_int,
    pub default_granularity: c_int,
    pub available_granularities: c_int,
    pub hardware_intr_sig: c_int,
    pub component_type: c_int,
    pub pmu_names: [*mut c_char; PAPI_PMU_MAX],
    pub reserved: [c_int; 8],
    pub flags: c_uint,
}

/// Bits of [`PAPI_component_info_t::flags`], in declaration order.
pub const CMP_HARDWARE_INTR: c_uint = 1 << 0;
pub const CMP_PRECISE_INTR: c_uint = 1 << 1;
pub const CMP_POSIX1B_TIMERS: c_uint = 1 << 2;
pub const CMP_KERNEL_PROFILE: c_uint = 1 << 3;
pub const CMP_KERNEL_MULTIPLEX: c_uint = 1 << 4;
pub const CMP_FAST_COUNTER_READ: c_uint = 1 << 5;
pub const CMP_FAST_REAL_TIMER: c_uint = 1 << 6;
pub const CMP_FAST_VIRTUAL_TIMER: c_uint = 1 << 7;
pub const CMP_ATTACH: c_uint = 1 << 8;
pub const CMP_ATTACH_MUST_PTRACE: c_uint = 1 << 9;
pub const CMP_CNTR_UMASKS: c_uint = 1 << 10;
pub const CMP_CPU: c_uint = 1 << 11;
pub const CMP_INHERIT: c_uint = 1 << 12;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_debug_option_t {
    pub level: c_int,
    pub handler: PAPI_debug_handler_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_address_map_t {
    pub name: [c_char; PAPI_HUGE_STR_LEN],
    pub text_start: *mut c_void,
    pub text_end: *mut c_void,
    pub data_start: *mut c_void,
    pub data_end: *mut c_void,
    pub bss_start: *mut c_void,
    pub bss_end: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_exe_info_t {
    pub fullname: [c_char; PAPI_HUGE_STR_LEN],
    pub address_info: PAPI_address_map_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_shlib_info_t {
    pub map: *mut PAPI_address_map_t,
    pub count: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PAPI_mh_tlb_info_t {
    pub type_: c_int,
    pub num_entries: c_int,
    pub page_size: c_int,
    pub associativity: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PAPI_mh_cache_info_t {
    pub type_: c_int,
    pub size: c_int,
    pub line_size: c_int,
    pub num_lines: c_int,
    pub associativity: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PAPI_mh_level_t {
    pub tlb: [PAPI_mh_tlb_info_t; PAPI_MH_MAX_LEVELS],
    pub cache: [PAPI_mh_cache_info_t; PAPI_MH_MAX_LEVELS],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PAPI_mh_info_t {
    pub levels: c_int,
    pub level: [PAPI_mh_level_t; PAPI_MAX_MEM_HIERARCHY_LEVELS],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_hw_info_t {
    pub ncpu: c_int,
    pub threads: c_int,
    pub cores: c_int,
    pub sockets: c_int,
    pub nnodes: c_int,
    pub totalcpus: c_int,
    pub vendor: c_int,
    pub vendor_string: [c_char; PAPI_MAX_STR_LEN],
    pub model: c_int,
    pub model_string: [c_char; PAPI_MAX_STR_LEN],
    pub revision: f32,
    pub cpuid_family: c_int,
    pub cpuid_model: c_int,
    pub cpuid_stepping: c_int,
    pub cpu_max_mhz: c_int,
    pub cpu_min_mhz: c_int,
    pub mem_hierarchy: PAPI_mh_info_t,
    pub virtualized: c_int,
    pub virtual_vendor_string: [c_char; PAPI_MAX_STR_LEN],
    pub virtual_vendor_version: [c_char; PAPI_MAX_STR_LEN],
    pub mhz: f32,
    pub clock_mhz: c_int,
    pub reserved: [c_int; 8],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_attach_option_t {
    pub eventset: c_int,
    pub tid: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_cpu_option_t {
    pub eventset: c_int,
    pub cpu_num: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_multiplex_option_t {
    pub eventset: c_int,
    pub ns: c_int,
    pub flags: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_addr_range_option_t {
    pub eventset: c_int,
    pub start: *mut c_void,
    pub end: *mut c_void,
    pub start_off: c_int,
    pub end_off: c_int,
}

/// `PAPI_option_t`: the member the option names.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PAPI_option_t {
    pub preload: PAPI_preload_info_t,
    pub debug: PAPI_debug_option_t,
    pub inherit: PAPI_inherit_option_t,
    pub granularity: PAPI_granularity_option_t,
    pub defgranularity: PAPI_granularity_option_t,
    pub domain: PAPI_domain_option_t,
    pub defdomain: PAPI_domain_option_t,
    pub attach: PAPI_attach_option_t,
    pub cpu: PAPI_cpu_option_t,
    pub multiplex: PAPI_multiplex_option_t,
    pub itimer: PAPI_itimer_option_t,
    pub hw_info: *mut PAPI_hw_info_t,
    pub shlib_info: *mut PAPI_shlib_info_t,
    pub exe_info: *mut PAPI_exe_info_t,
    pub cmp_info: *mut PAPI_component_info_t,
    pub addr: PAPI_addr_range_option_t,
    pub events_file: *mut c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct PAPI_dmem_info_t {
    pub peak: i64,
    pub size: i64,
    pub resident: i64,
    pub high_water_mark: i64,
    pub shared: i64,
    pub text: i64,
    pub library: i64,
    pub heap: i64,
    pub locked: i64,
    pub stack: i64,
    pub pagesize: i64,
    pub pte: i64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PAPI_event_info_t {
    pub event_code: c_uint,
    pub symbol: [c_char; PAPI_HUGE_STR_LEN],
    pub short_descr: [c_char; PAPI_MIN_STR_LEN],
    pub long_descr: [c_char; PAPI_HUGE_STR_LEN],
    pub component_index: c_int,
    pub units: [c_char; PAPI_MIN_STR_LEN],
    pub location: c_int,
    pub data_type: c_int,
    pub value_type: c_int,
    pub timescope: c_int,
    pub update_type: c_int,
    pub update_freq: c_int,
    pub count: c_uint,
    pub event_type: c_uint,
    pub derived: [c_char; PAPI_MIN_STR_LEN],
    pub postfix: [c_char; PAPI_2MAX_STR_LEN],
    pub code: [c_uint; PAPI_MAX_INFO_TERMS],
    pub name: [[c_char; PAPI_2MAX_STR_LEN]; PAPI_MAX_INFO_TERMS],
    pub note: [c_char; PAPI_HUGE_STR_LEN],
}

/// Copies `s` into a C `char` array, truncated to leave room for the NUL
/// (at a character boundary, so the C string stays valid UTF-8); NULs in
/// `s` end it early.
pub(crate) fn set_str<const N: usize>(dst: &mut [c_char; N], s: &str) {
    let mut n = s.len().min(N.saturating_sub(1));
    while n > 0 && !s.is_char_boundary(n) {
        n -= 1;
    }
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *b as c_char;
    }
    for d in dst.iter_mut().skip(n) {
        *d = 0;
    }
}
