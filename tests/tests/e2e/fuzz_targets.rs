//! A fixed-iteration run of the fuzz harnesses for the parsers outside
//! pmc-log (`/fuzz/harness_pmc.rs`; pmc-log's own run in its
//! `tests/fuzz_corpus.rs`), so `cargo test --workspace` exercises every
//! cargo-fuzz target: deterministic mutations of valid inputs (bit flips,
//! cuts, inserted and deleted bytes, random bytes) plus proptest-generated
//! event strings.

#[path = "../../../fuzz/harness_pmc.rs"]
mod harness;

use proptest::prelude::*;

/// xorshift64*: deterministic, so a failure reproduces from its iteration.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// One random mutation of `seed`, the same kinds as cargo-fuzz's.
fn mutate(rng: &mut Rng, seed: &[u8], alphabet: &[u8]) -> Vec<u8> {
    let mut d = seed.to_vec();
    let pick = |rng: &mut Rng| {
        if alphabet.is_empty() {
            rng.next() as u8
        } else {
            alphabet[rng.below(alphabet.len() as u64) as usize]
        }
    };
    for _ in 0..=rng.below(3) {
        match rng.below(5) {
            0 if !d.is_empty() => {
                let i = rng.below(d.len() as u64) as usize;
                d[i] = pick(rng);
            }
            1 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
            2 => {
                let i = rng.below(d.len() as u64 + 1) as usize;
                let n = 1 + rng.below(8) as usize;
                let junk: Vec<u8> = (0..n).map(|_| pick(rng)).collect();
                d.splice(i..i, junk);
            }
            3 if !d.is_empty() => {
                let a = rng.below(d.len() as u64) as usize;
                let b = (a + 1 + rng.below(16) as usize).min(d.len());
                d.drain(a..b);
            }
            _ if !d.is_empty() => {
                let i = rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << rng.below(8);
            }
            _ => {}
        }
    }
    d
}

const EVENTS: &[&str] = &[
    "task-clock",
    "task-clock:u",
    "cpu-clock:k",
    "page-faults",
    "cycles:ppp",
    "instructions,usr",
    "instructions,os",
    "r01c2",
    "r1a:u",
    "cpu/event=0x3c,umask=0x0/",
    "cpu/event=0xc0,umask=0x1,cmask=2,inv/u",
    "sched:sched_switch",
    "syscalls:sys_enter_read",
    "SOFT-CLOCK.HARD",
    "branch-misses",
    "L1-dcache-load-misses",
    "cache-misses:uk",
    "page-faults:DeSGHIWP",
    "{page-faults,task-clock}:u",
    "cpu-clock,{cycles,instructions:k}:D,duration_time",
    "cpu/event=0x3c,name=busy/",
    "page-faults/name=pf/u",
];

/// Found, before the parser refused trailing colons (issue 10 defect 9), 8 distinct inputs
/// in 60,000 (`cycles:pp:`, `r1a:u:`, `cache-misses:u:`, ...) that parsed but whose display
/// did not re-parse to the same event.
#[test]
fn event_spec_harness_fixed_iterations() {
    let alphabet = b"abcdefklmpruvxyzACDEGHILPSTW0123456789:/,=._-{} ";
    let mut rng = Rng(31);
    let iterations = pmc_testkit::iterations(60_000, 50);
    for e in EVENTS {
        harness::event_spec(e.as_bytes());
    }
    let mut failures = Vec::new();
    for i in 0..iterations {
        let seed = EVENTS[i as usize % EVENTS.len()].as_bytes();
        let d = mutate(&mut rng, seed, alphabet);
        if std::panic::catch_unwind(|| harness::event_spec(&d)).is_err() {
            failures.push(String::from_utf8_lossy(&d).into_owned());
        }
    }
    failures.sort();
    failures.dedup();
    assert!(
        failures.is_empty(),
        "{} inputs fail: {failures:?}",
        failures.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: pmc_testkit::iterations(4096, 8), failure_persistence: None, ..ProptestConfig::default() })]

    /// Event-like strings from a grammar of the pieces the parser knows.
    #[test]
    fn event_spec_harness_proptest(s in "[a-zA-Z][a-zA-Z0-9_.-]{0,12}(:[a-zA-Z_]{1,10})?([:,/][a-zA-Z0-9=,_]{0,12}){0,3}/?[ukhpGH]{0,3}") {
        harness::event_spec(s.as_bytes());
    }
}

