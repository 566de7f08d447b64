//! What the backend and the reader thread share: requests (flush, swap
//! the sink), their answers, the sink's failure, the reader's counters.

use super::failure::{failure_msg, Failure};
use pmc_core::{Error, ErrorKind, LogSink, Op, Result};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a request waits for the log reader.
const REQUEST_WAIT: Duration = Duration::from_secs(30);

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
pub(super) enum Request {
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
    /// Bytes of session records dropped from the replay state (over
    /// `replay::OPTIONAL_MAX`, oldest first).
    pub replay_dropped: u64,
}

#[derive(Default)]
pub(super) struct PumpState {
    pub(super) request: Option<Request>,
    pub(super) requested: u64,
    pub(super) done: u64,
    /// The result of the last request served.
    pub(super) result: Option<Failure>,
    /// The reader thread has ended.
    pub(super) ended: bool,
    /// A sink is configured.
    pub(super) has_sink: bool,
    /// Why the current sink stopped receiving records, if it did.
    pub(super) failure: Option<Failure>,
    pub(super) stats: PumpStats,
}

/// Shared by the backend and its log reader thread.
#[derive(Default)]
pub(crate) struct PumpCtl {
    pub(super) state: Mutex<PumpState>,
    pub(super) cond: Condvar,
}

impl PumpCtl {
    pub(super) fn lock(&self) -> MutexGuard<'_, PumpState> {
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
