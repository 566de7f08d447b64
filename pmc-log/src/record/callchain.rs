//! [`Callchain`]: the frames of a sample, a view over the file's bytes or owned, and its
//! iterator.

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// A callchain: instruction addresses, leaf (the sampled PC) first.
///
/// In the zero-copy reader this is a view over the raw little-endian bytes
/// of the file; [`Callchain::iter`] decodes frames on the fly with no
/// allocation. Producers build one from a `&[u64]` or a `Vec<u64>`.
///
/// ```
/// use pmc_log::record::Callchain;
/// let c = Callchain::from_frames(&[1, 2, 3]);
/// assert_eq!(c.len(), 3);
/// assert_eq!(c.iter().collect::<Vec<_>>(), vec![1, 2, 3]);
/// assert_eq!(c.get(2), Some(3));
/// ```
#[derive(Clone)]
pub struct Callchain<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    /// Little-endian u64 values; length is a multiple of 8.
    Raw(&'a [u8]),
    Frames(Cow<'a, [u64]>),
}

impl Default for Callchain<'_> {
    fn default() -> Self {
        Callchain(Repr::Frames(Cow::Borrowed(&[])))
    }
}

impl<'a> Callchain<'a> {
    /// Borrow a slice of frames.
    pub fn from_frames(frames: &'a [u64]) -> Self {
        Callchain(Repr::Frames(Cow::Borrowed(frames)))
    }
    /// Take ownership of a vector of frames.
    pub fn from_vec(frames: Vec<u64>) -> Callchain<'static> {
        Callchain(Repr::Frames(Cow::Owned(frames)))
    }
    /// View raw little-endian bytes as frames. Trailing bytes that do not
    /// make a whole frame are ignored.
    pub fn from_le_bytes(raw: &'a [u8]) -> Self {
        let whole = raw.len() / 8 * 8;
        Callchain(Repr::Raw(raw.get(..whole).unwrap_or_default()))
    }
    /// Number of frames.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw(b) => b.len() / 8,
            Repr::Frames(f) => f.len(),
        }
    }
    /// True when there are no frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The frame at `i` (0 = leaf), if any.
    pub fn get(&self, i: usize) -> Option<u64> {
        match &self.0 {
            Repr::Raw(b) => {
                let start = i.checked_mul(8)?;
                let chunk = b.get(start..start.checked_add(8)?)?;
                let arr: [u8; 8] = chunk.try_into().ok()?;
                Some(u64::from_le_bytes(arr))
            }
            Repr::Frames(f) => f.get(i).copied(),
        }
    }
    /// Iterate over the frames, leaf first.
    pub fn iter(&self) -> CallchainIter<'_> {
        match &self.0 {
            Repr::Raw(b) => CallchainIter(IterRepr::Raw(b.chunks_exact(8))),
            Repr::Frames(f) => CallchainIter(IterRepr::Frames(f.iter())),
        }
    }
    /// Copy the frames into a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
    /// The raw little-endian bytes, when this is a view over a file.
    pub fn raw_bytes(&self) -> Option<&'a [u8]> {
        match self.0 {
            Repr::Raw(b) => Some(b),
            Repr::Frames(_) => None,
        }
    }
    /// Copy into an owned value with no borrow.
    pub fn into_owned(self) -> Callchain<'static> {
        match self.0 {
            Repr::Frames(Cow::Owned(v)) => Callchain(Repr::Frames(Cow::Owned(v))),
            other => Callchain::from_vec(Callchain(other).to_vec()),
        }
    }
}

/// Iterator over the frames of a [`Callchain`].
pub struct CallchainIter<'c>(IterRepr<'c>);

enum IterRepr<'c> {
    Raw(std::slice::ChunksExact<'c, u8>),
    Frames(std::slice::Iter<'c, u64>),
}

impl Iterator for CallchainIter<'_> {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        match &mut self.0 {
            IterRepr::Raw(c) => {
                let chunk = c.next()?;
                let mut arr = [0u8; 8];
                arr.copy_from_slice(chunk);
                Some(u64::from_le_bytes(arr))
            }
            IterRepr::Frames(f) => f.next().copied(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Raw(c) => c.size_hint(),
            IterRepr::Frames(f) => f.size_hint(),
        }
    }
}

impl ExactSizeIterator for CallchainIter<'_> {}

impl PartialEq for Callchain<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}
impl Eq for Callchain<'_> {}

impl fmt::Debug for Callchain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|a| format!("{a:#x}")))
            .finish()
    }
}

#[cfg(feature = "serde")]
impl Serialize for Callchain<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de, 'a> Deserialize<'de> for Callchain<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<u64>::deserialize(d).map(|v| Callchain(Repr::Frames(Cow::Owned(v))))
    }
}
