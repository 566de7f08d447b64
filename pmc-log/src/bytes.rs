//! One bounded byte cursor for every binary layout the workspace decodes: [`ByteCursor`]
//! reads integers and slices in an [`Endian`], failing with [`Short`]; [`cstr`] cuts a
//! NUL-terminated field.
//!
//! The layouts it reads: pmc-log's own records (little-endian), FreeBSD's hwpmc kernel log
//! (little-endian, amd64/arm64), perf_event ring records (native-endian,
//! `pmc_linux::internals::record`) and hwpmc's `PMC_OP_*` structs (native-endian,
//! pmc-freebsd).
//!
//! Every read checks the bytes left and returns [`Short`] instead of
//! panicking; positions and lengths are checked with `checked_add`, so a
//! length taken from hostile input cannot overflow.
//!
//! ```
//! use pmc_log::bytes::{ByteCursor, Endian};
//!
//! let mut c = ByteCursor::new(&[1, 0, 0, 0, 2, 0], Endian::Little);
//! assert_eq!(c.u32(), Ok(1));
//! assert_eq!(c.u16(), Ok(2));
//! let short = c.u32().unwrap_err();
//! assert_eq!((short.offset, short.needed, short.available), (6, 4, 0));
//! // Offset reads leave the position alone.
//! assert_eq!(c.u32_at(4), Err(pmc_log::bytes::Short { offset: 4, needed: 4, available: 2 }));
//! ```

/// The byte order of the integers a [`ByteCursor`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first (pmc-log, hwpmc logs on amd64/arm64).
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The byte order of the CPU this code runs on (perf ring buffers, ioctl
    /// and syscall argument structs).
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };
}

/// A read past the end of a [`ByteCursor`]'s bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Short {
    /// Offset (from the start of the cursor's bytes) where the read started.
    pub offset: usize,
    /// Bytes the read needed.
    pub needed: usize,
    /// Bytes left at `offset` (0 when `offset` is past the end).
    pub available: usize,
}

impl std::fmt::Display for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes needed at offset {}, {} available",
            self.needed, self.offset, self.available
        )
    }
}

impl std::error::Error for Short {}

/// A bounds-checked reader over a byte slice: sequential reads advance the
/// position; `*_at` reads take an offset from the start and leave the
/// position alone. Borrowed results (`take`, `rest`) live as long as the
/// slice, not the cursor.
#[derive(Debug, Clone)]
pub struct ByteCursor<'a> {
    buf: &'a [u8],
    pos: usize,
    endian: Endian,
}

macro_rules! int_readers {
    ($($t:ty => $seq:ident, $at:ident;)*) => {$(
        #[doc = concat!("Reads a `", stringify!($t), "` and advances past it.")]
        #[inline]
        pub fn $seq(&mut self) -> Result<$t, Short> {
            let v = self.$at(self.pos)?;
            self.pos += std::mem::size_of::<$t>();
            Ok(v)
        }

        #[doc = concat!("Reads the `", stringify!($t), "` at `offset`, leaving the position alone.")]
        #[inline]
        pub fn $at(&self, offset: usize) -> Result<$t, Short> {
            let b = self.array_at::<{ std::mem::size_of::<$t>() }>(offset)?;
            Ok(match self.endian {
                Endian::Little => <$t>::from_le_bytes(b),
                Endian::Big => <$t>::from_be_bytes(b),
            })
        }
    )*};
}

impl<'a> ByteCursor<'a> {
    /// A cursor at the start of `buf`, reading integers in `endian` order.
    pub fn new(buf: &'a [u8], endian: Endian) -> Self {
        Self {
            buf,
            pos: 0,
            endian,
        }
    }

    /// A little-endian cursor at the start of `buf`.
    pub fn le(buf: &'a [u8]) -> Self {
        Self::new(buf, Endian::Little)
    }

    /// A native-endian cursor at the start of `buf`.
    pub fn ne(buf: &'a [u8]) -> Self {
        Self::new(buf, Endian::NATIVE)
    }

    /// The position: bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the position.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The whole slice the cursor reads.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }

    fn short(&self, offset: usize, needed: usize) -> Short {
        Short {
            offset,
            needed,
            available: self.buf.len().saturating_sub(offset),
        }
    }

