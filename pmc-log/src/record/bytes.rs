//! [`Bytes`]: raw bytes that usually hold text (paths, command names), borrowed or owned.

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Raw bytes that usually hold text (paths, command names).
///
/// Paths on Linux and FreeBSD are arbitrary bytes, so the format stores
/// them as bytes. Serde writes valid UTF-8 as a string and anything else as
/// an array of byte values; it reads either.
///
/// ```
/// use pmc_log::record::Bytes;
/// let b = Bytes::from("/bin/sh");
/// assert_eq!(b.as_bytes(), b"/bin/sh");
/// assert_eq!(b.to_string_lossy(), "/bin/sh");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Bytes<'a>(pub Cow<'a, [u8]>);

impl<'a> Bytes<'a> {
    /// Borrow the given slice.
    pub const fn borrowed(b: &'a [u8]) -> Self {
        Bytes(Cow::Borrowed(b))
    }
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// The bytes as text, replacing invalid UTF-8 with U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Copy into an owned value with no borrow.
    pub fn into_owned(self) -> Bytes<'static> {
        Bytes(Cow::Owned(self.0.into_owned()))
    }
}

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

impl<'a> From<&'a str> for Bytes<'a> {
    fn from(s: &'a str) -> Self {
        Bytes(Cow::Borrowed(s.as_bytes()))
    }
}
impl<'a> From<&'a [u8]> for Bytes<'a> {
    fn from(s: &'a [u8]) -> Self {
        Bytes(Cow::Borrowed(s))
    }
}
impl From<Vec<u8>> for Bytes<'static> {
    fn from(s: Vec<u8>) -> Self {
        Bytes(Cow::Owned(s))
    }
}
impl From<String> for Bytes<'static> {
    fn from(s: String) -> Self {
        Bytes(Cow::Owned(s.into_bytes()))
    }
}

#[cfg(feature = "serde")]
impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.collect_seq(self.0.iter()),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bytes<'static>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Bytes::from(v.as_bytes().to_vec()))
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Bytes::from(v.to_vec()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes::from(out))
            }
        }
        d.deserialize_any(V)
            .map(|b| Bytes(Cow::Owned(b.0.into_owned())))
    }
}
