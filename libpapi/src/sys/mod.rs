//! The C entry points: each converts its arguments, calls the safe logic
//! inside `catch_unwind`, and returns PAPI's code (a panic is `PAPI_EBUG`,
//! never an unwind into C). Every pointer is checked for NULL
//! (`PAPI_EINVAL`, as PAPI answers). The structures returned by pointer
//! (`PAPI_get_hardware_info` and the like) live for the rest of the process.

pub(crate) mod os;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Condvar, Mutex, OnceLock};

use crate::abi::*;
use crate::error::{fail, PapiError, R};
use crate::eventset::{Action, OverflowCall, ProfRegion, Profile};
use crate::{hwinfo, info, overflow, state};

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

/// Acts on one overflow (the poller's or `PAPI_stop`'s, lock released):
/// calls the program's handler, or counts the address in its profile.
pub(crate) fn call_handler(c: &OverflowCall) {
    match &c.action {
        Action::Handler(h) => {
            // SAFETY: the handler is the C function the program passed to
            // PAPI_overflow, called with the arguments PAPI documents (context NULL).
            let _ = catch_unwind(|| unsafe {
                h(
                    c.set,
                    c.address as usize as *mut c_void,
                    c.vector,
                    ptr::null_mut(),
                )
            });
        }
        Action::Profile(p) => profile_hit(p, c.address),
    }
}

/// A sample of `PAPI_PROFIL_RANDOM` is dropped one time in four.
fn dropped() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    let z = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (z ^ (z >> 27)) & 3 == 0
}

/// Adds a sample to a profile's bucket, saturating as profil(2)'s counters do.
fn profile_hit(p: &Profile, address: u64) {
    if p.flags & PAPI_PROFIL_RANDOM != 0 && dropped() {
        return;
    }
    let Some((r, i)) = p.bucket(address) else {
        return;
    };
    let region = &p.regions[r];
    let at = region.base + i * p.bucket_bytes();
    // SAFETY: PAPI_profil's contract: the buffer of `size` bytes stays valid
    // and the program's while profiling; `bucket` keeps `i` below
    // size / bucket_bytes; unaligned accesses are avoided by read/write_unaligned.
    unsafe {
        match p.bucket_bytes() {
            8 => {
                let q = at as *mut u64;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
            4 => {
                let q = at as *mut u32;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
            _ => {
                let q = at as *mut u16;
                q.write_unaligned(q.read_unaligned().saturating_add(1));
            }
        }
    }
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

// ---------------------------------------------------------------------
// Initialization
// ---------------------------------------------------------------------

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

// ---------------------------------------------------------------------
// Event sets
// ---------------------------------------------------------------------

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
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let name = unsafe { str_arg(EventName, "EventName") }?;
        let code = state::with_lib(|lib| lib.name_to_code(name))?;
        ok(state::add_event(EventSet, code))
    })
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
    entry(|| {
        if number <= 0 {
            return fail(PAPI_EINVAL, "PAPI_add_events: number must be positive");
        }
        // SAFETY: `number` ints by the contract.
        let events = unsafe { slice_mut(Events, number as usize, "Events") }?;
        for &e in events.iter() {
            state::add_event(EventSet, e as u32)?;
        }
        Ok(PAPI_OK)
    })
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
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let name = unsafe { str_arg(EventName, "EventName") }?;
        let code = state::with_lib(|lib| lib.name_to_code(name))?;
        ok(state::remove_event(EventSet, code))
    })
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
    entry(|| {
        if number <= 0 {
            return fail(PAPI_EINVAL, "PAPI_remove_events: number must be positive");
        }
        // SAFETY: `number` ints by the contract.
        let events = unsafe { slice_mut(Events, number as usize, "Events") }?;
        for &e in events.iter() {
            state::remove_event(EventSet, e as u32)?;
        }
        Ok(PAPI_OK)
    })
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

// ---------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------

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

/// `PAPI_accum`: adds the counts to `values`, then zeroes the counters.
///
/// # Safety
/// `values` is NULL or one long long per event of the set.
#[no_mangle]
pub unsafe extern "C" fn PAPI_accum(EventSet: c_int, values: *mut i64) -> c_int {
    entry(|| {
        if values.is_null() {
            return Err(null("values"));
        }
        let n = state::num_events(EventSet)?;
        // SAFETY: one value per event by the contract.
        let v = unsafe { slice_mut(values, n, "values") }?;
        ok(state::accum(EventSet, v))
    })
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
    entry(|| {
        if values.is_null() {
            return Err(null("values"));
        }
        let n = state::num_events(EventSet)?;
        // SAFETY: one value per event by the contract.
        let v = unsafe { slice_mut(values, n, "values") }?;
        ok(state::write(EventSet, v))
    })
}

