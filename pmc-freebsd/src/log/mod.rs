//! The user-space side of hwpmc's log: one kernel log per process, held
//! by one backend at a time (`backend.rs` `KERNEL_LOGS`), many sinks over
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
//! - a new sink first gets the records that describe the session so far
//!   (INITIALIZE, PMC allocations, attaches and detaches, mappings and
//!   unmappings, execs, forks, exits, process and thread creation; at most
//!   [`REPLAY_MAX`] bytes), so each sink is a complete log on its own;
//! - records that arrive while no sink is configured (after `close_log`,
//!   from PMCs still running) are dropped and counted
//!   ([`PumpCtl::discarded`]).

use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use pmc_log::bytes::ByteCursor;
use pmc_log::hwpmc::{
    pmclog_header_magic_ok, pmclog_header_type, PMCLOG_HEADER_LEN, PMCLOG_TYPE_CLOSELOG,
    PMCLOG_TYPE_INITIALIZE, PMCLOG_TYPE_MAP_IN, PMCLOG_TYPE_MAP_OUT, PMCLOG_TYPE_PMCALLOCATE,
    PMCLOG_TYPE_PMCALLOCATEDYN, PMCLOG_TYPE_PMCATTACH, PMCLOG_TYPE_PMCDETACH, PMCLOG_TYPE_PROCEXEC,
    PMCLOG_TYPE_PROCFORK, PMCLOG_TYPE_PROC_CREATE, PMCLOG_TYPE_SYSEXIT, PMCLOG_TYPE_THR_CREATE,
    PMCLOG_TYPE_THR_EXIT,
};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the log reader blocks in one `read(2)` before it looks for a
/// request: the most a request waits on an idle log.
#[cfg(unix)]
const PUMP_POLL: Duration = Duration::from_millis(20);

/// How long a request waits for the log reader.
const REQUEST_WAIT: Duration = Duration::from_secs(30);

/// At most this much is drained for one request, so a stream that never
/// pauses cannot hold the request forever.
#[cfg(unix)]
const DRAIN_MAX: u64 = 16 << 20;

/// The most bytes of session-describing records kept to start a new sink
/// with; later ones are not replayed (and counted in
/// [`PumpStats::replay_dropped`]).
pub(crate) const REPLAY_MAX: usize = 1 << 20;

/// What the sink of a configured log receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// hwpmc's kernel records, unchanged.
    Hwpmc,
    /// The pmc-log format, converted by `pmc_log::hwpmc::StreamImporter`
    /// as the kernel writes it.
    PmcLog,
}

/// A request to the reader thread.
enum Request {
    /// Take in what the kernel wrote and flush the sink.
    Flush,
    /// End the current sink (if any) and continue with this one (or none).
    Swap(Option<(LogSink, LogFormat)>),
}

/// Counters the reader keeps.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PumpStats {
    /// Bytes of hwpmc's stream taken in.
    pub bytes_read: u64,
    /// The most bytes held at once waiting for the rest of a record.
    pub max_buffered: usize,
    /// Bytes of records that arrived while no sink was configured.
    pub discarded: u64,
    /// Session records not kept for replay (over [`REPLAY_MAX`]).
    pub replay_dropped: u64,
}

#[derive(Default)]
struct PumpState {
    request: Option<Request>,
    requested: u64,
    done: u64,
    /// The result of the last request served.
    result: Option<Failure>,
    /// The reader thread has ended.
    ended: bool,
    /// A sink is configured.
    has_sink: bool,
    /// Why the current sink stopped receiving records, if it did.
    failure: Option<Failure>,
    stats: PumpStats,
}

/// Shared by the backend and its log reader thread.
#[derive(Default)]
pub(crate) struct PumpCtl {
    state: Mutex<PumpState>,
    cond: Condvar,
}

/// Why the sink stopped receiving records: a [`pmc_core::Error`] made where
/// the reader met the failure, with the kind it has there (a full disk is
/// `ErrorKind::Os` with ENOSPC and its `io::Error` as the source; a sink that
/// refuses with EACCES is `ErrorKind::Permission`; a sink that fails with a
/// `pmc_core::Error` inside its `io::Error` keeps that error's kind), kept
/// whole and cloned to every caller that asks (`Backend::log_error`,
/// `flush_log`, `close_log`, the reader thread's result).
type Failure = Error;

/// The prefix of every error the reader reports.
const STOPPED: &str = "the log reader stopped writing the log";

