//! The extension's measurements: `pmc_measure_begin`, `pmc_measure_read`,
//! `pmc_measure_end`.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::state::{self, CError};

use super::{efault, entry, put, utf8_arg};

/// Extension: counts `nevents` events (each in `pmc_allocate`'s syntax) in
/// the calling process and the threads it creates later, as one group, and
/// starts counting; the handle goes to `*measure`. A group's events run
/// together, so ratios between them are exact. Returns 0, or -1 with errno:
/// `EINVAL` (no events, more than 32, an unknown one), `EFAULT`, and the
/// errors of `pmc_allocate` and `pmc_start`.
///
/// ```c
/// const char *ev[] = { "task-clock", "page-faults" };
/// pmc_measure_t m; pmc_value_t v[2];
/// if (pmc_measure_begin(ev, 2, &m) < 0) err(1, "%s", pmc_strerror_last());
/// /* work */
/// if (pmc_measure_end(m, v, 2) < 0) err(1, "%s", pmc_strerror_last());
/// ```
///
/// # Safety
/// `events` is NULL or holds `nevents` pointers, each NULL or a
/// NUL-terminated string; `measure` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_measure_begin(
    events: *const *const c_char,
    nevents: c_int,
    measure: *mut pmc_measure_t,
) -> c_int {
    entry(|| {
        if events.is_null() {
            return Err(efault("events"));
        }
        if measure.is_null() {
            return Err(efault("measure"));
        }
        let n = usize::try_from(nevents)
            .ok()
            .filter(|&n| (1..=state::MEASURE_MAX_EVENTS).contains(&n))
            .ok_or_else(|| {
                CError::new(
                    libc::EINVAL,
                    format!(
                        "nevents is {nevents}: pmc_measure_begin takes 1 to {} events",
                        state::MEASURE_MAX_EVENTS
                    ),
                )
            })?;
        let mut specs = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `events` holds `nevents` pointers by the C contract, and i < nevents.
            let p = unsafe { events.add(i).read() };
            // SAFETY: NULL or a NUL-terminated string by the C contract, read within this call.
            specs.push(unsafe { utf8_arg(p, &format!("events[{i}]")) }?);
        }
        let handle = state::measure_begin(&specs)?;
        // SAFETY: `measure` is NULL or writable, by the C contract.
        unsafe { put(measure, "measure", handle) }
    })
}

/// The capacity of a values buffer: `None` for (NULL, 0), `EFAULT` for NULL
/// with a size, `EINVAL` for a negative size.
fn capacity(values: *mut pmc_value_t, nvalues: c_int) -> Result<Option<usize>, CError> {
    let n = usize::try_from(nvalues)
        .map_err(|_| CError::new(libc::EINVAL, format!("nvalues is {nvalues}")))?;
    match (values.is_null(), n) {
        (true, 0) => Ok(None),
        (true, _) => Err(efault("values")),
        (false, n) => Ok(Some(n)),
    }
}

/// Stores `counts` in `values`; returns their number.
///
/// # Safety
/// `values` is valid for writes of `counts.len()` values: the caller's
/// buffer, which [`capacity`] found non-null and the state found large enough.
unsafe fn put_values(values: *mut pmc_value_t, counts: &[pmc_value_t]) -> Result<c_int, CError> {
    for (i, &v) in counts.iter().enumerate() {
        // SAFETY: i < counts.len(), which `values` holds by this function's contract.
        unsafe { values.add(i).write(v) };
    }
    c_int::try_from(counts.len()).map_err(|_| CError::new(libc::EOVERFLOW, "too many values"))
}

/// Extension: a group read: the measurement's counts now, one per event in
/// `pmc_measure_begin`'s order, into `values[0..nvalues)`, without stopping
/// it. Counts are scaled when the kernel multiplexed the group. Returns the
/// number of values, or -1 with errno: `EINVAL` (an unknown handle,
/// `nvalues` below the number of events), `EFAULT`, `EBUSY` (the group never
/// got the counters), `EOPNOTSUPP` (an event this machine cannot count).
///
/// # Safety
/// `values` is NULL or holds `nvalues` writable values.
#[no_mangle]
pub unsafe extern "C" fn pmc_measure_read(
    measure: pmc_measure_t,
    values: *mut pmc_value_t,
    nvalues: c_int,
) -> c_int {
    entry(|| {
        let cap = capacity(values, nvalues)?.ok_or_else(|| efault("values"))?;
        let counts = state::measure_read(measure, cap)?;
        // SAFETY: `values` holds `nvalues` (= cap) writable values by the C contract, and
        // the state refused a buffer smaller than the counts.
        unsafe { put_values(values, &counts) }
    })
}

/// Extension: stops the measurement, stores its final counts as
/// `pmc_measure_read` does (none with `values` NULL and `nvalues` 0), and
/// frees the handle. A buffer too small fails first (`EINVAL`) and keeps the
/// measurement; after that the handle is freed even when the read fails.
/// Returns the number of values, or -1 with errno.
///
/// # Safety
/// `values` is NULL or holds `nvalues` writable values.
#[no_mangle]
pub unsafe extern "C" fn pmc_measure_end(
    measure: pmc_measure_t,
    values: *mut pmc_value_t,
    nvalues: c_int,
) -> c_int {
    entry(|| {
        let cap = capacity(values, nvalues)?;
        let counts = state::measure_end(measure, cap)?;
        // SAFETY: as in pmc_measure_read: no counts without a buffer (cap `None`), else the
        // state refused a buffer smaller than the counts.
        unsafe { put_values(values, &counts) }
    })
}
