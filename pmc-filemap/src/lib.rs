//! # pmc-filemap: the object files a log names, opened safely
//!
//! pmc-analyze (symbolizing a log) and pmc-unwind (unwinding while recording) both open
//! files whose paths come from a log's map records, so both do it the same way, here:
//! [`open_regular`] opens without blocking (`O_NONBLOCK`: a FIFO cannot stall it) and
//! refuses anything but a regular file within a size limit, checked with `fstat` on the
//! descriptor (no race with a rename); [`Bytes::map`] maps it read-only, under a SIGBUS
//! guard, so a file truncated while mapped reads as zeros from the cut on
//! ([`Bytes::cut`]) instead of killing the process. [`under_root`] and [`outside_root`]
//! keep `-r DIR` lookups inside their root. One guard, one table of mappings and one
//! SIGBUS handler per process, whichever crate mapped the file.
//!
//! The crate's only `unsafe` is the mapping and its handler, in `sys/`, with its one choice
//! by OS ([`outside_root`] reads `/proc/self/fd` on Linux).
//!
//! ```
//! let exe = std::env::current_exe()?;
//! let (file, meta) = pmc_filemap::open_regular(&exe, 4 << 30)?;
//! let bytes = pmc_filemap::Bytes::map(&file, meta.len() as usize)?;
//! assert_eq!(&bytes[..4], b"\x7fELF");
//! assert_eq!(bytes.cut(), None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(unreachable_pub, unnameable_types)]
#![deny(unsafe_code)]
#![deny(missing_docs)]

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

// Read-only file mappings and their SIGBUS guard, with SAFETY comments.
#[allow(unsafe_code)]
mod sys;

pub use sys::{outside_root, Bytes};

/// Why [`open_regular`] did not open a file.
#[derive(Debug)]
pub enum OpenError {
    /// The open or the `fstat` failed.
    Io(io::Error),
    /// Not a regular file, or over the limit: the reason, for the caller's message.
    Refused(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Io(e) => e.fmt(f),
            OpenError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Io(e) => Some(e),
            OpenError::Refused(_) => None,
        }
    }
}

/// Opens `path` read-only without blocking and returns it with its `fstat` metadata;
/// refuses anything but a regular file of at most `limit` bytes.
///
/// # Errors
/// [`OpenError::Io`] when the open or `fstat` fails; [`OpenError::Refused`] for a device,
/// FIFO, socket or directory ([`file_kind`] names it) or a file over `limit`.
pub fn open_regular(path: &Path, limit: u64) -> Result<(File, Metadata), OpenError> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = o.open(path).map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::Refused(format!(
            "{}, not a regular file; only regular files are read",
            file_kind(&meta)
        )));
    }
    if meta.len() > limit {
        return Err(OpenError::Refused(format!(
            "{} bytes, over the {limit}-byte limit",
            meta.len()
        )));
    }
    Ok((file, meta))
}

/// What kind of file `m` is, for messages ("a FIFO", "a character device"...).
pub fn file_kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// `path` (a path from a log) resolved lexically under `root`: `.` dropped, `..` taking one
/// component back; `None` when a `..` would climb above the root.
///
/// ```
/// use std::path::Path;
/// let r = Path::new("/sysroot");
/// assert_eq!(pmc_filemap::under_root(r, Path::new("/usr/./lib/../bin/ls")).unwrap(), Path::new("/sysroot/usr/bin/ls"));
/// assert_eq!(pmc_filemap::under_root(r, Path::new("/../etc/passwd")), None);
/// ```
pub fn under_root(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(n) => parts.push(n),
        }
    }
    let mut out = root.to_path_buf();
    out.extend(parts);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_big_files_are_refused() {
        for p in ["/dev/zero", "/dev/null", "/"] {
            let e = open_regular(Path::new(p), u64::MAX).unwrap_err();
            assert!(matches!(e, OpenError::Refused(_)), "{p}: {e}");
        }
        let exe = std::env::current_exe().unwrap();
        let e = open_regular(&exe, 16).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
    }

    /// A file truncated while mapped reads as zeros past the cut, which is reported, instead
    /// of killing the process with SIGBUS (before the guard: this test died of SIGBUS).
    #[test]
    fn a_file_truncated_while_mapped_is_cut_not_sigbus() {
        let p = std::env::temp_dir().join(format!("pmc-filemap-trunc-{}", std::process::id()));
        std::fs::write(&p, vec![0xa5u8; 64 << 10]).unwrap();
        let (f, _) = open_regular(&p, u64::MAX).unwrap();
        let b = Bytes::map(&f, 64 << 10).unwrap();
        assert_eq!(b.cut(), None);
        assert_eq!(b[0], 0xa5);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(8192)
            .unwrap();
        let nonzero = b.iter().filter(|&&x| x != 0).count();
        assert_eq!(nonzero, 8192, "bytes before the cut kept, zeros after");
        assert_eq!(b.cut(), Some(8192));
        // A clone shares the mapping and its cut; dropping both unregisters it.
        let c = b.clone();
        drop(b);
        assert_eq!(c.cut(), Some(8192));
        drop(c);
        let _ = std::fs::remove_file(&p);
    }
}
