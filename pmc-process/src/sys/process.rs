//! Listing processes and probing pids: `/proc` on Linux, `kill(2)` for
//! existence on every Unix.

use pmc_core::Result;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use pmc_core::{Error, ErrorKind, Op};

/// A running process: its pid and its command name (on Linux
/// `/proc/PID/comm`: at most 15 bytes, without the trailing newline).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Process {
    /// The process id.
    pub pid: u32,
    /// The command name the kernel keeps for it.
    pub name: String,
}

impl Process {
    /// A process entry.
    ///
    /// ```
    /// let p = pmc::process::Process::new(1, "init");
    /// assert_eq!((p.pid, p.name.as_str()), (1, "init"));
    /// ```
    pub fn new(pid: u32, name: impl Into<String>) -> Process {
        Process {
            pid,
            name: name.into(),
        }
    }
}

/// Every process with a `/proc/PID/comm`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn list() -> Result<Vec<Process>> {
    use pmc_core::{Error, ErrorKind, Op};
    let dir = std::fs::read_dir("/proc").map_err(|e| {
        let mut err = Error::new(
            ErrorKind::Os,
            Op::Attach,
            format!("cannot list the processes in /proc: {e}"),
        );
        if let Some(n) = e.raw_os_error() {
            err = err.with_errno(n);
        }
        err.with_source(e)
    })?;
    Ok(dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            // A process that exited since the listing has no name: left out.
            let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            let name = c.strip_suffix('\n').unwrap_or(&c);
            Some(Process::new(pid, name))
        })
        .collect())
}

/// Not implemented here yet (FreeBSD would use `sysctl kern.proc.proc`).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn list() -> Result<Vec<Process>> {
    Err(Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        "listing processes by name is implemented on Linux only \
         (pmc::process::list reads /proc)",
    )
    .with_help("attach by process id with Target::Pid"))
}

/// `kill(pid, 0)` does not fail with ESRCH.
#[cfg(unix)]
pub(crate) fn exists(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false; // 0 and negatives name process groups
    }
    // No signal (signal 0) sends nothing; it only checks the pid.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None) != Err(nix::errno::Errno::ESRCH)
}

/// No way to ask here.
#[cfg(not(unix))]
pub(crate) fn exists(_pid: u32) -> bool {
    false
}
