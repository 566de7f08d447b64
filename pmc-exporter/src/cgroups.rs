//! Cgroup discovery for [`PmcCollector::cgroups`](crate::PmcCollector::cgroups): the root
//! found in the mount table, the tree walked at each scrape, and the bookkeeping of what is
//! open (a cgroup is known by its path and its directory's inode: the same path with another
//! inode is a cgroup removed and created again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pmc::{Error, ErrorKind, Op};

/// How deep below the root the walk goes.
const MAX_DEPTH: usize = 32;

/// The discovery root: its directory and the cgroup mount it is in.
#[derive(Debug)]
pub(crate) struct Root {
    path: PathBuf,
    mount: PathBuf,
}

/// A cgroup directory the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// `/` and the path below the mount: the `cgroup` label.
    pub(crate) label: String,
    /// The directory's absolute path, as `Allocation::cgroup` takes it (None: not UTF-8).
    pub(crate) path: Option<String>,
    pub(crate) ino: u64,
}

/// An open cgroup.
#[derive(Debug)]
pub(crate) struct Opened<G> {
    pub(crate) ino: u64,
    pub(crate) group: G,
}

/// What a [`refresh`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Refresh {
    pub(crate) refused: u64,
    pub(crate) open_errors: u64,
    pub(crate) reopened: u64,
    /// Labels whose series end: cgroups gone, or recreated (their series starts again).
    pub(crate) dropped: Vec<String>,
}

/// The mount points of the hierarchies perf counts cgroups in (`/proc/self/mountinfo`):
/// v1 hierarchies with the perf_event controller first (perf prefers them), then cgroup2.
fn mounts() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut v1 = Vec::new();
    let mut v2 = Vec::new();
    for line in info.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let mut r = right.split(' ');
        let fstype = r.next().unwrap_or("");
        let supers = r.nth(1).unwrap_or("");
        let point = PathBuf::from(unescape(point));
        if fstype == "cgroup2" {
            v2.push(point);
        } else if fstype == "cgroup" && supers.split(',').any(|o| o == "perf_event") {
            v1.push(point);
        }
    }
    v1.extend(v2);
    v1
}