// ---------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------

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

// ---------------------------------------------------------------------
// Components and machine
// ---------------------------------------------------------------------

/// `PAPI_num_components`: 1, pmc's.
#[no_mangle]
pub extern "C" fn PAPI_num_components() -> c_int {
    1
}

/// `PAPI_get_component_index`: 0 for `pmc` (and `perf_event`, the
/// component whose events and role it takes), else `PAPI_ENOCMP`.
///
/// # Safety
/// `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_component_index(name: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let n = unsafe { str_arg(name, "name") }?;
        if n == state::COMPONENT_NAME || n == "perf_event" {
            Ok(state::CIDX)
        } else {
            fail(
                PAPI_ENOCMP,
                format!("no component {n:?}: this library has one, pmc"),
            )
        }
    })
}

/// `PAPI_disable_component`: before `PAPI_library_init` only.
#[no_mangle]
pub extern "C" fn PAPI_disable_component(cidx: c_int) -> c_int {
    entry(|| ok(state::disable_component(cidx)))
}

/// `PAPI_disable_component_by_name`.
///
/// # Safety
/// `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_disable_component_by_name(name: *const c_char) -> c_int {
    // SAFETY: forwarded under the same contract.
    let cidx = unsafe { PAPI_get_component_index(name) };
    if cidx < 0 {
        return cidx;
    }
    PAPI_disable_component(cidx)
}

static COMPONENT: Mutex<Option<Leaked<PAPI_component_info_t>>> = Mutex::new(None);

/// `PAPI_get_component_info`: the pmc component's (index 0), NULL for others.
#[no_mangle]
pub extern "C" fn PAPI_get_component_info(cidx: c_int) -> *const PAPI_component_info_t {
    ptr_entry(|| {
        state::check_cidx(cidx)
            .map_err(|_| PapiError::new(PAPI_ENOCMP, format!("no component {cidx}")))?;
        let mut c: PAPI_component_info_t = zeroed_c();
        let pmus = match state::with_lib(|lib| {
            info::component_info(lib, &mut c);
            Ok(lib.natives.pmus())
        }) {
            Ok(p) => p,
            Err(_) => {
                info::component_static(&mut c);
                Vec::new()
            }
        };
        let mut g = COMPONENT.lock().unwrap_or_else(|p| p.into_inner());
        let slot = g.get_or_insert_with(|| Leaked(leak(zeroed_c::<PAPI_component_info_t>())));
        // The PMU names: leaked C strings, kept across calls.
        // SAFETY: `slot.0` is the leaked component info, written only here under the lock.
        let old = unsafe { &*slot.0 };
        for (k, name) in pmus.iter().take(PAPI_PMU_MAX).enumerate() {
            let same = !old.pmu_names[k].is_null()
                // SAFETY: a C string this function leaked earlier.
                && unsafe { CStr::from_ptr(old.pmu_names[k]) }.to_bytes() == name.as_bytes();
            c.pmu_names[k] = if same {
                old.pmu_names[k]
            } else {
                CString::new(name.replace('\0', "?"))
                    .unwrap_or_default()
                    .into_raw()
            };
        }
        // SAFETY: as above: the leaked pointee, under the lock.
        unsafe { slot.0.write(c) };
        Ok(slot.0 as *const PAPI_component_info_t)
    })
}

/// `PAPI_num_cmp_hwctrs`: the component's hardware counters.
#[no_mangle]
pub extern "C" fn PAPI_num_cmp_hwctrs(cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx).map_err(|e| PapiError::new(PAPI_ECMP, e.message))?;
        state::with_lib(|lib| Ok(info::hardware_counters(lib)))
    })
}

/// `PAPI_num_hwctrs`: `PAPI_num_cmp_hwctrs(0)`.
#[no_mangle]
pub extern "C" fn PAPI_num_hwctrs() -> c_int {
    PAPI_num_cmp_hwctrs(0)
}

static HW_INFO: OnceLock<Box<PAPI_hw_info_t>> = OnceLock::new();

fn hw_info() -> &'static PAPI_hw_info_t {
    HW_INFO.get_or_init(|| {
        let mut h: PAPI_hw_info_t = zeroed_c();
        let mut f = hwinfo::facts();
        if f.max_mhz == 0 {
            if let Some(m) = info::measure_mhz() {
                f.max_mhz = m;
                f.min_mhz = m;
            }
        }
        hwinfo::fill_hw_info(&f, &mut h);
        Box::new(h)
    })
}

