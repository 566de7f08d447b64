//! Waiting for the measured command (or a pid, or a duration) to end, with
//! periodic work: shared by counting and sampling mode.

use crate::error::Failure;
use crate::sys::launch::{Progress, Session};
use std::ops::ControlFlow;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The signals that stop a run, as in perf: counting stops, the counts are printed, the
/// rings are drained and the log is closed.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

struct StopFlags {
    fired: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

static STOP: OnceLock<StopFlags> = OnceLock::new();

/// Set by SIGCONT: pmcstat was stopped (SIGSTOP, SIGTSTP, a debugger) and continued. While
/// stopped it drained nothing, so what the kernel could not fit in the rings then is lost;
/// the summary says so ([`was_continued`]).
static CONTINUED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether pmcstat was continued after a stop (SIGCONT) during the run.
pub fn was_continued() -> bool {
    CONTINUED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// Installs the handlers for [`STOP_SIGNALS`] (through `signal-hook`, which keeps the
/// handlers async-signal-safe: they only store to atomics or call `_exit`).
///
/// - The first SIGINT, SIGTERM or SIGHUP is recorded; [`Wait::run`] sees it within
///   [`SIGNAL_CHECK`], passes it on to the launched command (which is then waited for, so it
///   is never orphaned) or, with `-t PID`/`-l`, ends the wait; the caller then stops the
///   PMCs, prints or logs what was counted and closes the log.
/// - A second one exits at once with status 128 + the signal, as perf does on a second
///   Ctrl-C.
pub fn arm_stop_signals() -> std::io::Result<()> {
    let flags = STOP.get_or_init(|| StopFlags {
        fired: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    });
    for sig in STOP_SIGNALS {
        // Registered first, so it sees the flag as it was before this signal.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&flags.fired))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&flags.which), sig as usize)?;
        signal_hook::flag::register(sig, Arc::clone(&flags.fired))?;
    }
    // A handler for SIGCONT does not change what it does (the kernel continues the process
    // whatever the handler); it only records that it came.
    let continued = CONTINUED.get_or_init(|| Arc::new(AtomicBool::new(false)));
    signal_hook::flag::register(signal_hook::consts::SIGCONT, Arc::clone(continued))?;
    Ok(())
}

/// Whether the reader of the results (standard output or error, `-o /dev/stdout`, a pipe)
/// went away: a write met EPIPE. The run then stops as on a stop signal (SIGPIPE), and
/// pmcstat ends as perf does, killed by SIGPIPE ([`crate::dest::die_if_reader_gone`]).
static READER_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the reader of the results went away, if `e` says so (EPIPE).
pub(crate) fn note_reader_gone(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        READER_GONE.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether a write of the results met EPIPE.
pub fn reader_gone() -> bool {
    READER_GONE.load(std::sync::atomic::Ordering::SeqCst)
}

/// The stop signal received, if any; SIGPIPE when the reader of the results went away
/// (a write met EPIPE): the run stops as on a signal, and pmcstat ends by SIGPIPE.
pub fn stop_signal() -> Option<i32> {
    let received = STOP.get().and_then(|f| {
        if !f.fired.load(Ordering::SeqCst) {
            return None;
        }
        i32::try_from(f.which.load(Ordering::SeqCst))
            .ok()
            .filter(|s| *s > 0)
    });
    received.or_else(|| reader_gone().then_some(signal_hook::consts::SIGPIPE))
}

/// The longest a wait sleeps before looking at the stop flag (a signal usually wakes it
/// at once: `poll` and `nanosleep` return on EINTR; this only bounds the rare signal that
/// lands between the look and the sleep). Each wake-up is a context switch, ~0.1 ms of CPU
/// on a virtual machine: at 100 ms they were a third of pmcstat's CPU at 1 kHz.
pub const SIGNAL_CHECK: Duration = Duration::from_millis(500);

/// The exit status for a run: the command's (the shell's 128 + signal if it died of one),
/// else 128 + the stop signal received, else 0.
pub fn final_status(command: Option<i32>) -> u8 {
    let code = command
        .or_else(|| stop_signal().map(|s| 128 + s))
        .unwrap_or(0);
    u8::try_from(code.clamp(0, 255)).unwrap_or(1)
}

/// What ends the wait, and the periodic work to do meanwhile.
pub struct Wait {
    /// When counting started.
    pub started: Instant,
    /// `-l SECS`.
    pub duration: Option<f64>,
    /// `-w SECS`.
    pub interval: Option<f64>,
}

impl Wait {
    /// Waits until the launched command exits, the `-t` processes are gone
    /// (the library's [`Session::wait`]), the duration passes, or `on_poll`
    /// breaks (the `-T` view's `q`; the command is then still running). Calls
    /// `on_interval` every interval and `on_poll` about every `poll_every`
    /// (if given); an error from either ends the wait with that error.
    /// Between those it sleeps in the session's wait (on a pidfd on Linux,
    /// so the command's exit is seen at once). A stop signal is passed on to
    /// the command once, which is then waited for; without a command it ends
    /// the wait. Returns the command's exit status, if there was one.
    pub fn run(
        &self,
        session: &mut Session,
        mut on_interval: impl FnMut() -> Result<(), Failure>,
        poll_every: Option<Duration>,
        mut on_poll: impl FnMut(Instant) -> Result<ControlFlow<()>, Failure>,
    ) -> Result<Option<ExitStatus>, Failure> {
        let deadline = self
            .duration
            .map(|d| self.started + Duration::from_secs_f64(d));
        let interval = self.interval.map(Duration::from_secs_f64);
        let mut next_tick = interval.map(|i| self.started + i);
        let mut next_poll = poll_every.map(|p| self.started + p);
        let mut forwarded = false;
        loop {
            if let Some(sig) = stop_signal() {
                if session.child().is_none() {
                    return Ok(None);
                }
                // Pass it on once, then wait for the command to end.
                if !forwarded {
                    forwarded = true;
                    let _ = session.signal(sig);
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            if let (Some(tick), Some(iv)) = (next_tick, interval) {
                if now >= tick {
                    on_interval()?;
                    next_tick = Some(tick + iv);
                }
            }
            if let (Some(p), Some(every)) = (next_poll, poll_every) {
                if now >= p {
                    if on_poll(now)?.is_break() {
                        return Ok(None);
                    }
                    next_poll = Some(now + every);
                }
            }
            // Sleep until the next thing to do, or the end.
            let mut until: Option<Instant> = None;
            for t in [deadline, next_tick, next_poll].into_iter().flatten() {
                until = Some(until.map_or(t, |u: Instant| u.min(t)));
            }
            let timeout = until
                .map_or(SIGNAL_CHECK, |u| {
                    u.saturating_duration_since(Instant::now())
                })
                .clamp(Duration::from_micros(100), SIGNAL_CHECK);
            match session.wait(timeout)? {
                Progress::Exited(s) => return Ok(Some(s)),
                Progress::Gone => return Ok(None),
                Progress::Running => {}
            }
        }
    }
}
