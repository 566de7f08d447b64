//! Section 5, log: encoding and decoding pmc-log samples (16-frame chains),
//! and the decode against `perf script` (`profiler::log_vs_perf_script`).

use super::{row, vs, Opts};
use pmc_bench::{median, Row};
use std::hint::black_box;
use std::time::Instant;

pub(super) fn bench_log(o: &Opts, rows: &mut Vec<Row>) {
    use pmc_log::record::{Callchain, Clock, Header, Record, Sample};
    const S: &str = "log";
    let n: u64 = if o.quick { 100_000 } else { 1_000_000 };
    const DEPTH: usize = 16;
    let header = Header {
        os: "Linux".into(),
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        backend: "bench".into(),
        ..Header::default()
    };
    let passes = if o.quick { 1 } else { 3 };
    let mut enc = Vec::new();
    let mut dec = Vec::new();
    let mut copy = Vec::new();
    let mut size = 0usize;
    let mut last = Vec::new();
    for _ in 0..passes {
        let mut frames = [0u64; DEPTH];
        let t = Instant::now();
        let mut w = pmc_log::Writer::new(Vec::with_capacity(200 << 20), &header).expect("writer");
        for i in 0..n {
            for (d, f) in frames.iter_mut().enumerate() {
                *f = 0x5555_0000_0000
                    + (i.wrapping_mul(2_654_435_761) % 4096) * 16
                    + d as u64 * 0x1000;
            }
            let s = Sample {
                time: 1_000_000 + i * 1000,
                pmc_id: 0,
                pid: 1000 + (i % 7) as i32,
                tid: 1000 + (i % 13) as i32,
                cpu: Some((i % 2) as u32),
                period: 65536,
                callchain: Callchain::from_frames(&frames),
                kernel_frames: 2,
                raw: Default::default(),
            };
            w.write(&Record::Sample(s)).expect("write");
        }
        let bytes = w.finish().expect("finish");
        enc.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        size = bytes.len();
        // Decode (zero-copy), touching every frame.
        let t = Instant::now();
        let reader = pmc_log::Reader::new(&bytes).expect("reader");
        let mut sum = 0u64;
        let mut count = 0u64;
        for rec in reader.records() {
            if let Record::Sample(s) = rec {
                sum = sum.wrapping_add(s.callchain.iter().fold(s.time, u64::wrapping_add));
                count += 1;
            }
        }
        black_box(sum);
        dec.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        assert_eq!(count, n, "decoded sample count");
        // Baseline: copying the same bytes (memory bandwidth).
        let t = Instant::now();
        let c = black_box(bytes.clone());
        copy.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        drop(c);
        last = bytes;
    }
    let mb = size as f64 / 1e6;
    let per = size as f64 / n as f64;
    let mut e = vs(
        row(
            S,
            &format!("encode {n} samples x {DEPTH} frames"),
            &enc,
            "ns/smp",
        ),
        "memcpy of the log",
        &enc,
        &copy,
    );
    e.note = format!(
        "{:.2} M samples/s, {:.0} MB/s, {:.1} B/sample ({mb:.0} MB)",
        1e3 / median(&mut enc.clone()),
        per * 1e3 / median(&mut enc.clone()),
        per
    );
    rows.push(e);
    let mut d = vs(
        row(S, "decode (zero-copy Reader, all frames)", &dec, "ns/smp"),
        "memcpy of the log",
        &dec,
        &copy,
    );
    d.note = format!(
        "{:.2} M samples/s, {:.0} MB/s",
        1e3 / median(&mut dec.clone()),
        per * 1e3 / median(&mut dec.clone())
    );
    rows.push(d);
    super::profiler::log_vs_perf_script(o, rows, &last, median(&mut dec.clone()));
}
