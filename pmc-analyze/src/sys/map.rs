//! Read-only file mappings, shareable as `&[u8]` by the ELF and DWARF readers.

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::Arc;

enum Backing {
    Map(memmap2::Mmap),
    Heap(Arc<[u8]>),
}

/// Immutable bytes: a read-only mapping of a file, or bytes on the heap. Cloning shares them.
///
/// A mapping costs address space, not memory: only the pages the parsers touch are read, and
/// the kernel may drop them again under pressure.
#[derive(Clone)]
pub struct Bytes(Arc<Backing>);

impl Bytes {
    /// Maps the first `len` bytes of `file` read-only (`len` must be the file's size, from
    /// `fstat`; `0` gives empty bytes without a mapping, which `mmap(2)` refuses).
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::from(Arc::<[u8]>::from(&[][..])));
        }
        // SAFETY: `Mmap` is a private, read-only mapping; this crate never writes through
        // it and hands out only shared `&[u8]` views. Soundness needs the file not to
        // change while mapped. The callers map only regular files (checked by fstat on
        // the same descriptor) that are executables, shared objects, debug files or logs,
        // which are replaced by rename rather than rewritten in place; a file truncated
        // under us raises SIGBUS, as for every mmap-based reader (perf, gdb, addr2line).
        // That risk is accepted so that memory stays bounded by what is read.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        Ok(Bytes(Arc::new(Backing::Map(map))))
    }
}

impl From<Arc<[u8]>> for Bytes {
    fn from(a: Arc<[u8]>) -> Bytes {
        Bytes(Arc::new(Backing::Heap(a)))
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::from(Arc::<[u8]>::from(v))
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &*self.0 {
            Backing::Map(m) => m,
            Backing::Heap(h) => h,
        }
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &*self.0 {
            Backing::Map(_) => "mapped",
            Backing::Heap(_) => "heap",
        };
        write!(f, "Bytes({kind}, {} bytes)", self.len())
    }
}

// SAFETY: `deref` returns a view of the `Backing` behind the `Arc`: the pages of an `Mmap`
// (fixed until it is unmapped on drop) or an `Arc<[u8]>`'s heap block. Neither moves when a
// `Bytes` is moved, and the `Arc` keeps it alive for as long as any `Bytes` exists.
unsafe impl gimli::StableDeref for Bytes {}
// SAFETY: a clone shares the same `Arc<Backing>`, so it dereferences to the same address.
unsafe impl gimli::CloneStableDeref for Bytes {}
