//! The unsafe seam: read-only file mappings.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::Arc;

/// Immutable bytes of an object: a read-only mapping of a file, or bytes on the heap (the
/// vdso, copied once). Cloning shares them.
#[derive(Clone)]
pub(crate) enum Image {
    Map(Arc<memmap2::Mmap>),
    Heap(Arc<[u8]>),
}

impl Image {
    /// Maps `file` (a regular file of `len > 0` bytes, checked by the caller with fstat on the
    /// same descriptor) read-only.
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Image> {
        if len == 0 {
            return Ok(Image::Heap(Arc::from(&[][..])));
        }
        // SAFETY: a private, read-only mapping; this crate never writes through it and hands
        // out only shared `&[u8]` views. Soundness needs the file not to change while mapped:
        // the callers map only regular files that a sampled process has mapped executable
        // (executables and shared objects, replaced by rename, not rewritten in place). A
        // file truncated under us raises SIGBUS, as for every mmap-based reader (perf, gdb);
        // that risk is accepted so that memory stays bounded by the pages the unwinder reads.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        Ok(Image::Map(Arc::new(map)))
    }
}

impl Deref for Image {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Image::Map(m) => m,
            Image::Heap(h) => h,
        }
    }
}