/// A mountinfo field with its octal escapes (`\040`) decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Root {
    /// `root` as [`PmcCollector::cgroups`](crate::PmcCollector::cgroups) takes it.
    pub(crate) fn resolve(root: &str) -> pmc::Result<Root> {
        let mounts = mounts();
        let p = Path::new(root);
        if p.components().any(|c| c == std::path::Component::ParentDir) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                format!("cgroup root `{root}`: a cgroup name may not contain `..`"),
            )
            .with_help("name the root by its path below the cgroup mount, or its absolute path"));
        }
        let found = if p.is_absolute() {
            mounts
                .iter()
                .filter(|m| p.starts_with(m))
                .max_by_key(|m| m.as_os_str().len())
                .map(|m| (p.to_path_buf(), m.clone()))
        } else {
            None
        };
        let (path, mount) = match found {
            Some(f) => f,
            None => match mounts.first() {
                Some(m) => (m.join(root.trim_start_matches('/')), m.clone()),
                None => {
                    return Err(Error::new(
                        ErrorKind::NotSupported,
                        Op::Allocate,
                        format!(
                            "cgroup root `{root}`: no cgroup hierarchy with perf_event is \
                             mounted here (/proc/self/mountinfo)"
                        ),
                    )
                    .with_help(
                        "count cgroups on Linux with cgroup2 (or a v1 perf_event hierarchy) \
                         mounted; or count per CPU (PmcCollector::system, pmcstat --metrics -s)",
                    ))
                }
            },
        };
        if !path.is_dir() {
            return Err(Error::new(
                ErrorKind::NoSuchCgroup,
                Op::Allocate,
                format!(
                    "cgroup root `{root}`: {} is not a cgroup directory (the mount is {})",
                    path.display(),
                    mount.display()
                ),
            )
            .with_help(format!(
                "name a cgroup that exists below {} (`ls {}` lists the top ones)",
                mount.display(),
                mount.display()
            )));
        }
        Ok(Root { path, mount })
    }

    /// The root's absolute path as a string.
    pub(crate) fn path_str(&self) -> pmc::Result<&str> {
        self.path.to_str().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                format!("cgroup root {}: not UTF-8", self.path.display()),
            )
            .with_help("name a root whose path is UTF-8")
        })
    }

    fn label(&self, dir: &Path) -> String {
        let rel = dir.strip_prefix(&self.mount).unwrap_or(dir);
        format!("/{}", rel.to_string_lossy())
    }

    /// The root and every cgroup below it (depth-first, at most `cap` * 4 + 64 of them, so a
    /// tree far over the cap costs a bounded walk).
    pub(crate) fn walk(&self, cap: usize) -> Vec<Found> {
        let limit = cap.saturating_mul(4).saturating_add(64);
        let mut out = Vec::new();
        let mut stack = vec![(self.path.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            if out.len() >= limit {
                break;
            }
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue; // gone meanwhile
            };
            out.push(Found {
                label: self.label(&dir),
                path: dir.to_str().map(str::to_owned),
                ino: inode(&meta),
            });
            if depth >= MAX_DEPTH {
                continue;
            }
            let Ok(list) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut children: Vec<PathBuf> = list
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            children.sort();
            for c in children.into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        out
    }
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// Brings `tracked` in line with `found`: drops the gone and the recreated, opens the new
/// (with `open`, at most `max` open in all).
pub(crate) fn refresh<G>(
    tracked: &mut BTreeMap<String, Opened<G>>,
    found: Vec<Found>,
    max: usize,
    mut open: impl FnMut(&str) -> Option<G>,
) -> Refresh {
    let mut r = Refresh::default();
    let now: BTreeMap<&str, u64> = found.iter().map(|f| (f.label.as_str(), f.ino)).collect();
    tracked.retain(|label, o| {
        let keep = now.get(label.as_str()) == Some(&o.ino);
        if !keep {
            if now.contains_key(label.as_str()) {
                r.reopened += 1;
            }
            r.dropped.push(label.clone());
        }
        keep
    });
    for f in &found {
        if tracked.contains_key(&f.label) {
            continue;
        }
        if tracked.len() >= max {
            r.refused += 1;
            continue;
        }
        match f.path.as_deref().and_then(&mut open) {
            Some(group) => {
                tracked.insert(f.label.clone(), Opened { ino: f.ino, group });
            }
            None => r.open_errors += 1,
        }
    }
    r
}

/// The CPU time process `pid` has used, in seconds: utime + stime of `/proc/PID/stat`
/// (fields 14 and 15, counted after the command name's closing parenthesis), in USER_HZ
/// ticks of 10 ms. None where there is no such file.
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let mut f = after.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(label: &str, ino: u64) -> Found {
        Found {
            label: label.into(),
            path: Some(format!("/cg{label}")),
            ino,
        }
    }

    #[test]
    fn new_gone_recreated_and_capped() {
        let mut t: BTreeMap<String, Opened<u32>> = BTreeMap::new();
        let mut opened = 0;
        let mut open = |_: &str| {
            opened += 1;
            Some(opened)
        };
        let r = refresh(
            &mut t,
            vec![found("/", 1), found("/a", 2), found("/b", 3)],
            2,
            &mut open,
        );
        assert_eq!((r.refused, t.len()), (1, 2));
        // /a removed, /b created again (inode 9), /c new: /b reopened, /a and old /b dropped.
        let r = refresh(
            &mut t,
            vec![found("/", 1), found("/b", 9), found("/c", 4)],
            3,
            &mut open,
        );
        // /b was refused by the cap: opened now, not reopened.
        assert_eq!((r.reopened, r.dropped.clone()), (0, vec!["/a".to_string()]));
        assert_eq!(t.keys().collect::<Vec<_>>(), ["/", "/b", "/c"]);
        assert_eq!(t["/b"].ino, 9);
        let r = refresh(
            &mut t,
            vec![found("/", 1), found("/b", 10), found("/c", 4)],
            3,
            &mut open,
        );
        assert_eq!((r.reopened, r.dropped.clone()), (1, vec!["/b".to_string()]));
        assert_eq!(t["/b"].ino, 10);
        let r = refresh(&mut t, vec![found("/x", 5)], 3, |_| None);
        assert_eq!(r.open_errors, 1);
        assert!(t.is_empty());
    }

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape("/sys/fs/cgroup/a\\040b"), "/sys/fs/cgroup/a b");
        assert_eq!(unescape("/x\\"), "/x\\");
    }

    #[test]
    fn this_process_has_a_cpu_time() {
        #[cfg(target_os = "linux")]
        assert!(cpu_seconds(std::process::id()).is_some());
    }
}