/// `PAPI_get_hardware_info`.
#[no_mangle]
pub extern "C" fn PAPI_get_hardware_info() -> *const PAPI_hw_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        Ok(hw_info() as *const PAPI_hw_info_t)
    })
}

/// CPU MHz for the cycle timers (1000 when unknown: then a cycle is a ns).
fn mhz() -> i64 {
    match hw_info().cpu_max_mhz {
        m if m > 0 => i64::from(m),
        _ => 1000,
    }
}

static EXE_INFO: Mutex<Option<Leaked<PAPI_exe_info_t>>> = Mutex::new(None);

/// `PAPI_get_executable_info`: the program's path and its text, data and
/// bss ranges (`/proc/self/maps`).
#[no_mangle]
pub extern "C" fn PAPI_get_executable_info() -> *const PAPI_exe_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        let mut g = EXE_INFO.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = g.as_ref() {
            return Ok(l.0 as *const PAPI_exe_info_t);
        }
        let path = hwinfo::exe_path();
        let mut e: PAPI_exe_info_t = zeroed_c();
        set_str(&mut e.fullname, &path);
        if let Some(o) = hwinfo::maps().iter().find(|o| o.path == path) {
            hwinfo::fill_map(o, true, &mut e.address_info);
        }
        let p = leak(e);
        *g = Some(Leaked(p));
        Ok(p as *const PAPI_exe_info_t)
    })
}

static SHLIB_INFO: Mutex<Option<(Vec<String>, Leaked<PAPI_shlib_info_t>)>> = Mutex::new(None);

/// `PAPI_get_shared_lib_info`: every mapped shared object but the program.
/// A call after the mappings changed (dlopen) returns a new structure;
/// earlier ones stay valid.
#[no_mangle]
pub extern "C" fn PAPI_get_shared_lib_info() -> *const PAPI_shlib_info_t {
    ptr_entry(|| {
        state::with_lib(|_| Ok(()))?;
        let exe = hwinfo::exe_path();
        let objs: Vec<hwinfo::ObjectMap> = hwinfo::maps()
            .into_iter()
            .filter(|o| o.path != exe && o.text != (0, 0))
            .collect();
        let names: Vec<String> = objs.iter().map(|o| o.path.clone()).collect();
        let mut g = SHLIB_INFO.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((n, l)) = g.as_ref() {
            if *n == names {
                return Ok(l.0 as *const PAPI_shlib_info_t);
            }
        }
        let maps: Vec<PAPI_address_map_t> = objs
            .iter()
            .map(|o| {
                let mut m: PAPI_address_map_t = zeroed_c();
                hwinfo::fill_map(o, false, &mut m);
                m
            })
            .collect();
        let count = maps.len() as c_int;
        let map = Box::leak(maps.into_boxed_slice()).as_mut_ptr();
        let p = leak(PAPI_shlib_info_t { map, count });
        *g = Some((names, Leaked(p)));
        Ok(p as *const PAPI_shlib_info_t)
    })
}

/// `PAPI_get_dmem_info`: the process's memory (`/proc/self/status`).
///
/// # Safety
/// `dest` is NULL or a writable `PAPI_dmem_info_t`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_dmem_info(dest: *mut PAPI_dmem_info_t) -> c_int {
    entry(|| {
        if dest.is_null() {
            return Err(null("dest"));
        }
        state::with_lib(|_| Ok(()))?;
        let d = hwinfo::dmem_info()
            .ok_or_else(|| PapiError::new(PAPI_ECMP, "no /proc/self/status to read memory from"))?;
        ok(put(dest, "dest", d))
    })
}

// ---------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------

/// `PAPI_set_domain`: the default domain of new event sets.
#[no_mangle]
pub extern "C" fn PAPI_set_domain(domain: c_int) -> c_int {
    entry(|| ok(state::set_default_domain(domain)))
}

/// `PAPI_set_cmp_domain`.
#[no_mangle]
pub extern "C" fn PAPI_set_cmp_domain(domain: c_int, cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        ok(state::set_default_domain(domain))
    })
}

/// `PAPI_set_granularity`: the default granularity of new event sets.
#[no_mangle]
pub extern "C" fn PAPI_set_granularity(granularity: c_int) -> c_int {
    entry(|| ok(state::set_default_granularity(granularity)))
}

/// `PAPI_set_cmp_granularity`.
#[no_mangle]
pub extern "C" fn PAPI_set_cmp_granularity(granularity: c_int, cidx: c_int) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        ok(state::set_default_granularity(granularity))
    })
}

