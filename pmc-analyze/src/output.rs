//! Creating the files pmc writes, safely: every report, export, gmon tree and sample log.
//!
//! [`Output`] (a report or export, committed by rename) and [`create_log`] ([`LogFile`], a
//! log written while recording) open files as [`Options`] says; [`Dir`] creates trees below
//! a directory; [`FileId`] tells an input from an output. This module is the one place pmc
//! creates a file; below, the rules each one keeps.
//!
//! The names come from the user (`-o`, `-G`, `-O`, ...) and, below a `-D` directory, from the
//! log (`DIR/EVENT/OBJECT.gmon`), so a writer must not be steered by what it finds on disk:
//!
//! - **The directory once, then no link.** An output's directory is opened once (its path
//!   is the user's: links in it are followed), and the file is opened relative to that
//!   descriptor with `O_NOFOLLOW`: a link as the last component is refused (a link planted
//!   at `out.txt` would otherwise redirect the write to its target). Only in the system's
//!   own directories of links, `/dev`, `/dev/fd` and `/proc/self/fd` (`/dev/stdout`,
//!   `/dev/fd/N`), found by the identity of the directory opened, not by the path's spelling
//!   (`/dev/../tmp/out` is `/tmp`, `/dev/shm` is not `/dev`), is the last link followed.
//!   Below a directory opened with [`Dir::open`], each component is created with `mkdirat`
//!   and opened with `openat(O_NOFOLLOW | O_DIRECTORY)`.
//! - **Never another user's file in a shared directory.** In a sticky directory others may
//!   write to (`/tmp`, `/var/tmp`, `/dev/shm`), a file, FIFO or directory that belongs to
//!   another user (neither to this process's user nor to the directory's owner) is refused,
//!   before it is opened and again on the descriptor: root's recording is never written
//!   into, nor a report renamed over, a file another user planted there (the rule the
//!   kernel's `fs.protected_regular` and `fs.protected_fifos` apply when set). What pmc
//!   creates there is created 0600.
//! - **Never the input.** An output whose device and inode are one of
//!   [`Options::inputs`] (the log being read, under any name) is refused.
//! - **Never a log being recorded.** A regular file replaced by an output is first opened
//!   and locked (`flock(LOCK_SH | LOCK_NB)`) until the rename: a file a recorder holds
//!   ([`create_log`]'s exclusive lock) is refused, and a recorder that starts meanwhile is
//!   refused its lock. The name is checked again just before the rename.
//! - **All or nothing, and nothing left behind.** A regular file is written to a temporary
//!   file and put in place by [`Output::commit`]; a failed or interrupted export leaves no
//!   partial file and keeps the previous one. Where the kernel and the file system allow it
//!   (Linux's `O_TMPFILE`) the temporary file has no name until it is complete, so a killed
//!   export leaves nothing; elsewhere it is `.NAME.pmc-PID-START-N.tmp` (`O_EXCL`), removed
//!   when an [`Output`] is dropped without `commit`, and removed by the next output of the
//!   same name if its process is gone (its pid and start time say so, and it belongs to this
//!   user): nothing else is ever removed.
//! - **No hang on a FIFO.** A FIFO, device or socket is written in place (there is nothing
//!   to rename); it is opened with `O_NONBLOCK`, so a FIFO with no reader cannot block the
//!   open. The open is retried until a reader comes while [`Options::keep_waiting`] says so
//!   (pmcstat gives up on SIGINT/SIGTERM), then the descriptor is made blocking again.
//! - **One writer per log.** [`create_log`] (a sample log written while recording, which
//!   cannot wait for a rename) takes an exclusive `flock` before truncating: a second
//!   writer, or an export replacing the file, is refused and the first one's log is
//!   untouched.
//!
//! ```no_run
//! use pmc_analyze::output::{Options, Output};
//! use std::io::Write;
//! # fn main() -> std::io::Result<()> {
//! let mut out = Output::create("report.txt".as_ref(), &Options::default())?;
//! writeln!(out, "hello")?;
//! out.commit()?; // report.txt appears whole, or not at all
//! # Ok(())
//! # }
//! ```

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{fcntl, openat, renameat, AtFlags, FcntlArg, Flock, FlockArg, OFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// A file's identity: its device and inode, the same under every name (hard links,
/// `./x` and `x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

impl FileId {
    fn of_stat(s: &FileStat) -> FileId {
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        FileId {
            dev: s.st_dev as u64,
            ino: s.st_ino as u64,
        }
    }

    /// The identity of an open file.
    ///
    /// ```
    /// let f = std::fs::File::open("/").unwrap();
    /// let id = pmc_analyze::output::FileId::of(&f).unwrap();
    /// assert_eq!(Some(id), pmc_analyze::output::FileId::of_path("/".as_ref()));
    /// ```
    pub fn of(f: &impl AsFd) -> io::Result<FileId> {
        Ok(FileId::of_stat(&fstat(f.as_fd())?))
    }

    /// The identity of the file at `path` (links followed), if there is one.
    pub fn of_path(path: &Path) -> Option<FileId> {
        fstatat(AT_FDCWD, path, AtFlags::empty())
            .ok()
            .map(|s| FileId::of_stat(&s))
    }
}

/// What a writer must respect besides the rules every output follows.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Files that must not be overwritten: the logs being read.
    pub inputs: Vec<FileId>,
    /// While a FIFO has no reader: called between attempts to open it (every 50 ms);
    /// `false` gives up with `ErrorKind::Interrupted`. `None`: refuse at once with
    /// `ErrorKind::WouldBlock`, saying the FIFO has no reader.
    pub keep_waiting: Option<fn() -> bool>,
    /// Create regular files readable by their owner only (mode 0600, as perf
    /// creates perf.data): for profiles, which show what a program does.
    /// Otherwise 0666 minus the umask, as `File::create`, except in a shared directory
    /// (sticky and writable by others), where everything is created 0600. (Sample logs,
    /// from [`create_log`], are always 0600.)
    pub private: bool,
}

