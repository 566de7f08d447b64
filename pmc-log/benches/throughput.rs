//! Write and read throughput for a 1-million-sample log with 16-deep
//! callchains. Run: `cargo bench -p pmc-log --bench throughput`.
//! (Plain `main`, no harness: prints records/s, MB/s and bytes/sample.)

use std::hint::black_box;
use std::time::Instant;

use pmc_log::record::{Callchain, Clock, Header, Record, Sample};
use pmc_log::{Reader, StreamReader, Writer};

const N: u64 = 1_000_000;
const DEPTH: usize = 16;

fn main() {
    let header = Header {
        os: "Linux".into(),
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        backend: "bench".into(),
        ..Header::default()
    };
    let mut frames = [0u64; DEPTH];
    let t0 = Instant::now();
    let mut w = Writer::new(Vec::with_capacity(200 << 20), &header).expect("writer");
    for i in 0..N {
        for (d, f) in frames.iter_mut().enumerate() {
            *f = 0x5555_0000_0000 + (i.wrapping_mul(2654435761) % 4096) * 16 + d as u64 * 0x1000;
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
    let wt = t0.elapsed().as_secs_f64();
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "file: {N} samples x {DEPTH} frames, {:.1} MB, {:.1} bytes/sample",
        mb,
        bytes.len() as f64 / N as f64
    );
    println!(
        "write:          {:>8.2} M records/s  {:>8.1} MB/s",
        N as f64 / wt / 1e6,
        mb / wt
    );

    // Zero-copy read, touching every field and frame.
    for pass in 0..3 {
        let t0 = Instant::now();
        let reader = Reader::new(&bytes).expect("reader");
        let mut it = reader.records();
        let mut acc = 0u64;
        let mut n = 0u64;
        for r in it.by_ref() {
            if let Record::Sample(s) = r {
                acc = acc.wrapping_add(s.time ^ s.period ^ s.pid as u64);
                for f in s.callchain.iter() {
                    acc = acc.wrapping_add(f);
                }
                n += 1;
            }
        }
        let rt = t0.elapsed().as_secs_f64();
        black_box(acc);
        assert_eq!(n, N);
        assert!(it.report().is_clean(), "{}", it.report());
        println!(
            "read zero-copy: {:>8.2} M records/s  {:>8.1} MB/s  (pass {pass})",
            N as f64 / rt / 1e6,
            mb / rt
        );
    }

    let t0 = Instant::now();
    let mut r = StreamReader::new(&bytes[..]).expect("stream");
    let mut n = 0u64;
    let mut acc = 0u64;
    while let Some(rec) = r.next_record().expect("read") {
        if let Record::Sample(s) = rec {
            acc = acc.wrapping_add(s.callchain.iter().fold(0, u64::wrapping_add));
            n += 1;
        }
    }
    black_box(acc);
    let rt = t0.elapsed().as_secs_f64();
    assert_eq!(n, N);
    println!(
        "read streaming: {:>8.2} M records/s  {:>8.1} MB/s",
        N as f64 / rt / 1e6,
        mb / rt
    );
}
