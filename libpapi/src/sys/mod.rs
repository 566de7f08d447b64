//! The C entry points: each converts its arguments, calls the safe logic
//! inside `catch_unwind`, and returns PAPI's code (a panic is `PAPI_EBUG`,
//! never an unwind into C). Every pointer is checked for NULL
//! (`PAPI_EINVAL`, as PAPI answers). The structures returned by pointer
//! (`PAPI_get_hardware_info` and the like) live for the rest of the process.
//!
//! This file holds the helpers every entry point uses (`entry`, the
//! argument checks, `Leaked`); the entry points are in one file per part
//! of PAPI's API, re-exported here (`papi::sys::PAPI_start`):
//! `init` (library init, shutdown, debug level),
//! `eventsets`, `counting`, `events` (names, codes, descriptions),
//! `machine` (components, hardware, executable, domain, granularity,
//! multiplex, attach), `options` (`PAPI_set_opt`/`PAPI_get_opt`),
//! `profiling` (overflow, profil), `errors`, `timers`, `threads` (and
//! the user locks), `hl` (the high-level API), `rates`. `os` is the
//! operating system's calls.

mod counting;
mod errors;
mod events;
mod eventsets;
mod hl;
mod init;
mod machine;
mod options;
pub(crate) mod os;
mod profiling;
mod rates;
mod threads;
mod timers;

pub use counting::*;
pub use errors::*;
pub use events::*;
pub use eventsets::*;
pub use hl::*;
pub use init::*;
pub use machine::*;
pub use options::*;
pub use profiling::*;
pub use rates::*;
pub use threads::*;
pub use timers::*;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::abi::*;
use crate::error::{PapiError, R};

/// `PAPI_overflow_handler_t`'s function.
pub type OverflowHandler = unsafe extern "C" fn(c_int, *mut c_void, i64, *mut c_void);
/// `PAPI_debug_handler_t`'s function.
pub type DebugHandler = unsafe extern "C" fn(c_int) -> c_int;
/// `PAPI_thread_init`'s function.
pub type ThreadIdFn = unsafe extern "C" fn() -> c_ulong;

thread_local! {
    /// The calling thread's last failure, for `PAPI_perror`.
    static LAST: RefCell<Option<PapiError>> = const { RefCell::new(None) };
}

fn remember(e: &PapiError) {
    let _ = LAST.try_with(|l| *l.borrow_mut() = Some(e.clone()));
}

/// Runs `f` as an entry point: its error becomes its code, a panic `PAPI_EBUG`.
fn entry(f: impl FnOnce() -> R<c_int>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            remember(&e);
            e.code
        }
        Err(_) => {
            remember(&PapiError::new(
                PAPI_EBUG,
                "internal error in pmc's libpapi (a bug: please report it)",
            ));
            PAPI_EBUG
        }
    }
}

/// [`entry`] for calls returning a pointer: NULL on failure.
fn ptr_entry<T>(f: impl FnOnce() -> R<*const T>) -> *const T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            remember(&e);
            ptr::null()
        }
        Err(_) => ptr::null(),
    }
}

fn ok(r: R<()>) -> R<c_int> {
    r.map(|()| PAPI_OK)
}

fn null(arg: &str) -> PapiError {
    PapiError::new(PAPI_EINVAL, format!("{arg} is NULL"))
}

/// A string argument: `PAPI_EINVAL` when NULL or not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> R<&'a str> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, and a NUL-terminated string living for 'a by this function's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| PapiError::new(PAPI_EINVAL, format!("{what} is not UTF-8")))
}

/// Stores `v` through `out`.
fn put<T>(out: *mut T, name: &str, v: T) -> R<()> {
    if out.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-null and, by the function's C contract, a writable `T` of the caller's.
    unsafe { out.write(v) };
    Ok(())
}

/// The caller's array of `n` values.
///
/// # Safety
/// `p` is NULL or points to `n` writable values for `'a`.
unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> R<&'a mut [T]> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-null, `n` elements by the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A C structure of integers, floats, arrays and raw pointers, all zero.
pub(crate) fn zeroed_c<T: Copy>() -> T {
    // SAFETY: only instantiated (through `abi::Zeroed`) for `#[repr(C)]`
    // types made of integers, floats, arrays of them and raw pointers or
    // `Option<fn>`, for all of which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

/// Copies a name into a caller's buffer of `PAPI_MAX_STR_LEN` bytes (PAPI's
/// contract for names), truncated.
fn put_name(out: *mut c_char, name: &str) -> R<()> {
    if out.is_null() {
        return Err(null("out"));
    }
    let n = name.len().min(PAPI_MAX_STR_LEN - 1);
    // SAFETY: `out` holds PAPI_MAX_STR_LEN bytes by PAPI's contract; `n` < that.
    unsafe {
        ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), out, n);
        out.add(n).write(0);
    }
    Ok(())
}

/// A pointer to data leaked for the life of the process, shared across threads.
struct Leaked<T>(*mut T);
// SAFETY: the pointee is written only under the mutex that holds this
// pointer, and lives forever (leaked); C reads it through the pointer the
// API returns, as PAPI's own static structures are read.
unsafe impl<T> Send for Leaked<T> {}

fn leak<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}
