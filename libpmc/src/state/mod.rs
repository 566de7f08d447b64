//! libpmc's global state and the operations behind each entry point, in safe
//! Rust, with the errno each refusal gets (each function's ERRORS section in
//! FreeBSD's manual pages); `sys/` converts C arguments and results around
//! these. Here: the state (the backend `pmc_init` opened, the PMCs by id, the
//! extension's measurements) and `CError`; by concern: `machine.rs` (CPUs,
//! classes, rows: `pmc_cpuinfo`, `pmc_pmcinfo`, `pmc_enable`), `allocate.rs`
//! (`pmc_allocate`), `verbs.rs` (the verbs on one PMC), `measure.rs` (the
//! `pmc_measure_*` extension), `log.rs` (the log calls, driver statistics).

mod allocate;
mod log;
mod machine;
mod measure;
mod verbs;

pub(crate) use allocate::allocate;
pub(crate) use log::{close_log, configure_log, driver_stats, flush_log, write_log};
pub(crate) use machine::{admin, checked_cpuinfo, cpuinfo, event_names_of_class, npmc, pmcinfo};
pub(crate) use measure::{measure_begin, measure_end, measure_read, MEASURE_MAX_EVENTS};
pub(crate) use verbs::{
    attach, capabilities, detach, get_msr, read, release, set, start, stop, width, write,
};

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, MutexGuard};

use pmc_facade::{ErrorKind, Native, NativeGroup, NativePmc};

use crate::abi::*;

/// A failure to report to C: the errno and the message `pmc_strerror_last`
/// returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CError {
    /// The errno.
    pub errno: i32,
    /// What went wrong and, when known, what to do.
    pub message: String,
}

impl CError {
    /// A failure with an errno and a message.
    pub(crate) fn new(errno: i32, message: impl Into<String>) -> CError {
        CError {
            errno,
            message: message.into(),
        }
    }
}

/// The longest event string an error message quotes whole.
const SPEC_SHOWN: usize = 200;

/// A caller's event string as an error quotes it: cut in the middle past
/// [`SPEC_SHOWN`] characters, saying how many bytes were left out (pmc-log's
/// `cut`, as pmcstat cuts what it echoes).
pub(crate) fn shown_spec(spec: &str) -> std::borrow::Cow<'_, str> {
    pmc_log::escape::cut(spec, SPEC_SHOWN)
}

impl From<pmc_facade::Error> for CError {
    fn from(e: pmc_facade::Error) -> CError {
        CError::new(errno_of(&e), e.to_string())
    }
}

/// The errno FreeBSD's libpmc would set for an error of this kind: what
/// hwpmc returns for the same refusal (the manual pages' ERRORS), and
/// `EOPNOTSUPP` for what the machine cannot do.
pub(crate) fn errno_of(e: &pmc_facade::Error) -> i32 {
    use libc::*;
    match e.kind() {
        // pmc_allocate(3), pmc_attach(3): "without adequate process privilege" is EPERM
        // (perf's EACCES included).
        ErrorKind::Permission => EPERM,
        ErrorKind::NoPmu | ErrorKind::NotSupported | ErrorKind::Unsupported => EOPNOTSUPP,
        ErrorKind::NoSuchEvent
        | ErrorKind::Parse
        | ErrorKind::InvalidArgument
        | ErrorKind::NotAttached
        | ErrorKind::InvalidState => EINVAL,
        ErrorKind::LogRequired => crate::host::EDOOFUS,
        ErrorKind::NoSuchProcess => ESRCH,
        ErrorKind::Busy => EBUSY,
        ErrorKind::AlreadyAttached => EEXIST,
        ErrorKind::TooManyOpenFiles => e.errno().unwrap_or(EMFILE),
        ErrorKind::MlockLimit => ENOMEM,
        ErrorKind::NoSuchCpu | ErrorKind::DriverNotLoaded => ENXIO,
        ErrorKind::VersionMismatch => EPROTO,
        _ => e.errno().unwrap_or(EIO),
    }
}

type R<T> = Result<T, CError>;

