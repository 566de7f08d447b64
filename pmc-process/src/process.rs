//! The running processes, for choosing targets by name: [`list`] and
//! [`exists`]. The OS-specific parts are in `sys/process.rs` (Linux reads
//! `/proc`, FreeBSD the `kern.proc.proc` sysctl).

use pmc_core::Result;

pub use crate::sys::process::Process;

/// Every running process with its command name, in pid order (the caller
/// included). A process that exits while the list is read is left out.
///
/// ```
/// use pmc::{ErrorKind, Target};
///
/// # fn main() -> pmc::Result<()> {
/// let sshd: Vec<Target> = match pmc::process::list() {
///     Ok(procs) => {
///         assert!(procs.iter().any(|p| p.pid == std::process::id()));
///         procs
///             .iter()
///             .filter(|p| p.name == "sshd")
///             .map(|p| Target::Pid(p.pid))
///             .collect()
///     }
///     Err(e) if e.kind() == ErrorKind::NotSupported => Vec::new(), // ask for pids instead
///     Err(e) => return Err(e),
/// };
/// # let _ = sshd;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`ErrorKind::NotSupported`](pmc_core::ErrorKind::NotSupported) where the
/// listing is not implemented (an OS without a backend: attach by pid with
/// `Target::Pid`); [`ErrorKind::Os`](pmc_core::ErrorKind::Os) when the list
/// cannot be read (Linux: `/proc` is not mounted; FreeBSD: the
/// `kern.proc.proc` sysctl failed).
pub fn list() -> Result<Vec<Process>> {
    let mut v = crate::sys::process::list()?;
    v.sort_unstable_by_key(|p| p.pid);
    Ok(v)
}

/// Whether a process (or, on Linux, a thread) with this id exists now,
/// zombies included: `kill(pid, 0)` does not fail with `ESRCH`. Ids that
/// cannot name a process (0, above `i32::MAX`) do not exist.
///
/// ```
/// assert!(pmc::process::exists(std::process::id()));
/// assert!(!pmc::process::exists(0));
/// ```
pub fn exists(pid: u32) -> bool {
    crate::sys::process::exists(pid)
}
