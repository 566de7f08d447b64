//! `pmc_name_of_*` and `pmc_event_names_of_class`.

use std::ffi::{c_char, c_int, CStr};

use crate::abi::*;
use crate::names;
use crate::state::{self, CError};

use super::{efault, entry, name_entry, put};

/// `pmc_name_of_capability`: one `PMC_CAP_*` bit's name, or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_capability(c: CapsArg) -> *const c_char {
    name_entry("capability", c.0, || {
        names::capability(c.0).map(CStr::as_ptr)
    })
}

/// `pmc_name_of_class`: a class's name ("SOFT"), or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_class(pc: ClassArg) -> *const c_char {
    name_entry("class", pc.0, || names::class(pc.0).map(CStr::as_ptr))
}

/// `pmc_name_of_cputype`: a CPU type's name, or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_cputype(cp: CpuTypeArg) -> *const c_char {
    name_entry("CPU type", cp.0, || names::cputype(cp.0).map(CStr::as_ptr))
}

/// `pmc_name_of_disposition`: a row disposition's name, or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_disposition(pd: DispArg) -> *const c_char {
    name_entry("disposition", pd.0, || {
        names::disposition(pd.0).map(CStr::as_ptr)
    })
}

/// `pmc_name_of_event`: an event's name, or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_event(pe: EventArg) -> *const c_char {
    name_entry("event", pe.0, || names::event(pe.0))
}

/// `pmc_name_of_mode`: a mode's name ("TC"), or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_mode(pm: ModeArg) -> *const c_char {
    name_entry("mode", pm.0, || names::mode(pm.0).map(CStr::as_ptr))
}

/// `pmc_name_of_state`: a state's name, or NULL (`EINVAL`).
#[no_mangle]
pub extern "C" fn pmc_name_of_state(ps: StateArg) -> *const c_char {
    name_entry("state", ps.0, || names::state(ps.0).map(CStr::as_ptr))
}

/// `pmc_event_names_of_class`: the event names of class `cl` into
/// `*eventnames` and their number into `*nevents`. As FreeBSD's libpmc, the
/// array is `malloc(3)`ed and the caller frees it (`free(*eventnames)`); the
/// names it points to are the library's. On Linux the SOFT class lists its
/// events, the machine's hardware class (`pmc_cpuinfo`'s) the CPU's events
/// that can open here; a class the machine lacks fails with `EOPNOTSUPP`.
///
/// # Safety
/// `eventnames` and `nevents` are writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_event_names_of_class(
    cl: ClassArg,
    eventnames: *mut *mut *const c_char,
    nevents: *mut c_int,
) -> c_int {
    entry(|| {
        if eventnames.is_null() || nevents.is_null() {
            return Err(efault("eventnames or nevents"));
        }
        let names = state::event_names_of_class(cl.0)?;
        let count = c_int::try_from(names.len())
            .map_err(|_| CError::new(libc::EOVERFLOW, "too many event names"))?;
        let bytes = std::mem::size_of::<*const c_char>()
            .checked_mul(names.len().max(1))
            .ok_or_else(|| CError::new(libc::ENOMEM, "too many event names"))?;
        // SAFETY: malloc of a non-zero size; a NULL answer is checked below.
        let array = unsafe { libc::malloc(bytes) }.cast::<*const c_char>();
        if array.is_null() {
            return Err(CError::new(libc::ENOMEM, "cannot allocate the name array"));
        }
        for (i, n) in names.iter().enumerate() {
            // SAFETY: `array` holds `names.len()` pointers (malloc'ed above).
            unsafe { array.add(i).write(n.as_ptr()) };
        }
        // The caller frees the array, as with FreeBSD's libpmc; the names are
        // 'static. pmc(3)'s type is `const char ***`.
        // SAFETY: `eventnames` is NULL or writable, by the C contract.
        unsafe { put(eventnames, "eventnames", array) }?;
        // SAFETY: `nevents` is NULL or writable, by the C contract.
        unsafe { put(nevents, "nevents", count) }
    })
}
