//! Launch a command paused before `exec`, so counters can be attached first.
//!
//! This is how `perf stat` and `pmcstat` count a command from its first
//! instruction: fork, let the child wait on a pipe, attach the PMCs to the
//! child's pid (on Linux with `enable_on_exec`), then let it `exec`.
//!
//! `std::process::Command` cannot do this: its `spawn` waits until the child
//! has exec'd (to report exec errors), so a child blocked before exec would
//! deadlock it. We fork ourselves, doing no allocation between `fork` and
//! `exec`, and report exec failures through a close-on-exec pipe as std does.

use crate::error::{Error, ErrorKind, Op, Result};
use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// A child process created by [`PausedChild::spawn`], stopped before `exec`
/// until [`resume`](PausedChild::resume).
///
/// Dropping it before resuming makes the child exit (status 127) without
/// running the command, and reaps it.
///
/// ```
/// # #[cfg(unix)] {
/// use pmc_core::launch::PausedChild;
/// let mut child = PausedChild::spawn("true", &[]).unwrap();
/// assert!(child.pid() > 0);
/// // ... attach PMCs to Target::Exec(child.pid()) here ...
/// child.resume().unwrap();
/// assert!(child.wait().unwrap().success());
/// # }
/// ```
#[derive(Debug)]
pub struct PausedChild {
    pid: u32,
    program: PathBuf,
    go: Option<OwnedFd>,
    exec_err: Option<OwnedFd>,
    status: Option<ExitStatus>,
}

fn os_error(op: Op, what: String, e: Errno) -> Error {
    let kind = match e {
        Errno::EMFILE | Errno::ENFILE => ErrorKind::TooManyOpenFiles,
        _ => ErrorKind::Os,
    };
    Error::new(kind, op, what).with_errno(e as i32)
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| {
        os_error(
            Op::Launch,
            "cannot create a pipe to launch the command".into(),
            e,
        )
    })
}

/// The raw `wait(2)` status of a child that exited or was killed (the
/// encoding `ExitStatus::from_raw` reads, the same on Linux, FreeBSD and
/// macOS); `None` for the stop/continue reports, which only `WUNTRACED`,
/// `WCONTINUED` or a tracer see.
fn raw_wait_status(ws: WaitStatus) -> Option<i32> {
    match ws {
        WaitStatus::Exited(_, code) => Some((code & 0xff) << 8),
        WaitStatus::Signaled(_, sig, core) => Some(sig as i32 | if core { 0x80 } else { 0 }),
        _ => None,
    }
}

/// The child's side of [`PausedChild::spawn`], between `fork` and `exec`:
/// waits for the go byte, then `execv`s, reporting a failure's errno on
/// `err_w`. Only async-signal-safe calls, on memory prepared before the fork;
/// nothing here allocates (which is why `execv` is libc's: nix's builds its
/// argv array on the heap).
fn child_after_fork(
    go_r: OwnedFd,
    go_w: OwnedFd,
    err_r: OwnedFd,
    err_w: OwnedFd,
    path: &CStr,
    argv: &[*const libc::c_char],
) -> ! {
    // The child's copies of the parent's ends: close(2).
    drop(go_w);
    drop(err_r);
    let mut byte = [0u8];
    let n = loop {
        match nix::unistd::read(&go_r, &mut byte) {
            Err(Errno::EINTR) => continue,
            r => break r,
        }
    };
    // Without the go byte the parent gave up (dropped the handle): do not
    // run the command.
    if n == Ok(1) {
        // SAFETY: restoring SIGPIPE's default disposition installs no handler
        // (the child runs no Rust code after exec). `path` is a NUL-terminated
        // string and `argv` a null-terminated array of pointers into the
        // caller's `CString`s, all alive until execv replaces the image.
        unsafe {
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigDfl,
            );
            libc::execv(path.as_ptr(), argv.as_ptr());
        }
        let e = Errno::last_raw();
        let _ = nix::unistd::write(&err_w, &e.to_ne_bytes());
    }
    // SAFETY: _exit ends the process at once, running no atexit handlers or
    // destructors (nix has no wrapper; std's exit is not async-signal-safe).
    unsafe { libc::_exit(127) }
}

