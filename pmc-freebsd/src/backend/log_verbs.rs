//! The Backend's log verbs: configure the kernel log once (one per
//! process, held by one Backend; `crate::log` reads it), swap the
//! user-space sinks over it, tear it down when the Backend goes.

use super::inner::Inner;
use super::Backend;
use crate::errno::Errno;
use crate::errno_map::Context;
use crate::log::{finish_pump, kernel_logs, LogFormat, LogPump, PumpCtl};
use crate::sys::abi::*;
use crate::sys::{OpArg, PmcOp, Sys};
use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use std::sync::Arc;

impl<S: Sys> Backend<S> {
    /// `PMC_OP_CONFIGURELOG` with hwpmc's own record format: the kernel's
    /// log stream is copied to `sink` unchanged, as `pmcstat -O` writes it
    /// (readable by `pmcstat -R` and pmclog(3)). Replaces any earlier sink,
    /// as [`configure_log`](pmc_core::Backend::configure_log) does.
    ///
    /// # Errors
    /// [`ErrorKind::Os`] when the socket pair or reader thread cannot be
    /// created; the `PMC_OP_CONFIGURELOG` errors (e.g. [`ErrorKind::Busy`]).
    #[doc(alias = "PMC_OP_CONFIGURELOG")]
    #[doc(alias = "pmc_configure_logfile")]
    pub fn configure_hwpmc_log(&self, sink: LogSink) -> Result<()> {
        self.configure_log_impl(sink, LogFormat::Hwpmc)
    }

    /// The error that stopped the configured log's sink, if one did (a sink
    /// write error such as a full disk, or a conversion error), as the log
    /// reader made it where it failed: for I/O errors the errno and a
    /// `std::io::Error` (its `kind()`) as the source, with the kind
    /// `ErrorKind::Os` (a full disk: ENOSPC, `StorageFull`) or
    /// `ErrorKind::Permission` (EACCES/EPERM); a sink whose `io::Error`
    /// wraps a `pmc_core::Error` gives that error's kind, errno and help,
    /// with the error itself as the source. The log reader records
    /// it the moment it happens, so a caller polling this learns of it at
    /// once rather than at `close_log`. After it the sink receives nothing
    /// more; the reader keeps reading and dropping hwpmc's stream so the
    /// kernel's writer never blocks.
    pub fn log_error(&self) -> Option<Error> {
        self.pump_ctl()?.sink_error()
    }

    pub(super) fn pump_ctl(&self) -> Option<Arc<PumpCtl>> {
        let g = self.inner.log.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map(|p| p.ctl.clone())
    }

    /// The reader of a log with a sink, or the error hwpmc gives `op`
    /// without a log (EINVAL: "no log is configured").
    pub(super) fn sink_ctl(&self, op: PmcOp) -> Result<Arc<PumpCtl>> {
        match self.pump_ctl() {
            Some(c) if c.has_sink() => Ok(c),
            _ => Err(self.inner.err(op, Errno::EINVAL, &Context::default())),
        }
    }

    /// Bytes of hwpmc's log stream the log reader has taken in so far;
    /// `None` before the first `configure_log`.
    pub fn log_bytes_read(&self) -> Option<u64> {
        self.pump_ctl().map(|c| c.stats().bytes_read)
    }

    /// The most bytes of hwpmc's stream the log reader has held at once
    /// while waiting for the rest of a record (at most
    /// `pmc_log::hwpmc::MAX_BUFFERED` plus one record, however long the
    /// session); `None` before the first `configure_log`.
    pub fn log_max_buffered(&self) -> Option<usize> {
        self.pump_ctl().map(|c| c.stats().max_buffered)
    }

    /// Bytes of process, thread and mapping records dropped from what a new
    /// sink starts with (more live state than the replay bound, oldest
    /// first; the PMCs, their attaches and the kernel objects are always
    /// replayed); `None` before the first `configure_log`.
    pub fn log_replay_dropped(&self) -> Option<u64> {
        self.pump_ctl().map(|c| c.stats().replay_dropped)
    }

