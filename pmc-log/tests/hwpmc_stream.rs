//! hwpmc import fed in chunks (`hwpmc::StreamImporter`): any split gives
//! what `convert` gives for the whole input; hostile streams stay bounded.

use std::io::Write;
use std::sync::{Arc, Mutex};

use pmc_log::hwpmc::{self, Encoder, HwpmcError, ImportReport, Importer, StreamImporter};
use pmc_log::record::Record;
use pmc_log::{Reader, Writer};
use proptest::prelude::*;

use crate::util::Rng;

/// The golden fixture: a "PMCL" prefix, every record type, a multipart
/// callchain, an unknown type (its bytes are pinned by
/// `hwpmc::fixture_bytes_are_stable`).
fn fixture() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pmclog/synthetic-amd64-all-types.pmclog");
    std::fs::read(path).unwrap()
}

/// The fixture without its `pmc record` prefix: a raw kernel stream.
fn kernel_stream() -> Vec<u8> {
    let d = fixture();
    let at = (8..d.len())
        .step_by(4)
        .find(|&i| d[i + 3] == 0xEE && u32::from(d[i + 2]) == hwpmc::PMCLOG_TYPE_INITIALIZE)
        .unwrap();
    d[at..].to_vec()
}

type Outcome = Result<(Vec<u8>, ImportReport), String>;

fn whole(data: &[u8]) -> Outcome {
    hwpmc::convert(data, Vec::new()).map_err(|e| e.to_string())
}

/// Feed `data` cut at `cuts` (sorted offsets), checking the buffer bound
/// after every chunk.
fn chunked(data: &[u8], cuts: &[usize]) -> Outcome {
    let mut s = StreamImporter::new(Vec::new());
    let mut at = 0;
    for &c in cuts.iter().chain(std::iter::once(&data.len())) {
        let c = c.clamp(at, data.len());
        s.feed(&data[at..c]).map_err(|e| e.to_string())?;
        assert!(s.buffered() <= hwpmc::MAX_BUFFERED);
        assert_eq!(s.position(), c as u64);
        at = c;
    }
    s.finish().map_err(|e| e.to_string())
}

