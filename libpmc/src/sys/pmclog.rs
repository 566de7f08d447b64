//! pmclog(3): `pmclog_open`, `pmclog_feed`, `pmclog_read`, `pmclog_close`
//! over the parser's cookie.

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::abi::*;
use crate::pmclog::{empty_event, Parser};
use crate::state::CError;

use super::{efault, entry, fail, put};

/// `pmclog_open`: a parser reading the log from `fd` (as far as each
/// `pmclog_read` needs), or, with `PMCLOG_FD_NONE`, from `pmclog_feed`.
/// NULL with errno on failure.
#[no_mangle]
pub extern "C" fn pmclog_open(fd: c_int) -> *mut std::ffi::c_void {
    match catch_unwind(|| Box::into_raw(Box::new(Parser::new(fd)))) {
        Ok(p) => p.cast(),
        Err(_) => {
            fail(CError::new(libc::ENOMEM, "cannot create the log parser"));
            ptr::null_mut()
        }
    }
}

/// `pmclog_feed`: gives a `PMCLOG_FD_NONE` parser `len` more bytes (copied).
/// 0, or -1 with errno (`EINVAL`: a parser reading a descriptor, a negative
/// length, or data fed before not consumed yet).
///
/// # Safety
/// `cookie` is `pmclog_open`'s, not closed; `data` holds `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pmclog_feed(
    cookie: *mut std::ffi::c_void,
    data: *mut c_char,
    len: c_int,
) -> c_int {
    entry(|| {
        if cookie.is_null() {
            return Err(efault("cookie"));
        }
        let n = usize::try_from(len)
            .map_err(|_| CError::new(libc::EINVAL, format!("length {len} is negative")))?;
        if data.is_null() && n > 0 {
            return Err(efault("data"));
        }
        // SAFETY: a live parser from pmclog_open, by the C contract; the
        // caller does not use it from another thread during the call.
        let parser = unsafe { &mut *cookie.cast::<Parser>() };
        let bytes = if n == 0 {
            &[][..]
        } else {
            // SAFETY: `data` holds `n` readable bytes by the C contract.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), n) }
        };
        parser.feed(bytes)?;
        Ok(0)
    })
}

/// `pmclog_read`: the next event into `*ev`: 0, or -1 with `ev->pl_state`
/// `PMCLOG_EOF` (the end, or CLOSELOG), `PMCLOG_REQUIRE_DATA` (feed more)
/// or `PMCLOG_ERROR` (errno and `pmc_strerror_last()` say why).
///
/// # Safety
/// `cookie` is `pmclog_open`'s, not closed; `ev` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmclog_read(cookie: *mut std::ffi::c_void, ev: *mut pmclog_ev) -> c_int {
    entry(|| {
        if cookie.is_null() || ev.is_null() {
            return Err(efault("cookie or ev"));
        }
        // SAFETY: as in pmclog_feed.
        let parser = unsafe { &mut *cookie.cast::<Parser>() };
        let fd = parser.fd;
        let mut read_more = |buf: &mut [u8]| -> Result<usize, CError> {
            if fd < 0 {
                return Err(CError::new(libc::EBADF, format!("pmclog_read: fd {fd}")));
            }
            // SAFETY: the descriptor is only borrowed for this read; the
            // caller keeps it open while the parser lives (pmclog(3)).
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            loop {
                match nix::unistd::read(fd, buf) {
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => {
                        return Err(CError::new(
                            e as i32,
                            format!("pmclog_read: reading the log: {e}"),
                        ));
                    }
                    Ok(n) => return Ok(n),
                }
            }
        };
        let mut out = empty_event();
        let got = parser.next(&mut out, &mut read_more);
        // SAFETY: `ev` is NULL or writable, by the C contract.
        unsafe { put(ev, "ev", out) }?;
        Ok(if got? { 0 } else { -1 })
    })
}

/// `pmclog_close`: frees the parser (not the descriptor).
///
/// # Safety
/// `cookie` is `pmclog_open`'s and not used again, or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmclog_close(cookie: *mut std::ffi::c_void) {
    if cookie.is_null() {
        return;
    }
    // SAFETY: made by Box::into_raw in pmclog_open, closed once.
    let parser = unsafe { Box::from_raw(cookie.cast::<Parser>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(parser)));
}
