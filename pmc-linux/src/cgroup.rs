//! Cgroup events: perf's cgroup mode (`perf stat -a -G NAME`) behind
//! [`Allocation::cgroup`](pmc_core::Allocation::cgroup).
//!
//! A system-scope PMC with a cgroup opens each CPU's events with `pid` = an fd of the
//! cgroup's directory and `PERF_FLAG_PID_CGROUP` (perf_event_open(2): "the pid parameter
//! indicates the file descriptor of the cgroup directory", `cpu >= 0`). The directory is
//! found as perf finds it (`tools/lib/api/fs/cgroup.c`): in the cgroup v1 hierarchy mounted
//! with the `perf_event` controller if there is one, else in the cgroup2 mount (where
//! perf_event is an implicit controller), both read from `/proc/self/mountinfo`.
//!
//! Everything here goes through [`Sys`] (the mount table, the directory's open), so the fake
//! kernel tests it.

use crate::errno;
use crate::sys::{Errno, Sys};
use pmc_core::{Error, ErrorKind, Op, Result};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// An open cgroup directory, the `pid` of a cgroup event.
#[derive(Debug)]
pub(crate) struct Cgroup {
    /// `open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)`.
    pub(crate) fd: OwnedFd,
    /// The directory.
    pub(crate) path: PathBuf,
    /// The mount it was looked up in (for the error messages).
    pub(crate) mount: PathBuf,
}

/// A cgroup mount of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Its mount point.
    pub(crate) point: PathBuf,
    /// cgroup2 (else a v1 hierarchy).
    pub(crate) v2: bool,
    /// A v1 hierarchy with the perf_event controller.
    pub(crate) perf_event: bool,
}

/// The cgroup mounts of a `/proc/self/mountinfo` text, in its order. A line is
/// `id parent major:minor root mount-point options [optional...] - fstype source super-options`
/// (proc(5)); the mount point escapes space, tab, newline and backslash as octal (`\040`).
pub(crate) fn mounts(mountinfo: &str) -> Vec<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?;
            let _source = r.next();
            let supers = r.next().unwrap_or("");
            let v2 = fstype == "cgroup2";
            if !v2 && fstype != "cgroup" {
                return None;
            }
            Some(Mount {
                point: PathBuf::from(unescape(point)),
                v2,
                perf_event: !v2 && supers.split(',').any(|o| o == "perf_event"),
            })
        })
        .collect()
}

/// A mountinfo field with its octal escapes (`\040`) decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b.get(i + 1..i + 4).filter(|d| {
            b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3'
        });
        match oct {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount cgroup events use: a v1 perf_event hierarchy if there is one (perf_event is then
/// bound there, and absent from cgroup2), else the first cgroup2 mount.
pub(crate) fn perf_mount(mounts: &[Mount]) -> Option<&Mount> {
    mounts
        .iter()
        .find(|m| m.perf_event)
        .or_else(|| mounts.iter().find(|m| m.v2))
}

/// The directory of the cgroup `name` and the mount it belongs to: an absolute path inside
/// a cgroup mount is taken as is; any other name is relative to the perf_event mount, as
/// perf's `-G` takes it (a leading `/` allowed).
pub(crate) fn resolve(name: &str, mounts: &[Mount]) -> Result<(PathBuf, PathBuf)> {
    let p = Path::new(name);
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!("cgroup `{name}`: a cgroup name may not contain `..`"),
        )
        .with_help("name the cgroup by its path below the cgroup mount, or by its absolute path"));
    }
    if p.is_absolute() {
        // The longest mount point that holds it.
        if let Some(m) = mounts
            .iter()
            .filter(|m| p.starts_with(&m.point))
            .max_by_key(|m| m.point.as_os_str().len())
        {
            return Ok((p.to_path_buf(), m.point.clone()));
        }
    }
    let Some(m) = perf_mount(mounts) else {
        return Err(no_mount(name, mounts));
    };
    let rel = name.trim_start_matches('/');
    Ok((m.point.join(rel), m.point.clone()))
}

