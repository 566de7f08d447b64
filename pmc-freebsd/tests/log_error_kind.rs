//! The log pump's error keeps the kind it had where the pump met it: a sink refused with
//! EACCES is a permission error, a sink failing with a `pmc_core::Error` inside its
//! `io::Error` keeps that error's kind, errno and help; the same error reaches
//! `Backend::log_error`, `flush_log` and `close_log`. (A full disk, `ErrorKind::Os` with
//! ENOSPC, is in `log_pump_error.rs`.)

use crate::common::{run_until_log_error, sample_make_into};
use pmc_core::{Backend as _, Error, ErrorKind, Op, Pmc as _};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A sink that takes `room` bytes, then fails every write with `fail()`.
#[derive(Clone)]
struct FailingSink {
    written: Arc<Mutex<usize>>,
    room: usize,
    fail: fn() -> std::io::Error,
}

impl Write for FailingSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut w = self.written.lock().unwrap();
        let room = self.room.saturating_sub(*w);
        if room == 0 {
            return Err((self.fail)());
        }
        let n = b.len().min(room);
        *w += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Samples another process into `sink` until the pump reports an error; returns it, and
/// what `flush_log` and `close_log` say afterwards.
fn fail_sink(fail: fn() -> std::io::Error) -> (Error, Error, Error) {
    let sink = FailingSink {
        written: Arc::new(Mutex::new(0)),
        room: 32 << 10,
        fail,
    };
    let (sim, b, mut p) = sample_make_into(sink);
    let (err, _) = run_until_log_error(&sim, &b, "the sink never failed");
    let flushed = b.flush_log().unwrap_err();
    p.stop().unwrap();
    let closed = b.close_log().unwrap_err();
    (err, flushed, closed)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_sink_refused_with_eacces_is_a_permission_error() {
    let (err, flushed, closed) = fail_sink(|| std::io::Error::from_raw_os_error(13));
    for e in [&err, &flushed, &closed] {
        assert_eq!((e.kind(), e.op()), (ErrorKind::Permission, Op::Log), "{e}");
        assert_eq!(e.errno(), Some(13), "{e}");
        assert!(
            e.message()
                .starts_with("the log reader stopped writing the log: "),
            "{e}"
        );
        let io = std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io::Error is the source");
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_sink_failing_with_a_pmc_error_keeps_its_kind_errno_and_help() {
    let (err, flushed, closed) = fail_sink(|| {
        std::io::Error::other(
            Error::new(ErrorKind::NoSuchProcess, Op::Log, "the live reader exited")
                .with_errno(32)
                .with_help("restart the report"),
        )
    });
    for e in [&err, &flushed, &closed] {
        assert_eq!(
            (e.kind(), e.op()),
            (ErrorKind::NoSuchProcess, Op::Log),
            "{e}"
        );
        assert_eq!(e.errno(), Some(32), "{e}");
        assert_eq!(e.help(), Some("restart the report"), "{e}");
        assert!(e.message().ends_with("the live reader exited"), "{e}");
        let inner = std::error::Error::source(e)
            .and_then(|s| s.downcast_ref::<Error>())
            .expect("the sink's own error is the source");
        assert_eq!(inner.message(), "the live reader exited");
    }
}