/// `PAPI_multiplex_init`.
#[no_mangle]
pub extern "C" fn PAPI_multiplex_init() -> c_int {
    entry(|| {
        state::with_lib(|lib| {
            lib.multiplex_inited = true;
            Ok(PAPI_OK)
        })
    })
}

/// `PAPI_set_multiplex`: the kernel multiplexes the set's events, their
/// counts scaled to the whole run.
#[no_mangle]
pub extern "C" fn PAPI_set_multiplex(EventSet: c_int) -> c_int {
    entry(|| ok(state::set_multiplex(EventSet)))
}

/// `PAPI_get_multiplex`: 1 when multiplexed.
#[no_mangle]
pub extern "C" fn PAPI_get_multiplex(EventSet: c_int) -> c_int {
    entry(|| state::get_multiplex(EventSet).map(c_int::from))
}

/// `PAPI_attach`: the set counts thread or process `tid` instead of the caller.
#[no_mangle]
pub extern "C" fn PAPI_attach(EventSet: c_int, tid: c_ulong) -> c_int {
    entry(|| {
        let t = u32::try_from(tid)
            .map_err(|_| PapiError::new(PAPI_EINVAL, format!("no thread {tid}")))?;
        ok(state::attach(EventSet, Some(t)))
    })
}

/// `PAPI_detach`.
#[no_mangle]
pub extern "C" fn PAPI_detach(EventSet: c_int) -> c_int {
    entry(|| ok(state::attach(EventSet, None)))
}

/// The leading words of a `PAPI_option_t`, which every member PAPI_set_opt
/// and PAPI_get_opt read begins with: three ints, and the unsigned long at
/// offset 8 (`attach.tid`).
#[derive(Debug, Clone, Copy)]
struct Words {
    i: [c_int; 3],
    ul8: c_ulong,
}

fn words(o: &PAPI_option_t) -> Words {
    let p = (o as *const PAPI_option_t).cast::<u8>();
    // SAFETY: the union is 264 bytes (its preload member), so bytes 0..16
    // are in bounds; they are read as integers, for which any bit pattern
    // is a value, and unaligned reads make no alignment assumption.
    unsafe {
        Words {
            i: [
                p.cast::<c_int>().read_unaligned(),
                p.add(4).cast::<c_int>().read_unaligned(),
                p.add(8).cast::<c_int>().read_unaligned(),
            ],
            ul8: p.add(8).cast::<c_ulong>().read_unaligned(),
        }
    }
}

/// `PAPI_set_opt`.
///
/// # Safety
/// `ptr_` is NULL or the `PAPI_option_t` the option documents.
#[no_mangle]
pub unsafe extern "C" fn PAPI_set_opt(option: c_int, ptr_: *mut PAPI_option_t) -> c_int {
    entry(|| {
        if ptr_.is_null() {
            return Err(null("ptr"));
        }
        // SAFETY: non-null, a PAPI_option_t by the contract.
        let w = words(unsafe { &*ptr_ });
        // The members' layouts: debug {level}; (def)domain and
        // (def)granularity {def_cidx, eventset, value}; multiplex {eventset,
        // ns, flags}; itimer {num, sig, ns, flags}; attach {eventset, tid};
        // cpu {eventset, cpu_num}; inherit {eventset, inherit}.
        let [w0, w1, w2] = w.i;
        match option {
            PAPI_DEBUG => PAPI_set_debug(w0).into_result(),
            PAPI_DEFDOM => ok(state::set_default_domain(w2)),
            PAPI_DOMAIN => ok(state::set_set_domain(w1, w2)),
            PAPI_DEFGRN => ok(state::set_default_granularity(w2)),
            PAPI_GRANUL => ok(state::set_set_granularity(w1, w2)),
            PAPI_MULTIPLEX => ok(state::set_multiplex(w0)),
            PAPI_DEF_MPX_NS | PAPI_DEF_ITIMER_NS => {
                let ns = if option == PAPI_DEF_MPX_NS { w1 } else { w2 };
                if ns <= 0 {
                    return fail(PAPI_EINVAL, "the interval must be positive");
                }
                state::with_lib(|lib| {
                    lib.mpx_ns = ns;
                    Ok(PAPI_OK)
                })
            }
            PAPI_DEF_ITIMER => state::with_lib(|_| Ok(PAPI_OK)),
            PAPI_ATTACH => {
                let t = u32::try_from(w.ul8)
                    .map_err(|_| PapiError::new(PAPI_EINVAL, format!("no thread {}", w.ul8)))?;
                ok(state::attach(w0, Some(t)))
            }
            PAPI_DETACH => ok(state::attach(w0, None)),
            PAPI_CPU_ATTACH => ok(state::cpu_attach(w0, w1 as u32)),
            PAPI_INHERIT => ok(state::set_inherit(w0, w1 != PAPI_INHERIT_NONE)),
            PAPI_DATA_ADDRESS | PAPI_INSTR_ADDRESS => fail(
                PAPI_ECMP,
                "address-range restriction needs Itanium-style hardware; the pmc component has none",
            ),
            PAPI_USER_EVENTS_FILE => fail(PAPI_ENOSUPP, "user-defined event files are not supported"),
            _ => fail(PAPI_EINVAL, format!("option {option} cannot be set")),
        }
    })
}

