//! The kernel log: one per process, held by one Backend (the registry),
//! read through a socket pair by one thread.

use super::ctl::PumpCtl;
use pmc_core::{Error, ErrorKind, Op};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The kernel logs the Backends of this process hold, by
/// (`Sys::kernel_id`, pid). hwpmc has one owner descriptor per process,
/// with at most one log (`hwpmc_mod.c`@009268db PMC_OP_CONFIGURELOG:
/// `pmc_find_owner_descriptor(p)`, then `pmclog_configure_log()` answers
/// EBUSY when a log is there), so only one Backend per process may hold it.
static KERNEL_LOGS: Mutex<BTreeSet<(usize, i32)>> = Mutex::new(BTreeSet::new());

pub(crate) fn kernel_logs() -> std::sync::MutexGuard<'static, BTreeSet<(usize, i32)>> {
    KERNEL_LOGS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kernel log, configured once per backend (see `log`).
pub(crate) struct LogPump {
    /// This process's entry in [`KERNEL_LOGS`].
    pub(crate) key: (usize, i32),
    /// The kernel's end of the socket pair.
    #[cfg(unix)]
    pub(crate) write_end: std::os::fd::OwnedFd,
    pub(crate) thread: Option<std::thread::JoinHandle<Option<Error>>>,
    pub(crate) ctl: Arc<PumpCtl>,
}

/// Closes our end of the socket pair and waits for the reader thread;
/// returns the error it met, if any.
pub(crate) fn finish_pump(mut p: LogPump) -> Option<Error> {
    #[cfg(unix)]
    drop(p.write_end);
    let t = p.thread.take()?;
    match t.join() {
        Ok(e) => e,
        Err(_) => Some(Error::new(
            ErrorKind::Os,
            Op::Log,
            "the log reader thread panicked",
        )),
    }
}
