//! The on-disk format: constants and layouts. `FORMAT.md` is the full
//! specification; this module holds the numbers.
//!
//! [`MAGIC`] and the version open a file; [`SYNC`], [`BLOCK_HEADER_LEN`] and
//! [`MAX_BLOCK_PAYLOAD`] frame blocks; [`kind`] numbers the records. The grammar follows.
//!
//! All integers are little-endian and may sit at any alignment.
//!
//! ```text
//! file     = preamble block*
//! preamble = magic[8] "\x89PMCLOG\n" | u16 major | u16 minor | u8 byte_order (1 = LE)
//!            | u8 reserved | u16 preamble_len (16)
//! block    = block_header record*          (records never straddle blocks)
//! block_header (32 bytes)
//!   @0  sync[4]  = 0xA7 'P' 'M' 'b'
//!   @4  u32 header_crc   CRC32C of bytes 8..32 of this header
//!   @8  u64 seq          0, 1, 2, ... in write order
//!   @16 u32 payload_len  bytes of records after this header (<= MAX_BLOCK_PAYLOAD)
//!   @20 u32 record_count
//!   @24 u32 flags (0)    @28 u32 reserved (0)
//! record_header (12 bytes)
//!   @0  u32 body_len     @4 u16 kind     @6 u16 flags (0)
//!   @8  u32 crc          CRC32C of record bytes 0..8 followed by the body
//! ```
//!
//! ---
//!
#![doc = include_str!("../FORMAT.md")]

/// Magic bytes at the start of every file.
pub const MAGIC: [u8; 8] = *b"\x89PMCLOG\n";
/// Major version written by this crate. Readers reject other majors.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version written by this crate. Readers accept any minor of their
/// major: minor bumps only add record kinds or append fields to bodies.
pub const VERSION_MINOR: u16 = 1;
/// `byte_order` value for little-endian, the only order written.
pub const BYTE_ORDER_LE: u8 = 1;
/// Length of the preamble.
pub const PREAMBLE_LEN: usize = 16;
/// Block sync marker.
pub const SYNC: [u8; 4] = [0xA7, b'P', b'M', b'b'];
/// Length of a block header.
pub const BLOCK_HEADER_LEN: usize = 32;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 12;
/// Largest block payload a reader accepts (16 MiB). Larger claims are damage.
pub const MAX_BLOCK_PAYLOAD: u32 = 16 << 20;
/// Default block payload size of the writer (64 KiB).
pub const DEFAULT_BLOCK_SIZE: usize = 64 << 10;
/// Value of an absent `Option<u32>` (CPU, PMC id) on disk.
pub const NONE_U32: u32 = u32::MAX;

/// Record kind codes.
pub mod kind {
    /// [`crate::record::Header`].
    pub const HEADER: u16 = 1;
    /// [`crate::record::PmcDescriptor`].
    pub const PMC: u16 = 2;
    /// [`crate::record::Sample`].
    pub const SAMPLE: u16 = 3;
    /// [`crate::record::Comm`].
    pub const COMM: u16 = 4;
    /// [`crate::record::Exec`].
    pub const EXEC: u16 = 5;
    /// [`crate::record::Fork`].
    pub const FORK: u16 = 6;
    /// [`crate::record::Exit`].
    pub const EXIT: u16 = 7;
    /// [`crate::record::ThreadCreate`].
    pub const THREAD_CREATE: u16 = 8;
    /// [`crate::record::ThreadExit`].
    pub const THREAD_EXIT: u16 = 9;
    /// [`crate::record::ProcessCreate`].
    pub const PROCESS_CREATE: u16 = 10;
    /// [`crate::record::Map`].
    pub const MAP: u16 = 11;
    /// [`crate::record::Unmap`].
    pub const UNMAP: u16 = 12;
    /// [`crate::record::Attach`].
    pub const ATTACH: u16 = 13;
    /// [`crate::record::Detach`].
    pub const DETACH: u16 = 14;
    /// [`crate::record::Counter`].
    pub const COUNTER: u16 = 15;
    /// [`crate::record::Lost`].
    pub const LOST: u16 = 16;
    /// [`crate::record::UserData`].
    pub const USER_DATA: u16 = 17;
    /// [`crate::record::Close`].
    pub const CLOSE: u16 = 18;
    /// [`crate::record::UserStack`] (since 1.1).
    pub const USER_STACK: u16 = 19;
}

/// CRC32C of a record: its 8 header bytes before the CRC, then its body.
#[inline]
pub(crate) fn record_crc(head8: &[u8], body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(head8), body)
}

