//! [`PausedChild`] and the [`Command`] that makes it: a child forked
//! paused before `exec` (re-exported as `pmc::launch`).

use nix::errno::Errno;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};
use pmc_core::{Error, ErrorKind, Op, Result};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use super::stdio::Stdio;

/// A child process created by [`PausedChild::spawn`], stopped before `exec`
/// until [`resume`](PausedChild::resume).
///
/// Dropping it before resuming makes the child exit (status 127) without
/// running the command, and reaps it.
///
/// ```
/// # #[cfg(unix)] {
/// use pmc::launch::PausedChild;
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
    cwd: Option<PathBuf>,
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

/// What the child does between `fork` and `exec`, prepared before the fork
/// so that the child allocates nothing.
struct ChildSetup<'a> {
    path: &'a CStr,
    argv: &'a [*const libc::c_char],
    /// `None`: the parent's environment (`execv`).
    envp: Option<&'a [*const libc::c_char]>,
    cwd: Option<&'a CStr>,
    /// Descriptors to install as 0, 1 and 2 (`None`: inherited).
    stdio: [Option<&'a OwnedFd>; 3],
}

/// The stage of the child's setup that failed, sent before the errno.
const STAGE_EXEC: u8 = 0;
const STAGE_CHDIR: u8 = 1;
const STAGE_STDIO: u8 = 2;

/// The child's side of [`Command::spawn_paused`], between `fork` and `exec`:
/// waits for the go byte, installs stdio, changes directory, then `execv`s,
/// reporting a failure's stage and errno on `err_w`. Only async-signal-safe
/// calls, on memory prepared before the fork; nothing here allocates (which
/// is why `execv` is libc's: nix's builds its argv array on the heap).
fn child_after_fork(
    go_r: OwnedFd,
    go_w: OwnedFd,
    err_r: OwnedFd,
    err_w: OwnedFd,
    setup: &ChildSetup<'_>,
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
        let (stage, e) = child_exec(setup);
        let mut msg = [0u8; 5];
        msg[0] = stage;
        msg[1..].copy_from_slice(&e.to_ne_bytes());
        let _ = nix::unistd::write(&err_w, &msg);
    }
    // SAFETY: _exit ends the process at once, running no atexit handlers or
    // destructors (nix has no wrapper; std's exit is not async-signal-safe).
    unsafe { libc::_exit(127) }
}

/// Installs stdio and the working directory, then execs; returns only on
/// failure, with the stage that failed and its errno.
fn child_exec(setup: &ChildSetup<'_>) -> (u8, i32) {
    for (target, fd) in setup.stdio.iter().enumerate() {
        let Some(fd) = fd else { continue };
        let (src, target) = (fd.as_raw_fd(), target as libc::c_int);
        // SAFETY: dup2 and fcntl take integers and touch no user memory;
        // `src` is open (borrowed from the parent's prepared copy).
        let r = unsafe {
            if src == target {
                // Already in place (it was opened close-on-exec): keep it
                // open across exec.
                libc::fcntl(target, libc::F_SETFD, 0)
            } else {
                libc::dup2(src, target)
            }
        };
        if r < 0 {
            return (STAGE_STDIO, Errno::last_raw());
        }
    }
    if let Some(dir) = setup.cwd {
        if let Err(e) = nix::unistd::chdir(dir) {
            return (STAGE_CHDIR, e as i32);
        }
    }
    // SAFETY: restoring SIGPIPE's default disposition installs no handler
    // (the child runs no Rust code after exec). `path` is a NUL-terminated
    // string and `argv` (and `envp`) null-terminated arrays of pointers into
    // the caller's `CString`s, all alive until exec replaces the image.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
        match setup.envp {
            Some(envp) => libc::execve(setup.path.as_ptr(), setup.argv.as_ptr(), envp.as_ptr()),
            None => libc::execv(setup.path.as_ptr(), setup.argv.as_ptr()),
        };
    }
    (STAGE_EXEC, Errno::last_raw())
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

/// A command to launch paused before `exec`, built as
/// `std::process::Command` is.
///
/// Arguments, environment, working directory and stdio are set as there;
/// [`Command::spawn_paused`] forks it; the child waits until
/// [`PausedChild::resume`].
///
/// ```
/// # #[cfg(unix)] {
/// use pmc::launch::{Command, Stdio};
/// let out = std::fs::File::create(std::env::temp_dir().join("pmc-doc-launch.txt")).unwrap();
/// let mut child = Command::new("sh")
///     .args(["-c", "echo $GREETING"])
///     .env("GREETING", "hello")
///     .stdout(Stdio::from(out))
///     .stdin(Stdio::null())
///     .spawn_paused()
///     .unwrap();
/// // ... attach PMCs to Target::Exec(child.pid()) here ...
/// child.resume().unwrap();
/// assert!(child.wait().unwrap().success());
/// # }
/// ```
#[derive(Debug)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    /// Changes to the inherited environment, in order (`None`: removed).
    env: Vec<(OsString, Option<OsString>)>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stdio: [Stdio; 3],
}

