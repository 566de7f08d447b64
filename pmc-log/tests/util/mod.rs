//! Shared generators for the integration tests.

use pmc_log::record::*;
use pmc_log::Writer;
use proptest::prelude::*;

/// Small deterministic PRNG (xorshift64*), so failures reproduce by seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

pub fn header() -> Header<'static> {
    Header {
        os: "Linux".into(),
        kernel_release: "6.1.0-test".into(),
        arch: "x86_64".into(),
        cpu_model: "Test CPU @ 2.00GHz".into(),
        cpuid: "GenuineIntel-6-55-4".into(),
        cpu_count: 2,
        page_size: 4096,
        clock: Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        start_wall_ns: 1_700_000_000_000_000_000,
        start_time: 1000,
        backend: "pmc-log tests".into(),
    }
}

/// A deterministic mix of every record kind, mostly samples.
pub fn gen_record(rng: &mut Rng, i: u64) -> Record<'static> {
    let time = 1000 + i * 10;
    let pid = 100 + rng.below(5) as i32;
    match rng.below(20) {
        0 => Record::Map(Map {
            time,
            pid,
            start: 0x40_0000 + rng.below(1 << 20) * 4096,
            len: 0x1000 * (1 + rng.below(64)),
            pgoff: rng.below(16) * 4096,
            build_id: Bytes::from(vec![0xab; (rng.below(2) * 20) as usize]),
            path: Bytes::from(format!("/usr/lib/lib{}.so", rng.below(100))),
        }),
        1 => Record::Comm(Comm {
            time,
            pid,
            tid: pid,
            exec: rng.below(2) == 0,
            comm: Bytes::from(format!("proc{}", rng.below(10))),
        }),
        2 => Record::Counter(Counter {
            time,
            pmc_id: rng.below(4) as u32,
            pid,
            tid: pid,
            cpu: Some(rng.below(2) as u32),
            kind: CounterKind::ContextSwitch,
            value: rng.next(),
            time_enabled: 100,
            time_running: 50,
        }),
        3 => Record::Lost(Lost {
            time,
            pmc_id: None,
            cpu: Some(1),
            count: rng.below(100),
        }),
        _ => {
            let depth = rng.below(17) as usize;
            let frames: Vec<u64> = (0..depth).map(|_| rng.next()).collect();
            Record::Sample(Sample {
                time,
                pmc_id: rng.below(4) as u32,
                pid,
                tid: pid + rng.below(3) as i32,
                cpu: Some(rng.below(2) as u32),
                period: 65536,
                kernel_frames: rng.below(depth as u64 + 1) as u32,
                callchain: Callchain::from_vec(frames),
                raw: Bytes::default(),
            })
        }
    }
}

/// Write `n` generated records (plus header and close) with the given block size.
pub fn gen_file(n: u64, seed: u64, block_size: usize) -> (Vec<u8>, Vec<Record<'static>>) {
    let mut rng = Rng(seed | 1);
    let h = header();
    let mut w = Writer::with_block_size(Vec::new(), &h, block_size).unwrap();
    let mut recs = vec![Record::Header(h)];
    for i in 0..n {
        let r = gen_record(&mut rng, i);
        w.write(&r).unwrap();
        recs.push(r);
    }
    let close = Record::Close(Close {
        time: w_last_time(&recs),
        records: recs.len() as u64,
    });
    let bytes = w.finish().unwrap();
    recs.push(close);
    (bytes, recs)
}

fn w_last_time(recs: &[Record<'_>]) -> u64 {
    recs.iter().map(|r| r.time()).max().unwrap_or(0)
}

fn bytes_s() -> impl Strategy<Value = Bytes<'static>> {
    prop::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from)
}
/// Strings of up to 20 characters (any but newline). The regex is parsed here, once: a
/// `&str` used as a strategy parses it again for every value it makes, which Miri interprets
/// at length (the same strings either way).
fn str_s() -> impl Strategy<Value = std::borrow::Cow<'static, str>> {
    proptest::string::string_regex(".{0,20}")
        .expect("a valid regex")
        .prop_map(std::borrow::Cow::Owned)
}

