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
    while let Some(r) = s.next_record().expect("reading a slice cannot fail") {
        assert_eq!(
            Some(&r),
            recs.get(n),
            "stream and slice readers disagree at record {n}"
        );
        n += 1;
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
