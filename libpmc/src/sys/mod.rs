//! The C entry points: each converts its arguments, calls the safe logic
//! inside `catch_unwind`, and reports a failure as -1 with `errno` set and
//! the message kept for `pmc_strerror_last`. Every pointer is checked for
//! NULL (`EFAULT`); C passes enums as their 32-bit values. Here: that
//! machinery; the entry points by family: `calls.rs` (pmc(3)'s calls),
//! `names.rs` (`pmc_name_of_*`, `pmc_event_names_of_class`), `measure.rs`
//! (the `pmc_measure_*` extension), `pmclog.rs` (pmclog(3)), `pmu.rs`
//! (`pmc_pmu_*`); `logfile.rs` is the log's file, whose writes turn
//! `SIGPIPE` into `EPIPE`.

mod calls;
mod logfile;
mod measure;
mod names;
mod pmclog;
mod pmu;

pub use calls::*;
pub use measure::*;
pub use names::*;
pub use pmclog::*;
pub use pmu::*;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::state::{self, CError};

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(e: CError) {
    nix::errno::Errno::set_raw(e.errno);
    let msg = CString::new(escape(&e.message)).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = msg);
}

/// The longest message `pmc_strerror_last` returns (a longer one is cut, and
/// says so).
const MESSAGE_MAX: usize = 4096;

/// The longest word (a run between blanks) a message shows whole; a longer one
/// is cut in the middle, as pmcstat's messages are (pmc-log's `cut_words`).
const WORD_MAX: usize = 1024;

/// A message a terminal can show: each word longer than [`WORD_MAX`] cut in
/// the middle, control characters as `\xNN` escapes, cut to [`MESSAGE_MAX`]
/// bytes.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in pmc_log::escape::cut_words(s, WORD_MAX).chars() {
        if out.len() >= MESSAGE_MAX {
            out.push_str(" [cut]");
            break;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs `f` as an entry point: its error becomes -1 and errno, a panic EIO.
fn entry(f: impl FnOnce() -> Result<c_int, CError>) -> c_int {
    state::CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            state::FAILED_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fail(e);
            -1
        }
        Err(_) => {
            state::FAILED_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fail(CError::new(
                libc::EIO,
                "internal error in libpmc (a bug: please report it)",
            ));
            -1
        }
    }
}

/// Like [`entry`] for the calls that return a name: NULL and EINVAL for an
/// unknown value.
fn name_entry(what: &str, v: u32, f: impl FnOnce() -> Option<*const c_char>) -> *const c_char {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Some(p)) => p,
        _ => {
            fail(CError::new(
                libc::EINVAL,
                format!("{v:#x} is not a known {what}"),
            ));
            ptr::null()
        }
    }
}

fn efault(arg: &str) -> CError {
    CError::new(libc::EFAULT, format!("{arg} is NULL"))
}

/// A string argument: `EFAULT` naming `what` when NULL, `EINVAL` when not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
unsafe fn utf8_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, CError> {
    if p.is_null() {
        return Err(efault(what));
    }
    // SAFETY: non-null, and a NUL-terminated string living for 'a by this function's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| CError::new(libc::EINVAL, format!("{what} is not UTF-8")))
}

fn ok0(r: Result<(), CError>) -> Result<c_int, CError> {
    r.map(|()| 0)
}

/// Stores `v` through `out`: `EFAULT` naming `name` when it is NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of a `T` (aligned, writable, not
/// accessed by anyone else during the call): the C contract of the entry
/// points' out-parameters.
unsafe fn put<T>(out: *mut T, name: &str, v: T) -> Result<c_int, CError> {
    if out.is_null() {
        return Err(efault(name));
    }
    // SAFETY: non-null, and valid for a write of `T` by this function's contract.
    unsafe { out.write(v) };
    Ok(0)
}