/// A failure described by text alone.
fn failure_msg(message: &str) -> Failure {
    Error::new(ErrorKind::Os, Op::Log, format!("{STOPPED}: {message}"))
}

/// The failure for a sink's I/O error `e`, met doing `what`.
fn failure_io(what: &str, e: &std::io::Error) -> Failure {
    from_chain(what, e)
}

/// A failure from an error chain (the converter's, or the sink's own): a
/// `pmc_core::Error` in it (a sink that reports one inside its `io::Error`)
/// keeps its kind, errno and help; else the first `io::Error` gives the
/// errno and kind (the pmc-log writer's `WriteError` at least the kind);
/// else it is an OS error described by its text.
fn from_chain(what: &str, e: &(dyn std::error::Error + 'static)) -> Failure {
    let (mut errno, mut io_kind) = (None, None);
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        // `io::Error::source` skips the error it wraps: look inside it too.
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        if let Some(pe) = [Some(s), inner]
            .into_iter()
            .flatten()
            .find_map(|x| x.downcast_ref::<Error>())
        {
            let mut f = Error::new(
                pe.kind(),
                Op::Log,
                format!("{STOPPED}: {what}: {}", pe.message()),
            );
            if let Some(n) = pe.errno() {
                f = f.with_errno(n);
            }
            if let Some(h) = pe.help() {
                f = f.with_help(h);
            }
            return f.with_source(pe.clone());
        }
        if let Some(w) = s.downcast_ref::<pmc_log::WriteError>() {
            io_kind = io_kind.or(w.io_kind());
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
            errno = errno.or(io.raw_os_error());
            break;
        }
        src = s.source();
    }
    let mut f = Error::new(
        io_kind.map_or(ErrorKind::Os, ErrorKind::of_io),
        Op::Log,
        format!("{STOPPED}: {what}: {e}"),
    );
    if let Some(n) = errno {
        f = f
            .with_errno(n)
            .with_source(std::io::Error::from_raw_os_error(n));
    } else if let Some(k) = io_kind {
        f = f.with_source(std::io::Error::from(k));
    }
    f
}

impl PumpCtl {
    fn lock(&self) -> MutexGuard<'_, PumpState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A sink is configured.
    pub(crate) fn has_sink(&self) -> bool {
        self.lock().has_sink
    }

    /// The error that stopped the current sink, if one did (it receives
    /// nothing more after it).
    pub(crate) fn sink_error(&self) -> Option<Error> {
        self.lock().failure.clone()
    }

    /// The reader's counters.
    pub(crate) fn stats(&self) -> PumpStats {
        self.lock().stats
    }

    fn request(&self, r: Request) -> Result<()> {
        let mut st = self.lock();
        if st.ended {
            return Err(failure_msg("the reader has ended"));
        }
        st.request = Some(r);
        st.requested += 1;
        let ticket = st.requested;
        let deadline = Instant::now() + REQUEST_WAIT;
        while st.done < ticket && !st.ended {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::new(
                    ErrorKind::Os,
                    Op::Log,
                    format!(
                        "the log reader did not answer within {} s (is the sink blocked?)",
                        REQUEST_WAIT.as_secs()
                    ),
                ));
            }
            st = self
                .cond
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if st.done < ticket {
            return Err(st
                .failure
                .clone()
                .unwrap_or_else(|| failure_msg("the reader has ended")));
        }
        match st.result.take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Takes in what the kernel has written so far and flushes the sink.
    pub(crate) fn flush(&self) -> Result<()> {
        self.request(Request::Flush)
    }

    /// Ends the current sink with a clean close and continues with `next`.
    /// Returns the error the ended sink met, if any.
    pub(crate) fn swap(&self, next: Option<(LogSink, LogFormat)>) -> Result<()> {
        self.request(Request::Swap(next))
    }
}

/// Cuts hwpmc's byte stream into whole kernel records.
#[derive(Default)]
struct Framer {
    pending: Vec<u8>,
}

impl Framer {
    /// Appends `data` and hands out every complete record. Words that are
    /// not a record header (never in a kernel stream) are handed out 4
    /// bytes at a time, for the sink's reader to report.
    fn push(&mut self, data: &[u8], mut out: impl FnMut(&[u8])) {
        self.pending.extend_from_slice(data);
        let mut off = 0;
        let pending = ByteCursor::le(&self.pending);
        while let Ok(word) = pending.u32_at(off) {
            let len = (word & 0xFFFF) as usize;
            let header = pmclog_header_magic_ok(word) && len >= PMCLOG_HEADER_LEN && len % 4 == 0;
            let take = if header { len } else { 4 };
            let Ok(rec) = pending.take_at(off, take) else {
                break;
            };
            out(rec);
            off += take;
        }
        self.pending.drain(..off);
    }
}