/// No cgroup hierarchy with perf_event is mounted.
fn no_mount(name: &str, mounts: &[Mount]) -> Error {
    let others = if mounts.is_empty() {
        "no cgroup mount at all".to_string()
    } else {
        let list: Vec<String> = mounts
            .iter()
            .map(|m| m.point.display().to_string())
            .collect();
        format!(
            "cgroup v1 mounts without perf_event only ({})",
            list.join(", ")
        )
    };
    Error::new(
        ErrorKind::NotSupported,
        Op::Allocate,
        format!(
            "cgroup `{name}`: no cgroup hierarchy with perf_event is mounted: \
             /proc/self/mountinfo has no cgroup2 mount and no cgroup v1 mount with the \
             perf_event controller ({others})"
        ),
    )
    .with_help(
        "mount one (mount -t cgroup2 none /sys/fs/cgroup, or mount -t cgroup -o perf_event \
         none /sys/fs/cgroup/perf_event) and put the processes in a cgroup there; or count \
         without Allocation::cgroup",
    )
}

/// Finds and opens the directory of the cgroup `name` (see [`resolve`]).
pub(crate) fn open(sys: &dyn Sys, name: &str) -> Result<Cgroup> {
    let info = sys
        .read_file(Path::new("/proc/self/mountinfo"))
        .map_err(|e| {
            Error::new(
                ErrorKind::Os,
                Op::Allocate,
                format!(
                    "cgroup `{name}`: cannot read /proc/self/mountinfo to find the cgroup mount"
                ),
            )
            .with_source(e)
        })?;
    let mounts = mounts(&String::from_utf8_lossy(&info));
    let (path, mount) = resolve(name, &mounts)?;
    let shown = path.display();
    let at = mount.display();
    match sys.open_dir(&path) {
        Ok(fd) => Ok(Cgroup { fd, path, mount }),
        Err(Errno(e @ (errno::ENOENT | errno::ENOTDIR))) => Err(Error::new(
            ErrorKind::NoSuchCgroup,
            Op::Allocate,
            format!(
                "cgroup `{name}`: {shown} {} (the cgroup hierarchy with perf_event is \
                 mounted at {at})",
                if e == errno::ENOENT {
                    "does not exist"
                } else {
                    "is not a directory"
                }
            ),
        )
        .with_errno(e)
        .with_help(format!(
            "name a cgroup that exists: a path below {at} (as perf -G takes it), or its \
             absolute path; `ls {at}` lists the top ones"
        ))),
        Err(Errno(e @ (errno::EACCES | errno::EPERM))) => Err(Error::new(
            ErrorKind::Permission,
            Op::Allocate,
            format!("cgroup `{name}`: cannot open {shown}"),
        )
        .with_errno(e)
        .with_help("run as a user that may read the cgroup's directory (root)")),
        Err(Errno(e)) => Err(Error::new(
            ErrorKind::Os,
            Op::Allocate,
            format!("cgroup `{name}`: cannot open {shown}"),
        )
        .with_errno(e)),
    }
}

