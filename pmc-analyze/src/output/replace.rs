//! [`Output`](super::Output): a report or export written to a temporary file
//! and committed by rename, the file it replaces locked until then.

use super::parent::Parent;
use super::special::open_special;
use super::temp::{create_temp, remove_stale_temps, temp_name, Temp};
use super::{err, kind_of, link_refused, recording_refused, split, FileId, Options};
use nix::errno::Errno;
use nix::fcntl::{openat, renameat, AtFlags, Flock, FlockArg, OFlag};
use nix::sys::stat::{fstatat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// An output being written: a temporary file put in place by [`Output::commit`], or a
/// FIFO, device or socket written in place.
#[derive(Debug)]
pub struct Output {
    out: io::BufWriter<File>,
    /// A regular file's way into place.
    pub(super) rename: Option<Replace>,
}

/// How a regular output's temporary file becomes its name.
#[derive(Debug)]
pub(super) struct Replace {
    /// The directory.
    dir: OwnedFd,
    /// The temporary file: unnamed (`O_TMPFILE`) or its hidden name.
    pub(super) tmp: Temp,
    /// The final name.
    name: OsString,
    /// The file the output replaces, open and share-locked until the rename (no recorder
    /// may take it meanwhile).
    held: Option<Flock<File>>,
}

impl Output {
    /// Creates output `path` (see the module documentation): its directory is opened once
    /// (links followed: it is the user's), then the file relative to it.
    pub fn create(path: &Path, opts: &Options) -> io::Result<Output> {
        let (dir, name) = split(path)?;
        let parent = Parent::open(&dir)?;
        create_in(&parent, &name, path, opts, true)
    }

    /// Whether the output is a regular file that [`Output::commit`] renames into place.
    pub fn is_replaced(&self) -> bool {
        self.rename.is_some()
    }

    /// Flushes, syncs and puts the temporary file in place over the final name; the first
    /// error of the writes, the flush, the sync, the check that the name is not a log
    /// being recorded, or the rename. A FIFO or device is flushed only.
    pub fn commit(mut self) -> io::Result<()> {
        self.out.flush()?;
        if let Some(r) = self.rename.take() {
            let dir = r.dir.as_fd();
            let done = self
                .out
                .get_ref()
                .sync_all()
                .and_then(|()| still_free(dir, &r.name, r.held.as_ref()))
                .and_then(|_again| put_in_place(self.out.get_ref(), dir, &r.tmp, &r.name));
            if let (Err(_), Temp::Named(tmp)) = (&done, &r.tmp) {
                let _ = unlinkat(dir, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
            }
            done?;
        }
        Ok(())
    }
}

/// Just before the rename: the name is not (now) a file another process has locked (a
/// recorder that created it since the output was opened). Returns the lock taken on a file
/// that appeared, held until the rename.
fn still_free(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    held: Option<&Flock<File>>,
) -> io::Result<Option<Flock<File>>> {
    let Ok(s) = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return Ok(None);
    };
    let held_id = held.and_then(|h| FileId::of(&**h).ok());
    if kind_of(&s) != SFlag::S_IFREG || held_id == Some(FileId::of_stat(&s)) {
        return Ok(None);
    }
    lock_existing(dir, name, &s)
}

/// Opens the regular file `name` (described by `s`) and takes a shared lock on it, refused
/// while another process holds its exclusive lock (a recorder). `None` when it cannot be
/// opened to be checked (no read permission): the rename's own rules apply.
fn lock_existing(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    s: &FileStat,
) -> io::Result<Option<Flock<File>>> {
    let flags = OFlag::O_RDONLY
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC;
    let f = match openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(Errno::EACCES | Errno::EPERM | Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => return Err(link_refused()),
        Err(e) => return Err(e.into()),
    };
    if FileId::of(&f)? != FileId::of_stat(s) {
        return Err(err(
            io::ErrorKind::Other,
            "it was replaced while being opened; try again".into(),
        ));
    }
    match Flock::lock(f, FlockArg::LockSharedNonblock) {
        Ok(l) => Ok(Some(l)),
        Err((_, Errno::EWOULDBLOCK)) => Err(recording_refused()),
        Err((_, _)) => Ok(None),
    }
}

/// Gives the complete temporary file its final name.
fn put_in_place(file: &File, dir: BorrowedFd<'_>, tmp: &Temp, name: &OsStr) -> io::Result<()> {
    match tmp {
        Temp::Named(t) => Ok(renameat(dir, t.as_os_str(), dir, name)?),
        Temp::Unnamed => {
            // No file of that name: linked straight to it. Else under a hidden name first,
            // then renamed over it (a process killed between the two leaves that name,
            // which the next output of the name removes).
            match link_unnamed(file, dir, name) {
                Ok(()) => return Ok(()),
                Err(Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
            let hidden = link_hidden(file, dir, name)?;
            let r = renameat(dir, hidden.as_os_str(), dir, name);
            if r.is_err() {
                let _ = unlinkat(dir, hidden.as_os_str(), UnlinkatFlags::NoRemoveDir);
            }
            Ok(r?)
        }
    }
}

/// Links an `O_TMPFILE` file as `name` in `dir`: `linkat(AT_EMPTY_PATH)` (which needs
/// CAP_DAC_READ_SEARCH), else through `/proc/self/fd`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn link_unnamed(file: &File, dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    match nix::unistd::linkat(file.as_fd(), "", dir, name, AtFlags::AT_EMPTY_PATH) {
        Err(Errno::ENOENT | Errno::EPERM) => {}
        r => return r,
    }
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    nix::unistd::linkat(
        nix::fcntl::AT_FDCWD,
        proc_path.as_str(),
        dir,
        name,
        AtFlags::AT_SYMLINK_FOLLOW,
    )
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn link_unnamed(_file: &File, _dir: BorrowedFd<'_>, _name: &OsStr) -> Result<(), Errno> {
    Err(Errno::ENOTSUP)
}

/// Links an unnamed file under a fresh hidden name next to `name`.
fn link_hidden(file: &File, dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OsString> {
    let mut last = Errno::EEXIST;
    for _ in 0..100 {
        let hidden = temp_name(name);
        match link_unnamed(file, dir, &hidden) {
            Ok(()) => return Ok(hidden),
            Err(Errno::EEXIST) => last = Errno::EEXIST,
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.into())
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(Replace {
            dir,
            tmp: Temp::Named(tmp),
            ..
        }) = self.rename.take()
        {
            let _ = unlinkat(dir.as_fd(), tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
    }
}

/// Creates `name` in `parent`: a regular (or absent) file through a temporary file,
/// anything else (and anything in a system directory, `/dev/stdout`) in place. `sweep`:
/// remove this name's stale temporary files first (see [`remove_stale_temps`]).
pub(super) fn create_in(
    parent: &Parent,
    name: &OsStr,
    shown: &Path,
    opts: &Options,
    sweep: bool,
) -> io::Result<Output> {
    let entry = parent.entry(name, opts)?;
    if let Some(s) = &entry {
        if kind_of(s) == SFlag::S_IFDIR {
            return Err(err(io::ErrorKind::IsADirectory, "it is a directory".into()));
        }
    }
    if parent.system || entry.as_ref().is_some_and(|s| kind_of(s) != SFlag::S_IFREG) {
        let f = open_special(parent, name, shown, opts)?;
        return Ok(Output {
            out: io::BufWriter::new(f),
            rename: None,
        });
    }
    let held = match &entry {
        Some(s) => lock_existing(parent.fd.as_fd(), name, s)?,
        None => None,
    };
    if sweep {
        remove_stale_temps(parent.fd.as_fd(), name);
    }
    let dir = parent.fd.try_clone()?;
    let (file, tmp) = create_temp(dir.as_fd(), name, parent.new_file_mode(opts))?;
    Ok(Output {
        out: io::BufWriter::new(file),
        rename: Some(Replace {
            dir,
            tmp,
            name: name.to_os_string(),
            held,
        }),
    })
}
