//! The C entry points: each converts its arguments, calls the safe logic
//! inside `catch_unwind`, and reports a failure as -1 with `errno` set and
//! the message kept for `pmc_strerror_last`. Every pointer is checked for
//! NULL (`EFAULT`); C passes enums as their 32-bit values.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::abi::*;
use crate::names;
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

/// A message a terminal can show: control characters as `\xNN` escapes,
/// cut to [`MESSAGE_MAX`] bytes.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
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

/// A caller's string in a message: at most 200 characters.
pub(crate) fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push_str("...");
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

/// Stores `v` through `out`.
fn put<T>(out: *mut T, name: &str, v: T) -> Result<c_int, CError> {
    if out.is_null() {
        return Err(efault(name));
    }
    // SAFETY: `out` is non-null and, by the function's C contract, points to
    // a writable `T` of the caller's.
    unsafe { out.write(v) };
    Ok(0)
}

/// `sysconf(_SC_NPROCESSORS_CONF)` (0 when unknown): CPUs configured,
/// online or not, as FreeBSD's `mp_maxid + 1` counts them.
pub(crate) fn cpus_configured() -> u32 {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).unwrap_or(0)
}

/// Extension: the message of the calling thread's last failed pmc call
/// (empty when none failed); valid until that thread's next failing call.
#[no_mangle]
pub extern "C" fn pmc_strerror_last() -> *const c_char {
    catch_unwind(|| LAST.with(|l| l.borrow().as_ptr())).unwrap_or(ptr::null())
}

/// `pmc_init`: opens the library's connection to the kernel's counters.
/// Returns 0, or -1 with errno (`ENXIO`: no perf_event support).
#[no_mangle]
pub extern "C" fn pmc_init() -> c_int {
    entry(|| ok0(state::init()))
}

/// `pmc_allocate`: allocates a PMC counting `ctrspec` (libpmc's syntax,
/// perf's, or a portable name) in `mode` with `PMC_F_*` flags, on `cpu`
/// (system modes) or `PMC_CPU_ANY`, sampling every `count` events (sampling
/// modes; 0: the default, 65536); its id goes to `*pmcid`.
///
/// # Safety
/// `ctrspec` is a NUL-terminated string or NULL; `pmcid` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_allocate(
    ctrspec: *const c_char,
    mode: ModeArg,
    flags: u32,
    cpu: c_int,
    pmcid: *mut pmc_id_t,
    count: u64,
) -> c_int {
    entry(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract, read within this call.
        let spec = unsafe { utf8_arg(ctrspec, "ctrspec") }?;
        if pmcid.is_null() {
            return Err(efault("pmcid"));
        }
        let id = state::allocate(spec, mode.0, flags, cpu, count)?;
        put(pmcid, "pmcid", id)
    })
}

/// `pmc_attach`: attaches a process-mode PMC to process `pid` (0: the
/// caller).
#[no_mangle]
pub extern "C" fn pmc_attach(pmcid: pmc_id_t, pid: libc::pid_t) -> c_int {
    entry(|| ok0(state::attach(pmcid, pid)))
}

/// `pmc_detach`: detaches a process-mode PMC from `pid` (0: the caller).
#[no_mangle]
pub extern "C" fn pmc_detach(pmcid: pmc_id_t, pid: libc::pid_t) -> c_int {
    entry(|| ok0(state::detach(pmcid, pid)))
}

/// `pmc_start`: starts counting (or sampling).
#[no_mangle]
pub extern "C" fn pmc_start(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::start(pmcid)))
}

/// `pmc_stop`: stops counting.
#[no_mangle]
pub extern "C" fn pmc_stop(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::stop(pmcid)))
}

/// `pmc_release`: frees a PMC.
#[no_mangle]
pub extern "C" fn pmc_release(pmcid: pmc_id_t) -> c_int {
    entry(|| ok0(state::release(pmcid)))
}

/// `pmc_read`: the PMC's count into `*value`.
///
/// # Safety
/// `value` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_read(pmcid: pmc_id_t, value: *mut pmc_value_t) -> c_int {
    entry(|| {
        if value.is_null() {
            return Err(efault("value"));
        }
        let v = state::read(pmcid)?;
        put(value, "value", v)
    })
}

/// `pmc_write`: sets the PMC's count (stopped PMCs only: `EBUSY`).
#[no_mangle]
pub extern "C" fn pmc_write(pmcid: pmc_id_t, value: pmc_value_t) -> c_int {
    entry(|| state::write(pmcid, value).map(|_| 0))
}

