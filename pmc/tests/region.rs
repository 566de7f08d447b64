//! `pmc::measure` and `pmc::Region` count work done in threads started
//! inside the region, judged against the thread's own CPU clock
//! (CLOCK_THREAD_CPUTIME_ID, the kernel's independent account).
#![cfg(target_os = "linux")]

use std::time::Duration;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until this thread has used `d` of CPU (not wall) time; returns
/// the CPU time it used.
fn spin(d: Duration) -> Duration {
    let start = thread_cpu();
    let mut x = 0u64;
    while thread_cpu() - start < d {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    thread_cpu() - start
}

#[test]
fn a_thread_started_inside_the_region_is_counted() {
    let (used, counts) = pmc::measure(&["task-clock"], || {
        std::thread::spawn(|| spin(Duration::from_millis(120)))
            .join()
            .unwrap()
    })
    .expect("task-clock can be counted here");
    let ms = counts[0].reading.scaled().unwrap() as f64 / 1e6;
    let used = used.as_secs_f64() * 1e3;
    assert!(
        ms >= used * 0.95,
        "the spawned thread used {used:.1} ms of CPU; the region read {ms:.1} ms"
    );
}

#[test]
fn a_region_guard_reads_and_stops() {
    let region = pmc::Region::start(&["task-clock", "page-faults"]).expect("start");
    let used = spin(Duration::from_millis(30));
    let mid = region.read().expect("read");
    assert_eq!(mid.len(), 2);
    let counts = region.stop().expect("stop");
    assert_eq!(counts[0].event.to_string(), "task-clock");
    let ms = counts[0].reading.scaled().unwrap() as f64 / 1e6;
    assert!(ms >= used.as_secs_f64() * 1e3 * 0.95, "{ms} ms");
    assert!(counts[0].reading.value >= mid[0].reading.value);
}

/// Issue 34: the documented error kinds. An unknown name fails in the parser
/// (`Parse`, before anything is opened); a PMU the machine lacks fails when
/// allocated (`NoSuchEvent`).
#[test]
fn region_errors_are_the_documented_kinds() {
    let e = pmc::Region::start(&["page-fualts"]).unwrap_err();
    assert_eq!(e.kind(), pmc::ErrorKind::Parse, "{e}");
    assert!(e.to_string().contains("did you mean `page-faults`"), "{e}");
    let e = pmc::Region::start(&["no_such_pmu_xyz/event=1/"]).unwrap_err();
    assert_eq!(e.kind(), pmc::ErrorKind::NoSuchEvent, "{e}");
}
