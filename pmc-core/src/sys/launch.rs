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
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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

fn os_error(op: Op, what: String) -> Error {
    let e = std::io::Error::last_os_error();
    let kind = match e.raw_os_error() {
        Some(libc::EMFILE) | Some(libc::ENFILE) => ErrorKind::TooManyOpenFiles,
        _ => ErrorKind::Os,
    };
    let mut err = Error::new(kind, op, what);
    if let Some(n) = e.raw_os_error() {
        err = err.with_errno(n);
    }
    err
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid, writable array of two c_ints, as pipe(2) requires.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(os_error(
            Op::Launch,
            "cannot create a pipe to launch the command".into(),
        ));
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
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

        // SAFETY: fork has no memory-safety preconditions; the child branch
        // below only calls async-signal-safe functions (close, read, signal,
        // execv, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os_error(Op::Launch, "fork failed".into()));
        }
        if pid == 0 {
            // SAFETY: the child owns copies of the descriptors; `c_path` and
            // `argv` (NUL-terminated, pointing into `c_args`) stay alive
            // until execv or _exit, and nothing here allocates.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                let mut byte = 0u8;
                let n = loop {
                    let n = libc::read(go_r.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
                    if n < 0 && *errno_location() == libc::EINTR {
                        continue;
                    }
                    break n;
                };
                if n != 1 {
                    // The parent gave up (dropped the handle): do not run the command.
                    libc::_exit(127);
                }
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::execv(c_path.as_ptr(), argv.as_ptr());
                let e: i32 = *errno_location();
                let bytes = e.to_ne_bytes();
                libc::write(err_w.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
                libc::_exit(127);
            }
        }
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
        let byte = [1u8];
        // SAFETY: `go` is an open pipe write end; `byte` is valid for one byte.
        let n = unsafe { libc::write(go.as_raw_fd(), byte.as_ptr().cast(), 1) };
        drop(go);
        if n != 1 {
            return Err(os_error(
                Op::Launch,
                format!("cannot resume child {}", self.pid),
            ));
        }
        let Some(err) = self.exec_err.take() else {
            return Ok(());
        };
        let mut buf = [0u8; 4];
        let mut got = 0usize;
        while got < buf.len() {
            let rest = &mut buf[got..];
            // SAFETY: `err` is an open pipe read end; `rest` is valid for `rest.len()` bytes.
            let n = unsafe { libc::read(err.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(os_error(
                    Op::Launch,
                    "cannot learn whether exec succeeded".into(),
                ));
            }
            if n == 0 {
                break;
            }
            got += n as usize;
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
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid, writable c_int; `pid` is our child.
        let r = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if r == 0 {
            return Ok(None);
        }
        if r != self.pid as libc::pid_t {
            return Err(os_error(
                Op::Launch,
                format!("cannot wait for child {}", self.pid),
            ));
        }
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
            let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `p` is one valid, writable pollfd for the duration of
            // the call; `fd` stays open until after it returns.
            let _ = unsafe { libc::poll(&mut p, 1, ms) };
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
        let mut status: libc::c_int = 0;
        loop {
            // SAFETY: `status` is a valid, writable c_int; `pid` is our child.
            let r = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, 0) };
            if r == self.pid as libc::pid_t {
                break;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(os_error(
                Op::Launch,
                format!("cannot wait for child {}", self.pid),
            ));
        }
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
    // SAFETY: pidfd_open takes two integers and returns a new descriptor
    // (or -1); it touches no user memory.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) };
    let fd = libc::c_int::try_from(fd).ok().filter(|f| *f >= 0)?;
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
unsafe fn errno_location() -> *mut libc::c_int {
    // SAFETY: __errno_location always returns the calling thread's errno slot.
    unsafe { libc::__errno_location() }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
unsafe fn errno_location() -> *mut libc::c_int {
    // SAFETY: __error always returns the calling thread's errno slot.
    unsafe { libc::__error() }
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
