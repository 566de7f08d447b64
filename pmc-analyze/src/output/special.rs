//! FIFOs, devices and sockets (and links in the system's directories,
//! `/dev/stdout`): opened in place, without blocking on a FIFO's reader.

use super::parent::{is_symlink_at, Parent};
use super::{err, foreign_refused, is_input_refused, link_refused, FileId, Options};
use nix::errno::Errno;
use nix::fcntl::{fcntl, openat, FcntlArg, OFlag};
use nix::sys::stat::{fstat, Mode};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;

/// Opens a FIFO, device or socket (or, in a system directory, whatever its link names) in
/// place for writing, without blocking on the open and without following a link as the
/// last component outside a system directory; waits for a FIFO's reader as
/// [`Options::keep_waiting`] says; checks the descriptor opened against the inputs and
/// another user's ownership; returns it in blocking mode.
pub(super) fn open_special(
    parent: &Parent,
    name: &OsStr,
    shown: &Path,
    opts: &Options,
) -> io::Result<File> {
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
