//! The log calls (`pmc_configure_logfile`, `_flush_`, `_close_`,
//! `pmc_writelog`) and `pmc_get_driver_stats`.

use std::sync::atomic::Ordering;

use pmc_facade::Backend;

use crate::abi::*;

use super::{with_lib, CError, Lib, CALLS, FAILED_CALLS, R};

/// `pmc_configure_logfile(fd)`: the log goes to `sink` (pmc-log format);
/// `None` (fd -1) ends it. pmc_configure_logfile(3): EBUSY when a log is
/// configured already, EINVAL for -1 without one.
pub(crate) fn configure_log(sink: Option<pmc_facade::LogSink>) -> R<()> {
    with_lib(|lib| match sink {
        Some(f) => {
            if lib.log {
                return Err(CError::new(
                    libc::EBUSY,
                    "a log file is configured already: pmc_configure_logfile(-1) or \
                     pmc_close_logfile ends it",
                ));
            }
            lib.backend.configure_log(f)?;
            lib.log = true;
            Ok(())
        }
        None => {
            no_log(lib, "pmc_configure_logfile(-1)")?;
            lib.log = false;
            Ok(lib.backend.close_log()?)
        }
    })
}

/// EINVAL for a log call without a log (pmc_configure_logfile(3)).
fn no_log(lib: &Lib, call: &str) -> R<()> {
    if lib.log {
        return Ok(());
    }
    Err(CError::new(
        libc::EINVAL,
        format!("{call}: no log file is configured (pmc_configure_logfile first)"),
    ))
}

/// `pmc_flush_logfile`.
pub(crate) fn flush_log() -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_flush_logfile")?;
        Ok(lib.backend.flush_log()?)
    })
}

/// `pmc_close_logfile`.
pub(crate) fn close_log() -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_close_logfile")?;
        lib.log = false;
        Ok(lib.backend.close_log()?)
    })
}

/// `pmc_writelog(udata)`.
pub(crate) fn write_log(udata: u32) -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_writelog")?;
        Ok(lib.backend.write_log(udata)?)
    })
}

/// `pmc_get_driver_stats`: this library's counts in hwpmc's terms: calls and
/// failed calls, samples written to the log ("interrupts processed") and
/// samples lost ("interrupts with ENOSPC").
pub(crate) fn driver_stats() -> R<pmc_driverstats> {
    with_lib(|lib| {
        let sum = lib.backend.sampling_summary().unwrap_or_default();
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Ok(pmc_driverstats {
            pm_intr_ignored: 0,
            pm_intr_processed: c(sum.samples),
            pm_intr_bufferfull: c(sum.lost),
            pm_syscalls: CALLS.load(Ordering::Relaxed),
            pm_syscall_errors: FAILED_CALLS.load(Ordering::Relaxed),
            pm_buffer_requests: 0,
            pm_buffer_requests_failed: 0,
            pm_log_sweeps: 0,
        })
    })
}
