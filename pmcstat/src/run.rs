//! Waiting for the measured command (or a pid, or a duration) to end, with
//! periodic work: shared by counting and sampling mode.

use crate::count::Failure;
use pmc::launch::PausedChild;
use pmc::Target;
use std::ops::ControlFlow;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

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
    /// Waits until the child exits, the target pid disappears (Linux: its
    /// `/proc` entry), the duration passes, or `on_poll` breaks (the `-T`
    /// view's `q`; the child is then still running). Calls `on_interval` every
    /// interval and `on_poll` about every `poll_every` (if given); an error
    /// from either ends the wait with that error. Between
    /// those it sleeps: on the child itself where the OS allows (a pidfd on
    /// Linux), so its exit is seen at once without periodic wake-ups.
    /// Returns the child's exit status, if there was a child.
    pub fn run(
        &self,
        mut child: Option<&mut PausedChild>,
        target: Option<Target>,
        mut on_interval: impl FnMut() -> Result<(), Failure>,
        poll_every: Option<Duration>,
        mut on_poll: impl FnMut(Instant) -> Result<ControlFlow<()>, Failure>,
    ) -> Result<Option<ExitStatus>, Failure> {
        /// How often a `-t PID` target is checked for having exited.
        const PID_CHECK: Duration = Duration::from_millis(100);
        let deadline = self
            .duration
            .map(|d| self.started + Duration::from_secs_f64(d));
        let interval = self.interval.map(Duration::from_secs_f64);
        let mut next_tick = interval.map(|i| self.started + i);
        let mut next_poll = poll_every.map(|p| self.started + p);
        loop {
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
            // Sleep until the next thing to do.
            let mut until: Option<Instant> = None;
            for t in [deadline, next_tick, next_poll].into_iter().flatten() {
                until = Some(until.map_or(t, |u: Instant| u.min(t)));
            }
            let now = Instant::now();
            match child.as_deref_mut() {
                Some(c) => {
                    let timeout = until.map_or(Duration::from_secs(3600), |u| {
                        u.saturating_duration_since(now)
                    });
                    if let Some(s) = c.wait_timeout(timeout)? {
                        return Ok(Some(s));
                    }
                }
                None => {
                    if let Some(Target::Pid(pid)) = target {
                        if cfg!(target_os = "linux")
                            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
                        {
                            return Ok(None);
                        }
                    }
                    let timeout = until.map_or(PID_CHECK, |u| {
                        u.saturating_duration_since(now).min(PID_CHECK)
                    });
                    std::thread::sleep(timeout.max(Duration::from_micros(100)));
                }
            }
        }
    }
}

/// The shell convention: the exit code, or 128 + the signal.
pub fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}
