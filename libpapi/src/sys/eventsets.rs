//! Event sets: creating them, adding and removing events, their state.

use std::ffi::{c_char, c_int};

use super::threads::register_implicitly;
use super::{entry, null, ok, put, slice_mut, str_arg};
use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::state;

/// `PAPI_create_eventset`: `*EventSet` must be `PAPI_NULL`.
///
/// # Safety
/// `EventSet` is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_create_eventset(EventSet: *mut c_int) -> c_int {
    entry(|| {
        if EventSet.is_null() {
            return Err(null("EventSet"));
        }
        state::with_lib(|_| Ok(()))?;
        // SAFETY: non-null, readable by the contract.
        if unsafe { EventSet.read() } != PAPI_NULL {
            return fail(
                PAPI_EINVAL,
                "*EventSet must be PAPI_NULL (a set's id is written there)",
            );
        }
        let id = state::create_eventset()?;
        register_implicitly();
        ok(put(EventSet, "EventSet", id))
    })
}

/// `PAPI_destroy_eventset`: frees an empty set, `*EventSet` becomes `PAPI_NULL`.
///
/// # Safety
/// `EventSet` is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_destroy_eventset(EventSet: *mut c_int) -> c_int {
    entry(|| {
        if EventSet.is_null() {
            return Err(null("EventSet"));
        }
        // SAFETY: non-null, readable by the contract.
        let id = unsafe { EventSet.read() };
        state::destroy_eventset(id)?;
        ok(put(EventSet, "EventSet", PAPI_NULL))
    })
}

/// `PAPI_cleanup_eventset`: removes every event.
#[no_mangle]
pub extern "C" fn PAPI_cleanup_eventset(EventSet: c_int) -> c_int {
    entry(|| ok(state::cleanup_eventset(EventSet)))
}

/// `PAPI_assign_eventset_component`.
#[no_mangle]
pub extern "C" fn PAPI_assign_eventset_component(EventSet: c_int, cidx: c_int) -> c_int {
    entry(|| ok(state::assign_component(EventSet, cidx)))
}

/// `PAPI_get_eventset_component`: the set's component index.
#[no_mangle]
pub extern "C" fn PAPI_get_eventset_component(EventSet: c_int) -> c_int {
    entry(|| {
        state::with_lib(|lib| {
            lib.set(EventSet)?
                .cidx
                .ok_or_else(|| PapiError::new(PAPI_ENOCMP, "the event set has no component yet"))
        })
    })
}

/// What the add and remove calls do to one event of a set.
type EventOp = fn(c_int, u32) -> R<()>;

/// `PAPI_add_named_event` and `PAPI_remove_named_event`: `op` on the event
/// named `name`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn named_event(set: c_int, name: *const c_char, op: EventOp) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by this function's contract, read
        // within this call.
        let name = unsafe { str_arg(name, "EventName") }?;
        let code = state::with_lib(|lib| lib.name_to_code(name))?;
        ok(op(set, code))
    })
}

/// `PAPI_add_events` and `PAPI_remove_events` (named by `call`): `op` on
/// each of the caller's `number` event codes in turn; on a failure,
/// returns its code (the events before it stay done, as PAPI's do).
///
/// # Safety
/// `events` is NULL or `number` ints.
unsafe fn each_event(
    call: &str,
    set: c_int,
    events: *mut c_int,
    number: c_int,
    op: EventOp,
) -> c_int {
    entry(|| {
        if number <= 0 {
            return fail(PAPI_EINVAL, format!("{call}: number must be positive"));
        }
        // SAFETY: NULL or `number` ints by this function's contract.
        let events = unsafe { slice_mut(events, number as usize, "Events") }?;
        for &e in events.iter() {
            op(set, e as u32)?;
        }
        Ok(PAPI_OK)
    })
}

/// `PAPI_add_event`.
#[no_mangle]
pub extern "C" fn PAPI_add_event(EventSet: c_int, EventCode: c_int) -> c_int {
    entry(|| ok(state::add_event(EventSet, EventCode as u32)))
}

/// `PAPI_add_named_event`.
///
/// # Safety
/// `EventName` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_add_named_event(EventSet: c_int, EventName: *const c_char) -> c_int {
    // SAFETY: NULL or a C string by the contract.
    unsafe { named_event(EventSet, EventName, state::add_event) }
}

/// `PAPI_add_events`: adds each in turn; on a failure, returns its code
/// (the events before it stay added, as PAPI's do).
///
/// # Safety
/// `Events` is NULL or `number` ints.
#[no_mangle]
pub unsafe extern "C" fn PAPI_add_events(
    EventSet: c_int,
    Events: *mut c_int,
    number: c_int,
) -> c_int {
    let op: EventOp = state::add_event;
    // SAFETY: NULL or `number` ints by the contract.
    unsafe { each_event("PAPI_add_events", EventSet, Events, number, op) }
}

/// `PAPI_remove_event`.
#[no_mangle]
pub extern "C" fn PAPI_remove_event(EventSet: c_int, EventCode: c_int) -> c_int {
    entry(|| ok(state::remove_event(EventSet, EventCode as u32)))
}

/// `PAPI_remove_named_event`.
///
/// # Safety
/// `EventName` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_remove_named_event(
    EventSet: c_int,
    EventName: *const c_char,
) -> c_int {
    // SAFETY: NULL or a C string by the contract.
    unsafe { named_event(EventSet, EventName, state::remove_event) }
}

/// `PAPI_remove_events`.
///
/// # Safety
/// `Events` is NULL or `number` ints.
#[no_mangle]
pub unsafe extern "C" fn PAPI_remove_events(
    EventSet: c_int,
    Events: *mut c_int,
    number: c_int,
) -> c_int {
    let op: EventOp = state::remove_event;
    // SAFETY: NULL or `number` ints by the contract.
    unsafe { each_event("PAPI_remove_events", EventSet, Events, number, op) }
}

/// `PAPI_list_events`: up to `*number` codes into `Events`; `*number`
/// becomes the set's event count.
///
/// # Safety
/// `number` is NULL or a writable int; `Events` is NULL or `*number` ints.
#[no_mangle]
pub unsafe extern "C" fn PAPI_list_events(
    EventSet: c_int,
    Events: *mut c_int,
    number: *mut c_int,
) -> c_int {
    entry(|| {
        if number.is_null() {
            return Err(null("number"));
        }
        // SAFETY: non-null, readable by the contract.
        let room = unsafe { number.read() };
        if room < 0 || (room > 0 && Events.is_null()) {
            return fail(
                PAPI_EINVAL,
                "PAPI_list_events: Events is NULL or *number negative",
            );
        }
        let codes = state::list_events(EventSet)?;
        if room > 0 {
            // SAFETY: `room` ints by the contract.
            let out = unsafe { slice_mut(Events, room as usize, "Events") }?;
            for (o, c) in out.iter_mut().zip(&codes) {
                *o = *c as c_int;
            }
        }
        ok(put(number, "number", codes.len() as c_int))
    })
}

/// `PAPI_num_events`: how many events the set has.
#[no_mangle]
pub extern "C" fn PAPI_num_events(EventSet: c_int) -> c_int {
    entry(|| state::num_events(EventSet).map(|n| n as c_int))
}

/// `PAPI_state`: the set's `PAPI_STOPPED`/`PAPI_RUNNING`/... bits into `*status`.
///
/// # Safety
/// `status` is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_state(EventSet: c_int, status: *mut c_int) -> c_int {
    entry(|| {
        if status.is_null() {
            return Err(null("status"));
        }
        ok(put(status, "status", state::state(EventSet)?))
    })
}