    /// Bytes of kernel log records that arrived while no sink was
    /// configured (after `close_log`, from PMCs still running) and were
    /// dropped; `None` before the first `configure_log`.
    pub fn log_bytes_discarded(&self) -> Option<u64> {
        self.pump_ctl().map(|c| c.stats().discarded)
    }

    #[cfg(unix)]
    pub(super) fn configure_log_impl(&self, sink: LogSink, format: LogFormat) -> Result<()> {
        use std::os::fd::AsRawFd;
        let ctx = Context::default();
        let mut guard = self.inner.log.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let key = self.inner.log_key();
            let mut logs = kernel_logs();
            if logs.contains(&key) {
                return Err(Error::new(
                    ErrorKind::Busy,
                    Op::Log,
                    "another pmc_freebsd::Backend in this process holds hwpmc's log: the kernel keeps one log per process, and its records (this Backend's too) go there",
                )
                .with_help(
                    "log through one Backend per process: give that Backend the sink (configure_log replaces its sink), or drop it first",
                ));
            }
            let (read_end, write_end) = crate::sys::log_socket_pair().map_err(|e| {
                Error::new(
                    ErrorKind::Os,
                    Op::Log,
                    format!("cannot create the log socket pair: {e}"),
                )
                .with_source(e)
            })?;
            let mut cl = pmc_op_configurelog {
                pm_flags: 0,
                pm_logfd: write_end.as_raw_fd(),
            };
            self.inner
                .sys
                .call(OpArg::ConfigureLog(&mut cl))
                .map_err(|e| self.inner.err(PmcOp::ConfigureLog, e, &ctx))?;
            let ctl = Arc::new(PumpCtl::default());
            let thread_ctl = ctl.clone();
            let thread = std::thread::Builder::new()
                .name("pmc-freebsd-log".into())
                .spawn(move || crate::log::run(read_end, &thread_ctl));
            let thread = match thread {
                Ok(t) => t,
                Err(e) => {
                    let mut off = pmc_op_configurelog {
                        pm_flags: 0,
                        pm_logfd: -1,
                    };
                    let _ = self.inner.sys.call(OpArg::ConfigureLog(&mut off));
                    self.inner.remove_owner();
                    return Err(Error::new(
                        ErrorKind::Os,
                        Op::Log,
                        format!("cannot start the log reader: {e}"),
                    )
                    .with_source(e));
                }
            };
            logs.insert(key);
            drop(logs);
            *guard = Some(LogPump {
                key,
                write_end,
                thread: Some(thread),
                ctl,
            });
        }
        let ctl = guard.as_ref().map(|p| p.ctl.clone());
        drop(guard);
        let Some(ctl) = ctl else {
            return Err(Error::new(ErrorKind::Os, Op::Log, "no log reader"));
        };
        // Everything the kernel wrote so far goes to the old sink (if any),
        // which then ends cleanly; its errors have no caller left to report
        // to, so only the new sink's start counts.
        let _ = self.inner.sys.call(OpArg::FlushLog);
        ctl.swap(Some((sink, format)))
    }

    #[cfg(not(unix))]
    pub(super) fn configure_log_impl(&self, _sink: LogSink, _format: LogFormat) -> Result<()> {
        Err(Error::new(
            ErrorKind::Unsupported,
            Op::Log,
            "hwpmc logs need file descriptors",
        ))
    }
}

impl<S: Sys> Drop for Inner<S> {
    fn drop(&mut self) {
        let pump = self.log.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = pump {
            // The end of the kernel log: CLOSELOG (its record ends the
            // current sink), then deconfigure so the reader sees EOF.
            let _ = self.sys.call(OpArg::FlushLog);
            let _ = self.sys.call(OpArg::CloseLog);
            let mut off = pmc_op_configurelog {
                pm_flags: 0,
                pm_logfd: -1,
            };
            let _ = self.sys.call(OpArg::ConfigureLog(&mut off));
            let key = p.key;
            let _ = finish_pump(p);
            // Every PMC of this Backend is released by now (each holds the
            // Inner): remove the shut-down owner descriptor so a later
            // Backend in this process can log.
            self.remove_owner();
            kernel_logs().remove(&key);
        }
    }
}