/// Any record, every kind and every field random.
pub fn arb_record() -> impl Strategy<Value = Record<'static>> {
    let t = any::<u64>();
    let i = any::<i32>();
    let o = || prop::option::of(0..u32::MAX); // u32::MAX is the on-disk "none"
    prop_oneof![
        (
            t,
            any::<u32>(),
            i,
            i,
            o(),
            any::<u64>(),
            prop::collection::vec(any::<u64>(), 0..40),
            any::<u32>(),
            bytes_s()
        )
            .prop_map(
                |(time, pmc_id, pid, tid, cpu, period, f, kernel_frames, raw)| Record::Sample(
                    Sample {
                        time,
                        pmc_id,
                        pid,
                        tid,
                        cpu,
                        period,
                        callchain: Callchain::from_vec(f),
                        kernel_frames,
                        raw
                    }
                )
            ),
        (
            (str_s(), str_s(), str_s(), str_s(), str_s(), str_s()),
            (
                any::<u32>(),
                any::<u32>(),
                0u8..8,
                any::<u64>(),
                any::<i64>(),
                any::<u64>()
            )
        )
            .prop_map(
                |(
                    (os, kernel_release, arch, cpu_model, cpuid, backend),
                    (cpu_count, page_size, c, ticks_per_second, start_wall_ns, start_time),
                )| Record::Header(Header {
                    os,
                    kernel_release,
                    arch,
                    cpu_model,
                    cpuid,
                    backend,
                    cpu_count,
                    page_size,
                    clock: Clock::from_code(c),
                    ticks_per_second,
                    start_wall_ns,
                    start_time
                })
            ),
        (
            t,
            any::<u32>(),
            str_s(),
            str_s(),
            any::<bool>(),
            o(),
            0u8..3,
            any::<u64>(),
            any::<u32>(),
            str_s()
        )
            .prop_map(
                |(
                    time,
                    pmc_id,
                    event_spec,
                    canonical_name,
                    sys,
                    cpu,
                    m,
                    rate,
                    flags,
                    native_config,
                )| Record::Pmc(PmcDescriptor {
                    time,
                    pmc_id,
                    event_spec,
                    canonical_name,
                    scope: if sys { Scope::System } else { Scope::Process },
                    cpu,
                    mode: match m {
                        0 => Mode::Counting,
                        1 => Mode::SamplingPeriod(rate),
                        _ => Mode::SamplingFrequency(rate),
                    },
                    flags,
                    native_config
                })
            ),
        (t, i, i, any::<bool>(), bytes_s()).prop_map(|(time, pid, tid, exec, comm)| Record::Comm(
            Comm {
                time,
                pid,
                tid,
                exec,
                comm
            }
        )),
        (
            t,
            i,
            o(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            bytes_s()
        )
            .prop_map(
                |(time, pid, pmc_id, base, dyn_base, flags, path)| Record::Exec(Exec {
                    time,
                    pid,
                    pmc_id,
                    base,
                    dyn_base,
                    flags,
                    path
                })
            ),
        (t, i, i, i, i).prop_map(|(time, parent_pid, parent_tid, child_pid, child_tid)| {
            Record::Fork(Fork {
                time,
                parent_pid,
                parent_tid,
                child_pid,
                child_tid,
            })
        }),
        (t, i, i).prop_map(|(time, pid, tid)| Record::Exit(Exit { time, pid, tid })),
        (t, i, i, any::<u32>(), bytes_s()).prop_map(|(time, pid, tid, flags, name)| {
            Record::ThreadCreate(ThreadCreate {
                time,
                pid,
                tid,
                flags,
                name,
            })
        }),
        (t, i, i).prop_map(|(time, pid, tid)| Record::ThreadExit(ThreadExit { time, pid, tid })),
        (t, i, any::<u32>(), bytes_s()).prop_map(|(time, pid, flags, comm)| Record::ProcessCreate(
            ProcessCreate {
                time,
                pid,
                flags,
                comm
            }
        )),
        (
            t,
            i,
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            bytes_s(),
            bytes_s()
        )
            .prop_map(
                |(time, pid, start, len, pgoff, build_id, path)| Record::Map(Map {
                    time,
                    pid,
                    start,
                    len,
                    pgoff,
                    build_id,
                    path
                })
            ),
        (t, i, any::<u64>(), any::<u64>()).prop_map(|(time, pid, start, end)| Record::Unmap(
            Unmap {
                time,
                pid,
                start,
                end
            }
        )),
        (t, any::<u32>(), i, bytes_s()).prop_map(|(time, pmc_id, pid, path)| Record::Attach(
            Attach {
                time,
                pmc_id,
                pid,
                path
            }
        )),
        (t, any::<u32>(), i).prop_map(|(time, pmc_id, pid)| Record::Detach(Detach {
            time,
            pmc_id,
            pid
        })),
        (
            t,
            any::<u32>(),
            i,
            i,
            o(),
            0u8..3,
            any::<u64>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(time, pmc_id, pid, tid, cpu, k, value, time_enabled, time_running)| {
                    Record::Counter(Counter {
                        time,
                        pmc_id,
                        pid,
                        tid,
                        cpu,
                        kind: match k {
                            0 => CounterKind::Interval,
                            1 => CounterKind::ProcessExit,
                            _ => CounterKind::ContextSwitch,
                        },
                        value,
                        time_enabled,
                        time_running,
                    })
                }
            ),
        (t, o(), o(), any::<u64>()).prop_map(|(time, pmc_id, cpu, count)| Record::Lost(Lost {
            time,
            pmc_id,
            cpu,
            count
        })),
        (t, i, bytes_s()).prop_map(|(time, pid, data)| Record::UserData(UserData {
            time,
            pid,
            data
        })),
        (t, any::<u64>()).prop_map(|(time, records)| Record::Close(Close { time, records })),
        (
            (t, any::<u32>(), i, i, any::<u16>()),
            any::<[u64; 4]>(),
            bytes_s()
        )
            .prop_map(
                |((time, pmc_id, pid, tid, arch), [pc, sp, fp, lr], stack)| {
                    Record::UserStack(UserStack {
                        time,
                        pmc_id,
                        pid,
                        tid,
                        arch,
                        pc,
                        sp,
                        fp,
                        lr,
                        stack,
                    })
                }
            ),
    ]
}

/// A proptest configuration: `cases` normally (divided under emulation: see
/// `pmc_testkit::iterations`), `miri_cases` under Miri, where there is also no
/// failure persistence (it needs the working directory, which Miri's isolation hides).
pub fn proptest_config(cases: u32, miri_cases: u32) -> ProptestConfig {
    let cases = pmc_testkit::iterations(cases, miri_cases);
    if cfg!(miri) {
        ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    } else {
        ProptestConfig::with_cases(cases)
    }
}
