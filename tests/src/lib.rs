//! Shared helpers for the cross-crate integration tests in `tests/tests/`.
//!
//! The workloads themselves are in the `pmc-workload` binary of this
//! package (integration tests find it with
//! `env!("CARGO_BIN_EXE_pmc-workload")`), so that the library and `perf`
//! count exactly the same command from its `exec`.

pub mod matrix;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use pmc::launch::PausedChild;
use pmc_core::{Allocation, Backend as _, Flags, Pmc as _, Reading, Target};

/// Records a visible skip of test `name` (see `pmc_testkit`); the test then
/// returns.
#[macro_export]
macro_rules! skip {
    ($name:expr, $($reason:tt)+) => {
        pmc_testkit::record_skip(Some($name), format_args!($($reason)+))
    };
}

/// The OS page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Maps `n` fresh anonymous pages (no transparent huge pages) and writes one
/// byte to each: `n` page faults in the calling thread (plus whatever else
/// it does).
pub fn touch_pages(n: usize) {
    let page = page_size();
    let len = n.max(1) * page;
    // SAFETY: a fresh anonymous private mapping of `len` bytes that nothing
    // else aliases; we write one byte per page inside it and unmap it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap {len} bytes");
        // One fault per page even where transparent huge pages are
        // "always" (the PMU lab's Debian kernel): a 2 MiB huge page would
        // take one fault for 512 pages. Best effort: without THP it fails
        // harmlessly with EINVAL. FreeBSD has no such advice (and no
        // equivalent is needed: its superpage promotion happens only after
        // every 4 KiB page of the reservation has been faulted in).
        #[cfg(target_os = "linux")]
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        let base = p.cast::<u8>();
        for i in 0..n {
            std::ptr::write_volatile(base.add(i * page), 1);
        }
        libc::munmap(p, len);
    }
}

/// CPU time used so far by the calling process.
pub fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until the calling process has used `cpu` more CPU time than when it
/// was called (CPU time, not wall time: a loaded machine makes this take
/// longer, not count less). Counted from the call, not from the process's
/// start: a process's CPU time includes what its `fork` child and `exec` used
/// before a PMC enabled on exec began counting (42 ms of 200 in the PMU lab's
/// guest under load), so a total would leave the counted spin short.
pub fn spin_cpu(cpu: Duration) {
    let mut x = 1u64;
    let until = process_cpu_time() + cpu;
    while process_cpu_time() < until {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// What the library counted for a launched command.
#[derive(Debug)]
pub struct Counted {
    /// One reading per event, in order.
    pub readings: Vec<Reading>,
    /// The command's exit status.
    pub status: ExitStatus,
}

/// Counts `events` (one PMC each) in `program args` with the library, as
/// `perf stat` does: the command is launched paused before `exec`, each PMC
/// is attached with [`Target::Exec`], and counting begins at the `exec`.
pub fn count_command(
    backend: &pmc_linux::Backend,
    events: &[&str],
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
) -> pmc_core::Result<Counted> {
    count_command_flags(backend, events, Flags::NONE, program, args)
}

/// [`count_command`] with allocation flags (e.g. [`Flags::DESCENDANTS`],
/// perf stat's default `inherit`).
pub fn count_command_flags(
    backend: &pmc_linux::Backend,
    events: &[&str],
    flags: Flags,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
) -> pmc_core::Result<Counted> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut child = PausedChild::spawn(program, &args)?;
    let mut pmcs = Vec::new();
    for e in events {
        let mut pmc = backend.allocate(&Allocation::counting(e.parse()?).flags(flags))?;
        pmc.attach(Target::Exec(child.pid()))?;
        pmc.start()?;
        pmcs.push(pmc);
    }
    child.resume()?;
    let status = child.wait()?;
    let mut readings = Vec::new();
    for mut pmc in pmcs {
        pmc.stop()?;
        readings.push(pmc.read()?);
    }
    Ok(Counted { readings, status })
}

/// Whether a usable `perf` is on `$PATH` (`perf --version` runs).
pub fn perf_available() -> Result<(), String> {
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`perf --version` failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("no usable `perf` on $PATH: {e}")),
    }
}

