//! The reader thread: cuts hwpmc's stream into whole records, keeps the
//! records that describe the session for the next sink, and writes the
//! current sink (hwpmc's format, or pmc-log converted as it arrives).

use super::ctl::{LogFormat, PumpCtl, Request};
use super::failure::{failure_io, from_chain, Failure};
use super::replay::Replay;
use pmc_core::{Error, LogSink};
use pmc_log::bytes::ByteCursor;
use pmc_log::hwpmc::{
    pmclog_header_magic_ok, pmclog_header_type, PMCLOG_HEADER_LEN, PMCLOG_TYPE_CLOSELOG,
};
use std::time::Duration;

/// How long the log reader blocks in one `read(2)` before it looks for a
/// request: the most a request waits on an idle log.
#[cfg(unix)]
const PUMP_POLL: Duration = Duration::from_millis(20);

/// At most this much is drained for one request, so a stream that never
/// pauses cannot hold the request forever.
#[cfg(unix)]
const DRAIN_MAX: u64 = 16 << 20;

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
    /// The session's state for the next sink (`replay.rs`).
    replay: Replay,
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
                if Replay::wants(ty) {
                    replay_dropped += replay.take(rec);
                    kept = true;
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
        let r = out.take(&self.replay.bytes()).err();
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
        replay: Replay::default(),
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
