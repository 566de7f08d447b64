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
    for i in 0..pmc_testkit::iterations(1000, 1000) {
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
    for round in 0..pmc_testkit::iterations(300, 300) {
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

/// A block of a clean file: `(start, end, record ranges)`, ranges absolute.
type Frame = (usize, usize, Vec<(usize, usize)>);

/// The framing of a clean file, walked from the bytes (not with the reader).
fn framing(bytes: &[u8]) -> Vec<Frame> {
    blocks(bytes)
        .into_iter()
        .map(|(s, e)| {
            let (s, e) = (s as usize, e as usize);
            let mut recs = Vec::new();
            let mut p = s + BLOCK_HEADER_LEN;
            while p < e {
                let body = u32::from_le_bytes(bytes[p..p + 4].try_into().unwrap()) as usize;
                recs.push((p, p + 12 + body));
                p += 12 + body;
            }
            assert_eq!(p, e);
            (s, e, recs)
        })
        .collect()
}

/// Indices (into the clean file's records) of the records that lie wholly in
/// `[from, to)` of the clean file, where `from` is a block start: what a
/// reader must recover from that segment when it is copied elsewhere.
fn records_in(frames: &[Frame], from: usize, to: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut idx = 0;
    for (s, _, recs) in frames {
        for &(a, b) in recs {
            if *s >= from && a >= from && b <= to {
                out.push(idx);
            }
            idx += 1;
        }
    }
    out
}

/// Reads `data` with both readers and checks they return exactly the
/// `expected` records of `full`, in order. Returns the report.
fn expect_exactly(
    what: &str,
    data: &[u8],
    full: &[Record<'_>],
    expected: &[usize],
) -> pmc_log::ReadReport {
    let reader = Reader::new(data).unwrap();
    let mut it = reader.records();
    let got: Vec<Record<'_>> = it.by_ref().collect();
    let rep = it.into_report();
    println!(
        "{what}: expected {} records, recovered {}; {rep}",
        expected.len(),
        got.len()
    );
    assert_eq!(
        got.len(),
        expected.len(),
        "{what}: {} records lost: {rep}",
        expected.len() as i64 - got.len() as i64
    );
    for (g, &e) in got.iter().zip(expected) {
        assert_eq!(g, &full[e], "{what}: record {e} differs");
    }
    let (sgot, srep) = read_all_stream(data);
    assert_eq!(sgot.len(), got.len(), "{what}: stream reader disagrees");
    assert_eq!(srep.skipped, rep.skipped, "{what}: stream report differs");
    assert!(!rep.is_clean(), "{what}: damage not reported: {rep}");
    rep
}

/// A block missing its tail, followed by an intact block: every record of the
/// intact block (and of all later blocks) is recovered, and so is every
/// complete record before the tear. Before the rescan rule, the reader jumped
/// to the torn block's claimed end, inside the next block, and lost it.
#[test]
fn torn_block_then_intact_block_loses_nothing_intact() {
    let (n, bs) = if cfg!(miri) {
        (120, 1024)
    } else {
        (20_000, 64 << 10)
    };
    let (bytes, _) = gen_file(n, 5, bs);
    let full: Vec<Record<'_>> = Reader::new(&bytes).unwrap().records().collect();
    let frames = framing(&bytes);
    let k = frames.len() / 2;
    let (s, e, recs) = &frames[k];
    let mid = recs[recs.len() / 2];
    // Tear inside a record, and tear exactly at a record boundary.
    for (label, cut) in [("mid-record", mid.0 + 7), ("at a record boundary", mid.0)] {
        let mut data = bytes[..cut].to_vec();
        data.extend_from_slice(&bytes[*e..]);
        let mut expected = records_in(&frames, 0, cut);
        expected.extend(records_in(&frames, *e, bytes.len()));
        let rep = expect_exactly(&format!("torn block ({label})"), &data, &full, &expected);
        assert!(rep.closed_cleanly);
        // The damage is reported inside the torn block, nowhere else.
        for sk in &rep.skipped {
            assert!(sk.offset as usize >= *s && (sk.offset + sk.len) as usize <= cut + 12);
        }
    }
}

/// Half of a real block spliced between two others: the records of the blocks
/// around it are all recovered, and so are the complete records of the half.
#[test]
fn half_block_spliced_between_two_others() {
    let (n, bs) = if cfg!(miri) {
        (120, 1024)
    } else {
        (20_000, 64 << 10)
    };
    let (bytes, _) = gen_file(n, 8, bs);
    let full: Vec<Record<'_>> = Reader::new(&bytes).unwrap().records().collect();
    let frames = framing(&bytes);
    let k = frames.len() / 2;
    // The first half of block k+2 goes between blocks k and k+1.
    let (hs, he, _) = &frames[k + 2];
    let half_end = hs + (he - hs) / 2;
    let at = frames[k].1;
    let mut data = bytes[..at].to_vec();
    data.extend_from_slice(&bytes[*hs..half_end]);
    data.extend_from_slice(&bytes[at..]);
    let mut expected = records_in(&frames, 0, at);
    expected.extend(records_in(&frames, *hs, half_end));
    expected.extend(records_in(&frames, at, bytes.len()));
    let rep = expect_exactly("half block spliced", &data, &full, &expected);
    assert!(rep.closed_cleanly);
    // Only bytes of the spliced half are skipped.
    let spliced = (at, at + (half_end - hs));
    for sk in &rep.skipped {
        assert!(
            sk.offset as usize >= spliced.0 && (sk.offset + sk.len) as usize <= spliced.1,
            "{sk:?} outside the splice {spliced:?}"
        );
    }
}

/// Garbage inserted inside a block (between two of its records): the rest of
/// that block is lost (records carry no sync marker), every other block is
/// read.
#[test]
fn garbage_inserted_inside_a_block_costs_only_that_block() {
    let (n, bs) = if cfg!(miri) {
        (120, 1024)
    } else {
        (5_000, 16 << 10)
    };
    let (bytes, _) = gen_file(n, 13, bs);
    let full: Vec<Record<'_>> = Reader::new(&bytes).unwrap().records().collect();
    let frames = framing(&bytes);
    let k = frames.len() / 2;
    let (_, e, recs) = &frames[k];
    let at = recs[recs.len() / 3].0;
    let mut data = bytes[..at].to_vec();
    data.extend((0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    data.extend_from_slice(&bytes[at..]);
    let mut expected = records_in(&frames, 0, at);
    expected.extend(records_in(&frames, *e, bytes.len()));
    expect_exactly("garbage inside a block", &data, &full, &expected);
}