/// Finds `program` as `execvp` would: as given if it contains a `/`, else
/// in each directory of `$PATH`.
fn resolve(program: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
}

impl PausedChild {
    /// Forks a child that will run `program` with `args` (not including
    /// argv\[0\]) once resumed. The child inherits the environment, the
    /// working directory and stdio.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Os`] when `program` is not found or the fork fails,
    /// [`ErrorKind::TooManyOpenFiles`] when no pipe can be made.
    pub fn spawn(program: impl AsRef<OsStr>, args: &[OsString]) -> Result<PausedChild> {
        let program = program.as_ref();
        let path = resolve(program).ok_or_else(|| {
            Error::new(
                ErrorKind::Os,
                Op::Launch,
                format!("command not found: {}", program.to_string_lossy()),
            )
            .with_errno(libc::ENOENT)
            .with_help("check the command's name and $PATH")
        })?;
        let nul = |s: &OsStr| {
            CString::new(s.as_bytes()).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    Op::Launch,
                    "command argument contains a NUL byte",
                )
            })
        };
        // Everything the child touches is built before fork.
        let c_path = nul(path.as_os_str())?;
        let mut c_args = vec![nul(program)?];
        for a in args {
            c_args.push(nul(a)?);
        }
        let mut argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());

        let (go_r, go_w) = pipe_cloexec()?;
        let (err_r, err_w) = pipe_cloexec()?;

        // SAFETY: nix's fork is unsafe because the child of a multithreaded
        // process may only call async-signal-safe functions until it execs:
        // `child_after_fork` calls only close, read, signal, execv, write and
        // _exit, on memory prepared before the fork, and never returns.
        let pid = match unsafe { nix::unistd::fork() } {
            Err(e) => return Err(os_error(Op::Launch, "fork failed".into(), e)),
            Ok(ForkResult::Child) => child_after_fork(go_r, go_w, err_r, err_w, &c_path, &argv),
            Ok(ForkResult::Parent { child }) => child.as_raw(),
        };
        drop(go_r);
        drop(err_w);
        Ok(PausedChild {
            pid: pid as u32,
            program: path,
            go: Some(go_w),
            exec_err: Some(err_r),
            status: None,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn nix_pid(&self) -> Pid {
        Pid::from_raw(self.pid as libc::pid_t)
    }

    /// Lets the child `exec` the command, and waits until it has (or has
    /// failed to).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidState`] when already resumed; [`ErrorKind::Os`]
    /// with the errno when `exec` failed (the child has then exited).
    pub fn resume(&mut self) -> Result<()> {
        let Some(go) = self.go.take() else {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Launch,
                "the child was already resumed",
            ));
        };
        let n = nix::unistd::write(&go, &[1u8]);
        drop(go);
        if n != Ok(1) {
            return Err(os_error(
                Op::Launch,
                format!("cannot resume child {}", self.pid),
                n.err().unwrap_or_else(Errno::last),
            ));
        }
        let Some(err) = self.exec_err.take() else {
            return Ok(());
        };
        let mut buf = [0u8; 4];
        let mut got = 0usize;
        while got < buf.len() {
            let n = match nix::unistd::read(&err, &mut buf[got..]) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Err(os_error(
                        Op::Launch,
                        "cannot learn whether exec succeeded".into(),
                        e,
                    ))
                }
            };
            if n == 0 {
                break;
            }
            got += n;
        }
        if got == 0 {
            return Ok(()); // the close-on-exec pipe closed: exec succeeded
        }
        let errno = i32::from_ne_bytes(buf);
        let _ = self.wait();
        Err(Error::new(
            ErrorKind::Os,
            Op::Launch,
            format!("cannot execute {}", self.program.display()),
        )
        .with_errno(errno))
    }

    /// Returns the exit status if the child has exited, without blocking.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        let status = match waitpid(self.nix_pid(), Some(WaitPidFlag::WNOHANG)) {
            Ok(ws) => match raw_wait_status(ws) {
                Some(status) => status,
                None => return Ok(None), // still alive (or a stop report)
            },
            Err(e) => {
                return Err(os_error(
                    Op::Launch,
                    format!("cannot wait for child {}", self.pid),
                    e,
                ))
            }
        };
        let s = ExitStatus::from_raw(status);
        self.status = Some(s);
        Ok(Some(s))
    }

    /// Waits up to `timeout` for the child to exit; `Ok(None)` if it is
    /// still running. On Linux this sleeps in `poll(2)` on a pidfd, so it
    /// wakes the moment the child exits; elsewhere it polls every 5 ms.
    pub fn wait_timeout(&mut self, timeout: std::time::Duration) -> Result<Option<ExitStatus>> {
        if let Some(s) = self.try_wait()? {
            return Ok(Some(s));
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = pidfd_open(self.pid) {
            use nix::poll::{PollFd, PollFlags, PollTimeout};
            use std::os::fd::AsFd;
            let ms = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
            let _ = nix::poll::poll(&mut [PollFd::new(fd.as_fd(), PollFlags::POLLIN)], ms);
            return self.try_wait();
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let now = std::time::Instant::now();
            if now >= deadline {
                return self.try_wait();
            }
            std::thread::sleep((deadline - now).min(std::time::Duration::from_millis(5)));
            if let Some(s) = self.try_wait()? {
                return Ok(Some(s));
            }
        }
    }

    /// Waits for the child to exit (resuming it first if needed is *not*
    /// done: a paused child that is never resumed exits with status 127
    /// when this handle is dropped).
    pub fn wait(&mut self) -> Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        if self.go.is_some() {
            // Never resumed: tell it to give up, so waiting cannot hang.
            self.go = None;
        }
        let status = loop {
            match waitpid(self.nix_pid(), None) {
                Ok(ws) => {
                    if let Some(status) = raw_wait_status(ws) {
                        break status;
                    }
                }
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Err(os_error(
                        Op::Launch,
                        format!("cannot wait for child {}", self.pid),
                        e,
                    ))
                }
            }
        };
        let s = ExitStatus::from_raw(status);
        self.status = Some(s);
        Ok(s)
    }
}