/// Record types that describe the session: replayed, in order, to every
/// new sink. The kernel writes each once and never again: the PMCs and
/// their targets (PMCALLOCATE*, PMCATTACH/PMCDETACH), the mappings
/// (MAP_IN/MAP_OUT), the processes and threads (PROCEXEC, PROCFORK,
/// SYSEXIT; PROC_CREATE/THR_CREATE/THR_EXIT, including the one-time dump of
/// every process for a system-sampling owner, `hwpmc_mod.c`
/// `pmc_process_allproc()`, guarded by PMC_PO_INITIAL_MAPPINGS_DONE). A
/// sink swapped in later then knows process names and exec paths, and no
/// mapping or target that is gone.
fn describes_session(ty: u32) -> bool {
    matches!(
        ty,
        PMCLOG_TYPE_INITIALIZE
            | PMCLOG_TYPE_PMCALLOCATE
            | PMCLOG_TYPE_PMCALLOCATEDYN
            | PMCLOG_TYPE_PMCATTACH
            | PMCLOG_TYPE_PMCDETACH
            | PMCLOG_TYPE_MAP_IN
            | PMCLOG_TYPE_MAP_OUT
            | PMCLOG_TYPE_PROCEXEC
            | PMCLOG_TYPE_PROCFORK
            | PMCLOG_TYPE_SYSEXIT
            | PMCLOG_TYPE_PROC_CREATE
            | PMCLOG_TYPE_THR_CREATE
            | PMCLOG_TYPE_THR_EXIT
    )
}

/// Where the records go.
enum Out {
    Raw(LogSink),
    Convert(Box<pmc_log::hwpmc::StreamImporter<LogSink>>),
}

impl Out {
    fn new(sink: LogSink, format: LogFormat) -> Out {
        match format {
            LogFormat::Hwpmc => Out::Raw(sink),
            LogFormat::PmcLog => Out::Convert(Box::new(pmc_log::hwpmc::StreamImporter::new(sink))),
        }
    }

    /// Returns the bytes held waiting for the rest of a record.
    fn take(&mut self, rec: &[u8]) -> std::result::Result<usize, Failure> {
        use std::io::Write;
        match self {
            Out::Raw(s) => s
                .write_all(rec)
                .map(|()| 0)
                .map_err(|e| failure_io("cannot write the log", &e)),
            Out::Convert(imp) => imp
                .feed(rec)
                .map(|()| imp.buffered())
                .map_err(|e| from_chain("cannot convert hwpmc's log to pmc-log", &e)),
        }
    }

    fn flush(&mut self) -> std::result::Result<(), Failure> {
        use std::io::Write;
        match self {
            Out::Raw(s) => s
                .flush()
                .map_err(|e| failure_io("cannot flush the log", &e)),
            Out::Convert(imp) => imp
                .flush()
                .map_err(|e| from_chain("cannot flush the converted log", &e)),
        }
    }

    /// Ends this sink: a CLOSELOG record stamped `tsc`, then flush.
    fn finish(mut self, tsc: u64, failure: Option<Failure>, closed: bool) -> Option<Failure> {
        if failure.is_some() {
            return failure;
        }
        if closed {
            return self.flush_end();
        }
        let mut close = pmc_log::hwpmc::Encoder::new(Vec::new());
        if close.closelog(tsc).is_ok() {
            if let Err(e) = self.take(&close.into_inner()) {
                return Some(e);
            }
        }
        self.flush_end()
    }

    fn flush_end(self) -> Option<Failure> {
        use std::io::Write;
        match self {
            Out::Raw(mut s) => s
                .flush()
                .err()
                .map(|e| failure_io("cannot flush the log", &e)),
            Out::Convert(imp) => match imp.finish() {
                Ok((mut s, _)) => s
                    .flush()
                    .err()
                    .map(|e| failure_io("cannot flush the log", &e)),
                Err(e) => Some(from_chain("cannot convert hwpmc's log to pmc-log", &e)),
            },
        }
    }
}

