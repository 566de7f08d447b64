//! Bad input at every entry point, deterministic pseudo-random rounds (as
//! the Rust readers' fuzz corpora run in the normal suite): each call
//! returns its documented failure with an errno, never the `EIO` of a
//! caught panic, and never crashes.

use std::ffi::{c_char, CString};

use pmc::abi::{pmclog_ev, PMCLOG_REQUIRE_DATA};
use pmc::sys::*;

/// xorshift64*: the same rounds on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn no_panic(what: &str, ret: i32) {
    if ret == -1 {
        let e = errno();
        assert_ne!(e, libc::EIO, "{what}: a panic was caught (EIO)");
        assert_ne!(e, 0, "{what}: -1 without errno");
    }
}

const WORDS: [&str; 12] = [
    "page-faults",
    "SOFT-PAGE_FAULT.ALL",
    "cpu-clock",
    "instructions,usr",
    "r1a2b",
    "cpu/event=0x3c/",
    "sched:sched_switch",
    ":u",
    ",,",
    "\u{7f}",
    "SOFT-CLOCK.HARD",
    "cycles:ppp",
];

#[test]
fn random_calls_fail_cleanly() {
    assert_eq!(pmc_init(), 0, "pmc_init");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let rounds = pmc_testkit::iterations(2000, 50);
    let mut allocated = 0;
    for round in 0..rounds {
        // A spec: known words, mangled, or random bytes.
        let spec: Vec<u8> = match rng.below(3) {
            0 => WORDS[rng.below(WORDS.len() as u64) as usize]
                .as_bytes()
                .to_vec(),
            1 => {
                let mut w = WORDS[rng.below(WORDS.len() as u64) as usize]
                    .as_bytes()
                    .to_vec();
                let i = rng.below(w.len() as u64) as usize;
                w[i] = (rng.next() as u8).max(1);
                w
            }
            _ => (0..rng.below(40))
                .map(|_| (rng.next() as u8).max(1))
                .collect(),
        };
        let spec = CString::new(spec).expect("no NUL");
        let mode = pmc::abi::ModeArg(rng.below(6) as u32);
        let flags = if rng.below(2) == 0 {
            0
        } else {
            rng.next() as u32
        };
        let cpu = [0, 1, -1, 4096, i32::MIN][rng.below(5) as usize];
        let mut id = 0u32;
        // SAFETY: a NUL-terminated spec and a writable id.
        let r = unsafe {
            pmc_allocate(
                spec.as_ptr(),
                mode,
                flags,
                cpu,
                &mut id,
                rng.below(3) * 1000,
            )
        };
        no_panic(&format!("round {round}: pmc_allocate({spec:?})"), r);
        let target = if r == 0 { id } else { rng.next() as u32 };
        let mut v = 0u64;
        no_panic(
            "pmc_attach",
            pmc_attach(target, [0, -1, 1, i32::MAX][rng.below(4) as usize]),
        );
        no_panic("pmc_start", pmc_start(target));
        // SAFETY: a writable value.
        no_panic("pmc_read", unsafe { pmc_read(target, &mut v) });
        no_panic("pmc_write", pmc_write(target, rng.next()));
        no_panic("pmc_set", pmc_set(target, rng.next()));
        no_panic("pmc_stop", pmc_stop(target));
        no_panic("pmc_detach", pmc_detach(target, 0));
        // SAFETY: NULL is refused with EFAULT.
        no_panic("pmc_read NULL", unsafe {
            pmc_read(target, std::ptr::null_mut())
        });
        no_panic("pmc_npmc", pmc_npmc(rng.next() as i32));
        // A measurement of the same spec (and a known one), read and ended with random
        // handles and buffer sizes.
        let events = [spec.as_ptr(), c"page-faults".as_ptr()];
        let n = [0, 1, 2, -1, i32::MIN][rng.below(5) as usize];
        let mut m = 0u32;
        let mut values = [0u64; 2];
        // SAFETY: `events` holds 2 pointers, and n is at most 2 (negative counts are refused).
        let began = unsafe { pmc_measure_begin(events.as_ptr(), n, &mut m) };
        no_panic("pmc_measure_begin", began);
        let handle = if began == 0 { m } else { rng.next() as u32 };
        let cap = [0, 1, 2, -1][rng.below(4) as usize];
        // SAFETY: `values` holds 2 values; a larger nvalues is never passed.
        no_panic("pmc_measure_read", unsafe {
            pmc_measure_read(handle, values.as_mut_ptr(), cap)
        });
        // SAFETY: NULL with a size is refused with EFAULT.
        no_panic("pmc_measure_read NULL", unsafe {
            pmc_measure_read(handle, std::ptr::null_mut(), 2)
        });
        // SAFETY: as above; (NULL, 0) ends without values.
        let ended = unsafe { pmc_measure_end(handle, std::ptr::null_mut(), 0) };
        no_panic("pmc_measure_end", ended);
        if began == 0 {
            assert_eq!(ended, 0, "pmc_measure_end of a running measurement");
        }
        if r == 0 {
            allocated += 1;
            assert_eq!(pmc_release(id), 0, "release {id:#x}");
        }
    }
    println!("{rounds} rounds, {allocated} allocations succeeded, no panic");
    // SAFETY: NULL pointers are refused with EFAULT.
    let r = unsafe {
        pmc_allocate(
            std::ptr::null(),
            pmc::abi::ModeArg(3),
            0,
            -1,
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!((r, errno()), (-1, libc::EFAULT));
}

#[test]
fn pmclog_survives_random_and_cut_input() {
    // A valid hwpmc log to cut and mangle.
    let mut enc = pmc_log::hwpmc::Encoder::new(Vec::new());
    enc.initialize(1, 0x0A03_0000, 0x400, 1_000_000_000, 1, 0, "x")
        .expect("encode");
    enc.pmc_allocate(2, 0x0001_0001, 0x20000, 0, 1)
        .expect("encode");
    for i in 0..20 {
        enc.callchain(3 + i, 7, 7, 0x0001_0001, 0, true, &[1, 2, 3])
            .expect("encode");
    }
    enc.closelog(40).expect("encode");
    let good = enc.into_inner();
    let mut rng = Rng(42);
    let rounds = pmc_testkit::iterations(500, 20);
    for _ in 0..rounds {
        let mut data = good.clone();
        match rng.below(3) {
            0 => data.truncate(rng.below(data.len() as u64) as usize),
            1 => {
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(data.len() as u64) as usize;
                    data[i] = rng.next() as u8;
                }
            }
            _ => data = (0..rng.below(600)).map(|_| rng.next() as u8).collect(),
        }
        let p = pmclog_open(-1);
        assert!(!p.is_null());
        let mut fed = 0;
        let mut ev: pmclog_ev = pmc::pmclog::Parser::empty_event();
        for _ in 0..10_000 {
            // A caught panic would set EIO.
            nix::errno::Errno::clear();
            // SAFETY: a live cookie and a writable event.
            let r = unsafe { pmclog_read(p, &mut ev) };
            assert_ne!(errno(), libc::EIO, "pmclog_read: a panic was caught");
            let state = ev.pl_state;
            if r == 0 {
                continue;
            }
            if state == PMCLOG_REQUIRE_DATA && fed < data.len() {
                let n = (1 + rng.below(300) as usize).min(data.len() - fed);
                // SAFETY: `n` bytes of `data` from `fed`.
                let r = unsafe { pmclog_feed(p, data[fed..].as_ptr() as *mut c_char, n as i32) };
                assert_eq!(r, 0, "pmclog_feed");
                fed += n;
                continue;
            }
            break;
        }
        // SAFETY: the cookie from pmclog_open, closed once.
        unsafe { pmclog_close(p) };
    }
    println!("{rounds} damaged logs read to their end, no panic");
}

#[path = "../../fuzz/harness_capi.rs"]
mod harness;

/// An hwpmc log with a record of every type pmclog(3) decodes, as FreeBSD's
/// kernel writes them: the fuzz target's seed (`fuzz/seeds/pmclog_c/`, behind
/// the harness's 8 bytes that choose the pieces).
fn every_record_log() -> Vec<u8> {
    let mut e = pmc_log::hwpmc::Encoder::new(Vec::new());
    let w = |r: std::io::Result<()>| r.expect("encode");
    w(e.initialize(
        1,
        0x0A03_0000,
        0x9D,
        2_000_000_000,
        1_700_000_000,
        5,
        "GenuineIntel-6-9A-4",
    ));
    w(e.pmc_allocate(2, 0xFFF3_0F00, 0x20000, 0x8, 0));
    w(e.pmc_allocate_dyn(3, 0xFFF2_0F01, 0x20001, 0x80, 1000, "CLOCK.HARD"));
    w(e.pmc_attach(4, 0xFFF3_0F00, 77, b"/usr/bin/true"));
    w(e.procexec(5, 77, 0xFFF3_0F00, 0x40_0000, 0x80_0000, b"/usr/bin/true"));
    w(e.map_in(6, 77, 0x40_0000, b"/lib/libc.so.7"));
    w(e.thr_create(7, 100_077, 77, 0, b"main"));
    w(e.proc_create(8, 77, 0, b"true"));
    for i in 0..20u64 {
        let pcs: Vec<u64> = (0..i % 6).map(|d| 0x40_1000 + d * 8).collect();
        w(e.callchain(
            10 + i,
            77,
            100_077,
            0xFFF2_0F01,
            (i % 4) as u16,
            i % 2 == 0,
            &pcs,
        ));
    }
    w(e.proccsw(40, 0xFFF3_0F00, 77, 100_077, 1234));
    w(e.userdata(41, 0xC0FFEE));
    w(e.dropnotify(42));
    w(e.procfork(43, 77, 78));
    w(e.map_out(44, 77, 0x40_0000, 0x50_0000));
    w(e.thr_exit(45, 100_077));
    w(e.procexit(46, 0xFFF3_0F00, 77, 4321));
    w(e.sysexit(47, 77));
    w(e.pmc_detach(48, 0xFFF3_0F00, 77));
    w(e.closelog(49));
    let mut seed = 1u64.to_le_bytes().to_vec();
    seed.extend(e.into_inner());
    seed
}

/// The fuzz seed is [`every_record_log`]'s (`PMC_BLESS_HEADER=1` rewrites it).
#[test]
fn the_pmclog_fuzz_seed_is_current() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds/pmclog_c/hwpmc-every-record.bin");
    let want = every_record_log();
    if std::env::var("PMC_BLESS_HEADER").is_ok_and(|v| v == "1") {
        std::fs::write(&p, &want).expect("write the seed");
    }
    assert_eq!(
        std::fs::read(&p).ok(),
        Some(want),
        "{} is stale: PMC_BLESS_HEADER=1 cargo test -p pmc-capi --test robust",
        p.display()
    );
}

