//! Temporary files: their names (pid and start time), their creation
//! (`O_TMPFILE` or `O_EXCL`), and the sweep of those a dead process left.

use super::kind_of;
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;

/// This process's start time since boot, in clock ticks (`/proc/self/stat`'s 22nd field),
/// 0 where there is no `/proc`: with the pid, what names a process for good.
pub(super) fn start_time(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The hidden name prefix of `name`'s temporary files: `.NAME.pmc-` (NAME cut so that the
/// whole stays within NAME_MAX).
fn temp_prefix(name: &OsStr) -> OsString {
    let base = name.as_bytes();
    let mut p = OsString::from(".");
    p.push(OsStr::from_bytes(&base[..base.len().min(200)]));
    p.push(".pmc-");
    p
}

/// A fresh hidden temporary name for `name`: `.NAME.pmc-PID-START-N.tmp`.
pub(super) fn temp_name(name: &OsStr) -> OsString {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static START: OnceLock<u64> = OnceLock::new();
    let start = *START.get_or_init(|| start_time("self").unwrap_or(0));
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let mut t = temp_prefix(name);
    t.push(format!("{}-{start}-{n:x}{salt:x}.tmp", std::process::id()));
    t
}

/// Removes `name`'s temporary files that a process now gone left in `dir` (killed during
/// an export on a system without `O_TMPFILE`, or between link and rename): only names of
/// pmc's form `.NAME.pmc-PID-START-N.tmp`, only regular files of this user, and only when
/// no process PID started at START runs (with `/proc`; without it, when no PID runs).
pub(super) fn remove_stale_temps(dir: BorrowedFd<'_>, name: &OsStr) {
    let prefix = temp_prefix(name);
    let Ok(fd) = dir.try_clone_to_owned() else {
        return;
    };
    let Ok(mut d) = nix::dir::Dir::from_fd(fd) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    let mine = std::process::id();
    let stale: Vec<OsString> = d
        .iter()
        .flatten()
        .filter_map(|e| {
            let entry = OsStr::from_bytes(e.file_name().to_bytes());
            let rest = entry.as_bytes().strip_prefix(prefix.as_bytes())?;
            let rest = std::str::from_utf8(rest).ok()?.strip_suffix(".tmp")?;
            let mut parts = rest.split('-');
            let pid: u32 = parts.next()?.parse().ok()?;
            let start: u64 = parts.next()?.parse().ok()?;
            parts.next()?;
            (pid != mine && !process_runs(pid, start)).then(|| entry.to_os_string())
        })
        .collect();
    for t in stale {
        let ours = fstatat(dir, t.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|s| kind_of(&s) == SFlag::S_IFREG && s.st_uid == me);
        if ours {
            let _ = unlinkat(dir, t.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
    }
}

/// Whether process `pid` that started at `start` (clock ticks since boot; 0: unknown) may
/// still run: with `/proc`, a process of that pid and start time; without it, any process
/// of that pid (`kill(pid, 0)` not ESRCH).
fn process_runs(pid: u32, start: u64) -> bool {
    if start_time("self").is_some() {
        return start_time(&pid.to_string()).is_some_and(|s| start == 0 || s == start);
    }
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None),
        Err(Errno::ESRCH)
    )
}

/// The temporary file of an output of `name` in `dir`: unnamed (`O_TMPFILE`) where the
/// system and the file system allow it, else a new `.NAME.pmc-PID-START-N.tmp` (`O_EXCL`:
/// never an existing file or link); mode `mode` minus the umask.
pub(super) fn create_temp(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    mode: Mode,
) -> io::Result<(File, Temp)> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let flags = OFlag::O_TMPFILE | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        match openat(dir, ".", flags, mode) {
            Ok(fd) => return Ok((File::from(fd), Temp::Unnamed)),
            // Not supported by this kernel or file system: a named one.
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL | Errno::ENOENT) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut last = Errno::EEXIST;
    for _ in 0..100 {
        let tmp = temp_name(name);
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(dir, tmp.as_os_str(), flags, mode) {
            Ok(fd) => return Ok((File::from(fd), Temp::Named(tmp))),
            Err(Errno::EEXIST) => last = Errno::EEXIST,
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.into())
}

/// A regular output's temporary file, before it is renamed into place.
#[derive(Debug)]
pub(super) enum Temp {
    /// `O_TMPFILE`: no name until committed (a killed process leaves nothing).
    #[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
    Unnamed,
    /// `.NAME.pmc-PID-START-N.tmp`.
    Named(OsString),
}