trait IntoResult {
    fn into_result(self) -> R<c_int>;
}

impl IntoResult for c_int {
    fn into_result(self) -> R<c_int> {
        if self < 0 {
            Err(PapiError::new(self, "failed"))
        } else {
            Ok(self)
        }
    }
}

/// `PAPI_get_opt`.
///
/// # Safety
/// `ptr_` is NULL or a writable `PAPI_option_t` (some options need one).
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_opt(option: c_int, ptr_: *mut PAPI_option_t) -> c_int {
    entry(|| get_opt(option, ptr_))
}

/// `PAPI_get_cmp_opt`: `PAPI_get_opt` for component `cidx`.
///
/// # Safety
/// As `PAPI_get_opt`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_cmp_opt(
    option: c_int,
    ptr_: *mut PAPI_option_t,
    cidx: c_int,
) -> c_int {
    entry(|| {
        state::check_cidx(cidx)?;
        get_opt(option, ptr_)
    })
}

fn get_opt(option: c_int, p: *mut PAPI_option_t) -> R<c_int> {
    // The event set a per-set option names (the caller's ptr->*.eventset:
    // every per-set member starts with it but domain and granularity,
    // whose def_cidx comes first).
    let need = |p: *mut PAPI_option_t| -> R<PAPI_option_t> {
        if p.is_null() {
            return Err(null("ptr"));
        }
        // SAFETY: non-null, a PAPI_option_t of the caller's by the contract.
        Ok(unsafe { p.read() })
    };
    let write = |p: *mut PAPI_option_t, o: PAPI_option_t| put(p, "ptr", o).map(|()| PAPI_OK);
    match option {
        PAPI_DEBUG => {
            let mut o = need(p)?;
            o.debug = PAPI_debug_option_t {
                level: state::debug(),
                handler: None,
            };
            write(p, o)
        }
        PAPI_CLOCKRATE => state::with_lib(|_| Ok(hw_info().cpu_max_mhz)),
        PAPI_MAX_CPUS => state::with_lib(|_| Ok(hwinfo::cpus_configured() as c_int)),
        PAPI_MAX_HWCTRS => state::with_lib(|lib| Ok(info::hardware_counters(lib))),
        PAPI_MAX_MPX_CTRS => state::with_lib(|_| Ok(state::max_events() as c_int)),
        PAPI_DEFDOM => state::with_lib(|lib| Ok(lib.def_domain)),
        PAPI_DEFGRN => state::with_lib(|lib| Ok(lib.def_granularity)),
        PAPI_LIB_VERSION => Ok(PAPI_VERSION),
        PAPI_DOMAIN | PAPI_GRANUL | PAPI_MULTIPLEX | PAPI_ATTACH | PAPI_CPU_ATTACH
        | PAPI_INHERIT => {
            let mut o = need(p)?;
            let [w0, w1, _] = words(&o).i;
            let set = match option {
                PAPI_DOMAIN | PAPI_GRANUL => w1,
                _ => w0,
            };
            let so = state::set_options(set)?;
            let r = match option {
                PAPI_DOMAIN => {
                    o.domain.domain = so.domain;
                    so.domain
                }
                PAPI_GRANUL => {
                    o.granularity.granularity = so.granularity;
                    so.granularity
                }
                PAPI_MULTIPLEX => {
                    o.multiplex.ns = state::with_lib(|lib| Ok(lib.mpx_ns))?;
                    o.multiplex.flags = 0;
                    c_int::from(so.multiplex)
                }
                PAPI_ATTACH => {
                    o.attach.tid = c_ulong::from(so.attach.unwrap_or(0));
                    c_int::from(so.attach.is_some())
                }
                PAPI_CPU_ATTACH => {
                    o.cpu.cpu_num = so.cpu.unwrap_or(0) as c_uint;
                    c_int::from(so.cpu.is_some())
                }
                _ => {
                    o.inherit.inherit = c_int::from(so.inherit);
                    c_int::from(so.inherit)
                }
            };
            write(p, o)?;
            Ok(r)
        }
        PAPI_DEF_MPX_NS | PAPI_DEF_ITIMER_NS | PAPI_DEF_ITIMER => {
            let mut o = need(p)?;
            let ns = state::with_lib(|lib| Ok(lib.mpx_ns))?;
            if option == PAPI_DEF_MPX_NS {
                o.multiplex.ns = ns;
            } else {
                o.itimer = PAPI_itimer_option_t {
                    itimer_num: 0,
                    itimer_sig: 0,
                    ns,
                    flags: 0,
                };
            }
            write(p, o)
        }
        PAPI_PRELOAD => {
            let mut o = need(p)?;
            let mut pre = PAPI_preload_info_t {
                lib_preload_env: [0; PAPI_MAX_STR_LEN],
                lib_preload_sep: b' ' as c_char,
                lib_dir_env: [0; PAPI_MAX_STR_LEN],
                lib_dir_sep: b':' as c_char,
            };
            set_str(&mut pre.lib_preload_env, "LD_PRELOAD");
            set_str(&mut pre.lib_dir_env, "LD_LIBRARY_PATH");
            o.preload = pre;
            write(p, o)
        }
        PAPI_HWINFO => {
            let mut o = need(p)?;
            o.hw_info = PAPI_get_hardware_info().cast_mut();
            write(p, o)
        }
        PAPI_EXEINFO => {
            let mut o = need(p)?;
            o.exe_info = PAPI_get_executable_info().cast_mut();
            write(p, o)
        }
        PAPI_SHLIBINFO => {
            let mut o = need(p)?;
            o.shlib_info = PAPI_get_shared_lib_info().cast_mut();
            write(p, o)
        }
        PAPI_COMPONENTINFO => {
            let mut o = need(p)?;
            o.cmp_info = PAPI_get_component_info(state::CIDX).cast_mut();
            write(p, o)
        }
        _ => fail(PAPI_EINVAL, format!("option {option} cannot be read")),
    }
}