/// The cargo-fuzz target `pmclog_c`'s harness for a fixed number of
/// deterministic mutations of its seeds (an hwpmc log of every record type
/// and a pmc-log file), as the Rust readers' corpora run in the normal suite.
#[test]
fn pmclog_c_harness_fixed_iterations() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds/pmclog_c/pmc-log-fixture.bin");
    let seeds = [
        every_record_log(),
        std::fs::read(&fixture).unwrap_or_else(|e| panic!("{}: {e}", fixture.display())),
    ];
    let mut rng = Rng(7);
    let rounds = pmc_testkit::iterations(300, 12);
    for seed in &seeds {
        // The seeds themselves read whole: every record of the fixtures.
        let n = harness::pmclog_c(seed);
        assert!(n >= 20, "{n} events from a seed");
        for _ in 0..rounds {
            let mut d = seed.clone();
            // The first 8 bytes choose the pieces; mutate the log after them.
            match rng.below(3) {
                0 => d.truncate(8 + rng.below(d.len() as u64 - 8) as usize),
                1 => {
                    for _ in 0..1 + rng.below(6) {
                        let i = 8 + rng.below(d.len() as u64 - 8) as usize;
                        d[i] = rng.next() as u8;
                    }
                }
                _ => d[..8].copy_from_slice(&rng.next().to_le_bytes()),
            }
            let _ = harness::pmclog_c(&d);
        }
    }
    println!(
        "{} inputs read through pmclog(3), no panic",
        seeds.len() * (rounds as usize + 1)
    );
}
