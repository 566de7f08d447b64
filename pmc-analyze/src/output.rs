//! Creating the files pmc writes, safely: every report, export, gmon tree and sample log.
//!
//! [`Output`] (a report or export, committed by rename) and [`create_log`] ([`LogFile`], a
//! log written while recording) open files as [`Options`] says; [`Dir`] creates trees below
//! a directory; [`FileId`] tells an input from an output. This module is the one place pmc
//! creates a file; below, the rules each one keeps. The files: this one the options and
//! refusals, `output/parent.rs` the directory opened once, `replace.rs` [`Output`],
//! `temp.rs` the temporary files, `special.rs` FIFOs and devices, `dir.rs` [`Dir`],
//! `log.rs` [`create_log`].
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

mod dir;
mod log;
mod parent;
mod replace;
mod special;
mod temp;

pub use dir::Dir;
pub use log::{create_log, LogFile};
pub use replace::Output;

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, FileStat, SFlag};

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

#[cfg(test)]
mod tests;