fn err(kind: io::ErrorKind, msg: String) -> io::Error {
    io::Error::new(kind, msg)
}

fn link_refused() -> io::Error {
    err(
        io::ErrorKind::InvalidInput,
        "it is a symbolic link, which pmc does not follow when creating files (remove it, or \
         give the link's target)"
            .into(),
    )
}

fn is_input_refused() -> io::Error {
    err(
        io::ErrorKind::InvalidInput,
        "it is the log being read (same device and inode): writing it would destroy the \
         recording; give another output file"
            .into(),
    )
}

fn foreign_refused(s: &FileStat) -> io::Error {
    err(
        io::ErrorKind::PermissionDenied,
        format!(
            "it belongs to another user (uid {}) in a directory others may write to (sticky, \
             as /tmp): pmc neither writes into nor replaces another user's file there, as \
             fs.protected_regular and fs.protected_fifos intend (remove it, or give a name \
             of your own)",
            s.st_uid
        ),
    )
}

fn recording_refused() -> io::Error {
    err(
        io::ErrorKind::WouldBlock,
        "another process is recording into it or replacing it (it holds the file's lock); \
         wait for it to finish or give another file"
            .into(),
    )
}

fn kind_of(s: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT
}

/// The directory an output is created in, opened once: every name in it is resolved
/// relative to this descriptor, with what decides how.
#[derive(Debug)]
struct Parent {
    fd: OwnedFd,
    stat: FileStat,
    /// One of the system's directories of links (`/dev`, `/dev/fd`, `/proc/self/fd`),
    /// whose last link is followed.
    system: bool,
}

