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
//! not raise SIGBUS: the rest of it reads as zeros and [`Bytes::cut`] says where. The
//! opening, the mapping and its guard are the crate pmc-filemap's, shared with pmc-unwind;
//! this module adds the limits, the root and pmc-analyze's errors.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
pub use pmc_filemap::{file_kind, Bytes};

/// The largest object file symbolized: 4 GiB. Larger files are refused with a warning
/// (their frames stay unsymbolized). Mapped files cost only the pages touched, so the
/// limit bounds address space and parse time, not memory.
pub const MAX_OBJECT_SIZE: u64 = 4 << 30;

/// The largest kallsyms file read: 256 MiB (a kernel with every module loaded has a few MiB).
pub const MAX_KALLSYMS_SIZE: u64 = 256 << 20;

fn refused(path: &Path, reason: String) -> Error {
    Error::Refused {
        path: path.to_path_buf(),
        reason,
    }
}

/// Opens `path` read-only without blocking and returns it with its `fstat` metadata; refuses
/// anything but a regular file of at most `limit` bytes ([`pmc_filemap::open_regular`]).
pub fn open_regular(path: &Path, limit: u64) -> Result<(File, Metadata)> {
    pmc_filemap::open_regular(path, limit).map_err(|e| match e {
        pmc_filemap::OpenError::Io(source) => Error::Io {
            path: path.to_path_buf(),
            source,
        },
        pmc_filemap::OpenError::Refused(reason) => refused(path, reason),
    })
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
    if let Some(real) = pmc_filemap::outside_root(&file, &real_root) {
        return Err(outside(&real));
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