/// The reader's state outside the shared lock.
struct Reader<'c> {
    ctl: &'c PumpCtl,
    framer: Framer,
    out: Option<Out>,
    /// The current sink's first error (it then receives nothing more).
    failure: Option<Failure>,
    replay: Vec<u8>,
    last_tsc: u64,
    /// The current sink was sent the kernel's own CLOSELOG record.
    sink_closed: bool,
}

impl Reader<'_> {
    fn take(&mut self, data: &[u8]) {
        let Reader {
            framer,
            out,
            failure,
            replay,
            last_tsc,
            ctl,
            sink_closed,
        } = self;
        let mut discarded = 0u64;
        let mut replay_dropped = 0u64;
        let mut held = 0usize;
        framer.push(data, |rec| {
            let mut kept = false;
            let r = ByteCursor::le(rec);
            let ty = r.u32_at(0).map(pmclog_header_type).unwrap_or_default();
            if let Ok(tsc) = r.u64_at(8) {
                *last_tsc = tsc;
                if describes_session(ty) {
                    if replay.len() + rec.len() <= REPLAY_MAX {
                        replay.extend_from_slice(rec);
                        kept = true;
                    } else {
                        replay_dropped += rec.len() as u64;
                    }
                }
            }
            if out.is_some() && rec.len() >= PMCLOG_HEADER_LEN && ty == PMCLOG_TYPE_CLOSELOG {
                *sink_closed = true;
            }
            match out {
                Some(o) if failure.is_none() => match o.take(rec) {
                    Ok(h) => held = held.max(h),
                    Err(e) => {
                        ctl.lock().failure = Some(e.clone());
                        *failure = Some(e);
                    }
                },
                Some(_) => {}
                // Kept for replay: the next sink gets it; not lost.
                None if kept => {}
                None => discarded += rec.len() as u64,
            }
        });
        let mut st = ctl.lock();
        st.stats.bytes_read += data.len() as u64;
        st.stats.discarded += discarded;
        st.stats.replay_dropped += replay_dropped;
        st.stats.max_buffered = st.stats.max_buffered.max(held + framer.pending.len());
    }

    /// Ends the current sink; returns its error.
    fn end_sink(&mut self) -> Option<Failure> {
        let failure = self.failure.take();
        let closed = std::mem::take(&mut self.sink_closed);
        let r = self
            .out
            .take()
            .map(|o| o.finish(self.last_tsc, failure, closed));
        let mut st = self.ctl.lock();
        st.has_sink = false;
        st.failure = None;
        r.flatten()
    }

    fn start_sink(&mut self, sink: LogSink, format: LogFormat) -> Option<Failure> {
        let mut out = Out::new(sink, format);
        let replay = std::mem::take(&mut self.replay);
        let r = out.take(&replay).err();
        self.replay = replay;
        self.out = Some(out);
        self.ctl.lock().has_sink = true;
        if let Some(e) = &r {
            self.ctl.lock().failure = Some(e.clone());
            self.failure = Some(e.clone());
        }
        r
    }
}

