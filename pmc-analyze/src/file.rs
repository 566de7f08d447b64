//! Opening the files a log names, safely: only regular files, without blocking, within a
//! size limit, and mapped rather than read.
//!
//! [`map_regular`], [`map_regular_under`] (below a root) and [`read_regular`] open through
//! [`open_regular`]; limits [`MAX_OBJECT_SIZE`] and [`MAX_KALLSYMS_SIZE`]; [`file_kind`] names
//! what was refused. Below: why each check is there.
//!
//! A log's `Map` records (and hwpmc's `MAP_IN`) name paths the log's writer chose, so
//! symbolization must not trust them: `/dev/zero` would be read forever and a FIFO would
//! block forever. Every file is opened with `O_NONBLOCK` (an open that cannot block on a
//! FIFO), checked with `fstat` on that descriptor (no race with a rename), refused unless
//! it is a regular file no larger than the limit, and mapped, so memory grows only with the
//! pages the ELF and DWARF parsers touch. A mapped file that is truncated while read does
//! not raise SIGBUS: the rest of it reads as zeros and [`Bytes::cut`] says where
//! (`sys/map.rs` explains the guard).

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
pub use crate::sys::map::Bytes;

/// The largest object file symbolized: 4 GiB. Larger files are refused with a warning
/// (their frames stay unsymbolized). Mapped files cost only the pages touched, so the
/// limit bounds address space and parse time, not memory.
pub const MAX_OBJECT_SIZE: u64 = 4 << 30;

/// The largest kallsyms file read: 256 MiB (a kernel with every module loaded has a few MiB).
pub const MAX_KALLSYMS_SIZE: u64 = 256 << 20;

/// What kind of file `m` is, for messages.
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

fn refused(path: &Path, reason: String) -> Error {
    Error::Refused {
        path: path.to_path_buf(),
        reason,
    }
}

/// Opens `path` read-only without blocking and returns it with its `fstat` metadata; refuses
/// anything but a regular file of at most `limit` bytes.
pub fn open_regular(path: &Path, limit: u64) -> Result<(File, Metadata)> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = o.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(refused(
            path,
            format!(
                "{}, not a regular file; only regular files are read",
                file_kind(&meta)
            ),
        ));
    }
    if meta.len() > limit {
        return Err(refused(
            path,
            format!("{} bytes, over the {limit}-byte limit", meta.len()),
        ));
    }
    Ok((file, meta))
}

/// Maps a regular file of at most `limit` bytes (see the module documentation).
pub fn map_regular(path: &Path, limit: u64) -> Result<Bytes> {
    let (file, meta) = open_regular(path, limit)?;
    let len = usize::try_from(meta.len())
        .map_err(|_| refused(path, format!("{} bytes do not fit in memory", meta.len())))?;
    Bytes::map(&file, len).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// [`map_regular`] for a path that must stay inside `root` (`-r DIR`) once its symbolic
/// links are followed: refused (an [`Error::Refused`] saying "outside the root") when it
/// resolves elsewhere. Checked before the open (so such a file is normally not even
/// opened) and again on the open descriptor (`/proc/self/fd`), so a link swapped in between
/// cannot slip through.
pub fn map_regular_under(path: &Path, root: &Path, limit: u64) -> Result<Bytes> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let real_root = std::fs::canonicalize(root).map_err(io)?;
    let outside = |real: &Path| {
        refused(
            path,
            format!(
                "it resolves to {}, outside the root {}",
                real.display(),
                root.display()
            ),
        )
    };
    let before = std::fs::canonicalize(path).map_err(io)?;
    if !before.starts_with(&real_root) {
        return Err(outside(&before));
    }
    let (file, meta) = open_regular(path, limit)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(real) = std::fs::read_link(fd) {
            if !real.starts_with(&real_root) {
                return Err(outside(&real));
            }
        }
    }
    let len = usize::try_from(meta.len())
        .map_err(|_| refused(path, format!("{} bytes do not fit in memory", meta.len())))?;
    Bytes::map(&file, len).map_err(io)
}

/// Reads a regular file (such as `/proc/kallsyms`, whose size `fstat` reports as 0) up to
/// `limit` bytes; a longer file is refused.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, _) = open_regular(path, limit)?;
    let mut out = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if out.len() as u64 > limit {
        return Err(refused(path, format!("longer than the {limit}-byte limit")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        for p in ["/dev/zero", "/dev/null", "/"] {
            let e = map_regular(Path::new(p), MAX_OBJECT_SIZE).unwrap_err();
            assert!(matches!(e, Error::Refused { .. }), "{p}: {e}");
        }
        let dir = std::env::temp_dir().join(format!("pmc-analyze-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let made = std::process::Command::new("mkfifo").arg(&dir).status();
        if made.is_ok_and(|s| s.success()) {
            // Without O_NONBLOCK this open would wait for a writer forever.
            let e = map_regular(&dir, MAX_OBJECT_SIZE).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
            let _ = std::fs::remove_file(&dir);
        } else {
            println!("SKIP devices_and_fifos_are_refused_without_blocking (FIFO part): no mkfifo");
        }
    }

    /// A file truncated while mapped reads as zeros past the cut, which is reported, instead
    /// of killing the process with SIGBUS (before the guard: this test died of SIGBUS).
    #[test]
    fn a_file_truncated_while_mapped_is_cut_not_sigbus() {
        let p = std::env::temp_dir().join(format!("pmc-analyze-trunc-{}", std::process::id()));
        std::fs::write(&p, vec![0xa5u8; 64 << 10]).unwrap();
        let b = map_regular(&p, MAX_OBJECT_SIZE).unwrap();
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

    #[test]
    fn regular_files_are_mapped_and_bounded() {
        let exe = std::env::current_exe().unwrap();
        let b = map_regular(&exe, MAX_OBJECT_SIZE).unwrap();
        assert_eq!(b.len() as u64, std::fs::metadata(&exe).unwrap().len());
        assert_eq!(&b[..4], b"\x7fELF");
        let e = map_regular(&exe, 16).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
        assert!(read_regular(&exe, 16).is_err());
    }
}
