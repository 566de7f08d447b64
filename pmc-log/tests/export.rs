//! Exports: text, folded stacks, JSON Lines.

use pmc_log::export::{folded::FoldedStacks, json, text};
use pmc_log::record::Record;
use pmc_log::Reader;

use crate::util::gen_file;

#[test]
fn json_lines_round_trip() {
    let (bytes, recs) = gen_file(if cfg!(miri) { 20 } else { 500 }, 5, 4096);
    let reader = Reader::new(&bytes).unwrap();
    let mut out = Vec::new();
    let n = json::write_all(reader.records(), &mut out).unwrap();
    assert_eq!(n as usize, recs.len());
    let text = String::from_utf8(out).unwrap();
    let back: Vec<Record<'static>> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back, recs);
}

#[test]
fn text_has_one_line_per_record() {
    let (bytes, recs) = gen_file(if cfg!(miri) { 20 } else { 500 }, 6, 4096);
    let reader = Reader::new(&bytes).unwrap();
    let mut out = Vec::new();
    text::write_all(reader.records(), &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert_eq!(s.lines().count(), recs.len());
    assert!(s
        .lines()
        .all(|l| l.len() > 24 && l[l.len() - 23..].starts_with(" t=")));
}

#[test]
fn folded_counts_every_sample() {
    let (bytes, recs) = gen_file(if cfg!(miri) { 20 } else { 2000 }, 8, 4096);
    let reader = Reader::new(&bytes).unwrap();
    let mut f = FoldedStacks::new();
    for r in reader.records() {
        f.add(&r);
    }
    let mut out = Vec::new();
    f.write(&mut out).unwrap();
    let total: u64 = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let samples = recs
        .iter()
        .filter(|r| matches!(r, Record::Sample(_)))
        .count() as u64;
    assert_eq!(total, samples);
}

proptest::proptest! {
    #![proptest_config(crate::util::proptest_config(64, 1))]

    /// Exports accept any record values (overflowing offsets, huge pids...).
    #[test]
    fn exports_never_panic(recs in proptest::collection::vec(crate::util::arb_record(), 0..40)) {
        let mut sink = std::io::sink();
        text::write_all(recs.iter().cloned(), &mut sink).unwrap();
        json::write_all(recs.iter().cloned(), &mut sink).unwrap();
        let mut f = FoldedStacks::new();
        f.weight_by_period = true;
        for r in &recs {
            f.add(r);
        }
        f.write(&mut sink).unwrap();
        pmc_log::export::perf_data::write_all(&crate::util::header(), recs.iter().cloned(), &mut sink).unwrap();
    }
}
