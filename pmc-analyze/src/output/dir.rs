//! [`Dir`](super::Dir): trees created below a directory, one component at a
//! time, never through a link.

use super::parent::{is_symlink_at, Parent};
use super::replace::{create_in, Output};
use super::{err, foreign_refused, link_refused, split, Options};
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag, AT_FDCWD};
use nix::sys::stat::{fstatat, mkdirat, Mode};
use std::ffi::OsStr;
use std::io::{self};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A directory that outputs are created in, held open: what is created below it cannot be
/// moved elsewhere by a link planted in its path afterwards.
#[derive(Debug)]
pub struct Dir {
    parent: Parent,
    path: PathBuf,
}

impl Dir {
    /// Opens directory `path`, creating it and its missing parents (mode 0777 minus the
    /// umask). Its parents are the user's and are followed; a symbolic link as its last
    /// component is refused (but in `/dev`), and so is another user's directory in a
    /// shared directory.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        if !path.is_dir() && std::fs::symlink_metadata(path).is_err() {
            std::fs::create_dir_all(path)?;
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = match split(path) {
            // `/`, `.`, `..`: nothing to be planted as their last component.
            Err(_) => openat(AT_FDCWD, path, flags, Mode::empty())?,
            Ok((dir, name)) => {
                let above = Parent::open(&dir)?;
                above.entry(&name, &Options::default())?;
                match openat(
                    above.fd.as_fd(),
                    &*name,
                    flags | above.nofollow(),
                    Mode::empty(),
                ) {
                    Ok(fd) => fd,
                    Err(Errno::ELOOP | Errno::ENOTDIR)
                        if is_symlink_at(above.fd.as_fd(), &name) =>
                    {
                        return Err(link_refused())
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        Ok(Dir {
            parent: Parent::of(fd)?,
            path: path.to_path_buf(),
        })
    }

    /// The directory `name` in this one, created if missing; refused if it is a symbolic
    /// link. `name` is one component (a `/` in it is refused).
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        check_component(name)?;
        let dir = self.parent.fd.as_fd();
        match mkdirat(dir, name, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        if let Ok(s) = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            if self.parent.foreign(&s) {
                return Err(foreign_refused(&s));
            }
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Dir {
                parent: Parent::of(fd)?,
                path: self.path.join(name),
            }),
            Err(Errno::ELOOP | Errno::ENOTDIR) if is_symlink_at(dir, name) => Err(link_refused()),
            Err(e) => Err(e.into()),
        }
    }

    /// The path this directory was opened as, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates output `name` in this directory (see the module documentation).
    pub fn create(&self, name: &OsStr, opts: &Options) -> io::Result<Output> {
        check_component(name)?;
        create_in(&self.parent, name, &self.path.join(name), opts, false)
    }
}

fn check_component(name: &OsStr) -> io::Result<()> {
    if name.is_empty() || name.as_bytes().contains(&b'/') || name == "." || name == ".." {
        return Err(err(
            io::ErrorKind::InvalidInput,
            format!("{:?} is not a file name", name),
        ));
    }
    Ok(())
}