// ---------------------------------------------------------------------
// Overflow and profiling
// ---------------------------------------------------------------------

/// `PAPI_overflow`: calls `handler` every `threshold` counts of `EventCode`
/// (0 turns it off). See `overflow.rs` for how and where the handler runs.
#[no_mangle]
pub extern "C" fn PAPI_overflow(
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
    handler: PAPI_overflow_handler_t,
) -> c_int {
    entry(|| {
        if flags & !(PAPI_OVERFLOW_FORCE_SW | PAPI_OVERFLOW_HARDWARE) != 0 {
            return fail(
                PAPI_EINVAL,
                format!("overflow flags {flags:#x} are not PAPI's"),
            );
        }
        ok(state::overflow(
            EventSet,
            EventCode as u32,
            threshold,
            handler,
        ))
    })
}

/// `PAPI_get_overflow_event_index`: the positions in the set of the events
/// whose bits `overflow_vector` sets.
///
/// # Safety
/// `array` is NULL or `*number` writable ints; `number` NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn PAPI_get_overflow_event_index(
    EventSet: c_int,
    overflow_vector: i64,
    array: *mut c_int,
    number: *mut c_int,
) -> c_int {
    entry(|| {
        if array.is_null() || number.is_null() {
            return Err(null("array or number"));
        }
        // SAFETY: non-null, readable by the contract.
        let room = unsafe { number.read() };
        if room <= 0 {
            return fail(PAPI_EINVAL, "*number must be positive");
        }
        let idx = state::overflow_indices(EventSet, overflow_vector)?;
        // SAFETY: `room` ints by the contract.
        let out = unsafe { slice_mut(array, room as usize, "array") }?;
        let n = idx.len().min(out.len());
        out[..n].copy_from_slice(&idx[..n]);
        ok(put(number, "number", n as c_int))
    })
}

/// `PAPI_profil`: a histogram of where `EventCode` overflows every
/// `threshold` counts, profil(2)-style, in `buf` (see `PAPI_sprofil`).
#[no_mangle]
pub extern "C" fn PAPI_profil(
    buf: *mut c_void,
    bufsiz: c_uint,
    offset: *mut c_void,
    scale: c_uint,
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    entry(|| {
        let r = ProfRegion {
            base: buf as usize,
            size: bufsiz as usize,
            offset: offset as usize as u64,
            scale,
        };
        ok(state::profile(
            EventSet,
            EventCode as u32,
            threshold,
            vec![r],
            flags,
        ))
    })
}

