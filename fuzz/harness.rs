//! Fuzz harnesses shared by the cargo-fuzz targets in `fuzz_targets/` and
//! by the fixed-iteration run in `pmc-log/tests/fuzz_corpus.rs` (included
//! there with `#[path]`), so CI exercises exactly what the fuzzer runs.
//!
//! Properties checked, beyond "no panic":
//! - the slice and streaming readers return the same records;
//! - whatever the reader returns, written again and read back, is equal
//!   (`read(write(r)) == r`) and reads back clean;
//! - every export (text, JSON, folded, perf.data) accepts what the reader returns;
//! - every hwpmc import that succeeds converts to a pmc-log file that reads
//!   back with no damage and the same number of records.

use pmc_log::record::{Header, Record};
use pmc_log::{Reader, StreamReader, Writer};

/// Fuzz the pmc-log readers with arbitrary bytes.
pub fn log_reader(data: &[u8]) {
    let Ok(reader) = Reader::new(data) else {
        assert!(StreamReader::new(data).is_err());
        return;
    };
    let mut it = reader.records();
    let recs: Vec<Record<'_>> = it.by_ref().collect();
    let report = it.into_report();
    assert_eq!(report.records, recs.len() as u64);
    assert!(report.skipped_bytes() <= data.len() as u64);

    let mut s = StreamReader::new(data).expect("stream accepts what the slice reader accepts");
    let mut n = 0;
    // Everything it can return before the end, then (the input ended) what the end reveals.
    for ended in [false, true] {
        if ended {
            s.end_of_input();
        }
        while let Some(r) = s.next_record().expect("reading a slice cannot fail") {
            assert_eq!(
                Some(&r),
                recs.get(n),
                "stream and slice readers disagree at record {n}"
            );
            n += 1;
        }
    }
    assert_eq!(n, recs.len());
    let _ = s.finish();

    // Every export accepts whatever the reader returns.
    let mut sink = std::io::sink();
    pmc_log::export::text::write_all(recs.iter().cloned(), &mut sink).expect("sink");
    pmc_log::export::json::write_all(recs.iter().cloned(), &mut sink).expect("sink");
    let mut folded = pmc_log::export::folded::FoldedStacks::new();
    for r in &recs {
        folded.add(r);
    }
    folded.write(&mut sink).expect("sink");
    let header = match recs.first() {
        Some(Record::Header(h)) => h.clone(),
        _ => Header::default(),
    };
    pmc_log::export::perf_data::write_all(&header, recs.iter().cloned(), &mut sink).expect("sink");

    // Re-encode what was read: it must round-trip exactly.
    let mut w = Writer::with_block_size(Vec::new(), &header, 1024).expect("vec writer");
    let mut written = 0;
    for r in recs
        .iter()
        .skip(usize::from(matches!(recs.first(), Some(Record::Header(_)))))
    {
        if w.write(r).is_ok() {
            written += 1;
        }
    }
    let out = w.finish().expect("vec writer");
    let back = Reader::new(&out).expect("own output is readable");
    let mut it = back.records();
    let again: Vec<Record<'_>> = it.by_ref().collect();
    assert!(
        it.report().skipped.is_empty(),
        "own output damaged: {}",
        it.report()
    );
    assert_eq!(again.len(), written + 2);
    let body = &recs[usize::from(matches!(recs.first(), Some(Record::Header(_))))..];
    assert_eq!(&again[1..=written], body);
}

/// Fuzz the hwpmc importer with arbitrary bytes.
pub fn hwpmc_import(data: &[u8]) {
    if let Ok(p) = pmc_log::hwpmc::Parser::new(data) {
        let _ = p.count();
    }
    let Ok(imp) = pmc_log::hwpmc::Importer::new(data) else {
        return;
    };
    let n = imp.count();
    if let Ok((file, report)) = pmc_log::hwpmc::convert(data, Vec::new()) {
        assert!(report.records_out as usize <= n + 1);
        let reader = Reader::new(&file).expect("converted output is readable");
        let mut it = reader.records();
        let m = it.by_ref().count();
        assert!(it.report().skipped.is_empty(), "{}", it.report());
        assert!(m >= 1);
    }
}

/// Fuzz the streaming hwpmc importer fed in random splits: the first 8 bytes
/// seed the split sizes, the rest is the stream. Checks, beyond "no panic":
/// the importer never holds more than `MAX_BUFFERED` bytes, and when both the
/// slice importer and the streaming one take the whole input, they produce
/// the same samples.
pub fn hwpmc_stream(data: &[u8]) {
    use pmc_log::hwpmc::{Importer, StreamImporter, MAX_BUFFERED};
    let (seed, data) = match data.split_first_chunk::<8>() {
        Some((s, rest)) => (u64::from_le_bytes(*s) | 1, rest),
        None => (1, data),
    };
    let mut x = seed;
    let mut st = StreamImporter::new(Vec::new());
    let mut pos = 0;
    let mut complete = true;
    while pos < data.len() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly small pieces (record headers split), sometimes large ones.
        let step = if x % 8 == 0 {
            (x >> 8) as usize % 70_000
        } else {
            (x >> 8) as usize % 40
        } + 1;
        let end = (pos + step).min(data.len());
        if st.feed(&data[pos..end]).is_err() {
            complete = false;
            break;
        }
        assert!(
            st.buffered() <= MAX_BUFFERED,
            "{} bytes buffered",
            st.buffered()
        );
        pos = end;
    }
    let streamed = if complete { st.finish().ok() } else { None };
    let Ok(imp) = Importer::new(data) else {
        return;
    };
    let mut imp = imp;
    let slice: Vec<Record<'static>> = imp
        .by_ref()
        .filter(|r| matches!(r, Record::Sample(_)))
        .map(Record::into_owned)
        .collect();
    if imp.error().is_some() {
        return;
    }
    if let Some((out, _)) = streamed {
        let reader = Reader::new(&out).expect("the streaming importer writes pmc-log");
        let mut it = reader.records();
        let stream: Vec<Record<'_>> = it
            .by_ref()
            .filter(|r| matches!(r, Record::Sample(_)))
            .collect();
        assert!(it.report().skipped.is_empty(), "{}", it.report());
        assert_eq!(
            stream.len(),
            slice.len(),
            "stream and slice imports disagree"
        );
        assert!(
            stream == slice,
            "stream and slice imports give different samples"
        );
    }
}