/// The log reader thread: reads hwpmc's stream as the kernel writes it and
/// hands each record to the current sink; serves flush and swap requests;
/// at EOF (the kernel log was closed when the backend was dropped) ends the
/// sink. It keeps reading after a sink error, so the kernel's writer never
/// blocks on a full socket.
#[cfg(unix)]
pub(crate) fn run(mut read_end: std::os::unix::net::UnixStream, ctl: &PumpCtl) -> Option<Error> {
    use std::io::{ErrorKind as IoKind, Read};
    let end = |ctl: &PumpCtl, e: Option<Failure>| {
        let mut st = ctl.lock();
        st.ended = true;
        st.has_sink = false;
        if let Some(e) = &e {
            st.failure = Some(e.clone());
        }
        drop(st);
        ctl.cond.notify_all();
        e
    };
    if let Err(e) = read_end.set_read_timeout(Some(PUMP_POLL)) {
        return end(ctl, Some(failure_io("cannot set up the log reader", &e)));
    }
    let mut r = Reader {
        ctl,
        framer: Framer::default(),
        out: None,
        failure: None,
        replay: Vec::new(),
        last_tsc: 0,
        sink_closed: false,
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut read_error = None;
    while !eof {
        match read_end.read(&mut buf) {
            Ok(0) => eof = true,
            Ok(n) => r.take(&buf[..n]),
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(e) => {
                read_error = Some(failure_io("cannot read hwpmc's log", &e));
                break;
            }
        }
        let req = {
            let mut st = ctl.lock();
            (st.requested > st.done)
                .then(|| st.request.take().map(|q| (q, st.requested)))
                .flatten()
        };
        let Some((req, ticket)) = req else {
            continue;
        };
        // Take in what the kernel has written so far, without blocking.
        let mut drain_error = None;
        if let Err(e) = read_end.set_nonblocking(true) {
            drain_error = Some(failure_io("cannot drain hwpmc's log", &e));
        }
        let mut drained = 0u64;
        while drained < DRAIN_MAX && drain_error.is_none() {
            match read_end.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    drained += n as u64;
                    r.take(&buf[..n]);
                }
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if let Err(e) = read_end.set_nonblocking(false) {
            drain_error.get_or_insert(failure_io("cannot drain hwpmc's log", &e));
        }
        let result = match req {
            Request::Flush => drain_error.or_else(|| {
                r.failure.clone().or_else(|| {
                    r.out.as_mut().and_then(|o| o.flush().err()).inspect(|e| {
                        r.failure = Some(e.clone());
                    })
                })
            }),
            // Closing reports how the sink ended; replacing reports how the
            // new one started (the old sink's errors have no caller left).
            Request::Swap(None) => {
                let ended = r.end_sink();
                drain_error.or(ended)
            }
            Request::Swap(Some((sink, format))) => {
                let _ = r.end_sink();
                r.start_sink(sink, format).or(drain_error)
            }
        };
        let mut st = ctl.lock();
        st.done = st.done.max(ticket);
        st.result = result;
        drop(st);
        ctl.cond.notify_all();
    }
    let ended = r.end_sink();
    end(ctl, read_error.or(ended))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_kind_of(e: &Error) -> Option<std::io::ErrorKind> {
        std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind)
    }

    #[test]
    fn an_io_error_gives_its_errno_and_kind() {
        let full = failure_io(
            "cannot write the log",
            &std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(
            (full.kind(), full.op(), full.errno()),
            (ErrorKind::Os, Op::Log, Some(28))
        );
        assert_eq!(io_kind_of(&full), Some(std::io::ErrorKind::StorageFull));
        assert!(full
            .message()
            .starts_with("the log reader stopped writing the log: cannot write the log: "));
        for n in [1, 13] {
            let refused = failure_io(
                "cannot write the log",
                &std::io::Error::from_raw_os_error(n),
            );
            assert_eq!(
                (refused.kind(), refused.errno()),
                (ErrorKind::Permission, Some(n))
            );
        }
        let pipe = failure_io("x", &std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!((pipe.kind(), pipe.errno()), (ErrorKind::Os, None));
        assert_eq!(io_kind_of(&pipe), Some(std::io::ErrorKind::BrokenPipe));
    }

    #[test]
    fn a_pmc_error_inside_the_chain_keeps_its_kind() {
        let inner = Error::new(ErrorKind::NoSuchProcess, Op::Log, "the reader exited")
            .with_errno(32)
            .with_help("restart it");
        let f = failure_io("cannot write the log", &std::io::Error::other(inner));
        assert_eq!(
            (f.kind(), f.errno(), f.help()),
            (ErrorKind::NoSuchProcess, Some(32), Some("restart it"))
        );
        assert_eq!(
            f.message(),
            "the log reader stopped writing the log: cannot write the log: the reader exited"
        );
        // Through pmc-log's writer error too.
        let w = pmc_log::WriteError::Io(std::io::Error::other(Error::new(
            ErrorKind::Permission,
            Op::Log,
            "no",
        )));
        assert_eq!(from_chain("convert", &w).kind(), ErrorKind::Permission);
    }

    #[test]
    fn a_writer_that_failed_earlier_gives_the_kind_it_kept() {
        let w = pmc_log::WriteError::Failed {
            kind: std::io::ErrorKind::PermissionDenied,
            dropped: 3,
        };
        let f = from_chain("convert", &w);
        assert_eq!((f.kind(), f.errno()), (ErrorKind::Permission, None));
        assert_eq!(io_kind_of(&f), Some(std::io::ErrorKind::PermissionDenied));
        let text = failure_msg("the reader has ended");
        assert_eq!(
            (text.kind(), text.message()),
            (
                ErrorKind::Os,
                "the log reader stopped writing the log: the reader has ended"
            )
        );
    }
}
