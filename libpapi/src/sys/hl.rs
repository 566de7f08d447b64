//! The high-level API: regions, `PAPI_hl_read`, `PAPI_hl_stop`.

use std::ffi::{c_char, c_int, CStr};

use super::machine::hw_info;
use super::{entry, ok, str_arg};

/// `PAPI_hl_region_begin`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_region_begin(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::region_begin(r))
    })
}

/// `PAPI_hl_read`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_read(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::read(r))
    })
}

/// `PAPI_hl_region_end`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_region_end(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::region_end(r))
    })
}

/// `PAPI_hl_stop`.
#[no_mangle]
pub extern "C" fn PAPI_hl_stop() -> c_int {
    entry(|| ok(crate::hl::stop()))
}

/// Registers the high-level API's report writer to run at exit.
pub(crate) fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: atexit takes a function pointer with no arguments, which `f` is.
    unsafe { libc::atexit(f) == 0 }
}

/// The machine summary the high-level report prints.
pub(crate) fn hw_info_facts() -> crate::hl::HwSummary {
    let h = hw_info();
    // SAFETY: model_string is a NUL-terminated array (set_str keeps the last byte 0).
    let model = unsafe { CStr::from_ptr(h.model_string.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (model, h.cpu_max_mhz, h.cpu_min_mhz)
}