/// What `convert` did before it was a `StreamImporter`: the record
/// iterator into a `Writer`. An independent path through the converter.
fn via_importer(data: &[u8]) -> Outcome {
    let mut imp = Importer::new(data).map_err(|e| e.to_string())?;
    let Some(Record::Header(h)) = imp.next() else {
        return Err(imp.error().map(|e| e.to_string()).unwrap_or_default());
    };
    let mut w = Writer::new(Vec::new(), &h).unwrap();
    let mut close = None;
    for rec in imp.by_ref() {
        match rec {
            Record::Close(c) => close = Some(c.time),
            other => w.write(&other).unwrap(),
        }
    }
    let out = match close {
        Some(t) => w.finish_at(t).unwrap(),
        None => w.into_inner_unclosed().unwrap(),
    };
    Ok((out, imp.report()))
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_single_split_point_gives_the_same_output() {
    for data in [fixture(), kernel_stream()] {
        let expect = whole(&data).unwrap();
        assert_eq!(expect, via_importer(&data).unwrap());
        for cut in 0..=data.len() {
            assert_eq!(chunked(&data, &[cut]).unwrap(), expect, "split at {cut}");
        }
    }
}

#[test]
fn one_byte_at_a_time_gives_the_same_output() {
    for data in [fixture(), kernel_stream()] {
        let cuts: Vec<usize> = (1..data.len()).collect();
        assert_eq!(chunked(&data, &cuts), whole(&data));
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn damaged_and_truncated_streams_split_anywhere_give_the_same_output() {
    let mut rng = Rng(7);
    let base = fixture();
    for i in 0..3000 {
        let mut d = base.clone();
        match i % 3 {
            0 => {
                for _ in 0..=rng.below(4) {
                    let at = rng.below(d.len() as u64) as usize;
                    d[at] ^= rng.next() as u8;
                }
            }
            1 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
            _ => {
                // A plausible header announcing a long record, mid-stream.
                let at = rng.below(d.len() as u64 / 4) as usize * 4;
                let word =
                    0xEE00_0000u32 | (rng.below(22) as u32) << 16 | (rng.below(0x4000) as u32 * 4);
                d[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
        let expect = whole(&d);
        if let Ok(ok) = &expect {
            assert_eq!(ok, &via_importer(&d).unwrap(), "case {i}");
        }
        let mut cuts: Vec<usize> = (0..rng.below(6))
            .map(|_| rng.below(d.len() as u64 + 1) as usize)
            .collect();
        cuts.sort_unstable();
        assert_eq!(chunked(&d, &cuts), expect, "case {i}, cuts {cuts:?}");
    }
}

proptest! {
    #![proptest_config(crate::util::proptest_config(300, 3))]
    #[test]
    fn random_chunking_gives_the_same_output(
        cuts in proptest::collection::vec(0usize..1400, 0..24),
        prefix in any::<bool>(),
    ) {
        let data = if prefix { fixture() } else { kernel_stream() };
        let mut cuts = cuts;
        cuts.sort_unstable();
        prop_assert_eq!(chunked(&data, &cuts), whole(&data));
    }
}

#[test]
fn truncated_trailing_record_is_damage_not_a_panic() {
    let data = kernel_stream();
    // Cut inside the last record (CLOSELOG, 16 bytes) and inside a header.
    for cut in [data.len() - 4, data.len() - 13] {
        let mut s = StreamImporter::new(Vec::new());
        s.feed(&data[..cut]).unwrap();
        assert!(s.buffered() > 0, "the incomplete record is held");
        let (file, report) = s.finish().unwrap();
        assert!(!report.closed_cleanly);
        let last = report.skipped.last().expect("the cut is reported");
        assert!(
            last.reason.starts_with("input ends inside a record"),
            "{last:?}"
        );
        assert_eq!(last.offset + last.len, cut as u64);
        let reader = Reader::new(&file).unwrap();
        let mut it = reader.records();
        assert!(it.by_ref().count() > 10);
        assert!(!it.report().closed_cleanly);
    }
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Samples reach the sink as their kernel records complete, before the end.
#[test]
fn records_reach_the_sink_before_the_end() {
    let mut e = Encoder::new(Vec::new());
    e.initialize(
        1,
        0x0A01_0000,
        0x9D,
        1_000_000_000,
        0,
        0,
        "GenuineIntel-6-9A-4",
    )
    .unwrap();
    e.pmc_allocate(2, 0x0002_0700, 0x1000, 0x80, 65536).unwrap();
    e.callchain(3, 42, 4242, 0x0002_0700, 0, true, &[0x1000, 0x2000])
        .unwrap();
    let head = e.into_inner();
    let sink = Shared::default();
    let mut s = StreamImporter::new(sink.clone());
    assert!(
        sink.0.lock().unwrap().is_empty(),
        "nothing before INITIALIZE"
    );
    // All but the last 8 bytes of the sample: it must not appear yet.
    s.feed(&head[..head.len() - 8]).unwrap();
    s.flush().unwrap();
    let kinds = |b: &[u8]| -> Vec<u16> {
        let r = Reader::new(b).unwrap();
        let v: Vec<u16> = r.records().map(|r| r.kind()).collect();
        v
    };
    let snap = sink.0.lock().unwrap().clone();
    let k = kinds(&snap);
    assert_eq!(
        k.len(),
        2,
        "header and pmc, not the incomplete sample: {k:?}"
    );
    s.feed(&head[head.len() - 8..]).unwrap();
    s.flush().unwrap();
    let snap = sink.0.lock().unwrap().clone();
    let r = Reader::new(&snap).unwrap();
    let mut it = r.records();
    assert!(matches!(it.nth(2), Some(Record::Sample(s)) if s.period == 65536));
    assert!(!it.report().closed_cleanly, "still open");
    let mut e = Encoder::new(Vec::new());
    e.closelog(9).unwrap();
    s.feed(&e.into_inner()).unwrap();
    s.finish().unwrap();
    let done = sink.0.lock().unwrap().clone();
    let r = Reader::new(&done).unwrap();
    let mut it = r.records();
    assert_eq!(it.by_ref().count(), 4, "header, pmc, sample, close");
    assert!(it.report().is_clean());
}

#[test]
fn errors_are_typed_and_stop_the_importer() {
    let mut s = StreamImporter::new(Vec::new());
    s.feed(b"\x7fE").unwrap(); // Undecided until 4 bytes.
    let e = s.feed(b"LF").unwrap_err();
    assert!(
        matches!(e, HwpmcError::NotHwpmcLog { word: 0x464c_457f }),
        "{e}"
    );
    assert!(matches!(s.feed(&[0xEE]), Err(HwpmcError::Stopped)));
    assert!(matches!(s.flush(), Err(HwpmcError::Stopped)));
    // 1 to 3 bytes in all: not a log; none at all: an empty log.
    let mut s = StreamImporter::new(Vec::new());
    s.feed(&[0, 0]).unwrap();
    assert!(matches!(
        s.finish(),
        Err(HwpmcError::NotHwpmcLog { word: 0 })
    ));
    assert_eq!(
        StreamImporter::new(Vec::new()).finish().unwrap(),
        hwpmc::convert(&[], Vec::new()).unwrap()
    );
    let mut old = Encoder::new(Vec::new());
    old.initialize(0, 0x0300_0000, 0, 0, 0, 0, "").unwrap();
    let log = old.into_inner();
    let mut s = StreamImporter::new(Vec::new());
    s.feed(&log[..20]).unwrap();
    let e = s.feed(&log[20..]).unwrap_err();
    assert!(matches!(
        e,
        HwpmcError::UnsupportedVersion {
            version: 0x0300_0000
        }
    ));
}

/// Garbage, and headers announcing 64 KiB records that never complete,
/// in random chunks: no panic, and the buffer and report stay bounded.
#[test]
#[cfg_attr(miri, ignore)]
fn hostile_streams_stay_bounded() {
    let mut rng = Rng(0xBAD);
    let mut init = Encoder::new(Vec::new());
    init.initialize(1, 0x0A01_0000, 0, 0, 0, 0, "x").unwrap();
    let init = init.into_inner();
    for round in 0..3 {
        let mut s = StreamImporter::new(std::io::sink());
        s.feed(&init).unwrap();
        let mut fed = 0usize;
        let mut max = 0;
        while fed < 8 << 20 {
            let n = 1 + rng.below(200_000) as usize;
            let chunk: Vec<u8> = (0..n / 4)
                .flat_map(|_| {
                    let w = match (round, rng.below(4)) {
                        // Plausible known-type headers with long lengths.
                        (0, _) | (_, 0) => {
                            0xEE00_0000u32
                                | ((1 + rng.below(20) as u32) << 16)
                                | ((0x3FFF - rng.below(64) as u32) * 4)
                        }
                        _ => rng.next() as u32,
                    };
                    w.to_le_bytes()
                })
                .collect();
            s.feed(&chunk).unwrap();
            max = max.max(s.buffered());
            assert!(s.buffered() <= hwpmc::MAX_BUFFERED, "{}", s.buffered());
            fed += chunk.len();
        }
        let report = s.report();
        assert!(report.skipped.len() <= hwpmc::MAX_SKIPPED_LISTED);
        assert!(max > 0);
        let (_, report) = s.finish().unwrap();
        assert!(report.skipped_bytes() <= fed as u64 + init.len() as u64);
    }
}
