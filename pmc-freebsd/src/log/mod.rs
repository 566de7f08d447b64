//! The user-space side of hwpmc's log: one kernel log per process, many sinks.
//!
//! `kernel.rs` holds the kernel log (one per process, [`LogPump`]); `pump.rs` is the reader
//! thread that cuts the stream into records and writes the current sink; `ctl.rs` ([`PumpCtl`],
//! [`LogFormat`]) is what backend and thread share; `failure.rs` says why a sink stopped.
//!
//! One kernel log per process, held
//! by one backend at a time (`kernel.rs` `KERNEL_LOGS`), many sinks over
//! its lifetime. A dropped backend removes the process's shut-down owner
//! descriptor (a throwaway SOFT PMC allocated and released), so the next
//! backend can log.
//!
//! hwpmc cannot give one process a second log. `pmclog_close()` (run by
//! PMC_OP_CLOSELOG and by PMC_OP_CONFIGURELOG with -1) sets
//! `PMC_PO_SHUTDOWN` on the owner, nothing clears it while the owner owns
//! PMCs, and `pmclog_reserve()` refuses every record under it, so the
//! INITIALIZE record of the next CONFIGURELOG fails with ENOMEM
//! (`hwpmc_logging.c:pmclog_close`, `pmclog_reserve`,
//! `pmclog_configure_log`). So the backend configures the kernel log once,
//! on the first `configure_log`, into a socket pair read by one thread,
//! and closes it only when the backend is dropped. `configure_log`,
//! `configure_hwpmc_log` and `close_log` swap the *sink* that thread
//! writes to:
//!
//! - the stream is cut into whole kernel records (each starts with its
//!   16-bit length), so a swap never splits a record;
//! - a sink being replaced or closed gets a CLOSELOG record (pmc-log: the
//!   clean-close marker) after the last record it was sent;
//! - a new sink first gets the records that describe the session's state
//!   (`replay.rs`: INITIALIZE, the PMC allocations and live attaches, the
//!   kernel objects, and the live processes, threads and mappings, the
//!   last bounded by `replay::OPTIONAL_MAX`, oldest dropped first), so each
//!   sink is a complete log on its own;
//! - records that arrive while no sink is configured (after `close_log`,
//!   from PMCs still running) are dropped and counted
//!   (`PumpStats::discarded`).

mod ctl;
mod failure;
mod kernel;
mod pump;
mod replay;

pub(crate) use ctl::{LogFormat, PumpCtl};
pub(crate) use kernel::{finish_pump, kernel_logs, LogPump};
#[cfg(unix)]
pub(crate) use pump::run;
