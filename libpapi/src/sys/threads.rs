//! Threads: registration, thread ids and data, and the user locks.

use std::ffi::{c_int, c_ulong, c_void};
use std::panic::catch_unwind;
use std::sync::{Condvar, Mutex};

use super::{entry, null, ok, os, put, slice_mut, ThreadIdFn};
use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::state;

/// The calling thread's PAPI id: `PAPI_thread_init`'s function's answer,
/// else the kernel's thread id.
fn current_thread_id() -> R<c_ulong> {
    let f = state::with_lib(|lib| Ok(lib.thread_fn))?;
    Ok(match f {
        // SAFETY: the function the program gave PAPI_thread_init, which
        // PAPI documents as callable from any thread with no arguments.
        Some(f) => unsafe { f() },
        None => os::thread_id() as c_ulong,
    })
}

/// Registers the calling thread when thread support is on (as PAPI does at
/// a thread's first event set).
pub(super) fn register_implicitly() {
    if state::init_level() & PAPI_THREAD_LEVEL_INITED != 0 {
        if let Ok(id) = current_thread_id() {
            let _ = state::register_thread(id);
        }
    }
}

/// `PAPI_thread_init`: `id_fn` names threads (`pthread_self`).
#[no_mangle]
pub extern "C" fn PAPI_thread_init(id_fn: Option<ThreadIdFn>) -> c_int {
    entry(|| {
        state::with_lib(|lib| {
            if id_fn.is_some() {
                lib.thread_fn = id_fn;
            }
            Ok(())
        })?;
        state::add_init_level(PAPI_THREAD_LEVEL_INITED);
        register_implicitly();
        Ok(PAPI_OK)
    })
}

/// `PAPI_thread_id`: the calling thread's id, `(unsigned long)PAPI_EMISC`
/// before `PAPI_thread_init`, as PAPI answers.
#[no_mangle]
pub extern "C" fn PAPI_thread_id() -> c_ulong {
    catch_unwind(|| {
        let f = state::with_lib(|lib| Ok(lib.thread_fn)).ok().flatten();
        match f {
            // SAFETY: as in current_thread_id.
            Some(f) => unsafe { f() },
            None => PAPI_EMISC as c_ulong,
        }
    })
    .unwrap_or(PAPI_EMISC as c_ulong)
}

/// `PAPI_register_thread`.
#[no_mangle]
pub extern "C" fn PAPI_register_thread() -> c_int {
    entry(|| ok(current_thread_id().and_then(state::register_thread)))
}

/// `PAPI_unregister_thread`.
#[no_mangle]
pub extern "C" fn PAPI_unregister_thread() -> c_int {
    entry(|| ok(current_thread_id().and_then(state::unregister_thread)))
}

/// `PAPI_list_threads`: the registered threads' ids into `tids` (up to
/// `*number`; with `tids` NULL, only the count), `*number` their count.
///
/// # Safety
/// `number` NULL or a writable int; `tids` NULL or `*number` writable ids.
#[no_mangle]
pub unsafe extern "C" fn PAPI_list_threads(tids: *mut c_ulong, number: *mut c_int) -> c_int {
    entry(|| {
        if number.is_null() {
            return Err(null("number"));
        }
        let all: Vec<c_ulong> = state::with_lib(|lib| Ok(lib.threads.iter().copied().collect()))?;
        if tids.is_null() {
            return ok(put(number, "number", all.len() as c_int));
        }
        // SAFETY: non-null, readable by the contract.
        let room = unsafe { number.read() };
        if room <= 0 {
            return fail(PAPI_EINVAL, "*number must be positive");
        }
        // SAFETY: `room` ids by the contract.
        let out = unsafe { slice_mut(tids, room as usize, "tids") }?;
        let n = all.len().min(out.len());
        out[..n].copy_from_slice(&all[..n]);
        ok(put(number, "number", n as c_int))
    })
}

/// `PAPI_set_thr_specific`: stores a pointer for the calling thread.
#[no_mangle]
pub extern "C" fn PAPI_set_thr_specific(tag: c_int, ptr_: *mut c_void) -> c_int {
    entry(|| {
        if !(0..PAPI_NUM_TLS).contains(&tag) {
            return fail(
                PAPI_EINVAL,
                format!("tag {tag} is not PAPI_USR1_TLS or PAPI_USR2_TLS"),
            );
        }
        let id = current_thread_id()?;
        state::with_lib(|lib| {
            lib.threads.insert(id);
            lib.thread_data.entry(id).or_default()[tag as usize] = ptr_ as usize;
            Ok(PAPI_OK)
        })
    })
}