impl Command {
    /// A command running `program` (found in `$PATH` unless it contains a
    /// `/`), with no arguments, the caller's environment, working
    /// directory and stdio.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            stdio: [Stdio::Inherit, Stdio::Inherit, Stdio::Inherit],
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the command.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable for the command.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the command from an empty environment (then [`Command::env`]).
    pub fn env_clear(&mut self) -> &mut Command {
        self.env.clear();
        self.env_clear = true;
        self
    }

    /// The command's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// The command's standard input.
    pub fn stdin(&mut self, s: impl Into<Stdio>) -> &mut Command {
        self.stdio[0] = s.into();
        self
    }

    /// The command's standard output.
    pub fn stdout(&mut self, s: impl Into<Stdio>) -> &mut Command {
        self.stdio[1] = s.into();
        self
    }

    /// The command's standard error.
    pub fn stderr(&mut self, s: impl Into<Stdio>) -> &mut Command {
        self.stdio[2] = s.into();
        self
    }

    /// The program, as given.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The environment the child execs with, or `None` for the caller's.
    fn envp(&self) -> Result<Option<Vec<CString>>> {
        if self.env.is_empty() && !self.env_clear {
            return Ok(None);
        }
        let mut vars: Vec<(OsString, OsString)> = if self.env_clear {
            Vec::new()
        } else {
            std::env::vars_os().collect()
        };
        for (k, v) in &self.env {
            vars.retain(|(key, _)| key != k);
            if let Some(v) = v {
                vars.push((k.clone(), v.clone()));
            }
        }
        vars.into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                nul(OsStr::from_bytes(&kv), "environment variable")
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// The descriptors for 0, 1 and 2, prepared before the fork: copies of
    /// the caller's (close-on-exec until installed), `/dev/null` opened.
    fn stdio_fds(&self) -> Result<[Option<OwnedFd>; 3]> {
        let mut out: [Option<OwnedFd>; 3] = [None, None, None];
        for (slot, s) in out.iter_mut().zip(&self.stdio) {
            *slot = match s {
                Stdio::Inherit => None,
                Stdio::Null => Some(
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open("/dev/null")
                        .map(OwnedFd::from)
                        .map_err(|e| {
                            io_error("cannot open /dev/null for the command's stdio", &e)
                        })?,
                ),
                Stdio::Fd(fd) => Some(fd.try_clone().map_err(|e| {
                    io_error("cannot copy a descriptor for the command's stdio", &e)
                })?),
            };
        }
        Ok(out)
    }

    /// Forks a child that will run the command once resumed.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Os`] when the program is not found or the fork fails,
    /// [`ErrorKind::TooManyOpenFiles`] when no pipe can be made,
    /// [`ErrorKind::InvalidArgument`] for an argument or variable with a NUL
    /// byte. A working directory or stdio that cannot be installed is
    /// reported by [`PausedChild::resume`], as an `exec` failure is.
    pub fn spawn_paused(&mut self) -> Result<PausedChild> {
        let program = self.program.as_os_str();
        let path = resolve(program).ok_or_else(|| {
            Error::new(
                ErrorKind::Os,
                Op::Launch,
                format!("command not found: {}", program.to_string_lossy()),
            )
            .with_errno(libc::ENOENT)
            .with_help("check the command's name and $PATH")
        })?;
        // Everything the child touches is built before fork.
        let c_path = nul(path.as_os_str(), "command path")?;
        let mut c_args = vec![nul(program, "command argument")?];
        for a in &self.args {
            c_args.push(nul(a, "command argument")?);
        }
        let mut argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let c_env = self.envp()?;
        let envp: Option<Vec<*const libc::c_char>> = c_env.as_ref().map(|vars| {
            let mut v: Vec<_> = vars.iter().map(|a| a.as_ptr()).collect();
            v.push(std::ptr::null());
            v
        });
        let c_cwd = match &self.cwd {
            Some(d) => Some(nul(d.as_os_str(), "working directory")?),
            None => None,
        };
        let fds = self.stdio_fds()?;
        let setup = ChildSetup {
            path: &c_path,
            argv: &argv,
            envp: envp.as_deref(),
            cwd: c_cwd.as_deref(),
            stdio: [fds[0].as_ref(), fds[1].as_ref(), fds[2].as_ref()],
        };

        let (go_r, go_w) = pipe_cloexec()?;
        let (err_r, err_w) = pipe_cloexec()?;

        // SAFETY: nix's fork is unsafe because the child of a multithreaded
        // process may only call async-signal-safe functions until it execs:
        // `child_after_fork` calls only close, read, dup2, fcntl, chdir,
        // signal, execv(e), write and _exit, on memory prepared before the
        // fork, and never returns.
        let pid = match unsafe { nix::unistd::fork() } {
            Err(e) => return Err(os_error(Op::Launch, "fork failed".into(), e)),
            Ok(ForkResult::Child) => child_after_fork(go_r, go_w, err_r, err_w, &setup),
            Ok(ForkResult::Parent { child }) => child.as_raw(),
        };
        drop(go_r);
        drop(err_w);
        Ok(PausedChild {
            pid: pid as u32,
            program: path,
            cwd: self.cwd.clone(),
            go: Some(go_w),
            exec_err: Some(err_r),
            status: None,
        })
    }
}

fn nul(s: &OsStr, what: &str) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            Op::Launch,
            format!("{what} contains a NUL byte"),
        )
    })
}

