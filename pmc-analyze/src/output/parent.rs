//! [`Parent`]: an output's directory, opened once; what is at a name in it
//! (checked against the inputs and another user's ownership); the system's
//! directories of links.

use super::{foreign_refused, is_input_refused, kind_of, link_refused, FileId, Options};
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::ffi::OsStr;
use std::io::{self};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// The directory an output is created in, opened once: every name in it is resolved
/// relative to this descriptor, with what decides how.
#[derive(Debug)]
pub(super) struct Parent {
    pub(super) fd: OwnedFd,
    stat: FileStat,
    /// One of the system's directories of links (`/dev`, `/dev/fd`, `/proc/self/fd`),
    /// whose last link is followed.
    pub(super) system: bool,
}

impl Parent {
    /// Opens directory `dir` (links in its path followed: it is the user's).
    pub(super) fn open(dir: &Path) -> io::Result<Parent> {
        let fd = openat(
            AT_FDCWD,
            dir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Parent::of(fd)
    }

    pub(super) fn of(fd: OwnedFd) -> io::Result<Parent> {
        let stat = fstat(fd.as_fd())?;
        let system = is_system_dir(&stat);
        Ok(Parent { fd, stat, system })
    }

    /// Sticky and writable by its group or others: `/tmp`, `/var/tmp`, `/dev/shm`.
    fn shared(&self) -> bool {
        #[allow(clippy::unnecessary_cast)]
        let mode = self.stat.st_mode as u32;
        mode & 0o1000 != 0 && mode & 0o022 != 0
    }

    /// Whether `s`, an entry of this directory, belongs to another user in a shared
    /// directory (as the kernel's protected_regular: not this process's user, not the
    /// directory's owner).
    pub(super) fn foreign(&self, s: &FileStat) -> bool {
        let me = nix::unistd::geteuid().as_raw();
        self.shared() && s.st_uid != me && s.st_uid != self.stat.st_uid
    }

    /// The mode of a new regular file under `opts`, here.
    pub(super) fn new_file_mode(&self, opts: &Options) -> Mode {
        Mode::from_bits_truncate(if opts.private || self.shared() {
            0o600
        } else {
            0o666
        })
    }

    /// What is at `name`: `None` if nothing; a link refused unless this is a system
    /// directory (then what it points to, `None` if it dangles); the refusals every output
    /// makes (an input, another user's file in a shared directory).
    pub(super) fn entry(&self, name: &OsStr, opts: &Options) -> io::Result<Option<FileStat>> {
        let s = match fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(s) => s,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let s = if kind_of(&s) == SFlag::S_IFLNK {
            if !self.system {
                return Err(link_refused());
            }
            match fstatat(self.fd.as_fd(), name, AtFlags::empty()) {
                Ok(t) => t,
                Err(Errno::ENOENT) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        } else {
            s
        };
        if opts.inputs.contains(&FileId::of_stat(&s)) {
            return Err(is_input_refused());
        }
        if self.foreign(&s) {
            return Err(foreign_refused(&s));
        }
        Ok(Some(s))
    }

    /// The flags that open a name here: `O_NOFOLLOW` unless this is a system directory.
    pub(super) fn nofollow(&self) -> OFlag {
        if self.system {
            OFlag::empty()
        } else {
            OFlag::O_NOFOLLOW
        }
    }
}

/// Whether the directory `s` is one of the system's own directories of links, whose last
/// link pmc follows: `/dev`, `/dev/fd` and `/proc/self/fd` by identity, and writable by
/// no one but their owner.
fn is_system_dir(s: &FileStat) -> bool {
    if s.st_mode & 0o022 != 0 {
        return false;
    }
    let id = FileId::of_stat(s);
    ["/dev", "/dev/fd", "/proc/self/fd"]
        .iter()
        .any(|p| FileId::of_path(Path::new(p)) == Some(id))
}

/// Whether `name` in `dir` is a symbolic link (not followed).
pub(super) fn is_symlink_at(dir: impl AsFd, name: &OsStr) -> bool {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|s| kind_of(&s) == SFlag::S_IFLNK)
}