/// `PAPI_get_thr_specific`: the calling thread's pointer, or with
/// `PAPI_TLS_ALL_THREADS` every thread's into a `PAPI_all_thr_spec_t`.
///
/// # Safety
/// `ptr_` is NULL or a writable pointer, or with `PAPI_TLS_ALL_THREADS` a
/// `PAPI_all_thr_spec_t*` whose arrays hold `num` entries.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_thr_specific(tag: c_int, ptr_: *mut *mut c_void) -> c_int {
    entry(|| {
        if ptr_.is_null() {
            return Err(null("ptr"));
        }
        let all = tag & PAPI_TLS_ALL_THREADS != 0;
        let t = tag & !PAPI_TLS_ALL_THREADS;
        if !(0..PAPI_NUM_TLS).contains(&t) {
            return fail(PAPI_EINVAL, format!("tag {tag} is not a PAPI TLS tag"));
        }
        if !all {
            let id = current_thread_id()?;
            let v =
                state::with_lib(|lib| Ok(lib.thread_data.get(&id).map_or(0, |d| d[t as usize])))?;
            return ok(put(ptr_, "ptr", v as *mut c_void));
        }
        #[repr(C)]
        struct AllThr {
            num: c_int,
            id: *mut c_ulong,
            data: *mut *mut c_void,
        }
        let spec = ptr_.cast::<AllThr>();
        // SAFETY: with PAPI_TLS_ALL_THREADS the pointer is a PAPI_all_thr_spec_t by the contract.
        let s = unsafe { spec.read() };
        let rows: Vec<(c_ulong, usize)> = state::with_lib(|lib| {
            Ok(lib
                .thread_data
                .iter()
                .map(|(k, d)| (*k, d[t as usize]))
                .collect())
        })?;
        let n = rows.len().min(usize::try_from(s.num).unwrap_or(0));
        if n > 0 {
            // SAFETY: `num` entries each, by the contract.
            let ids = unsafe { slice_mut(s.id, n, "id") }?;
            // SAFETY: as above.
            let data = unsafe { slice_mut(s.data, n, "data") }?;
            for (k, (id, d)) in rows.iter().take(n).enumerate() {
                ids[k] = *id;
                data[k] = *d as *mut c_void;
            }
        }
        // SAFETY: as above; `num` is the first member.
        unsafe { spec.cast::<c_int>().write(n as c_int) };
        Ok(PAPI_OK)
    })
}

static USER_LOCKS: Mutex<[bool; PAPI_NUM_LOCK as usize]> =
    Mutex::new([false; PAPI_NUM_LOCK as usize]);
static USER_LOCK_FREED: Condvar = Condvar::new();

/// `PAPI_lock`: takes user lock `lck` (PAPI_USR1_LOCK, PAPI_USR2_LOCK), waiting for it.
#[no_mangle]
pub extern "C" fn PAPI_lock(lck: c_int) -> c_int {
    entry(|| {
        let i = usize::try_from(lck)
            .ok()
            .filter(|&i| i < PAPI_NUM_LOCK as usize)
            .ok_or_else(|| PapiError::new(PAPI_EINVAL, format!("no user lock {lck}")))?;
        let mut g = USER_LOCKS.lock().unwrap_or_else(|p| p.into_inner());
        while g[i] {
            g = USER_LOCK_FREED.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g[i] = true;
        Ok(PAPI_OK)
    })
}

/// `PAPI_unlock`.
#[no_mangle]
pub extern "C" fn PAPI_unlock(lck: c_int) -> c_int {
    entry(|| {
        let i = usize::try_from(lck)
            .ok()
            .filter(|&i| i < PAPI_NUM_LOCK as usize)
            .ok_or_else(|| PapiError::new(PAPI_EINVAL, format!("no user lock {lck}")))?;
        let mut g = USER_LOCKS.lock().unwrap_or_else(|p| p.into_inner());
        g[i] = false;
        USER_LOCK_FREED.notify_all();
        Ok(PAPI_OK)
    })
}
