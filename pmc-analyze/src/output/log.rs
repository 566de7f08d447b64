//! [`create_log`](super::create_log): a sample log written while recording,
//! under an exclusive `flock`.

use super::parent::{is_symlink_at, Parent};
use super::special::open_special;
use super::{
    foreign_refused, is_input_refused, kind_of, link_refused, recording_refused, split, FileId,
    Options,
};
use nix::errno::Errno;
use nix::fcntl::{fcntl, openat, FcntlArg, Flock, FlockArg, OFlag};
use nix::sys::stat::{fstat, Mode, SFlag};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::Path;

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
/// directory refused); a FIFO or device is opened as [`Output::create`](super::Output::create) opens them, and a
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
