//! Truncation and damage: no panic, nothing lost beyond the damaged block,
//! and every loss reported.

use pmc_log::format::{BLOCK_HEADER_LEN, PREAMBLE_LEN};
use pmc_log::record::Record;
use pmc_log::Reader;

use crate::roundtrip::read_all_stream;
use crate::util::{gen_file, Rng};

/// End offset of each record in a clean file.
fn record_ends(bytes: &[u8]) -> Vec<u64> {
    let reader = Reader::new(bytes).unwrap();
    let mut it = reader.records();
    let mut ends = Vec::new();
    while it.next().is_some() {
        ends.push(it.position());
    }
    assert!(it.report().is_clean(), "{}", it.report());
    ends
}

/// (start, end) of every block, header included.
fn blocks(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = PREAMBLE_LEN;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos + 16..pos + 20].try_into().unwrap()) as usize;
        let end = pos + BLOCK_HEADER_LEN + len;
        out.push((pos as u64, end as u64));
        pos = end;
    }
    assert_eq!(pos, bytes.len());
    out
}

#[test]
#[cfg_attr(miri, ignore)]
fn cut_at_1000_random_offsets() {
    let (bytes, recs) = gen_file(10_000, 42, 16 << 10);
    let ends = record_ends(&bytes);
    assert_eq!(ends.len(), recs.len());
    let reader = Reader::new(&bytes).unwrap();
    let full: Vec<Record<'_>> = reader.records().collect();
    let mut rng = Rng(7);
    for i in 0..1000 {
        let cut = PREAMBLE_LEN as u64 + rng.below(bytes.len() as u64 - PREAMBLE_LEN as u64 + 1);
        let data = &bytes[..cut as usize];
        let expected = ends.iter().take_while(|&&e| e <= cut).count();
        let reader = Reader::new(data).unwrap();
        let mut it = reader.records();
        let mut n = 0;
        let mut last = None;
        for r in it.by_ref() {
            if i % 50 == 0 {
                assert_eq!(r, full[n], "cut {cut}: record {n} differs");
            }
            last = Some(r);
            n += 1;
        }
        assert_eq!(
            n, expected,
            "cut at {cut}: got {n} records, expected {expected}"
        );
        if n > 0 {
            assert_eq!(last.as_ref(), Some(&full[n - 1]), "cut {cut}");
        }
        let rep = it.report();
        let complete = cut == bytes.len() as u64;
        assert_eq!(rep.closed_cleanly, complete, "cut {cut}: {rep}");
        // Everything after the last whole record is accounted for as truncated.
        let tail = cut
            - ends
                .get(n.wrapping_sub(1))
                .copied()
                .unwrap_or(PREAMBLE_LEN as u64);
        let reported = rep.skipped_bytes();
        // Unreported tail bytes can only be a whole (empty) block header boundary.
        assert!(
            reported <= tail,
            "cut {cut}: reported {reported} > tail {tail}"
        );
        if tail > 0 && !ends.contains(&cut) {
            let at_block_boundary = blocks(&bytes)
                .iter()
                .any(|b| b.1 == cut || b.0 + BLOCK_HEADER_LEN as u64 == cut);
            assert!(
                reported > 0 || at_block_boundary,
                "cut {cut}: tail of {tail} bytes not reported: {rep}"
            );
        }
        // The streaming reader agrees (on a subset, it is slower).
        if i % 20 == 0 {
            let (sgot, srep) = read_all_stream(data);
            assert_eq!(sgot.len(), expected, "stream, cut {cut}");
            assert_eq!(srep.skipped_bytes(), reported, "stream, cut {cut}");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn flip_random_bytes_in_the_middle() {
    let (bytes, recs) = gen_file(3_000, 9, 2048);
    let ends = record_ends(&bytes);
    let blks = blocks(&bytes);
    let block_of = |end: u64| blks.iter().position(|b| b.0 < end && end <= b.1).unwrap();
    let reader = Reader::new(&bytes).unwrap();
    let full: Vec<Record<'_>> = reader.records().collect();
    assert_eq!(full.len(), recs.len());
    let mut rng = Rng(1234);
    for round in 0..300 {
        let mut data = bytes.clone();
        // 1 to 3 flips close together, in the middle half of the file.
        let len = data.len() as u64;
        let centre = len / 4 + rng.below(len / 2);
        let mut damaged = Vec::new();
        for _ in 0..=rng.below(3) {
            let at = (centre + rng.below(64)).min(len - 1);
            data[at as usize] ^= 1 << rng.below(8);
            damaged.push(blks.iter().position(|b| b.0 <= at && at < b.1).unwrap());
        }
        let reader = Reader::new(&data).unwrap();
        let mut it = reader.records();
        let got: Vec<Record<'_>> = it.by_ref().collect();
        let rep = it.report();
        // `got` is `full` minus records of damaged blocks, in order.
        let mut g = 0;
        for (i, r) in full.iter().enumerate() {
            if g < got.len() && &got[g] == r {
                g += 1;
            } else {
                let b = block_of(ends[i]);
                assert!(
                    damaged.contains(&b),
                    "round {round}: record {i} of undamaged block {b} lost ({rep})"
                );
            }
        }
        assert_eq!(
            g,
            got.len(),
            "round {round}: reader returned records not in the original"
        );
        if data != bytes {
            assert!(
                !rep.skipped.is_empty(),
                "round {round}: damage not reported"
            );
        }
        for s in &rep.skipped {
            let first = blks
                .iter()
                .position(|b| b.0 <= s.offset && s.offset < b.1)
                .unwrap();
            let last = blks
                .iter()
                .position(|b| b.0 < s.offset + s.len && s.offset + s.len <= b.1)
                .unwrap();
            for b in first..=last {
                assert!(
                    damaged.contains(&b),
                    "round {round}: skipped region {s:?} covers undamaged block {b}"
                );
            }
        }
        assert!(
            rep.closed_cleanly,
            "round {round}: the close marker's block was not damaged"
        );
        if round % 30 == 0 {
            let (sgot, srep) = read_all_stream(&data);
            assert_eq!(sgot.len(), got.len(), "stream, round {round}");
            assert_eq!(srep.skipped, rep.skipped, "stream, round {round}");
        }
    }
}

#[test]
fn garbage_between_blocks_is_skipped_and_reported() {
    let (bytes, _recs) = gen_file(if cfg!(miri) { 40 } else { 200 }, 3, 1024);
    let blks = blocks(&bytes);
    let (b1, _) = blks[2];
    let mut data = bytes[..b1 as usize].to_vec();
    data.extend_from_slice(&[0xA7; 100]); // sync-like garbage
    data.extend_from_slice(&bytes[b1 as usize..]);
    let reader = Reader::new(&data).unwrap();
    let mut it = reader.records();
    let n = it.by_ref().count();
    assert_eq!(n, if cfg!(miri) { 42 } else { 202 });
    let rep = it.report();
    assert_eq!(rep.skipped.len(), 1, "{rep}");
    assert_eq!(rep.skipped[0].offset, b1);
    assert_eq!(rep.skipped[0].len, 100);
}

#[test]
fn lost_block_is_counted() {
    let (bytes, _recs) = gen_file(if cfg!(miri) { 40 } else { 200 }, 3, 1024);
    let blks = blocks(&bytes);
    let (s, e) = blks[2];
    let mut data = bytes[..s as usize].to_vec();
    data.extend_from_slice(&bytes[e as usize..]);
    let reader = Reader::new(&data).unwrap();
    let mut it = reader.records();
    let _ = it.by_ref().count();
    assert_eq!(it.report().missing_blocks, 1);
    assert!(!it.report().is_clean());
}
