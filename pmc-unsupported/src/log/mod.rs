//! The sample-log side: a backend turns the kernel's sample records into
//! pmc-log records here (pmc-linux: rings, records, samples; pmc-freebsd:
//! the kernel log pump). Nothing samples on this OS, so every log call is
//! refused as the facility is.

use crate::errno::Errno;
use crate::errno_map;
use crate::sys::Sys;
use pmc_core::{LogSink, Op, Result};

/// `Backend::configure_log`, `flush_log`, `close_log` and `write_log`:
/// the facility's own error if it does not open, else `ENOSYS`'s (no log
/// to write). The sink is dropped.
pub(crate) fn refuse(sys: &impl Sys, sink: Option<LogSink>) -> Result<()> {
    drop(sink);
    sys.open_counters()
        .and(Err(Errno::ENOSYS))
        .map_err(|e| errno_map::error(e, Op::Log))
}