/// `pmc_rw`: sets the count to `newvalue` and returns the previous one in
/// `*oldvalue` (if not NULL).
///
/// # Safety
/// `oldvalue` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_rw(
    pmcid: pmc_id_t,
    newvalue: pmc_value_t,
    oldvalue: *mut pmc_value_t,
) -> c_int {
    entry(|| {
        let old = state::write(pmcid, newvalue)?;
        if oldvalue.is_null() {
            return Ok(0);
        }
        put(oldvalue, "oldvalue", old)
    })
}

/// `pmc_set`: the reload count of a sampling PMC, the initial count of a
/// counting one.
#[no_mangle]
pub extern "C" fn pmc_set(pmcid: pmc_id_t, value: pmc_value_t) -> c_int {
    entry(|| ok0(state::set(pmcid, value)))
}

/// `pmc_capabilities`: the PMC's `PMC_CAP_*` bits into `*caps`.
///
/// # Safety
/// `caps` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_capabilities(pmcid: pmc_id_t, caps: *mut u32) -> c_int {
    entry(|| {
        if caps.is_null() {
            return Err(efault("caps"));
        }
        let c = state::capabilities(pmcid)?;
        put(caps, "caps", c)
    })
}

/// `pmc_width`: the PMC's width in bits into `*width` (64: perf's counts).
///
/// # Safety
/// `width` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_width(pmcid: pmc_id_t, width: *mut u32) -> c_int {
    entry(|| {
        if width.is_null() {
            return Err(efault("width"));
        }
        let w = state::width(pmcid)?;
        put(width, "width", w)
    })
}

/// `pmc_ncpu`: the number of CPUs, or -1 (`ENXIO` before `pmc_init`).
#[no_mangle]
pub extern "C" fn pmc_ncpu() -> c_int {
    entry(|| {
        let i = state::checked_cpuinfo()?;
        Ok(c_int::try_from(i.pm_ncpu).unwrap_or(c_int::MAX))
    })
}

/// `pmc_npmc`: PMC rows per CPU, or -1 (`EINVAL`: no such CPU).
#[no_mangle]
pub extern "C" fn pmc_npmc(cpu: c_int) -> c_int {
    entry(|| state::npmc(cpu).map(|n| c_int::try_from(n).unwrap_or(c_int::MAX)))
}

/// `pmc_cpuinfo`: a pointer to the library's CPU description (do not free).
///
/// # Safety
/// `cpu_info` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_cpuinfo(cpu_info: *mut *const pmc_cpuinfo) -> c_int {
    entry(|| {
        if cpu_info.is_null() {
            return Err(efault("cpu_info"));
        }
        let i: *const pmc_cpuinfo = state::checked_cpuinfo()?;
        put(cpu_info, "cpu_info", i)
    })
}

/// `pmc_pmcinfo`: the rows of `cpu` into a `malloc`ed `struct pmc_pmcinfo`
/// with `pmc_npmc(cpu)` entries; the caller frees it with `free(3)`.
///
/// # Safety
/// `pmc_info` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmcinfo(cpu: c_int, pmc_info: *mut *mut pmc_pmcinfo) -> c_int {
    entry(|| {
        if pmc_info.is_null() {
            return Err(efault("pmc_info"));
        }
        let rows = state::pmcinfo(cpu)?;
        let head = std::mem::size_of::<pmc_pmcinfo>();
        let size = head + std::mem::size_of::<crate::abi::pmc_info>() * rows.len();
        // SAFETY: malloc with a non-zero size; the result is checked for NULL.
        let p = unsafe { libc::malloc(size) }.cast::<pmc_pmcinfo>();
        if p.is_null() {
            return Err(CError::new(libc::ENOMEM, "cannot allocate the PMC rows"));
        }
        // SAFETY: `p` holds `size` bytes, malloc's alignment suits
        // pmc_pmcinfo (8); the header is written first, then the rows at
        // `pm_pmcs`, which the size covers.
        unsafe {
            p.write(pmc_pmcinfo {
                pm_cpu: cpu,
                pm_pmcs: [],
            });
            let first = ptr::addr_of_mut!((*p).pm_pmcs).cast::<crate::abi::pmc_info>();
            ptr::copy_nonoverlapping(rows.as_ptr(), first, rows.len());
        }
        put(pmc_info, "pmc_info", p)
    })
}