/// [`record_crc`] with the CRC of the 8 header bytes remembered: a writer's records repeat
/// a few headers (a sample's differs only by its length), and a CRC call over 8 bytes costs
/// about as much as one over a short body (~20 ns each).
#[derive(Debug, Clone)]
pub(crate) struct HeadCrc {
    /// (header bytes as a little-endian u64, their CRC), by a hash of the length (boxed:
    /// a writer stays small to move).
    slots: Box<[(u64, u32); 16]>,
}

impl Default for HeadCrc {
    fn default() -> Self {
        // Every slot starts valid: the header of zeros with its CRC.
        HeadCrc {
            slots: Box::new([(0, crc32c::crc32c(&[0; 8])); 16]),
        }
    }
}

impl HeadCrc {
    /// The CRC of a record with header bytes `head8` and `body` (as [`record_crc`]).
    #[inline]
    pub(crate) fn record_crc(&mut self, head8: &[u8; 8], body: &[u8]) -> u32 {
        let key = u64::from_le_bytes(*head8);
        // The body length's low bits past the 8-byte alignment of most bodies.
        let slot = &mut self.slots[(key >> 3) as usize & 15];
        if slot.0 != key {
            *slot = (key, crc32c::crc32c(head8));
        }
        crc32c::crc32c_append(slot.1, body)
    }
}

/// The 16-byte preamble this crate writes.
pub(crate) fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut p = [0u8; PREAMBLE_LEN];
    p[..8].copy_from_slice(&MAGIC);
    p[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    p[10..12].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    p[12] = BYTE_ORDER_LE;
    p[14..16].copy_from_slice(&(PREAMBLE_LEN as u16).to_le_bytes());
    p
}

/// A decoded, validated block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHeader {
    pub seq: u64,
    pub payload_len: u32,
    pub record_count: u32,
}

pub(crate) fn encode_block_header(h: &BlockHeader) -> [u8; BLOCK_HEADER_LEN] {
    let mut b = [0u8; BLOCK_HEADER_LEN];
    b[..4].copy_from_slice(&SYNC);
    b[8..16].copy_from_slice(&h.seq.to_le_bytes());
    b[16..20].copy_from_slice(&h.payload_len.to_le_bytes());
    b[20..24].copy_from_slice(&h.record_count.to_le_bytes());
    let crc = crc32c::crc32c(&b[8..]);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Validate a block header: sync, CRC, sane payload length. `b` may be
/// longer than a header; shorter input returns `None`.
pub(crate) fn decode_block_header(b: &[u8]) -> Option<BlockHeader> {
    let b = b.get(..BLOCK_HEADER_LEN)?;
    if b.get(..4)? != SYNC {
        return None;
    }
    let c = crate::bytes::ByteCursor::le(b);
    let crc = c.u32_at(4).ok()?;
    if crc32c::crc32c(b.get(8..)?) != crc {
        return None;
    }
    let seq = c.u64_at(8).ok()?;
    let payload_len = c.u32_at(16).ok()?;
    let record_count = c.u32_at(20).ok()?;
    if payload_len > MAX_BLOCK_PAYLOAD {
        return None;
    }
    Some(BlockHeader {
        seq,
        payload_len,
        record_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_header_round_trip_and_damage() {
        let h = BlockHeader {
            seq: 7,
            payload_len: 100,
            record_count: 3,
        };
        let mut b = encode_block_header(&h);
        assert_eq!(decode_block_header(&b), Some(h));
        assert_eq!(decode_block_header(&b[..31]), None);
        b[17] ^= 1;
        assert_eq!(decode_block_header(&b), None);
    }

    #[test]
    fn preamble_layout() {
        let p = preamble();
        assert_eq!(&p[..8], b"\x89PMCLOG\n");
        assert_eq!(u16::from_le_bytes([p[8], p[9]]), VERSION_MAJOR);
        assert_eq!(p[12], BYTE_ORDER_LE);
        assert_eq!(u16::from_le_bytes([p[14], p[15]]), 16);
    }
}

#[cfg(test)]
mod head_crc_tests {
    use super::*;

    /// The remembered header CRCs give `record_crc`'s result, slots shared by several
    /// headers included.
    #[test]
    fn head_crc_is_record_crc() {
        let mut c = HeadCrc::default();
        let body: Vec<u8> = (0..200u8).collect();
        for round in 0..3 {
            for len in (0..400u32).step_by(4) {
                for kind in [3u16, 9, 18] {
                    let mut head = [0u8; 8];
                    head[..4].copy_from_slice(&len.to_le_bytes());
                    head[4..6].copy_from_slice(&kind.to_le_bytes());
                    let b = &body[..(len as usize % 200)];
                    assert_eq!(
                        c.record_crc(&head, b),
                        record_crc(&head, b),
                        "{round} {len} {kind}"
                    );
                }
            }
        }
        assert_eq!(c.record_crc(&[0; 8], b"x"), record_crc(&[0; 8], b"x"));
    }
}
