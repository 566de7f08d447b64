//! `PAPI_library_init`, `PAPI_shutdown` and the debug level.

use std::ffi::c_int;
use std::panic::catch_unwind;

use super::counting::{PAPI_read, PAPI_start, PAPI_stop};
use super::entry;
use super::eventsets::{
    PAPI_add_named_event, PAPI_cleanup_eventset, PAPI_create_eventset, PAPI_destroy_eventset,
};
use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::state;

/// `PAPI_library_init`: `PAPI_VER_CURRENT`, or an error code.
#[no_mangle]
pub extern "C" fn PAPI_library_init(version: c_int) -> c_int {
    entry(|| {
        if state::library_init(version)? {
            warm_up();
        }
        Ok(PAPI_VER_CURRENT)
    })
}

/// Initializes the library for its own callers (the high-level API, the rates).
pub(crate) fn library_init() -> R<()> {
    match PAPI_library_init(PAPI_VER_CURRENT) {
        PAPI_VER_CURRENT => Ok(()),
        code => Err(PapiError::new(code, "PAPI_library_init failed")),
    }
}

/// Runs an event set's whole life once through the entry points (one
/// software clock, then two: a single counter and a group), so the code
/// of those paths is paged in before the program counts. Otherwise a
/// program's first `PAPI_start`/`PAPI_stop` faults on the library's own
/// code inside the counted window: `papi_command_line perf::PAGE-FAULTS`
/// counted 65 where PAPI counts 64. Failures are ignored (a machine
/// without these clocks has nothing to warm).
fn warm_up() {
    for names in [
        &[c"perf::TASK-CLOCK"][..],
        &[c"perf::TASK-CLOCK", c"perf::CPU-CLOCK"][..],
    ] {
        let mut set = PAPI_NULL;
        // SAFETY: `set` is a local int; the names are C strings; `v` holds
        // one value per event (two at most).
        unsafe {
            if PAPI_create_eventset(&mut set) != PAPI_OK {
                return;
            }
            let mut v = [0i64; 2];
            if names
                .iter()
                .all(|n| PAPI_add_named_event(set, n.as_ptr()) == PAPI_OK)
                && PAPI_start(set) == PAPI_OK
            {
                PAPI_read(set, v.as_mut_ptr());
                PAPI_stop(set, v.as_mut_ptr());
            }
            PAPI_cleanup_eventset(set);
            PAPI_destroy_eventset(&mut set);
        }
    }
}

/// `PAPI_is_initialized`: `PAPI_*_INITED` bits.
#[no_mangle]
pub extern "C" fn PAPI_is_initialized() -> c_int {
    state::init_level()
}

/// `PAPI_shutdown`: frees everything; `PAPI_library_init` may follow.
#[no_mangle]
pub extern "C" fn PAPI_shutdown() {
    let _ = catch_unwind(|| {
        crate::hl::shutdown();
        state::shutdown()
    });
}

/// `PAPI_set_debug`: PAPI_QUIET, PAPI_VERB_ECONT or PAPI_VERB_ESTOP (any
/// time, before `PAPI_library_init` too, as PAPI's test library calls it).
#[no_mangle]
pub extern "C" fn PAPI_set_debug(level: c_int) -> c_int {
    entry(|| {
        if !(PAPI_QUIET..=PAPI_VERB_ESTOP).contains(&level) {
            return fail(
                PAPI_EINVAL,
                format!("debug level {level} is not one of PAPI's"),
            );
        }
        state::set_debug(level);
        Ok(PAPI_OK)
    })
}
