//! Counting: start, stop, read, accumulate, reset and write the counts.

use std::ffi::c_int;

use super::threads::register_implicitly;
use super::timers::real_cyc;
use super::{entry, null, ok, put, slice_mut};
use crate::error::R;
use crate::{overflow, state};

/// `PAPI_start`: counts from zero.
#[no_mangle]
pub extern "C" fn PAPI_start(EventSet: c_int) -> c_int {
    entry(|| {
        register_implicitly();
        ok(state::start(EventSet))
    })
}

/// Writes a set's counts into the caller's array (`values` may be NULL).
///
/// # Safety
/// `values` is NULL or holds one long long per event of the set.
unsafe fn put_values(values: *mut i64, v: &[i64]) -> R<()> {
    if values.is_null() {
        return Ok(());
    }
    // SAFETY: one value per event, by PAPI's contract.
    let out = unsafe { slice_mut(values, v.len(), "values") }?;
    out.copy_from_slice(v);
    Ok(())
}

/// `PAPI_stop`: stops counting; the counts go to `values` (may be NULL).
/// Overflow handlers of samples not yet delivered are called before it returns.
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
#[no_mangle]
pub unsafe extern "C" fn PAPI_stop(EventSet: c_int, values: *mut i64) -> c_int {
    entry(|| {
        let (v, calls) = state::stop(EventSet)?;
        overflow::deliver(&calls);
        // SAFETY: by this function's contract.
        ok(unsafe { put_values(values, &v) })
    })
}

/// `PAPI_read`: the counts now.
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
#[no_mangle]
pub unsafe extern "C" fn PAPI_read(EventSet: c_int, values: *mut i64) -> c_int {
    entry(|| {
        if values.is_null() {
            return Err(null("values"));
        }
        let v = state::read(EventSet)?;
        // SAFETY: by this function's contract.
        ok(unsafe { put_values(values, &v) })
    })
}

/// `PAPI_read_ts`: the counts and `PAPI_get_real_cyc()` at the read.
///
/// # Safety
/// `values` is NULL or one long long per event; `cycles` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_read_ts(
    EventSet: c_int,
    values: *mut i64,
    cycles: *mut i64,
) -> c_int {
    entry(|| {
        if values.is_null() || cycles.is_null() {
            return Err(null("values or cycles"));
        }
        let v = state::read(EventSet)?;
        let c = real_cyc();
        // SAFETY: by this function's contract.
        unsafe { put_values(values, &v) }?;
        ok(put(cycles, "cycles", c))
    })
}

/// `PAPI_accum` and `PAPI_write`: `op` on the set and the caller's array
/// of its counts.
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
unsafe fn with_values(set: c_int, values: *mut i64, op: fn(c_int, &mut [i64]) -> R<()>) -> c_int {
    entry(|| {
        let n = state::num_events(set)?;
        // SAFETY: NULL or one value per event by this function's contract.
        let v = unsafe { slice_mut(values, n, "values") }?;
        ok(op(set, v))
    })
}

/// `PAPI_accum`: adds the counts to `values`, then zeroes the counters.
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
#[no_mangle]
pub unsafe extern "C" fn PAPI_accum(EventSet: c_int, values: *mut i64) -> c_int {
    // SAFETY: one value per event by the contract.
    unsafe { with_values(EventSet, values, state::accum) }
}

/// `PAPI_reset`: zeroes the counts.
#[no_mangle]
pub extern "C" fn PAPI_reset(EventSet: c_int) -> c_int {
    entry(|| ok(state::reset(EventSet)))
}

/// `PAPI_write`: sets the counts (kept as offsets: later counts add to them).
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
#[no_mangle]
pub unsafe extern "C" fn PAPI_write(EventSet: c_int, values: *mut i64) -> c_int {
    // SAFETY: one value per event by the contract.
    unsafe { with_values(EventSet, values, |set, v| state::write(set, v)) }
}
