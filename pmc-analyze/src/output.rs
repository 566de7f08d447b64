//! Creating the files pmc writes, safely: every report, export, gmon tree and sample log.
//!
//! [`Output`] (a report or export, committed by rename) and [`create_log`] ([`LogFile`], a
//! log written while recording) open files as [`Options`] says; [`Dir`] creates trees below
//! a directory; [`FileId`] tells an input from an output. Below: the rules each one keeps.
//!
//! The names come from the user (`-o`, `-G`, `-O`, ...) and, below a `-D` directory, from the
//! log (`DIR/EVENT/OBJECT.gmon`), so a writer must not be steered by what it finds on disk:
//!
//! - **No symbolic links.** A link as the last component is refused (a link planted at
//!   `out.txt` would otherwise redirect the write to its target); below a directory opened
//!   with [`Dir::open`], each component is created with `mkdirat` and opened with
//!   `openat(O_NOFOLLOW | O_DIRECTORY)`, so no component named by a log follows a link.
//!   Links under `/dev/` and `/proc/` (`/dev/stdout`, `/dev/fd/N`) are the system's own and
//!   are followed.
//! - **Never the input.** An output whose device and inode are one of
//!   [`Options::inputs`] (the log being read, under any name) is refused.
//! - **All or nothing.** A regular file is written to a temporary file in the same
//!   directory (`.NAME.XXXXXX.tmp`, created with `O_EXCL`) and renamed over `NAME` by
//!   [`Output::commit`]; a failed or interrupted export leaves no partial file and keeps the
//!   previous one. An [`Output`] dropped without `commit` removes its temporary file.
//! - **No hang on a FIFO.** A FIFO, device or socket is written in place (there is nothing
//!   to rename); it is opened with `O_NONBLOCK`, so a FIFO with no reader cannot block the
//!   open. The open is retried until a reader comes while [`Options::keep_waiting`] says so
//!   (pmcstat gives up on SIGINT/SIGTERM), then the descriptor is made blocking again.
//! - **One writer per log.** [`create_log`] (a sample log written while recording, which
//!   cannot wait for a rename) takes an exclusive `flock` before truncating: a second
//!   writer is refused and the first one's log is untouched.
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
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{fcntl, openat, renameat, FcntlArg, Flock, FlockArg, OFlag, AT_FDCWD};
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
        fstatat(AT_FDCWD, path, nix::fcntl::AtFlags::empty())
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
    /// Otherwise 0666 minus the umask, as `File::create`. (Sample logs, from
    /// [`create_log`], are always 0600.)
    pub private: bool,
}

/// The mode of a new regular file under `opts`.
fn new_file_mode(opts: &Options) -> Mode {
    Mode::from_bits_truncate(if opts.private { 0o600 } else { 0o666 })
}