    /// The `n` bytes at `offset`, leaving the position alone.
    ///
    /// # Errors
    ///
    /// [`Short`] if fewer than `n` bytes follow `offset`.
    pub fn take_at(&self, offset: usize, n: usize) -> Result<&'a [u8], Short> {
        offset
            .checked_add(n)
            .and_then(|end| self.buf.get(offset..end))
            .ok_or(self.short(offset, n))
    }

    /// The next `n` bytes; advances past them.
    ///
    /// # Errors
    ///
    /// [`Short`] if fewer than `n` bytes are left (the position stays).
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let b = self.take_at(self.pos, n)?;
        self.pos += n;
        Ok(b)
    }

    /// Skips `n` bytes.
    ///
    /// # Errors
    ///
    /// [`Short`] if fewer than `n` bytes are left (the position stays).
    pub fn skip(&mut self, n: usize) -> Result<(), Short> {
        self.take(n).map(|_| ())
    }

    /// `count` items of `item_len` bytes each, the product checked for
    /// overflow and against the bytes left before anything is read: `None`
    /// if it does not fit (the position stays). For counts read from the
    /// input.
    pub fn counted(&mut self, count: u64, item_len: usize) -> Option<&'a [u8]> {
        let n = usize::try_from(count).ok()?.checked_mul(item_len)?;
        self.take(n).ok()
    }

    /// The `N` bytes at `offset`, leaving the position alone.
    ///
    /// # Errors
    ///
    /// [`Short`] if fewer than `N` bytes follow `offset`.
    pub fn array_at<const N: usize>(&self, offset: usize) -> Result<[u8; N], Short> {
        self.take_at(offset, N)?
            .first_chunk::<N>()
            .copied()
            .ok_or(self.short(offset, N))
    }

    /// The next `N` bytes; advances past them.
    ///
    /// # Errors
    ///
    /// [`Short`] if fewer than `N` bytes are left (the position stays).
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let b = self.array_at::<N>(self.pos)?;
        self.pos += N;
        Ok(b)
    }

    int_readers! {
        u8 => u8, u8_at;
        u16 => u16, u16_at;
        u32 => u32, u32_at;
        i32 => i32, i32_at;
        u64 => u64, u64_at;
        i64 => i64, i64_at;
    }

    /// Reads a `u64` if `present`, else nothing.
    ///
    /// # Errors
    ///
    /// [`Short`] if `present` and fewer than 8 bytes are left.
    pub fn u64_if(&mut self, present: bool) -> Result<Option<u64>, Short> {
        if present {
            self.u64().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Everything after the position; the cursor is then at the end.
    pub fn rest(&mut self) -> &'a [u8] {
        let r = self.buf.get(self.pos..).unwrap_or_default();
        self.pos = self.buf.len();
        r
    }

    /// The NUL-terminated string starting at `offset`, without its NUL,
    /// bounded by the slice (all of it when no NUL follows; empty past the
    /// end).
    pub fn cstr_at(&self, offset: usize) -> &'a [u8] {
        cstr(self.buf.get(offset..).unwrap_or_default())
    }
}

/// The bytes of a NUL-terminated (and NUL-padded) field up to its first NUL,
/// all of it when there is none.
pub fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    field.get(..end).unwrap_or(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_orders_and_stops_at_the_end() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let mut le = ByteCursor::le(&b);
        assert_eq!(le.u32(), Ok(0x0403_0201));
        assert_eq!(le.u32(), Ok(0x0807_0605));
        assert_eq!(
            le.u16(),
            Err(Short {
                offset: 8,
                needed: 2,
                available: 1
            })
        );
        assert_eq!(le.pos(), 8, "a failed read does not move");
        assert_eq!(le.rest(), &[9]);
        assert_eq!(le.remaining(), 0);
        let be = ByteCursor::new(&b, Endian::Big);
        assert_eq!(be.u64_at(1), Ok(0x0203_0405_0607_0809));
        assert_eq!(be.u64_at(2).map_err(|s| s.available), Err(7));
        assert_eq!(
            ByteCursor::ne(&b).u32_at(0),
            Ok(u32::from_ne_bytes([1, 2, 3, 4]))
        );
    }

    #[test]
    fn hostile_offsets_and_counts_are_errors() {
        let b = [0u8; 16];
        let mut c = ByteCursor::le(&b);
        assert!(c.take_at(usize::MAX, 2).is_err());
        assert_eq!(c.u64_at(usize::MAX).map_err(|s| s.available), Err(0));
        assert!(c.take(17).is_err());
        assert_eq!(c.counted(u64::MAX, 8), None);
        assert_eq!(c.counted(3, 8), None);
        assert_eq!(c.counted(2, 8).map(<[u8]>::len), Some(16));
        assert_eq!(c.cstr_at(100), b"");
    }

    #[test]
    fn cstr_stops_at_the_nul() {
        assert_eq!(cstr(b"ab\0cd"), b"ab");
        assert_eq!(cstr(b"abc"), b"abc");
        let c = ByteCursor::le(b"xx/bin/sh\0\0\0");
        assert_eq!(c.cstr_at(2), b"/bin/sh");
    }
}