/// `pmc_configure_logfile`: sends the log to `fd` (the library keeps a
/// duplicate); -1 stops logging. Linux writes pmc-log's format (pmclog(3)
/// reads it).
#[no_mangle]
pub extern "C" fn pmc_configure_logfile(fd: c_int) -> c_int {
    entry(|| {
        if fd == -1 {
            return ok0(state::configure_log(None));
        }
        if fd < 0 {
            return Err(CError::new(
                libc::EBADF,
                format!("{fd} is not a file descriptor"),
            ));
        }
        // SAFETY: the descriptor is only borrowed for the dup below; a
        // closed number makes dup fail with EBADF.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let owned = nix::unistd::dup(borrowed)
            .map_err(|e| CError::new(e as i32, format!("cannot use fd {fd} for the log: {e}")))?;
        ok0(state::configure_log(Some(Box::new(LogFile(
            std::fs::File::from(owned),
        )))))
    })
}

/// `pmc_flush_logfile`: writes out what the log holds.
#[no_mangle]
pub extern "C" fn pmc_flush_logfile() -> c_int {
    entry(|| ok0(state::flush_log()))
}

/// `pmc_close_logfile`: flushes and closes the log.
#[no_mangle]
pub extern "C" fn pmc_close_logfile() -> c_int {
    entry(|| ok0(state::close_log()))
}

/// `pmc_writelog`: appends a user-data record to the log.
#[no_mangle]
pub extern "C" fn pmc_writelog(userdata: u32) -> c_int {
    entry(|| ok0(state::write_log(userdata)))
}

/// `pmc_get_driver_stats`: this library's counts in hwpmc's terms (calls,
/// failed calls, samples logged, samples lost).
///
/// # Safety
/// `gms` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_get_driver_stats(gms: *mut pmc_driverstats) -> c_int {
    entry(|| {
        if gms.is_null() {
            return Err(efault("gms"));
        }
        let s = state::driver_stats()?;
        put(gms, "gms", s)
    })
}

/// `pmc_get_msr`: pmc_get_msr(3)'s EINVAL cases, then ENOSYS: hwpmc gives a
/// self-attached process PMC a fixed row whose register holds the count, so
/// a caller may `rdpmc` it; perf moves an event between counters as it
/// schedules it, and the register holds the count less an offset kept in
/// the event's mapped page. `pmc_read` returns the count; Rust callers have
/// `pmc::native::FastReader`, which reads in user space with perf's protocol.
///
/// # Safety
/// `msr` is writable or NULL.
#[no_mangle]
pub unsafe extern "C" fn pmc_get_msr(pmcid: pmc_id_t, msr: *mut u32) -> c_int {
    entry(|| {
        if msr.is_null() {
            return Err(efault("msr"));
        }
        let m = state::get_msr(pmcid)?;
        put(msr, "msr", m)
    })
}

/// `pmc_enable`: pmc_disable(3)'s errors, then `EOPNOTSUPP`: perf has no
/// per-row administration.
#[no_mangle]
pub extern "C" fn pmc_enable(cpu: c_int, pmc: c_int) -> c_int {
    entry(|| ok0(state::admin("pmc_enable", cpu, pmc, false)))
}

/// `pmc_disable`: as `pmc_enable`; `EBUSY` for a row in use.
#[no_mangle]
pub extern "C" fn pmc_disable(cpu: c_int, pmc: c_int) -> c_int {
    entry(|| ok0(state::admin("pmc_disable", cpu, pmc, true)))
}

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
        put(eventnames, "eventnames", array)?;
        put(nevents, "nevents", count)
    })
}

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
        put(measure, "measure", handle)
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

/// Stores `counts` in `values` (which holds at least `counts.len()`, checked
/// by the caller); returns their number.
fn put_values(values: *mut pmc_value_t, counts: &[pmc_value_t]) -> Result<c_int, CError> {
    for (i, &v) in counts.iter().enumerate() {
        // SAFETY: `values` holds `nvalues` >= counts.len() values by the C contract
        // (`capacity` checked it non-null and the state its size).
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
        put_values(values, &counts)
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
        put_values(values, &counts)
    })
}

