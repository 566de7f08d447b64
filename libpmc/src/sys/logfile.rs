//! The log's file: every write with `SIGPIPE` blocked in the writing thread.

use std::ptr;

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