/// `PAPI_sprofil`: as `PAPI_profil` over `profcnt` regions; a region of
/// offset 0 and scale 2 takes the samples outside the others. The
/// histogram is filled as samples are drained (see `overflow.rs`); the
/// buffers must stay valid while the set runs.
///
/// # Safety
/// `prof` is NULL or `profcnt` readable `PAPI_sprofil_t`.
#[no_mangle]
pub unsafe extern "C" fn PAPI_sprofil(
    prof: *mut PAPI_sprofil_t,
    profcnt: c_int,
    EventSet: c_int,
    EventCode: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    entry(|| {
        if profcnt <= 0 {
            return fail(PAPI_EINVAL, "PAPI_sprofil: profcnt must be positive");
        }
        // SAFETY: `profcnt` structures by the contract.
        let regions = unsafe { slice_mut(prof, profcnt as usize, "prof") }?
            .iter()
            .map(|p| ProfRegion {
                base: p.pr_base as usize,
                size: p.pr_size as usize,
                offset: p.pr_off as usize as u64,
                scale: p.pr_scale,
            })
            .collect();
        ok(state::profile(
            EventSet,
            EventCode as u32,
            threshold,
            regions,
            flags,
        ))
    })
}

// ---------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------

/// `PAPI_strerror`: PAPI's string for a code, NULL for other values.
#[no_mangle]
pub extern "C" fn PAPI_strerror(code: c_int) -> *mut c_char {
    crate::error::strerror(code).map_or(ptr::null_mut(), |s| s.as_ptr().cast_mut())
}

/// `PAPI_perror`: `msg: ` and the calling thread's last error, on stderr;
/// pmc's library adds what went wrong in words.
///
/// # Safety
/// `msg` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_perror(msg: *const c_char) {
    let _ = catch_unwind(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let m = unsafe { str_arg(msg, "msg") }.unwrap_or("");
        let last = LAST.with(|l| l.borrow().clone());
        let code = last.as_ref().map_or(PAPI_OK, |e| e.code);
        let s = crate::error::strerror(code)
            .map_or("Unknown error code".into(), |s| s.to_string_lossy());
        let detail = last
            .map(|e| format!(" ({})", e.message))
            .unwrap_or_default();
        if m.is_empty() {
            eprintln!("{s}{detail}");
        } else {
            eprintln!("{m}: {s}{detail}");
        }
    });
}

// ---------------------------------------------------------------------
// Timers
// ---------------------------------------------------------------------

/// `PAPI_get_real_nsec`: wall-clock ns from an arbitrary start.
#[no_mangle]
pub extern "C" fn PAPI_get_real_nsec() -> i64 {
    os::real_nsec()
}

/// `PAPI_get_real_usec`.
#[no_mangle]
pub extern "C" fn PAPI_get_real_usec() -> i64 {
    os::real_nsec() / 1000
}

fn real_cyc() -> i64 {
    (i128::from(os::real_nsec()) * i128::from(mhz()) / 1000) as i64
}

/// `PAPI_get_real_cyc`: wall-clock time in cycles of the CPU's nominal
/// clock (`cpu_max_mhz`).
#[no_mangle]
pub extern "C" fn PAPI_get_real_cyc() -> i64 {
    catch_unwind(real_cyc).unwrap_or(0)
}

/// `PAPI_get_virt_nsec`: the calling thread's CPU time in ns.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_nsec() -> i64 {
    os::virt_nsec()
}

/// `PAPI_get_virt_usec`.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_usec() -> i64 {
    os::virt_nsec() / 1000
}

/// `PAPI_get_virt_cyc`: the calling thread's CPU time in nominal cycles.
#[no_mangle]
pub extern "C" fn PAPI_get_virt_cyc() -> i64 {
    catch_unwind(|| (i128::from(os::virt_nsec()) * i128::from(mhz()) / 1000) as i64).unwrap_or(0)
}

// ---------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------

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
fn register_implicitly() {
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

// ---------------------------------------------------------------------
// Devices (sysdetect) and rates: not in this library
// ---------------------------------------------------------------------

/// `PAPI_enum_dev_type`: no device types (sysdetect is PAPI's component, not pmc's).
#[no_mangle]
pub extern "C" fn PAPI_enum_dev_type(_enum_modifier: c_int, _handle: *mut *mut c_void) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device enumeration is PAPI's sysdetect component's; pmc has none",
        )
    })
}

/// `PAPI_get_dev_type_attr`: `PAPI_ENOSUPP`, as `PAPI_enum_dev_type`.
#[no_mangle]
pub extern "C" fn PAPI_get_dev_type_attr(
    _handle: *mut c_void,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device attributes are PAPI's sysdetect component's",
        )
    })
}