/// `pmclog_open`: a parser reading the log from `fd` (as far as each
/// `pmclog_read` needs), or, with `PMCLOG_FD_NONE`, from `pmclog_feed`.
/// NULL with errno on failure.
#[no_mangle]
pub extern "C" fn pmclog_open(fd: c_int) -> *mut std::ffi::c_void {
    match catch_unwind(|| Box::into_raw(Box::new(crate::pmclog::Parser::new(fd)))) {
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
        let parser = unsafe { &mut *cookie.cast::<crate::pmclog::Parser>() };
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
        let parser = unsafe { &mut *cookie.cast::<crate::pmclog::Parser>() };
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
        let mut out = crate::pmclog::empty_event();
        let got = parser.next(&mut out, &mut read_more);
        put(ev, "ev", out)?;
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
    let parser = unsafe { Box::from_raw(cookie.cast::<crate::pmclog::Parser>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(parser)));
}

/// A string argument that may be NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
unsafe fn opt_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, and NUL-terminated by the function's contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// `pmc_pmu_enabled`: 1 when this machine's CPU has a table of named
/// events (pmc-events'; FreeBSD's libpmc: its pmu-events table), else 0.
#[no_mangle]
pub extern "C" fn pmc_pmu_enabled() -> c_int {
    catch_unwind(|| c_int::from(crate::pmu::enabled())).unwrap_or(0)
}

/// Writes `text` to C's `stdout` (the `FILE *` the caller's `printf` uses,
/// so that the two interleave as written).
fn c_print(text: &str) {
    let Ok(c) = CString::new(text.replace('\0', "")) else {
        return;
    };
    #[cfg(target_os = "freebsd")]
    extern "C" {
        #[link_name = "__stdoutp"]
        static mut C_STDOUT: *mut libc::FILE;
    }
    #[cfg(not(target_os = "freebsd"))]
    extern "C" {
        #[link_name = "stdout"]
        static mut C_STDOUT: *mut libc::FILE;
    }
    // SAFETY: C's stdout stream, initialized by the C runtime before main;
    // read once (a copy of the pointer), and fputs takes a NUL-terminated string.
    unsafe {
        let out = C_STDOUT;
        libc::fputs(c.as_ptr(), out);
    }
}

fn print_entry(which: crate::pmu::Print, filter: *const c_char) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract, read within this call.
        let filter = unsafe { opt_str(filter) };
        if filter.is_none() && which != crate::pmu::Print::Names {
            return;
        }
        c_print(&crate::pmu::listing(which, filter));
    }));
}

/// `pmc_pmu_print_counters`: `\tNAME` for each of the CPU's named events
/// whose name contains `event_name` (case ignored; NULL: every event), on
/// stdout.
///
/// # Safety
/// `event_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counters(event_name: *const c_char) {
    print_entry(crate::pmu::Print::Names, event_name);
}

/// `pmc_pmu_print_counter_desc`: `NAME:\tDESCRIPTION` for each event whose
/// name contains `ev` and that has a description.
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_desc(ev: *const c_char) {
    print_entry(crate::pmu::Print::Desc, ev);
}

/// `pmc_pmu_print_counter_desc_long`: as `pmc_pmu_print_counter_desc` with
/// the long description where there is one (pmc-events keeps none: the
/// short one).
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_desc_long(ev: *const c_char) {
    print_entry(crate::pmu::Print::DescLong, ev);
}

/// `pmc_pmu_print_counter_full`: `name:`, `desc:` and `event:` lines for each
/// event whose name contains `ev`.
///
/// # Safety
/// `ev` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_print_counter_full(ev: *const c_char) {
    print_entry(crate::pmu::Print::Full, ev);
}

/// `pmc_pmu_sample_rate_get`: the event's default sampling count (65536,
/// libpmc's `DEFAULT_SAMPLE_COUNT`, for every event: pmc-events keeps no
/// sampling counts).
///
/// # Safety
/// `event_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_sample_rate_get(event_name: *const c_char) -> u64 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        crate::pmu::sample_rate(unsafe { opt_str(event_name) }.unwrap_or(""))
    }))
    .unwrap_or(crate::pmu::DEFAULT_SAMPLE_COUNT)
}

/// `pmc_pmu_pmcallocate`: fills `*pm` for the named event as libpmc does
/// for hwpmc (`pm_class`, the table index in `pm_ev`, `PMC_F_EV_PMU` in
/// `pm_flags`, `pm_caps`, `pm_md`). Returns 0, or an errno value
/// (`ENOENT`: not an event of this CPU's table; `EFAULT`: NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `pm` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_pmcallocate(
    name: *const c_char,
    pm: *mut pmc_op_pmcallocate,
) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if pm.is_null() {
            return libc::EFAULT;
        }
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        let Some(name) = (unsafe { opt_str(name) }) else {
            return libc::EFAULT;
        };
        // SAFETY: `pm` is non-null and writable by the C contract; read and
        // written in place, as libpmc does.
        let pm = unsafe { &mut *pm };
        crate::pmu::pmcallocate(name, pm)
    }))
    .unwrap_or(libc::EIO)
}