/// Rows per class per CPU this library reports: PMCs are perf events, which
/// the kernel multiplexes, so the number is a bound this library keeps, not
/// a hardware count.
pub(crate) const ROWS_PER_CLASS: u32 = 64;

struct Slot {
    pmc: NativePmc,
    mode: u32,
    class: u32,
    event: u32,
    /// The id's CPU field: the CPU, or `PMC_ID_CPU_ANY` (pmc-log's).
    cpu: u32,
    flags: u32,
    reload: u64,
    /// Started at least once (pmc_stop(3): stopping a PMC never started is EINVAL).
    started: bool,
    running: bool,
    /// The processes attached (pids; the caller's own as its pid).
    targets: Vec<u32>,
}

struct Lib {
    backend: Native,
    pmcs: BTreeMap<pmc_id_t, Slot>,
    /// The extension's measurements (`pmc_measure_begin`), by handle.
    measures: BTreeMap<pmc_measure_t, NativeGroup>,
    /// The next measurement handle (never 0, never reused).
    next_measure: pmc_measure_t,
    /// A log is configured (pmc_configure_logfile(3): a second one is EBUSY).
    log: bool,
}

static LIB: Mutex<Option<Lib>> = Mutex::new(None);

/// Calls into the library and the calls that failed (`pmc_get_driver_stats`'s
/// `pm_syscalls` and `pm_syscall_errors`).
pub(crate) static CALLS: AtomicU32 = AtomicU32::new(0);
/// See [`CALLS`].
pub(crate) static FAILED_CALLS: AtomicU32 = AtomicU32::new(0);

fn lock() -> MutexGuard<'static, Option<Lib>> {
    // A panic while holding the lock was caught at the boundary; the state
    // is still consistent (every change is one map insert or removal).
    LIB.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_initialized() -> CError {
    CError::new(
        libc::ENXIO,
        "pmc_init has not been called (or it failed): call pmc_init() first",
    )
}

fn with_lib<T>(f: impl FnOnce(&mut Lib) -> R<T>) -> R<T> {
    let mut g = lock();
    match g.as_mut() {
        Some(lib) => f(lib),
        None => Err(not_initialized()),
    }
}

/// `pmc_init`: opens the backend once; later calls succeed at once.
pub(crate) fn init() -> R<()> {
    let mut g = lock();
    if g.is_some() {
        return Ok(());
    }
    let backend = Native::open().map_err(|e| {
        let mut c = CError::from(e);
        if c.errno == libc::EOPNOTSUPP {
            c.errno = libc::ENXIO;
        }
        c
    })?;
    *g = Some(Lib {
        backend,
        pmcs: BTreeMap::new(),
        measures: BTreeMap::new(),
        next_measure: 1,
        log: false,
    });
    drop(g);
    let _ = cpuinfo();
    Ok(())
}

/// Whether `pmc_init` succeeded.
pub(crate) fn initialized() -> bool {
    lock().is_some()
}

impl Lib {
    /// The PMC `id`: pmc(3)'s EINVAL when this process owns no PMC of that id.
    fn slot(&mut self, id: pmc_id_t) -> R<&mut Slot> {
        self.pmcs.get_mut(&id).ok_or_else(|| {
            CError::new(
                libc::EINVAL,
                format!("PMC id {id:#x} is not allocated (pmc_allocate returns the ids)"),
            )
        })
    }

    /// pmc_attach(3), pmc_detach(3), pmc_release(3): ESRCH when the process
    /// owns no PMCs at all.
    fn owns_pmcs(&self, call: &str) -> R<()> {
        if self.pmcs.is_empty() {
            return Err(CError::new(
                libc::ESRCH,
                format!("{call}: this process owns no PMCs (pmc_allocate one first)"),
            ));
        }
        Ok(())
    }
}

/// What Linux cannot do: `EOPNOTSUPP` with the reason.
pub(crate) fn unsupported(call: &str, why: &str) -> CError {
    CError::new(
        libc::EOPNOTSUPP,
        format!("{call}: not supported on Linux: {why}"),
    )
}