/// Whether `path` names one of the system's own links (`/dev/stdout`, `/proc/self/fd/1`),
/// which are followed.
fn system_link(path: &Path) -> bool {
    path.starts_with("/dev/") || path.starts_with("/proc/")
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

/// A directory that outputs are created in, held open: what is created below it cannot be
/// moved elsewhere by a link planted in its path afterwards.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens directory `path`, creating it and its missing parents (mode 0777 minus the
    /// umask). A symbolic link as its last component is refused (outside `/dev/` and
    /// `/proc/`); the parents are the user's and are followed.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        if !path.is_dir() && std::fs::symlink_metadata(path).is_err() {
            std::fs::create_dir_all(path)?;
        }
        let mut flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        if !system_link(path) {
            flags |= OFlag::O_NOFOLLOW;
        }
        match openat(AT_FDCWD, path, flags, Mode::empty()) {
            Ok(fd) => Ok(Dir {
                fd,
                path: path.to_path_buf(),
            }),
            Err(Errno::ELOOP | Errno::ENOTDIR) if is_symlink_at(AT_FDCWD, path.as_os_str()) => {
                Err(link_refused())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The directory `name` in this one, created if missing; refused if it is a symbolic
    /// link. `name` is one component (a `/` in it is refused).
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        check_component(name)?;
        match mkdirat(self.fd.as_fd(), name, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(self.fd.as_fd(), name, flags, Mode::empty()) {
            Ok(fd) => Ok(Dir {
                fd,
                path: self.path.join(name),
            }),
            Err(Errno::ELOOP | Errno::ENOTDIR) if is_symlink_at(self.fd.as_fd(), name) => {
                Err(link_refused())
            }
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
        create_in(self.fd.as_fd(), name, &self.path.join(name), opts)
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
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|s| SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

fn kind_of(s: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT
}

/// An output being written: a temporary file renamed into place by [`Output::commit`], or a
/// FIFO, device or socket written in place.
#[derive(Debug)]
pub struct Output {
    out: io::BufWriter<File>,
    /// A regular file's directory, temporary name and final name.
    rename: Option<(OwnedFd, OsString, OsString)>,
}

impl Output {
    /// Creates output `path` (see the module documentation): its directory is opened
    /// (links followed: it is the user's), then the file in it.
    pub fn create(path: &Path, opts: &Options) -> io::Result<Output> {
        let (dir, name) = split(path)?;
        if system_link(path) {
            // The system's own links (/dev/stdout): opened as they are, in place.
            let f = open_special(AT_FDCWD, path.as_os_str(), path, opts, false)?;
            return Ok(Output {
                out: io::BufWriter::new(f),
                rename: None,
            });
        }
        let dirfd = openat(
            AT_FDCWD,
            &dir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        create_in(dirfd.as_fd(), &name, path, opts)
    }

    /// Whether the output is a regular file that [`Output::commit`] renames into place.
    pub fn is_replaced(&self) -> bool {
        self.rename.is_some()
    }

    /// Flushes, syncs and renames the temporary file over the final name; the first error of
    /// the writes, the flush, the sync or the rename. A FIFO or device is flushed only.
    pub fn commit(mut self) -> io::Result<()> {
        self.out.flush()?;
        if let Some((dir, tmp, name)) = self.rename.take() {
            let r = self.out.get_ref().sync_all().and_then(|()| {
                Ok(renameat(
                    dir.as_fd(),
                    tmp.as_os_str(),
                    dir.as_fd(),
                    name.as_os_str(),
                )?)
            });
            if r.is_err() {
                let _ = unlinkat(dir.as_fd(), tmp.as_os_str(), UnlinkatFlags::NoRemoveDir);
            }
            r?;
        }
        Ok(())
    }
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
        if let Some((dir, tmp, _)) = self.rename.take() {
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

/// Creates `name` in `dir`: a regular (or absent) file through a temporary file, anything
/// else in place.
fn create_in(dir: impl AsFd, name: &OsStr, shown: &Path, opts: &Options) -> io::Result<Output> {
    match fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(s) if kind_of(&s) == SFlag::S_IFLNK => return Err(link_refused()),
        Ok(s) if opts.inputs.contains(&FileId::of_stat(&s)) => return Err(is_input_refused()),
        Ok(s) if kind_of(&s) == SFlag::S_IFDIR => {
            return Err(err(io::ErrorKind::IsADirectory, "it is a directory".into()))
        }
        Ok(s) if kind_of(&s) != SFlag::S_IFREG => {
            let f = open_special(dir.as_fd(), name, shown, opts, true)?;
            return Ok(Output {
                out: io::BufWriter::new(f),
                rename: None,
            });
        }
        Ok(_) | Err(Errno::ENOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let dir = dir.as_fd().try_clone_to_owned()?;
    let (file, tmp) = create_temp(dir.as_fd(), name, new_file_mode(opts))?;
    Ok(Output {
        out: io::BufWriter::new(file),
        rename: Some((dir, tmp, name.to_os_string())),
    })
}

/// A new file `.NAME.XXXXXX.tmp` in `dir` (`O_EXCL`: never an existing file or link), mode
/// `mode` minus the umask (0666 is what `File::create` makes).
fn create_temp(dir: impl AsFd, name: &OsStr, mode: Mode) -> io::Result<(File, OsString)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut last = Errno::EEXIST;
    for _ in 0..100 {
        let salt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let mut tmp = OsString::from(".");
        // Keep the name short enough for NAME_MAX with a long final name.
        let base = name.as_bytes();
        tmp.push(OsStr::from_bytes(&base[..base.len().min(200)]));
        tmp.push(format!(".{:x}{:x}{n:x}.tmp", std::process::id(), salt));
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(dir.as_fd(), tmp.as_os_str(), flags, mode) {
            Ok(fd) => return Ok((File::from(fd), tmp)),
            Err(Errno::EEXIST) => last = Errno::EEXIST,
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.into())
}

/// Opens a FIFO, device or socket in place for writing, without blocking on the open and
/// without following a link as the last component (unless `nofollow` is false); waits for a
/// FIFO's reader as [`Options::keep_waiting`] says; returns it in blocking mode.
fn open_special(
    dir: impl AsFd,
    name: &OsStr,
    shown: &Path,
    opts: &Options,
    nofollow: bool,
) -> io::Result<File> {
    let at = if nofollow {
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW
    } else {
        nix::fcntl::AtFlags::empty()
    };
    if let Ok(s) = fstatat(dir.as_fd(), name, at) {
        if opts.inputs.contains(&FileId::of_stat(&s)) {
            return Err(is_input_refused());
        }
    }
    // O_CREAT and O_TRUNC as File::create (`/dev/stdout` may be a regular file); both are
    // ignored by FIFOs and devices.
    let mut flags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_TRUNC
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC;
    if nofollow {
        flags |= OFlag::O_NOFOLLOW;
    }
    let fd = loop {
        match openat(dir.as_fd(), name, flags, Mode::from_bits_truncate(0o666)) {
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
            Err(Errno::ELOOP) if is_symlink_at(dir.as_fd(), name) => return Err(link_refused()),
            Err(e) => return Err(e.into()),
        }
    };
    let s = fstat(fd.as_fd())?;
    if opts.inputs.contains(&FileId::of_stat(&s)) {
        return Err(is_input_refused());
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

/// Opens sample log `path` for recording: a link as the last component is refused, a FIFO
/// or device is opened as [`Output::create`] opens them, and a regular file is created or
/// opened without truncation, locked with `flock(LOCK_EX | LOCK_NB)` and only then
/// truncated: while another process records into it, the open fails with
/// `ErrorKind::WouldBlock` and leaves its log untouched. The lock is held until the
/// [`LogFile`] is dropped. A new log is created 0600 and an existing one loses its group
/// and other permissions, as perf.data: a recording shows what a program does.
pub fn create_log(path: &Path, opts: &Options) -> io::Result<LogFile> {
    let (dir, name) = split(path)?;
    let dirfd;
    let (at, name): (std::os::fd::BorrowedFd<'_>, &OsStr) = if system_link(path) {
        (AT_FDCWD, path.as_os_str())
    } else {
        dirfd = openat(
            AT_FDCWD,
            &dir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        (dirfd.as_fd(), &name)
    };
    match fstatat(at, name, nix::fcntl::AtFlags::empty()) {
        Ok(s) if kind_of(&s) != SFlag::S_IFREG && kind_of(&s) != SFlag::S_IFDIR => {
            let f = open_special(at, name, path, opts, !system_link(path))?;
            return Ok(LogFile {
                inner: LogInner::Plain(f),
            });
        }
        _ => {}
    }
    let mut flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    if !system_link(path) {
        flags |= OFlag::O_NOFOLLOW;
    }
    // 0600, as perf.data: a profile shows what a program does.
    let fd = match openat(at, name, flags, Mode::from_bits_truncate(0o600)) {
        Ok(fd) => fd,
        Err(Errno::ELOOP) if is_symlink_at(at, name) => return Err(link_refused()),
        Err(e) => return Err(e.into()),
    };
    let s = fstat(fd.as_fd())?;
    if opts.inputs.contains(&FileId::of_stat(&s)) {
        return Err(is_input_refused());
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
        Err((_, Errno::EWOULDBLOCK)) => {
            return Err(err(
                io::ErrorKind::WouldBlock,
                "another process is recording into it (it holds the file's lock); wait for \
                 it to finish or give another file"
                    .into(),
            ))
        }
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
