//! Facts about this machine that decide what can be counted, read from
//! `/proc` and `/sys` through the crate's system seam (never cached: they can change at run
//! time).

use std::path::{Path, PathBuf};

use crate::sys::{facts, RealSys, Rlimit, Sys};

/// `CAP_SYS_ADMIN`'s bit number.
pub const CAP_SYS_ADMIN: u32 = facts::CAP_SYS_ADMIN;
/// `CAP_PERFMON`'s bit number (Linux 5.8+).
pub const CAP_PERFMON: u32 = facts::CAP_PERFMON;

/// `kernel.perf_event_paranoid`, from `/proc/sys/kernel/perf_event_paranoid`.
///
/// | level | unprivileged users may |
/// |---|---|
/// | -1 | everything, raw tracepoints included |
/// | 0 | CPU-wide (system) events, no raw tracepoint access |
/// | 1 | kernel and user profiling of their own processes |
/// | 2 | user-space-only profiling of their own processes |
/// | 3+ (Debian, Android) | nothing |
pub fn paranoid_level() -> Option<i32> {
    facts::paranoid_level(&RealSys)
}

/// `kernel.perf_event_max_sample_rate`.
pub fn max_sample_rate() -> Option<u64> {
    facts::max_sample_rate(&RealSys)
}

/// `kernel.perf_event_mlock_kb`.
pub fn mlock_kb() -> Option<u64> {
    facts::mlock_kb(&RealSys)
}

/// Whether the process has CAP_PERFMON or CAP_SYS_ADMIN in its effective set.
pub fn has_perfmon() -> bool {
    facts::has_perfmon(&RealSys)
}

/// Whether the kernel exposes a core hardware PMU (`/sys/bus/event_source/devices/cpu`,
/// or `cpu_core`/`cpu_atom` on hybrid Intel, or an `armv8_*` PMU). VMs without a
/// virtual PMU have none.
pub fn has_hardware_pmu() -> bool {
    facts::has_hardware_pmu(&RealSys)
}

/// The CPUs that are online, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Vec<u32> {
    RealSys.online_cpus()
}

/// `RLIMIT_MEMLOCK`'s soft limit in bytes, or `None` when unlimited.
pub fn memlock_limit() -> Option<u64> {
    RealSys.rlimit_soft(Rlimit::MemLock)
}

/// Whether this process can use tracefs (for tracepoint ids), and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracefs {
    /// `events/` is readable under this mount point.
    Usable(PathBuf),
    /// tracefs is mounted here but this user cannot read it (a root-only mount is mode 0700).
    Unreadable {
        /// The mount point.
        path: PathBuf,
        /// Its permission bits, when they could be read.
        mode: Option<u32>,
    },
    /// tracefs is not mounted at any of the places looked at.
    NotMounted,
}

impl Tracefs {
    /// Looks at `dirs` (such as `events::TRACEFS_DIRS`) in order.
    pub fn probe(dirs: &[PathBuf]) -> Tracefs {
        Tracefs::probe_on(&RealSys, dirs)
    }

    /// [`Tracefs::probe`] through `sys`.
    pub(crate) fn probe_on(sys: &(impl Sys + ?Sized), dirs: &[PathBuf]) -> Tracefs {
        let mounts = sys
            .read_file(Path::new("/proc/self/mounts"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let mut unreadable = None;
        for d in dirs {
            let events = d.join("events");
            match sys.metadata(&events) {
                Ok(m) if m.is_dir => return Tracefs::Usable(d.clone()),
                Ok(_) => {}
                Err(e) => {
                    let mounted = mounts.lines().any(|l| {
                        let mut f = l.split_whitespace();
                        let (_, at, ty) = (f.next(), f.next(), f.next());
                        at == Some(&*d.to_string_lossy()) && ty == Some("tracefs")
                    });
                    if (e.kind() == std::io::ErrorKind::PermissionDenied || mounted)
                        && unreadable.is_none()
                    {
                        unreadable = Some(Tracefs::Unreadable {
                            path: d.clone(),
                            mode: sys.metadata(d).ok().map(|m| m.mode),
                        });
                    }
                }
            }
        }
        unreadable.unwrap_or(Tracefs::NotMounted)
    }

    /// Why tracepoints cannot be used, and the command that fixes it (`None` when usable).
    pub fn problem(&self) -> Option<(String, String)> {
        match self {
            Tracefs::Usable(_) => None,
            Tracefs::Unreadable { path, mode } => Some((
                format!(
                    "tracefs is mounted at {} but not readable by this user{}",
                    path.display(),
                    mode.map(|m| format!(" (mode {m:04o})")).unwrap_or_default()
                ),
                format!(
                    "run as root, or make it readable: chmod 0755 {} (or mount it with -o mode=0755)",
                    path.display()
                ),
            )),
            Tracefs::NotMounted => Some((
                "tracefs is not mounted".into(),
                "mount -t tracefs nodev /sys/kernel/tracing".into(),
            )),
        }
    }
}