fn io_error(what: &str, e: &std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(n) => os_error(Op::Launch, what.to_owned(), Errno::from_raw(n)),
        None => Error::new(ErrorKind::Os, Op::Launch, format!("{what}: {e}")),
    }
}

impl PausedChild {
    /// Forks a child that will run `program` with `args` (not including
    /// argv\[0\]) once resumed. The child inherits the environment, the
    /// working directory and stdio; [`Command`] sets them.
    ///
    /// # Errors
    ///
    /// As [`Command::spawn_paused`].
    pub fn spawn(program: impl AsRef<OsStr>, args: &[OsString]) -> Result<PausedChild> {
        Command::new(program).args(args).spawn_paused()
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
        let mut buf = [0u8; 5];
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
        let errno = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
        let _ = self.wait();
        let (what, help) = match buf[0] {
            STAGE_CHDIR => (
                format!(
                    "cannot change the command's working directory to {}",
                    self.cwd.as_deref().unwrap_or(Path::new("?")).display()
                ),
                "give Command::current_dir a directory that exists and that the command may enter",
            ),
            STAGE_STDIO => (
                "cannot install the command's stdio".to_owned(),
                "give Command::stdin/stdout/stderr an open descriptor (a file, a pipe end)",
            ),
            _ => (
                format!("cannot execute {}", self.program.display()),
                "check that the program is an executable file the command may run",
            ),
        };
        Err(Error::new(ErrorKind::Os, Op::Launch, what)
            .with_errno(errno)
            .with_help(help))
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

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("pmc-launch-{}-{name}", std::process::id()))
    }

    fn run(cmd: &mut Command) -> ExitStatus {
        let mut c = cmd.spawn_paused().unwrap();
        c.resume().unwrap();
        c.wait().unwrap()
    }

    #[test]
    fn stdio_env_and_directory_are_the_commands() {
        let out = temp("out");
        let input = temp("in");
        std::fs::write(&input, "from stdin\n").unwrap();
        let st = run(Command::new("sh")
            .args([
                "-c",
                "read l; echo \"$l|$PMC_SET|${HOME-unset}|$(pwd)\"; echo err >&2",
            ])
            .env("PMC_SET", "set")
            .env_remove("HOME")
            .current_dir("/")
            .stdin(std::fs::File::open(&input).unwrap())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null()));
        assert!(st.success());
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "from stdin|set|unset|/\n"
        );
        // env_clear: nothing inherited, only what is set after it.
        let st = run(Command::new("env")
            .env_clear()
            .env("ONLY", "1")
            .stdout(std::fs::File::create(&out).unwrap()));
        assert!(st.success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "ONLY=1\n");
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(&input);
    }

    #[test]
    fn the_callers_descriptor_stays_open_and_the_command_is_reusable() {
        use std::io::Write;
        let out = temp("shared");
        let f = std::fs::File::create(&out).unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo child"])
            .stdout(f.try_clone().unwrap());
        assert!(run(&mut cmd).success());
        assert!(
            run(&mut cmd).success(),
            "a second spawn from the same Command"
        );
        (&f).write_all(b"parent\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "child\nchild\nparent\n"
        );
        let _ = std::fs::remove_file(&out);
    }

    #[test]
    fn a_missing_directory_is_reported_at_resume() {
        let mut c = Command::new("true")
            .current_dir("/definitely/not/a/dir")
            .spawn_paused()
            .unwrap();
        let e = c.resume().unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOENT), "{e}");
        assert!(e.to_string().contains("working directory"), "{e}");
        assert_eq!(c.wait().unwrap().code(), Some(127));
    }

    #[test]
    fn nul_bytes_are_refused() {
        let e = Command::new("true")
            .env("A", "b\0c")
            .spawn_paused()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("environment variable"), "{e}");
    }
}
