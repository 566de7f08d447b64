//! [`TryVec`]: a byte buffer that reports running out of memory as an error.
//!
//! A `Vec<u8>` that grows past what the allocator can give aborts the process (Rust's
//! `handle_alloc_error`). The buffers that grow with a log's size (a converted hwpmc log, a
//! rewritten log) use `TryVec` instead: its growth goes through [`Vec::try_reserve`], and a
//! failure is an [`io::Error`] of kind [`io::ErrorKind::OutOfMemory`] that the writer
//! returns, so the caller reports it and exits cleanly.

use std::io;

/// A growable byte buffer, written through [`io::Write`], whose growth fails with an
/// [`io::ErrorKind::OutOfMemory`] error instead of aborting.
///
/// ```
/// use std::io::Write;
/// let mut v = pmc_log::TryVec::with_limit(8);
/// v.write_all(b"12345678")?;
/// let e = v.write_all(b"9").unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory);
/// assert_eq!(v.into_inner(), b"12345678");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct TryVec {
    buf: Vec<u8>,
    /// Growth past this many bytes fails as if memory ran out (`None`: only the allocator
    /// limits it).
    limit: Option<usize>,
}

impl TryVec {
    /// An empty buffer, limited only by the memory the allocator can give.
    pub fn new() -> TryVec {
        TryVec::default()
    }

    /// An empty buffer that refuses to hold more than `limit` bytes, with the error of an
    /// allocation failure (a memory budget, and the tests' way to reach that path).
    pub fn with_limit(limit: usize) -> TryVec {
        TryVec {
            buf: Vec::new(),
            limit: Some(limit),
        }
    }

    /// Appends `bytes`, or fails without changing the buffer.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::OutOfMemory`] when the buffer cannot grow.
    pub fn try_extend(&mut self, bytes: &[u8]) -> io::Result<()> {
        let len = self.buf.len();
        let need = len.checked_add(bytes.len());
        if let (Some(limit), Some(n)) = (self.limit, need) {
            if n > limit {
                return Err(out_of_memory(len, bytes.len(), "over the buffer's limit"));
            }
        }
        self.buf
            .try_reserve(bytes.len())
            .map_err(|e| out_of_memory(len, bytes.len(), &e.to_string()))?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The bytes written.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// The number of bytes written.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes, as a `Vec`.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// The error of a buffer of `len` bytes that could not grow by `more`.
pub fn out_of_memory(len: usize, more: usize, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("out of memory: a {len}-byte buffer could not grow by {more} bytes ({why})"),
    )
}

impl io::Write for TryVec {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.try_extend(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An allocation the allocator cannot give is an error, not an abort.
    #[test]
    fn an_impossible_growth_is_an_error() {
        let mut v = TryVec::new();
        v.write_all(b"abc").expect("small");
        let e = v
            .buf
            .try_reserve(usize::MAX / 2)
            .map_err(|e| out_of_memory(3, usize::MAX / 2, &e.to_string()))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(v.as_slice(), b"abc");
    }
}