impl Drop for PausedChild {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.wait();
        }
    }
}

/// `pidfd_open(pid, 0)` (Linux 5.3+), or `None` where the kernel lacks it.
#[cfg(target_os = "linux")]
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes two integers and returns a new descriptor
    // (or -1); it touches no user memory.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) };
    let fd = libc::c_int::try_from(fd).ok().filter(|f| *f >= 0)?;
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_after_resume_with_exit_status() {
        let mut c = PausedChild::spawn("sh", &["-c".into(), "exit 7".into()]).unwrap();
        c.resume().unwrap();
        assert_eq!(c.wait().unwrap().code(), Some(7));
    }

    #[test]
    fn wait_timeout_returns_at_exit_or_timeout() {
        let mut c = PausedChild::spawn("sleep", &["0.2".into()]).unwrap();
        c.resume().unwrap();
        let t0 = std::time::Instant::now();
        assert!(c
            .wait_timeout(std::time::Duration::from_millis(20))
            .unwrap()
            .is_none());
        assert!(t0.elapsed() >= std::time::Duration::from_millis(15));
        let s = c.wait_timeout(std::time::Duration::from_secs(30)).unwrap();
        assert!(s.is_some_and(|s| s.success()));
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "woke at exit, not at the timeout"
        );
    }

    #[test]
    fn dropped_unresumed_child_does_not_run() {
        let dir = std::env::temp_dir().join(format!("pmc-launch-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let c = PausedChild::spawn("touch", &[dir.clone().into_os_string()]).unwrap();
        drop(c);
        assert!(!dir.exists(), "the command ran although never resumed");
    }

    #[test]
    fn missing_command_is_reported() {
        let e = PausedChild::spawn("definitely-not-a-command-xyz", &[]).unwrap_err();
        assert!(e.to_string().contains("command not found"), "{e}");
        let e = {
            let mut c = PausedChild::spawn("/etc/passwd", &[]).unwrap();
            c.resume().unwrap_err()
        };
        assert_eq!(e.errno(), Some(libc::EACCES), "{e}");
    }
}
