//! rdpmc against read(2) on the same counter, on a real PMU.
//!
//! A plain `main` (harness = false): the process must stay single-threaded
//! for a PMC on `Target::Current` to count only the calling thread, which
//! `FastReader` requires. Prints `SKIP ...` where there is no hardware PMU
//! or user reads are off; that is not a pass.

#[cfg(target_os = "linux")]
use pmc_core::{Allocation, Backend as _, Pmc as _, Target};
#[cfg(target_os = "linux")]
use pmc_linux::{FastReader, ReadPath};

#[cfg(target_os = "linux")]
fn main() {
    software_event_falls_back_to_one_read();
    rdpmc_matches_read();
}

/// pmc-linux's user-space reads exist only on Linux.
#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIP rdpmc: pmc-linux's user-space reads are Linux only");
}

/// task-clock is never on the PMU: every read takes the read(2) path and
/// agrees with `Pmc::read`.
#[cfg(target_os = "linux")]
fn software_event_falls_back_to_one_read() {
    let be = pmc_linux::Backend::open().unwrap();
    let mut pmc = be
        .allocate(&Allocation::counting("task-clock".parse().unwrap()))
        .unwrap();
    assert!(FastReader::new(&pmc).is_err(), "not attached yet");
    pmc.start().unwrap();
    // Started on the whole process: its later threads are followed, which user reads cannot.
    assert!(FastReader::new(&pmc).is_err(), "Target::Current");
    pmc.stop().unwrap();
    let mut pmc = be
        .allocate(&Allocation::counting("task-clock".parse().unwrap()))
        .unwrap();
    pmc.attach(Target::CurrentThread).unwrap();
    pmc.start().unwrap();
    {
        let fast = FastReader::new(&pmc).unwrap();
        let mut last = 0;
        for _ in 0..100 {
            let a = pmc.read().unwrap();
            let (b, path) = fast.read_traced(false).unwrap();
            let c = pmc.read().unwrap();
            assert!(matches!(path, ReadPath::Syscall(_)), "{path:?}");
            assert!(
                a.value <= b.value && b.value <= c.value,
                "{a:?} {b:?} {c:?}"
            );
            assert!(b.value >= last);
            last = b.value;
        }
    }
    pmc.stop().unwrap();
    println!("ok: software_event_falls_back_to_one_read");
}

#[cfg(target_os = "linux")]
fn rdpmc_matches_read() {
    let name = "rdpmc_matches_read";
    let be = pmc_linux::Backend::open().unwrap();
    let mut pmc = match be.allocate(&Allocation::counting("instructions:u".parse().unwrap())) {
        Ok(p) => p,
        Err(e) => {
            pmc_testkit::skip!(name = name, "no hardware PMU ({})", e.message());
            return;
        }
    };
    pmc.attach(Target::CurrentThread).unwrap();
    pmc.start().unwrap();
    let fast = FastReader::new(&pmc).unwrap();
    if let Some(why) = fast.unavailable() {
        pmc_testkit::skip!(name = name, "{why}");
        return;
    }
    let mut user = 0;
    for i in 0..10_000u64 {
        let a = pmc.read().unwrap();
        let (b, path) = if i % 2 == 0 {
            fast.read_traced(false).unwrap()
        } else {
            fast.read_traced(true).unwrap()
        };
        let c = pmc.read().unwrap();
        if path == ReadPath::User {
            user += 1;
        }
        // Monotonic across the two paths, and times consistent.
        assert!(
            a.value <= b.value && b.value <= c.value,
            "{a:?} {b:?} {c:?}"
        );
        assert!(a.time_enabled <= b.time_enabled && b.time_enabled <= c.time_enabled + 1_000);
        assert!(b.time_running <= b.time_enabled + 1_000);
    }
    assert!(user > 0, "no read took the user-space path");
    println!("ok: {name} ({user} of 10000 reads in user space)");
}
