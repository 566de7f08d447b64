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
    /// When it started, in clock ticks since boot (Linux: `/proc/PID/stat`'s
    /// field 22, `starttime`); `None` where unknown. With the pid, the
    /// process's identity: a pid the kernel reuses for a new process comes
    /// with another start time.
    pub started: Option<u64>,
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
            started: None,
        }
    }

    /// The same entry, with its start time.
    ///
    /// ```
    /// let p = pmc::process::Process::new(7, "sh").started_at(Some(1234));
    /// assert_eq!(p.started, Some(1234));
    /// ```
    pub fn started_at(mut self, started: Option<u64>) -> Process {
        self.started = started;
        self
    }
}

/// `starttime`, field 22 of a `/proc/PID/stat` line. The command name (field 2)
/// is in parentheses and may itself hold spaces and `)`, so the fields are
/// counted after the last `)`: there, field 3 (`state`) comes first.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
fn stat_starttime(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
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
            let started = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| stat_starttime(&s));
            Some(Process::new(pid, name).started_at(started))
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

#[cfg(test)]
mod tests {
    use super::stat_starttime;

    #[test]
    fn starttime_is_field_22_counted_after_the_command_name() {
        // A real line (Linux 6.x), with a command name holding ") 1 2 (".
        let line = "4242 (a) 1 2 (b) S 1 4242 4242 0 -1 4194560 99 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 200 18446744073709551615";
        assert_eq!(stat_starttime(line), Some(987_654));
        assert_eq!(stat_starttime("1 (init) S 0"), None);
        assert_eq!(stat_starttime("no parenthesis"), None);
        assert_eq!(stat_starttime(""), None);
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn the_listing_has_this_process_with_its_start_time() {
        let me = std::process::id();
        let list = super::list().unwrap();
        let p = list
            .iter()
            .find(|p| p.pid == me)
            .expect("this process is listed");
        assert!(p.started.is_some_and(|t| t > 0), "{p:?}");
    }
}