impl Parent {
    /// Opens directory `dir` (links in its path followed: it is the user's).
    fn open(dir: &Path) -> io::Result<Parent> {
        let fd = openat(
            AT_FDCWD,
            dir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Parent::of(fd)
    }

    fn of(fd: OwnedFd) -> io::Result<Parent> {
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
    fn foreign(&self, s: &FileStat) -> bool {
        let me = nix::unistd::geteuid().as_raw();
        self.shared() && s.st_uid != me && s.st_uid != self.stat.st_uid
    }

    /// The mode of a new regular file under `opts`, here.
    fn new_file_mode(&self, opts: &Options) -> Mode {
        Mode::from_bits_truncate(if opts.private || self.shared() {
            0o600
        } else {
            0o666
        })
    }

    /// What is at `name`: `None` if nothing; a link refused unless this is a system
    /// directory (then what it points to, `None` if it dangles); the refusals every output
    /// makes (an input, another user's file in a shared directory).
    fn entry(&self, name: &OsStr, opts: &Options) -> io::Result<Option<FileStat>> {
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
    fn nofollow(&self) -> OFlag {
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

fn is_symlink_at(dir: impl AsFd, name: &OsStr) -> bool {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|s| kind_of(&s) == SFlag::S_IFLNK)
}

/// An output being written: a temporary file put in place by [`Output::commit`], or a
/// FIFO, device or socket written in place.
#[derive(Debug)]
pub struct Output {
    out: io::BufWriter<File>,
    /// A regular file's way into place.
    rename: Option<Replace>,
}

/// How a regular output's temporary file becomes its name.
#[derive(Debug)]
struct Replace {
    /// The directory.
    dir: OwnedFd,
    /// The temporary file: unnamed (`O_TMPFILE`) or its hidden name.
    tmp: Temp,
    /// The final name.
    name: OsString,
    /// The file the output replaces, open and share-locked until the rename (no recorder
    /// may take it meanwhile).
    held: Option<Flock<File>>,
}

#[derive(Debug)]
enum Temp {
    /// `O_TMPFILE`: no name until committed (a killed process leaves nothing).
    #[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
    Unnamed,
    /// `.NAME.pmc-PID-START-N.tmp`.
    Named(OsString),
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
        AT_FDCWD,
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

/// `path`'s directory (`.` for a bare name) and last component.
fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path.file_name().ok_or_else(|| {
        err(
            io::ErrorKind::InvalidInput,
            "not a file name (it ends in `/`, `.` or `..`)".into(),
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_os_string()))
}

/// Creates `name` in `parent`: a regular (or absent) file through a temporary file,
/// anything else (and anything in a system directory, `/dev/stdout`) in place. `sweep`:
/// remove this name's stale temporary files first (see [`remove_stale_temps`]).
fn create_in(
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

/// This process's start time since boot, in clock ticks (`/proc/self/stat`'s 22nd field),
/// 0 where there is no `/proc`: with the pid, what names a process for good.
fn start_time(pid: &str) -> Option<u64> {
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
fn temp_name(name: &OsStr) -> OsString {
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
fn remove_stale_temps(dir: BorrowedFd<'_>, name: &OsStr) {
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
fn create_temp(dir: BorrowedFd<'_>, name: &OsStr, mode: Mode) -> io::Result<(File, Temp)> {
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

/// Opens a FIFO, device or socket (or, in a system directory, whatever its link names) in
/// place for writing, without blocking on the open and without following a link as the
/// last component outside a system directory; waits for a FIFO's reader as
/// [`Options::keep_waiting`] says; checks the descriptor opened against the inputs and
/// another user's ownership; returns it in blocking mode.
fn open_special(parent: &Parent, name: &OsStr, shown: &Path, opts: &Options) -> io::Result<File> {
    // O_CREAT and O_TRUNC as File::create (`/dev/stdout` may be a regular file); both are
    // ignored by FIFOs and devices.
    let flags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_TRUNC
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC
        | parent.nofollow();
    let dir = parent.fd.as_fd();
    let fd = loop {
        match openat(dir, name, flags, Mode::from_bits_truncate(0o666)) {
            Ok(fd) => break fd,
            Err(Errno::ENXIO) => match opts.keep_waiting {
                Some(wait) if wait() => std::thread::sleep(Duration::from_millis(50)),
                Some(_) => {
                    return Err(err(
                        io::ErrorKind::Interrupted,
                        format!(
                            "interrupted while waiting for a reader of the FIFO {}",
                            shown.display()
                        ),
                    ))
                }
                None => {
                    return Err(err(
                        io::ErrorKind::WouldBlock,
                        "a FIFO with no reader (start its reader first)".into(),
                    ))
                }
            },
            Err(Errno::ELOOP) if is_symlink_at(dir, name) => return Err(link_refused()),
            Err(e) => return Err(e.into()),
        }
    };
    let s = fstat(fd.as_fd())?;
    if opts.inputs.contains(&FileId::of_stat(&s)) {
        return Err(is_input_refused());
    }
    if parent.foreign(&s) {
        return Err(foreign_refused(&s));
    }
    let fl = OFlag::from_bits_truncate(fcntl(fd.as_fd(), FcntlArg::F_GETFL)?);
    fcntl(fd.as_fd(), FcntlArg::F_SETFL(fl & !OFlag::O_NONBLOCK))?;
    Ok(File::from(fd))
}

/// A sample log being recorded: written in place (a recording is read while it grows, and
/// what was written before a failure stays readable), locked against a second writer.
#[derive(Debug)]
pub struct LogFile {
    /// The file with its `flock` (a regular file), or without (a FIFO or device).
    inner: LogInner,
}

#[derive(Debug)]
enum LogInner {
    Locked(Flock<File>),
    Plain(File),
}

impl LogFile {
    /// Whether this is a regular file (which `create_log` created or truncated).
    pub fn is_regular(&self) -> bool {
        matches!(self.inner, LogInner::Locked(_))
    }

    /// The log's identity (`None` if `fstat` fails).
    pub fn id(&self) -> Option<FileId> {
        match &self.inner {
            LogInner::Locked(f) => FileId::of(&**f).ok(),
            LogInner::Plain(f) => FileId::of(f).ok(),
        }
    }
}

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            LogInner::Locked(f) => (&**f).write(buf),
            LogInner::Plain(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            LogInner::Locked(f) => (&**f).flush(),
            LogInner::Plain(f) => f.flush(),
        }
    }
}

/// Opens sample log `path` for recording: its directory once, then the name relative to it
/// (a link as the last component refused but in `/dev`; another user's file in a shared
/// directory refused); a FIFO or device is opened as [`Output::create`] opens them, and a
/// regular file is created or opened without truncation, locked with
/// `flock(LOCK_EX | LOCK_NB)` and only then truncated: while another process records into
/// it (or an export is replacing it), the open fails with `ErrorKind::WouldBlock` and
/// leaves the file untouched. The lock is held until the [`LogFile`] is dropped. A new log
/// is created 0600 and an existing one loses its group and other permissions, as
/// perf.data: a recording shows what a program does.
pub fn create_log(path: &Path, opts: &Options) -> io::Result<LogFile> {
    let (dir, name) = split(path)?;
    let parent = Parent::open(&dir)?;
    let entry = parent.entry(&name, opts)?;
    if let Some(s) = &entry {
        if kind_of(s) != SFlag::S_IFREG && kind_of(s) != SFlag::S_IFDIR {
            let f = open_special(&parent, &name, path, opts)?;
            return Ok(LogFile {
                inner: LogInner::Plain(f),
            });
        }
    }
    let flags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC
        | parent.nofollow();
    let at = parent.fd.as_fd();
    // 0600, as perf.data: a profile shows what a program does.
    let fd = match openat(at, &*name, flags, Mode::from_bits_truncate(0o600)) {
        Ok(fd) => fd,
        Err(Errno::ELOOP) if is_symlink_at(at, &name) => return Err(link_refused()),
        Err(e) => return Err(e.into()),
    };
    let s = fstat(fd.as_fd())?;
    if opts.inputs.contains(&FileId::of_stat(&s)) {
        return Err(is_input_refused());
    }
    if parent.foreign(&s) {
        return Err(foreign_refused(&s));
    }
    let file = File::from(fd);
    if kind_of(&s) != SFlag::S_IFREG {
        // Raced into something else: write it as it is, blocking.
        let fl = OFlag::from_bits_truncate(fcntl(file.as_fd(), FcntlArg::F_GETFL)?);
        fcntl(file.as_fd(), FcntlArg::F_SETFL(fl & !OFlag::O_NONBLOCK))?;
        return Ok(LogFile {
            inner: LogInner::Plain(file),
        });
    }
    let locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err((_, Errno::EWOULDBLOCK)) => return Err(recording_refused()),
        Err((_, e)) => return Err(e.into()),
    };
    nix::unistd::ftruncate(locked.as_fd(), 0)?;
    // An existing file now holds a new recording: readable by its owner only, as a new one.
    if s.st_mode & 0o077 != 0 {
        nix::sys::stat::fchmod(locked.as_fd(), Mode::from_bits_truncate(s.st_mode & 0o700))?;
    }
    let fl = OFlag::from_bits_truncate(fcntl(locked.as_fd(), FcntlArg::F_GETFL)?);
    fcntl(locked.as_fd(), FcntlArg::F_SETFL(fl & !OFlag::O_NONBLOCK))?;
    Ok(LogFile {
        inner: LogInner::Locked(locked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pmc-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue 24: logs and private outputs are the owner's only (0600), as perf.data;
    /// other outputs 0666 minus the umask.
    #[test]
    fn logs_and_private_outputs_are_0600() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmpdir("modes");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let log = d.join("new.log");
        drop(create_log(&log, &Options::default()).unwrap());
        assert_eq!(mode(&log), 0o600);
        let old = d.join("old.log");
        std::fs::write(&old, b"x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(create_log(&old, &Options::default()).unwrap());
        assert_eq!(mode(&old), 0o600);
        let private = Options {
            private: true,
            ..Options::default()
        };
        let p = d.join("profile");
        Output::create(&p, &private).unwrap().commit().unwrap();
        assert_eq!(mode(&p), 0o600);
        let q = d.join("report");
        Output::create(&q, &Options::default())
            .unwrap()
            .commit()
            .unwrap();
        assert_ne!(mode(&q) & 0o044, 0, "{:o}", mode(&q));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn commit_renames_and_drop_leaves_nothing() {
        let d = tmpdir("commit");
        let p = d.join("out");
        std::fs::write(&p, b"previous").unwrap();
        let mut o = Output::create(&p, &Options::default()).unwrap();
        o.write_all(b"half").unwrap();
        drop(o);
        assert_eq!(std::fs::read(&p).unwrap(), b"previous");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "a temporary file was left"
        );
        let mut o = Output::create(&p, &Options::default()).unwrap();
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn links_and_inputs_are_refused() {
        let d = tmpdir("links");
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        let e = Output::create(&d.join("link"), &Options::default()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = create_log(&d.join("link"), &Options::default()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let dir = Dir::open(&d).unwrap();
        std::os::unix::fs::symlink(&d, d.join("sub")).unwrap();
        let e = dir.subdir("sub".as_ref()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let opts = Options {
            inputs: vec![FileId::of_path(&victim).unwrap()],
            ..Options::default()
        };
        std::fs::hard_link(&victim, d.join("hard")).unwrap();
        let e = Output::create(&d.join("hard"), &opts).unwrap_err();
        assert!(e.to_string().contains("log being read"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_second_log_writer_is_refused() {
        let d = tmpdir("lock");
        let p = d.join("log");
        let mut first = create_log(&p, &Options::default()).unwrap();
        first.write_all(b"first").unwrap();
        let e = create_log(&p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        drop(first);
        create_log(&p, &Options::default()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue 32 item 3: the last link is followed only in the system's directories of
    /// links, judged by the directory opened, not by the spelling: `/dev/stdout` is
    /// followed, a link reached as `/dev/../DIR/link` is not.
    #[test]
    fn only_the_systems_links_are_followed() {
        let d = tmpdir("sysdirs");
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        let dotdot = Path::new("/dev/..")
            .join(d.strip_prefix("/").unwrap())
            .join("link");
        let e = Output::create(&dotdot, &Options::default()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = create_log(&dotdot, &Options::default()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(Parent::open(Path::new("/dev")).unwrap().system);
        assert!(!Parent::open(&d).unwrap().system);
        if Path::new("/dev/shm").is_dir() {
            assert!(!Parent::open(Path::new("/dev/shm")).unwrap().system);
        }
        Output::create(Path::new("/dev/null"), &Options::default())
            .unwrap()
            .commit()
            .unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue 32 item 4: an output does not replace a file another process holds locked
    /// (a recording), and while an output holds a file, a recorder is refused it.
    #[test]
    fn a_log_being_recorded_is_not_replaced() {
        let d = tmpdir("replace-log");
        let p = d.join("rec.log");
        let mut rec = create_log(&p, &Options::default()).unwrap();
        rec.write_all(b"recording").unwrap();
        let e = Output::create(&p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        drop(rec);
        assert_eq!(std::fs::read(&p).unwrap(), b"recording");
        let out = Output::create(&p, &Options::default()).unwrap();
        let e = create_log(&p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        out.commit().unwrap();
        // A recorder that created the name after the output was opened: the commit refuses.
        let q = d.join("late.log");
        let out = Output::create(&q, &Options::default()).unwrap();
        let rec = create_log(&q, &Options::default()).unwrap();
        let e = out.commit().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        drop(rec);
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no temporary left"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue 32 item 11: an output's temporary file has no name (O_TMPFILE) where the file
    /// system allows it; a named one a dead process left is removed by the next output of
    /// the name, and nothing else: not a live process's, not another user's, not another
    /// name's.
    #[test]
    fn stale_temporaries_are_removed_and_nothing_else() {
        let d = tmpdir("stale");
        let out = Output::create(&d.join("out"), &Options::default()).unwrap();
        let named: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        if matches!(out.rename.as_ref().map(|r| &r.tmp), Some(Temp::Unnamed)) {
            assert!(named.is_empty(), "an unnamed temporary file has no name");
        }
        drop(out);
        let me = std::process::id();
        let mine = start_time("self").unwrap_or(0);
        let dead = ".out.pmc-4194305-12345-1.tmp"; // above the kernel's pid_max
        let live = format!(".out.pmc-1-{}-1.tmp", start_time("1").unwrap_or(0));
        let reused = format!(".out.pmc-{me}-{}-1.tmp", mine + 1);
        let other = ".other.pmc-4194305-12345-1.tmp";
        let odd = ".out.pmc-x.tmp";
        for n in [dead, &live, &reused, other, odd] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        Output::create(&d.join("out"), &Options::default())
            .unwrap()
            .commit()
            .unwrap();
        let left: std::collections::BTreeSet<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(!left.contains(dead), "{left:?}");
        assert!(left.contains(&live) && left.contains(other) && left.contains(odd));
        // This process's own pid is never judged (its own temporaries are its own).
        assert!(left.contains(&reused), "{left:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue 32 item 2 (as root): in a sticky directory others may write to, a file or
    /// FIFO another user made is neither written into nor replaced, and what is created
    /// there is 0600.
    #[test]
    fn another_users_file_in_a_shared_directory_is_refused() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if !nix::unistd::geteuid().is_root() {
            return; // The unprivileged case: pmc-tests' faults_cli runs it as nobody.
        }
        let d = tmpdir("sticky");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let planted = d.join("planted");
        std::fs::write(&planted, b"nobody's").unwrap();
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o666)).unwrap();
        std::os::unix::fs::chown(&fifo, Some(65534), Some(65534)).unwrap();
        for p in [&planted, &fifo] {
            let e = Output::create(p, &Options::default()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            let e = create_log(p, &Options::default()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        }
        assert_eq!(std::fs::read(&planted).unwrap(), b"nobody's");
        assert_eq!(std::fs::metadata(&planted).unwrap().uid(), 65534);
        let mine = d.join("mine");
        Output::create(&mine, &Options::default())
            .unwrap()
            .commit()
            .unwrap();
        let mode = std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_fifo_without_reader_does_not_block() {
        let d = tmpdir("fifo");
        let p = d.join("fifo");
        nix::unistd::mkfifo(&p, Mode::from_bits_truncate(0o600)).unwrap();
        let e = Output::create(&p, &Options::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        let opts = Options {
            keep_waiting: Some(|| false),
            ..Options::default()
        };
        let e = create_log(&p, &opts).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted, "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