/// `PAPI_get_dev_attr`: `PAPI_ENOSUPP`, as `PAPI_enum_dev_type`.
#[no_mangle]
pub extern "C" fn PAPI_get_dev_attr(
    _handle: *mut c_void,
    _id: c_int,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    entry(|| {
        fail(
            PAPI_ENOSUPP,
            "device attributes are PAPI's sysdetect component's",
        )
    })
}

// ---------------------------------------------------------------------
// The high-level API
// ---------------------------------------------------------------------

/// `PAPI_hl_region_begin`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_region_begin(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::region_begin(r))
    })
}

/// `PAPI_hl_read`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_read(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::read(r))
    })
}

/// `PAPI_hl_region_end`.
///
/// # Safety
/// `region` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn PAPI_hl_region_end(region: *const c_char) -> c_int {
    entry(|| {
        // SAFETY: NULL or a C string by the contract, read within this call.
        let r = unsafe { str_arg(region, "region") }?;
        ok(crate::hl::region_end(r))
    })
}

/// `PAPI_hl_stop`.
#[no_mangle]
pub extern "C" fn PAPI_hl_stop() -> c_int {
    entry(|| ok(crate::hl::stop()))
}

/// Registers the high-level API's report writer to run at exit.
pub(crate) fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: atexit takes a function pointer with no arguments, which `f` is.
    unsafe { libc::atexit(f) == 0 }
}

/// The machine summary the high-level report prints.
pub(crate) fn hw_info_facts() -> crate::hl::HwSummary {
    let h = hw_info();
    // SAFETY: model_string is a NUL-terminated array (set_str keeps the last byte 0).
    let model = unsafe { CStr::from_ptr(h.model_string.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (model, h.cpu_max_mhz, h.cpu_min_mhz)
}

// ---------------------------------------------------------------------
// Rates
// ---------------------------------------------------------------------

/// Stores a float through a caller's pointer.
fn put_f(p: *mut f32, name: &str, v: f32) -> R<()> {
    put(p, name, v)
}

/// `PAPI_flips_rate`: floating-point instructions (`event`: PAPI_FP_INS,
/// PAPI_VEC_SP or PAPI_VEC_DP) and their rate in millions a second since
/// the previous call (the first call starts counting and answers 0).
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_flips_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    flpins: *mut i64,
    mflips: *mut f32,
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(crate::rates::Kind::Flips(event as u32))?;
        put_f(rtime, "rtime", r.real_s)?;
        put_f(ptime, "ptime", r.proc_s)?;
        put(flpins, "flpins", r.count)?;
        ok(put_f(mflips, "mflips", r.rate))
    })
}

/// `PAPI_flops_rate`: as `PAPI_flips_rate` for operations (PAPI_FP_OPS,
/// PAPI_SP_OPS, PAPI_DP_OPS).
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_flops_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    flpops: *mut i64,
    mflops: *mut f32,
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(crate::rates::Kind::Flops(event as u32))?;
        put_f(rtime, "rtime", r.real_s)?;
        put_f(ptime, "ptime", r.proc_s)?;
        put(flpops, "flpops", r.count)?;
        ok(put_f(mflops, "mflops", r.rate))
    })
}

/// `PAPI_ipc`: instructions and instructions per cycle since the previous call.
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_ipc(
    rtime: *mut f32,
    ptime: *mut f32,
    ins: *mut i64,
    ipc: *mut f32,
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(crate::rates::Kind::Ipc)?;
        put_f(rtime, "rtime", r.real_s)?;
        put_f(ptime, "ptime", r.proc_s)?;
        put(ins, "ins", r.count)?;
        ok(put_f(ipc, "ipc", r.rate))
    })
}

/// `PAPI_epc`: `event` (PAPI_TOT_INS when 0), reference and core cycles,
/// and events per cycle since the previous call.
///
/// # Safety
/// Every pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn PAPI_epc(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    ref_: *mut i64,
    core: *mut i64,
    evt: *mut i64,
    epc: *mut f32,
) -> c_int {
    entry(|| {
        let r = crate::rates::rate(crate::rates::Kind::Epc(event as u32))?;
        put_f(rtime, "rtime", r.real_s)?;
        put_f(ptime, "ptime", r.proc_s)?;
        put(ref_, "ref", r.reference)?;
        put(core, "core", r.cycles)?;
        put(evt, "evt", r.count)?;
        ok(put_f(epc, "epc", r.rate))
    })
}

/// `PAPI_rate_stop`: stops the calling thread's rate counting.
#[no_mangle]
pub extern "C" fn PAPI_rate_stop() -> c_int {
    entry(|| ok(crate::rates::stop()))
}