/// The kernel refused a cgroup event whose event opens without the cgroup on the same CPU:
/// the cgroup is what it refused.
pub(crate) fn refused(errno: Errno, cg: &Cgroup, event: &str) -> Error {
    let (path, at) = (cg.path.display(), cg.mount.display());
    let e = match errno.0 {
        // css_tryget_online_from_dir: a directory of a hierarchy without perf_event.
        errno::ENOENT => Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "`{event}`: the kernel refused cgroup {path}: its hierarchy has no perf_event \
                 controller"
            ),
        )
        .with_help(format!(
            "use a cgroup of the cgroup2 mount or of a v1 hierarchy mounted with -o perf_event \
             (found: {at}); a name relative to it is looked up there"
        )),
        // perf_cgroup_connect: not a cgroupfs directory.
        errno::EBADF => Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!("`{event}`: {path} is not a cgroup directory"),
        )
        .with_help(format!("name a cgroup directory below {at}")),
        _ => Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "`{event}`: the kernel refused to count cgroup {path} (perf_event_open with \
                 PERF_FLAG_PID_CGROUP; a kernel without CONFIG_CGROUP_PERF refuses it)"
            ),
        )
        .with_help(
            "count system-wide without Allocation::cgroup, or attach process-scope PMCs to \
             the cgroup's processes (its cgroup.procs) with Target::Pid",
        ),
    };
    e.with_errno(errno.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpu,cpuacct
";

    #[test]
    fn mountinfo_gives_cgroup_mounts_and_prefers_v1_perf_event() {
        let m = mounts(HYBRID);
        assert_eq!(m.len(), 2);
        assert_eq!(
            perf_mount(&m).unwrap().point,
            Path::new("/sys/fs/cgroup/unified")
        );
        let with_v1 = format!(
            "{HYBRID}40 31 0:33 / /sys/fs/cgroup/perf\\040event rw - cgroup cgroup rw,perf_event\n"
        );
        let m = mounts(&with_v1);
        assert_eq!(
            perf_mount(&m).unwrap().point,
            Path::new("/sys/fs/cgroup/perf event")
        );
    }

    #[test]
    fn names_are_relative_to_the_mount_and_absolute_paths_kept() {
        let m = mounts(HYBRID);
        for n in ["pmctest", "/pmctest"] {
            assert_eq!(
                resolve(n, &m).unwrap().0,
                Path::new("/sys/fs/cgroup/unified/pmctest")
            );
        }
        let (p, at) = resolve("/sys/fs/cgroup/cpu,cpuacct/x", &m).unwrap();
        assert_eq!(p, Path::new("/sys/fs/cgroup/cpu,cpuacct/x"));
        assert_eq!(at, Path::new("/sys/fs/cgroup/cpu,cpuacct"));
        let e = resolve("a/../../etc", &m).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn no_perf_event_mount_is_not_supported_with_help() {
        let v1_only: String = HYBRID
            .lines()
            .filter(|l| !l.contains("cgroup2"))
            .collect::<Vec<_>>()
            .join("\n");
        let e = resolve("pmctest", &mounts(&v1_only)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(e.to_string().contains("/sys/fs/cgroup/cpu,cpuacct"), "{e}");
        assert!(e.help().unwrap().contains("mount -t cgroup2"), "{e}");
    }

    // The backend over the fake kernel: what perf_event_open is given.

    use crate::sys::fake::FakeKernel;
    use perf_event_open_sys::bindings as b;
    use pmc_core::{Allocation, Backend as _, Cpus, Rate};
    use std::sync::Arc;

    type Backend = crate::Backend<Arc<FakeKernel>>;

    const CG: &str = "/sys/fs/cgroup/unified/pmctest";

    fn kernel() -> (Arc<FakeKernel>, Backend) {
        let k = Arc::new(FakeKernel::new());
        k.set_file("/proc/self/mountinfo", HYBRID);
        k.set_file(format!("{CG}/cgroup.procs"), "4242\n");
        let backend = Backend::with_sys(k.clone());
        (k, backend)
    }

    fn faults() -> Allocation {
        Allocation::counting("page-faults".parse().expect("event"))
    }

    #[test]
    fn a_cgroup_pmc_opens_each_cpu_with_the_cgroup_fd_and_flag() {
        let (k, backend) = kernel();
        for name in ["pmctest", CG] {
            let p = backend
                .allocate(&faults().system(Cpus::All).cgroup(name))
                .expect("allocate");
            let ev = k.events();
            assert_eq!(
                ev.iter().map(|e| e.cpu).collect::<Vec<_>>(),
                [0, 1],
                "{name}"
            );
            for e in &ev {
                assert_eq!(e.flags, u64::from(b::PERF_FLAG_PID_CGROUP), "{name}");
                assert_eq!(
                    e.cgroup.as_deref(),
                    Some(Path::new(CG)),
                    "{name}: the cgroup fd"
                );
                assert!(e.is_leader());
            }
            drop(p);
        }
        // Without a cgroup: pid -1, no flag.
        let _p = backend
            .allocate(&faults().system(Cpus::One(1)))
            .expect("allocate");
        let ev = k.events();
        assert_eq!(ev.len(), 1);
        assert_eq!((ev[0].pid, ev[0].cpu, ev[0].flags), (-1, 1, 0));
        assert_eq!(ev[0].cgroup, None);
    }

    #[test]
    fn a_cgroup_group_and_a_cgroup_sampler_open_every_member_in_the_cgroup() {
        let (k, backend) = kernel();
        let allocs = [
            faults().system(Cpus::One(0)).cgroup("pmctest"),
            Allocation::counting("minor-faults".parse().expect("event"))
                .system(Cpus::One(0))
                .cgroup("pmctest"),
        ];
        let _g = backend.allocate_group(&allocs).expect("allocate_group");
        let ev = k.events();
        assert_eq!(ev.len(), 2);
        assert!(ev
            .iter()
            .all(|e| e.cgroup.as_deref() == Some(Path::new(CG))));
        drop(_g);
        let _s = backend
            .allocate(
                &Allocation::sampling("cpu-clock".parse().expect("event"), Rate::Frequency(99))
                    .system(Cpus::All)
                    .cgroup("pmctest"),
            )
            .expect("a cgroup sampler");
        assert!(k.events().iter().all(|e| e.cgroup.is_some() && e.cpu >= 0));
        let mixed = [allocs[0].clone(), allocs[1].clone().cgroup("other")];
        let e = backend.allocate_group(&mixed).expect_err("two cgroups");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn a_missing_cgroup_names_the_path_and_the_mount() {
        let (k, backend) = kernel();
        let e = backend
            .allocate(&faults().system(Cpus::All).cgroup("nosuch"))
            .expect_err("no such cgroup");
        assert_eq!(e.kind(), ErrorKind::NoSuchCgroup);
        assert_eq!(e.errno(), Some(errno::ENOENT));
        let m = e.to_string();
        assert!(m.contains("/sys/fs/cgroup/unified/nosuch"), "{m}");
        assert!(m.contains("mounted at /sys/fs/cgroup/unified"), "{m}");
        assert!(k.events().is_empty());
        k.set_file("/proc/self/mountinfo", "");
        let e = backend
            .allocate(&faults().system(Cpus::All).cgroup("pmctest"))
            .expect_err("no mount");
        assert_eq!(e.kind(), ErrorKind::NotSupported);
    }

    #[test]
    fn a_kernel_refusal_of_the_cgroup_says_so_with_help() {
        let (k, backend) = kernel();
        k.refuse_cgroups(errno::ENOENT);
        let e = backend
            .allocate(&faults().system(Cpus::All).cgroup("pmctest"))
            .expect_err("no perf_event");
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(e.to_string().contains("no perf_event controller"), "{e}");
        k.refuse_cgroups(errno::EINVAL);
        let e = backend
            .allocate(&faults().system(Cpus::All).cgroup("pmctest"))
            .expect_err("no CONFIG_CGROUP_PERF");
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(e.help().unwrap_or("").contains("Target::Pid"), "{e}");
        assert!(
            k.events().is_empty(),
            "the probe without the cgroup is closed"
        );
    }

    #[test]
    fn a_process_scope_cgroup_is_refused_before_any_open() {
        let (k, backend) = kernel();
        let e = backend
            .allocate(&faults().cgroup("pmctest"))
            .expect_err("process scope");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.help().unwrap_or("").contains("Allocation::system"), "{e}");
        assert_eq!(k.opens(), 0);
    }
}