/// One line of `perf stat -x,` output.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfCount {
    /// The event name as perf prints it (`page-faults`, `task-clock`).
    pub event: String,
    /// The value, `None` for `<not counted>`/`<not supported>`.
    pub value: Option<f64>,
    /// The unit (`msec` for task-clock), possibly empty.
    pub unit: String,
}

/// Runs `perf stat -x, -e <events> -- program args` and parses its CSV
/// (from stderr). `Err` when perf fails to run the command.
pub fn perf_stat(events: &[&str], program: &Path, args: &[&str]) -> Result<Vec<PerfCount>, String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", &events.join(",")])
        .arg("--")
        .arg(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run perf: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("perf stat failed ({}): {stderr}", out.status));
    }
    let counts: Vec<PerfCount> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 {
                return None;
            }
            Some(PerfCount {
                event: f[2].to_string(),
                value: f[0].parse().ok(),
                unit: f[1].to_string(),
            })
        })
        .collect();
    if counts.is_empty() {
        return Err(format!("no counts in perf's output: {stderr}"));
    }
    Ok(counts)
}

/// `(uid, gid)` of user `nobody`, from the password database.
pub fn nobody_ids() -> Option<(libc::uid_t, libc::gid_t)> {
    let name = c"nobody";
    // SAFETY: getpwnam takes a NUL-terminated string and returns NULL or a
    // pointer to a static passwd entry, which we copy out of at once (tests
    // calling this do not race other getpw* calls).
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        if pw.is_null() {
            None
        } else {
            Some(((*pw).pw_uid, (*pw).pw_gid))
        }
    }
}

/// Whether user `uid`/`gid` (no supplementary groups) may traverse every
/// directory on the way to `path` and execute it, judged by mode bits.
pub fn executable_by(path: &Path, uid: libc::uid_t, gid: libc::gid_t) -> bool {
    use std::os::unix::fs::MetadataExt;
    let allowed = |m: &std::fs::Metadata, bit: u32| {
        let mode = m.mode();
        if m.uid() == uid {
            mode & (bit << 6) != 0
        } else if m.gid() == gid {
            mode & (bit << 3) != 0
        } else {
            mode & bit != 0
        }
    };
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    for dir in path.ancestors().skip(1) {
        match std::fs::metadata(dir) {
            Ok(m) if allowed(&m, 0o1) => {}
            _ => return false,
        }
    }
    std::fs::metadata(&path).is_ok_and(|m| allowed(&m, 0o1) && allowed(&m, 0o4))
}

/// A directory removed on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Creates `$TMPDIR/pmc-tests-<pid>-<tag>` with `mode`.
    pub fn new(tag: &str, mode: u32) -> std::io::Result<TempDir> {
        use std::os::unix::fs::PermissionsExt;
        let p = std::env::temp_dir().join(format!("pmc-tests-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `exe` itself when `uid`/`gid` can run it, else a 0755 copy in a 0755
/// temporary directory (returned so that it lives as long as needed).
pub fn executable_for(
    exe: &Path,
    uid: libc::uid_t,
    gid: libc::gid_t,
) -> std::io::Result<(PathBuf, Option<TempDir>)> {
    use std::os::unix::fs::PermissionsExt;
    if executable_by(exe, uid, gid) {
        return Ok((exe.to_path_buf(), None));
    }
    let dir = TempDir::new("exe", 0o755)?;
    let copy = dir.0.join(exe.file_name().unwrap_or("exe".as_ref()));
    std::fs::copy(exe, &copy)?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))?;
    if !executable_by(&copy, uid, gid) {
        return Err(std::io::Error::other(format!(
            "{} is not executable by uid {uid} even as a 0755 copy (is {} traversable?)",
            copy.display(),
            std::env::temp_dir().display()
        )));
    }
    Ok((copy, Some(dir)))
}

/// The `pmcstat` binary of this build: `<target>/<profile>/pmcstat`, found
/// from the running test executable (`<target>/<profile>/deps/<test>-<hash>`).
pub fn pmcstat_path() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let p = profile_dir.join("pmcstat");
    p.is_file().then_some(p)
}

/// The workload of known length for the hardware tests: exactly `2 * n`
/// user instructions of loop body plus a constant few, the self-test's own
/// loop (one copy, in pmc-selftest's `sys/`).
pub use pmc_selftest::insn_loop;