/// `pmc_pmu_event_get_by_idx`: the name of event `idx` of `cpuid`'s table
/// (a `kern.hwpmc.cpuid` string such as `GenuineIntel-6-55-4`; NULL: this
/// machine's), or NULL (`EINVAL`).
///
/// # Safety
/// `cpuid` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_event_get_by_idx(
    cpuid: *const c_char,
    idx: c_int,
) -> *const c_char {
    let v = u32::try_from(idx).unwrap_or(u32::MAX);
    name_entry("pmu event index", v, || {
        // SAFETY: NULL or a NUL-terminated string by the C contract.
        let cpuid = unsafe { opt_str(cpuid) };
        crate::pmu::event_by_idx(cpuid, idx).map(CStr::as_ptr)
    })
}

/// `pmc_pmu_idx_get_by_event`: the index of the named event (libpmc's
/// aliases taken) in `cpuid`'s table (NULL: this machine's), or -1.
///
/// # Safety
/// `cpuid` and `event` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_idx_get_by_event(
    cpuid: *const c_char,
    event: *const c_char,
) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or NUL-terminated strings by the C contract.
        let (cpuid, event) = unsafe { (opt_str(cpuid), opt_str(event)) };
        event.map_or(-1, |e| crate::pmu::idx_by_event(cpuid, e))
    }))
    .unwrap_or(-1)
}

/// `pmc_pmu_stat_mode`: the six counters of pmcstat's counting mode, by this
/// CPU's names, into `*cntrs` (the library's array); 0, or `EOPNOTSUPP`
/// without a table (`EFAULT`: NULL).
///
/// # Safety
/// `cntrs` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn pmc_pmu_stat_mode(cntrs: *mut *mut *const c_char) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if cntrs.is_null() {
            return libc::EFAULT;
        }
        static ARRAY: std::sync::OnceLock<Option<StatNames>> = std::sync::OnceLock::new();
        let Some(names) =
            ARRAY.get_or_init(|| crate::pmu::stat_mode().map(|n| StatNames(n.map(CStr::as_ptr))))
        else {
            return libc::EOPNOTSUPP;
        };
        // SAFETY: `cntrs` is non-null and writable by the C contract; the
        // array is static, and C only reads it (libpmc's is `const char *[]`).
        unsafe { cntrs.write(names.0.as_ptr().cast_mut()) };
        0
    }))
    .unwrap_or(libc::EIO)
}

/// The stat-mode names handed to C (pointers to static strings).
struct StatNames([*const c_char; 6]);
// SAFETY: the pointers are to 'static, immutable C strings.
unsafe impl Send for StatNames {}
// SAFETY: as above: shared reads of immutable data.
unsafe impl Sync for StatNames {}

/// The log's file: every write with `SIGPIPE` blocked in the writing thread
/// and any `SIGPIPE` it raised taken back, so that a log pipe whose reader
/// closed fails the write with `EPIPE` (reported by the log's calls) instead
/// of killing the process.
pub(crate) struct LogFile(pub(crate) std::fs::File);

impl std::io::Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        no_sigpipe(|| std::io::Write::write(&mut self.0, buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        no_sigpipe(|| std::io::Write::flush(&mut self.0))
    }
}

/// Runs `f` with `SIGPIPE` blocked in this thread; a `SIGPIPE` `f`'s write
/// raised (`EPIPE`) is taken off the thread's pending set before the mask is
/// restored.
fn no_sigpipe<T>(f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
    let mut pipe = SigSet::empty();
    pipe.add(Signal::SIGPIPE);
    let mut old = SigSet::empty();
    if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&pipe), Some(&mut old)).is_err() {
        return f();
    }
    let r = f();
    if !old.contains(Signal::SIGPIPE)
        && matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EPIPE))
    {
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid signal set and timeout, and no info pointer: takes
        // this thread's pending SIGPIPE (the one the write raised), if any,
        // without waiting.
        unsafe {
            libc::sigtimedwait(pipe.as_ref(), ptr::null_mut(), &zero);
        }
    }
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    r
}