/// A valid PERF_RECORD_SAMPLE for `IP|TID|TIME|CPU|PERIOD|CALLCHAIN`, then a
/// PERF_RECORD_LOST, as the kernel lays them out in a ring.
fn perf_seed() -> Vec<u8> {
    let sample_type: u64 = 0x1 | 0x2 | 0x4 | 0x80 | 0x100 | 0x20;
    let mut d = Vec::new();
    d.extend_from_slice(&sample_type.to_le_bytes());
    d.extend_from_slice(&0u64.to_le_bytes()); // read_format
    d.push(1 | 4 << 1); // sample_id_all, window starts at 32
    for k in 0..3u64 {
        let mut body = Vec::new();
        body.extend_from_slice(&(0x40_1000 + k).to_le_bytes()); // ip
        body.extend_from_slice(&7u32.to_le_bytes()); // pid
        body.extend_from_slice(&8u32.to_le_bytes()); // tid
        body.extend_from_slice(&(1000 + k).to_le_bytes()); // time
        body.extend_from_slice(&1u32.to_le_bytes()); // cpu
        body.extend_from_slice(&0u32.to_le_bytes()); // res
        body.extend_from_slice(&10_000u64.to_le_bytes()); // period
        body.extend_from_slice(&3u64.to_le_bytes()); // callchain nr
        for f in [0xffff_ffff_ffff_fe00u64, 0x40_1000, 0x40_2000] {
            body.extend_from_slice(&f.to_le_bytes());
        }
        d.extend_from_slice(&9u32.to_le_bytes()); // PERF_RECORD_SAMPLE
        d.extend_from_slice(&2u16.to_le_bytes()); // misc: user
        d.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        d.extend_from_slice(&body);
    }
    // PERF_RECORD_LOST: id, lost, then the sample_id trailer (TID, TIME, CPU).
    let mut body = Vec::new();
    body.extend_from_slice(&5u64.to_le_bytes());
    body.extend_from_slice(&12u64.to_le_bytes());
    body.extend_from_slice(&[0u8; 24]);
    d.extend_from_slice(&2u32.to_le_bytes());
    d.extend_from_slice(&0u16.to_le_bytes());
    d.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    d.extend_from_slice(&body);
    d
}

#[test]
fn perf_ring_harness_fixed_iterations() {
    let seed = perf_seed();
    harness::perf_ring(&seed);
    let mut rng = Rng(97);
    let iterations = pmc_testkit::iterations(20_000, 20);
    for _ in 0..iterations {
        let d = mutate(&mut rng, &seed, &[]);
        harness::perf_ring(&d);
    }
}

/// The committed seed corpus (`fuzz/seeds/perf_ring/`, what `cargo fuzz run perf_ring` starts
/// from) through the harness, each seed as it is and mutated.
#[test]
fn perf_ring_harness_on_the_seed_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/perf_ring");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds.sort();
    let mut rng = Rng(131);
    let iterations = pmc_testkit::iterations(20_000, 10);
    for seed in &seeds {
        harness::perf_ring(seed);
        for _ in 0..iterations {
            harness::perf_ring(&mutate(&mut rng, seed, &[]));
        }
    }
}

#[test]
fn elf_object_harness_fixed_iterations() {
    // A small real ELF object with symbols (and whatever DWARF it has): /bin/true, else
    // this test binary.
    let seed = std::fs::read("/bin/true")
        .or_else(|_| std::fs::read(std::env::current_exe().unwrap()))
        .expect("an ELF object to mutate");
    harness::elf_object(&seed);
    let mut rng = Rng(5);
    let iterations = pmc_testkit::iterations(400, 2);
    for _ in 0..iterations {
        let mut d = mutate(&mut rng, &seed, &[]);
        // Mostly damage the headers and tables at the front, where the parser starts.
        for _ in 0..rng.below(6) {
            let i = rng.below(d.len().min(4096) as u64) as usize;
            if let Some(b) = d.get_mut(i) {
                *b = rng.next() as u8;
            }
        }
        harness::elf_object(&d);
    }
    // Random bytes behind a valid ELF identification.
    for _ in 0..200 {
        let mut d = seed[..64.min(seed.len())].to_vec();
        d.extend((0..rng.below(4096)).map(|_| rng.next() as u8));
        harness::elf_object(&d);
    }
}
