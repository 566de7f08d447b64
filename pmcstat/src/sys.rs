//! pmcstat's calls into the OS: every nix, libc and `std::os` call of the
//! CLI is here, and the process launcher it measures through, pmc's
//! (`pmc::launch`, which builds on any Unix). On an OS without a backend
//! pmcstat says "no backend for this OS" when asked to measure
//! ([`no_backend`]).

use std::fs::File;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

/// Whether this OS has a pmc backend: Linux (perf_event) or FreeBSD (hwpmc).
pub const HAS_BACKEND: bool = cfg!(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd"
));

/// The error of every measuring mode on an OS without a backend.
pub fn no_backend() -> pmc::Error {
    pmc::Error::new(
        pmc::ErrorKind::Unsupported,
        pmc::Op::Open,
        format!(
            "no backend for this OS ({}): pmcstat counts and samples with Linux's \
             perf_event or FreeBSD's hwpmc",
            std::env::consts::OS
        ),
    )
    .with_help("run it on Linux or FreeBSD; -R reads their logs on any OS")
}

/// After a stop signal, how long the `-O` log's sink may take nothing before its close gives
/// up (a FIFO or `-O -` whose reader stalled): the rest of the log is then counted as lost.
pub const LOG_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Bounds the wait for the log's sink at close to `wait` of no progress (Linux's log spool,
/// `pmc_linux::Backend::set_log_close_wait`); elsewhere the close waits as it does.
pub fn bound_log_close(backend: &pmc::Native, wait: Duration) {
    #[cfg(target_os = "linux")]
    backend.set_log_close_wait(Some(wait));
    #[cfg(not(target_os = "linux"))]
    let _ = (backend, wait);
}

/// An `-O` log written to a regular file defers decoding up to this many bytes of raw
/// records while system-wide sampling goes on, as `perf record` does
/// (`pmc_linux::Backend::set_log_backlog`): the CPU time billed to pmcstat per sample is then
/// about a quarter less than decoding as it goes (BENCHMARKS.md, stop 42). About 9 s of
/// samples at 40 kHz on 2 CPUs.
#[cfg(target_os = "linux")]
pub const LOG_BACKLOG_BYTES: usize = 64 << 20;

/// The oldest records an `-O` file's backlog holds: the file lags the rings by at most this
/// (plus a drain period).
#[cfg(target_os = "linux")]
pub const LOG_BACKLOG_AGE: Duration = Duration::from_secs(5);

/// Lets the backend defer decoding into a log written to a regular file (Linux's log
/// backlog); elsewhere nothing changes.
pub fn defer_log_decoding(backend: &pmc::Native) {
    #[cfg(target_os = "linux")]
    backend.set_log_backlog(LOG_BACKLOG_BYTES, LOG_BACKLOG_AGE);
    #[cfg(not(target_os = "linux"))]
    let _ = backend;
}

/// SIGTERM, sent to a launched command when `-T` quits.
pub const SIGTERM: i32 = libc::SIGTERM;

/// Whether `errno` is EPIPE (the reader of a pipe or socket went away).
pub fn is_epipe(errno: Option<i32>) -> bool {
    errno == Some(libc::EPIPE)
}

/// The launcher's messages for a command that could not be executed (as opposed to a
/// working directory or stdio that could not be installed): `pmc::launch`'s wording.
pub const LAUNCH_EXEC_PREFIXES: [&str; 2] = ["command not found", "cannot execute"];

/// Whether a launch failed because the program does not exist (`ENOENT`, `ENOTDIR`: the
/// shell's 127); any other exec failure is the shell's 126.
pub fn is_not_found(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::ENOENT | libc::ENOTDIR))
}

/// The shell convention: the exit code, or 128 + the signal.
pub fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// User and system CPU time of this process's waited-for children so far
/// (`getrusage(RUSAGE_CHILDREN)`, which includes the descendants they waited
/// for, as `perf stat`'s wait4 rusage does).
pub fn children_cpu() -> Option<(Duration, Duration)> {
    use nix::sys::resource::{getrusage, UsageWho};
    let r = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
    };
    Some((d(r.user_time()), d(r.system_time())))
}

/// A pipe, both ends close-on-exec (a launched command inherits neither).
pub fn pipe() -> io::Result<(File, File)> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let (rx, tx) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let (rx, tx) = {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag};
        let (rx, tx) = nix::unistd::pipe()?;
        fcntl(&rx, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        fcntl(&tx, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        (rx, tx)
    };
    Ok((File::from(rx), File::from(tx)))
}

/// Standard input as a file of its own (a duplicate of descriptor 0).
pub fn stdin_file() -> io::Result<File> {
    use std::os::fd::AsFd;
    io::stdin().as_fd().try_clone_to_owned().map(File::from)
}

/// Opens `path` for reading without blocking (a FIFO with no writer yet
/// cannot hang the open) and without becoming the controlling terminal.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// What waiting for a file to become readable came to.
pub enum Readable {
    /// Data is there (or its writer came and went).
    Ready,
    /// A signal interrupted the wait.
    Interrupted,
    /// Nothing yet (a spurious wake-up): wait again.
    NotYet,
}

/// Waits, without a timeout, until `f` is readable (poll(2) for POLLIN).
pub fn wait_readable(f: &File) -> io::Result<Readable> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(std::os::fd::AsFd::as_fd(f), PollFlags::POLLIN)];
    match nix::poll::poll(&mut fds, PollTimeout::NONE) {
        Ok(n) if n > 0 => Ok(Readable::Ready),
        Ok(_) => Ok(Readable::NotYet),
        Err(nix::errno::Errno::EINTR) => Ok(Readable::Interrupted),
        Err(e) => Err(e.into()),
    }
}

/// Makes reads of `f` block (clears O_NONBLOCK).
pub fn set_blocking(f: &File) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(f, FcntlArg::F_GETFL)?;
    let blocking = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
    fcntl(f, FcntlArg::F_SETFL(blocking))?;
    Ok(())
}

/// Whether `t` is a FIFO, a socket or a character device (a log `-R` streams).
pub fn is_stream(t: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_fifo() || t.is_socket() || t.is_char_device()
}

/// Whether `t` is a FIFO.
pub fn is_fifo(t: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_fifo()
}

/// pmc's process launcher (on an OS without a backend it builds, and launching answers
/// Unsupported; pmcstat's measuring modes stop before it there, with [`no_backend`]).
pub use pmc::launch;
