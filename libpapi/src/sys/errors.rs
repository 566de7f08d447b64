//! Errors: `PAPI_strerror` and `PAPI_perror`.

use std::ffi::{c_char, c_int};
use std::panic::catch_unwind;
use std::ptr;

use super::{str_arg, LAST};
use crate::abi::*;

/// `PAPI_strerror`: PAPI's string for a code, NULL for other values.
#[no_mangle]
pub extern "C" fn PAPI_strerror(code: c_int) -> *mut c_char {
    crate::error::strerror(code).map_or(ptr::null_mut(), |s| s.as_ptr().cast_mut())
}

/// `PAPI_perror`: `msg: ` and the calling thread's last error, on stderr;
/// pmc's library adds what went wrong in words.
///
/// # Safety
/// `msg` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_perror(msg: *const c_char) {
    let _ = catch_unwind(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let m = unsafe { str_arg(msg, "msg") }.unwrap_or("");
        let last = LAST.with(|l| l.borrow().clone());
        let code = last.as_ref().map_or(PAPI_OK, |e| e.code);
        let s = crate::error::strerror(code)
            .map_or("Unknown error code".into(), |s| s.to_string_lossy());
        let detail = last
            .map(|e| format!(" ({})", e.message))
            .unwrap_or_default();
        if m.is_empty() {
            eprintln!("{s}{detail}");
        } else {
            eprintln!("{m}: {s}{detail}");
        }
    });
}
