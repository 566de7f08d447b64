//! Events: names and codes, their descriptions, enumeration.

use std::ffi::{c_char, c_int};

use super::{entry, null, ok, put, put_name, str_arg, zeroed_c};
use crate::abi::*;
use crate::error::fail;
use crate::{info, state};

/// `PAPI_event_name_to_code`.
///
/// # Safety
/// `in_` is NULL or a C string; `out` NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_event_name_to_code(in_: *const c_char, out: *mut c_int) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let name = unsafe { str_arg(in_, "in") }?;
        if out.is_null() {
            return Err(null("out"));
        }
        let code = state::with_lib(|lib| lib.name_to_code(name))?;
        ok(put(out, "out", code as c_int))
    })
}

/// `PAPI_event_code_to_name`: into `out` (`PAPI_MAX_STR_LEN` bytes).
///
/// # Safety
/// `out` is NULL or `PAPI_MAX_STR_LEN` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn PAPI_event_code_to_name(EventCode: c_int, out: *mut c_char) -> c_int {
    entry(|| {
        if out.is_null() {
            return Err(null("out"));
        }
        let name = state::with_lib(|lib| info::code_to_name(lib, EventCode as u32))?;
        ok(put_name(out, &name))
    })
}

/// `PAPI_get_event_info`.
///
/// # Safety
/// `info` is NULL or a writable `PAPI_event_info_t`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_event_info(
    EventCode: c_int,
    info_: *mut PAPI_event_info_t,
) -> c_int {
    entry(|| {
        if info_.is_null() {
            return Err(null("info"));
        }
        let mut i: PAPI_event_info_t = zeroed_c();
        state::with_lib(|lib| info::event_info(lib, EventCode as u32, &mut i))?;
        ok(put(info_, "info", i))
    })
}

/// `PAPI_query_event`: `PAPI_OK` when the event can be counted here.
#[no_mangle]
pub extern "C" fn PAPI_query_event(EventCode: c_int) -> c_int {
    entry(|| ok(state::with_lib(|lib| info::query(lib, EventCode as u32))))
}

/// `PAPI_query_named_event`.
///
/// # Safety
/// `EventName` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_query_named_event(EventName: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let name = unsafe { str_arg(EventName, "EventName") }?;
        ok(state::with_lib(|lib| {
            let code = lib.name_to_code(name)?;
            info::query(lib, code)
        }))
    })
}

/// `PAPI_enum_event`: the next event code after `*EventCode` that `modifier` selects.
///
/// # Safety
/// `EventCode` is NULL or a readable and writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_enum_event(EventCode: *mut c_int, modifier: c_int) -> c_int {
    entry(|| {
        if EventCode.is_null() {
            return Err(null("EventCode"));
        }
        // SAFETY: non-null, readable by the contract.
        let code = unsafe { EventCode.read() } as u32;
        let next = state::with_lib(|lib| info::enumerate(lib, code, modifier))?;
        ok(put(EventCode, "EventCode", next as c_int))
    })
}

/// `PAPI_enum_cmp_event`: as `PAPI_enum_event`, for component `cidx`'s native events.
///
/// # Safety
/// `EventCode` is NULL or a readable and writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_enum_cmp_event(
    EventCode: *mut c_int,
    modifier: c_int,
    cidx: c_int,
) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        if EventCode.is_null() {
            return Err(null("EventCode"));
        }
        // SAFETY: non-null, readable by the contract.
        let code = unsafe { EventCode.read() } as u32;
        if code & PAPI_NATIVE_MASK == 0 || code & PAPI_PRESET_MASK != 0 {
            return fail(
                PAPI_EINVAL,
                "PAPI_enum_cmp_event enumerates native event codes (PAPI_NATIVE_MASK)",
            );
        }
        let next = state::with_lib(|lib| info::enumerate(lib, code, modifier))?;
        ok(put(EventCode, "EventCode", next as c_int))
    })
}

/// `PAPI_get_event_component`: the component of an event code.
#[no_mangle]
pub extern "C" fn PAPI_get_event_component(EventCode: c_int) -> c_int {
    entry(|| {
        state::with_lib(|lib| {
            let code = EventCode as u32;
            if code & PAPI_PRESET_MASK != 0 {
                return Ok(state::CIDX);
            }
            info::query(lib, code).map(|()| state::CIDX)
        })
    })
}
