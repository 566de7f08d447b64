//! Listing processes and probing pids: `/proc` on Linux, the
//! `kern.proc.proc` sysctl on FreeBSD, `kill(2)` for existence on every Unix.

use pmc_core::Result;
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
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
    /// When it started, as a stamp to compare for equality, not a time to
    /// show: on Linux clock ticks since boot (`/proc/PID/stat`'s field 22,
    /// `starttime`), on FreeBSD microseconds since the epoch (`ki_start`);
    /// `None` where unknown. With the pid, the process's identity: a pid the
    /// kernel reuses for a new process comes with another start time.
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

/// Every process, from the `kern.proc.proc` sysctl (`KERN_PROC_PROC`: one
/// `struct kinfo_proc` per process, not per thread), as ps(1) lists them.
#[cfg(target_os = "freebsd")]
pub(crate) fn list() -> Result<Vec<Process>> {
    use pmc_core::{Error, ErrorKind, Op};
    let mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    let fail = |what: &str, e: std::io::Error| {
        let mut err = Error::new(
            ErrorKind::Os,
            Op::Attach,
            format!("cannot list the processes (sysctl kern.proc.proc, {what}): {e}"),
        );
        if let Some(n) = e.raw_os_error() {
            err = err.with_errno(n);
        }
        err.with_help("attach by process id with Target::Pid")
    };
    // The table grows between the size query and the read: ask again, with room.
    for _ in 0..8 {
        let mut len: libc::size_t = 0;
        // SAFETY: a size query (null buffer); `mib` and `len` outlive the call.
        let r = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                4,
                std::ptr::null_mut(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if r != 0 {
            return Err(fail("size", std::io::Error::last_os_error()));
        }
        len += len / 8 + 4096;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` has `len` writable bytes, and the kernel writes at most `len`
        // (it sets `len` to what it wrote).
        let r = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                4,
                buf.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOMEM) {
                continue;
            }
            return Err(fail("read", e));
        }
        buf.truncate(len);
        return Ok(kinfo_records(&buf, &KINFO_PROC));
    }
    Err(fail(
        "read",
        std::io::Error::from_raw_os_error(libc::ENOMEM),
    ))
}

/// Where the fields pmc reads sit in FreeBSD's `struct kinfo_proc` (from the
/// libc crate's definition; each record says its own size in `ki_structsize`).
#[cfg_attr(not(target_os = "freebsd"), allow(dead_code))]
struct KinfoLayout {
    pid: usize,
    comm: usize,
    comm_len: usize,
    /// `ki_start`, a `struct timeval`: seconds then microseconds, each 8 bytes on
    /// 64-bit FreeBSD (`time_t` and `suseconds_t` are 64-bit there).
    start: usize,
}

#[cfg(target_os = "freebsd")]
const KINFO_PROC: KinfoLayout = KinfoLayout {
    pid: std::mem::offset_of!(libc::kinfo_proc, ki_pid),
    comm: std::mem::offset_of!(libc::kinfo_proc, ki_comm),
    comm_len: libc::COMMLEN + 1,
    start: std::mem::offset_of!(libc::kinfo_proc, ki_start),
};

/// The processes in a `kern.proc.proc` answer: records laid end to end, each
/// starting with its `ki_structsize` (an `int`). A record too short for the
/// fields, or a size that cannot be right (0, past the end), ends the walk: a
/// short list, never a panic or a read past the buffer.
#[cfg_attr(not(target_os = "freebsd"), allow(dead_code))]
fn kinfo_records(buf: &[u8], at: &KinfoLayout) -> Vec<Process> {
    let need = (at.pid + 4).max(at.comm + at.comm_len).max(at.start + 16);
    let mut out = Vec::new();
    let mut rest = buf;
    while rest.len() >= 4 {
        let size = i32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let Ok(size) = usize::try_from(size) else {
            break;
        };
        if size < need || size > rest.len() {
            break;
        }
        let rec = &rest[..size];
        let int = |o: usize| i32::from_ne_bytes([rec[o], rec[o + 1], rec[o + 2], rec[o + 3]]);
        let long = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&rec[o..o + 8]);
            i64::from_ne_bytes(b)
        };
        let comm = &rec[at.comm..at.comm + at.comm_len];
        let comm = &comm[..comm.iter().position(|&c| c == 0).unwrap_or(comm.len())];
        if let Ok(pid) = u32::try_from(int(at.pid)) {
            let (sec, usec) = (long(at.start), long(at.start + 8));
            let started = u64::try_from(sec)
                .ok()
                .zip(u64::try_from(usec).ok())
                .and_then(|(s, u)| s.checked_mul(1_000_000)?.checked_add(u));
            out.push(Process::new(pid, String::from_utf8_lossy(comm)).started_at(started));
        }
        rest = &rest[size..];
    }
    out
}

/// Not implemented here.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
pub(crate) fn list() -> Result<Vec<Process>> {
    Err(Error::new(
        ErrorKind::NotSupported,
        Op::Attach,
        "listing processes by name is implemented on Linux and FreeBSD only \
         (pmc::process::list reads /proc, or the kern.proc.proc sysctl)",
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
    // SAFETY: kill with signal 0 takes two integers and touches no memory.
    let rc = unsafe { libc::kill(p, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
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

    /// Records as the kern.proc.proc sysctl lays them out, with a made-up layout
    /// (the walk takes the offsets from libc's `kinfo_proc` on FreeBSD).
    #[test]
    fn kinfo_records_are_walked_by_their_own_size() {
        use super::{kinfo_records, KinfoLayout};
        let at = KinfoLayout {
            pid: 8,
            comm: 12,
            comm_len: 20,
            start: 32,
        };
        let rec = |size: i32, pid: i32, comm: &[u8], sec: i64, usec: i64| {
            let mut r = vec![0u8; 64];
            r[..4].copy_from_slice(&size.to_ne_bytes());
            r[8..12].copy_from_slice(&pid.to_ne_bytes());
            r[12..12 + comm.len()].copy_from_slice(comm);
            r[32..40].copy_from_slice(&sec.to_ne_bytes());
            r[40..48].copy_from_slice(&usec.to_ne_bytes());
            r
        };
        let mut buf = rec(64, 1, b"init", 1_700_000_000, 5);
        buf.extend(rec(64, 4242, b"nginx: \xffworker", 1_700_000_100, 250_000));
        buf.extend(rec(64, -1, b"bad pid", 0, 0));
        buf.extend(rec(64, 7, b"twentybytesnonulxxxx", -1, 0));
        let list = kinfo_records(&buf, &at);
        let got: Vec<_> = list
            .iter()
            .map(|p| (p.pid, p.name.as_str(), p.started))
            .collect();
        assert_eq!(
            got,
            [
                (1, "init", Some(1_700_000_000_000_005)),
                (4242, "nginx: \u{fffd}worker", Some(1_700_000_100_250_000)),
                (7, "twentybytesnonulxxxx", None),
            ]
        );
        // A size of 0, one past the end, one too short for the fields, a torn tail:
        // the walk stops there.
        for size in [0, 65, 40, -3] {
            let mut buf = rec(64, 1, b"init", 1, 0);
            buf.extend(rec(size, 2, b"next", 1, 0));
            assert_eq!(kinfo_records(&buf, &at).len(), 1, "size {size}");
        }
        assert_eq!(kinfo_records(&buf[..70], &at).len(), 1);
        assert!(kinfo_records(&[], &at).is_empty());
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
