//! The self-test judges: under pmc-linux's fake kernel, counts that tell the
//! truth about each workload PASS, and a kernel that returns wrong counts
//! for one event makes exactly that event's rows FAIL.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::sync::Arc;

use pmc_linux::internals::fake::{FakeKernel, SampleSpec};
use pmc_selftest::{self as selftest, Options, Ran, Report, Verdict};

/// perf's (type, config) for the events the self-test counts.
const HW: u32 = 0;
const SW: u32 = 1;
const INSTRUCTIONS: (u32, u64) = (HW, 1);
const CYCLES: (u32, u64) = (HW, 0);
const BRANCHES: (u32, u64) = (HW, 4);
const CPU_CLOCK: (u32, u64) = (SW, 0);
const TASK_CLOCK: (u32, u64) = (SW, 1);
const PAGE_FAULTS: (u32, u64) = (SW, 2);
const CONTEXT_SWITCHES: (u32, u64) = (SW, 3);
const MIGRATIONS: (u32, u64) = (SW, 4);
/// `PERF_SAMPLE_IP`: set on the self-test's sampling events only.
const SAMPLE_IP: u64 = 1;

/// What the workload really did, per event, in that event's unit.
fn truth(ev: (u32, u64), ran: &Ran) -> u64 {
    let ns = ran.cpu_ns.max(1_000);
    match ev {
        INSTRUCTIONS => ran.instructions,
        BRANCHES => ran.branches,
        CYCLES => ns * 3, // a 3 GHz machine
        CPU_CLOCK | TASK_CLOCK => ns,
        PAGE_FAULTS => ran.pages,
        CONTEXT_SWITCHES => 2 * ran.round_trips,
        MIGRATIONS => ran.migrations,
        _ => 0,
    }
}

/// Runs the self-test on the fake kernel, which counts what each workload
/// did, times `lie[event]` (1.0 when absent), and runs hardware events for
/// `share` percent of their enabled time (multiplexing).
fn run(lie: &[((u32, u64), f64)], share: u64) -> Report {
    let fake = Arc::new(FakeKernel::new());
    let backend = pmc_linux::Backend::with_sys(fake.clone());
    let lie: BTreeMap<(u32, u64), f64> = lie.iter().copied().collect();
    let k = fake.clone();
    let options = Options::default()
        .iterations(1_000_000)
        .on_workload(move |ran: &Ran| {
            let before: BTreeMap<i32, u64> = k.events().iter().map(|e| (e.fd, e.count)).collect();
            for e in k.events() {
                if e.attr.type_ == HW {
                    k.multiplex(e.fd, share);
                }
            }
            // Time passes for the counting thread (tid 100, the fake's caller) ...
            k.tick(100, 0, ran.cpu_ns.max(1_000));
            // ... and each enabled event counts exactly what the workload did
            // (the tick's own count replaced), scaled down by its share.
            for e in k.events() {
                if !e.enabled {
                    continue;
                }
                let key = (e.attr.type_, e.attr.config);
                let f = lie.get(&key).copied().unwrap_or(1.0);
                if e.attr.sample_type & SAMPLE_IP != 0 {
                    // A sampling event: one sample per period of CPU time.
                    // (The self-test's periods: the union is not readable without unsafe.)
                    let period = if ran.check == "sampling period" {
                        100_000
                    } else {
                        1_000_000
                    };
                    let n = (truth(key, ran) as f64 * f) as u64 / period.max(1);
                    for i in 0..n {
                        let s = SampleSpec {
                            ip: 0x40_1000,
                            pid: 100,
                            tid: 100,
                            time: i,
                            cpu: 0,
                        };
                        assert_eq!(
                            k.sample(e.fd, s),
                            Some(true),
                            "sample {i} of {n} fits the ring"
                        );
                    }
                    continue;
                }
                let said = (truth(key, ran) as f64 * f) as u64;
                let said = if key.0 == HW {
                    said * share / 100
                } else {
                    said
                };
                let ticked = e
                    .count
                    .wrapping_sub(before.get(&e.fd).copied().unwrap_or(0));
                k.add_count(e.fd, said.wrapping_sub(ticked));
            }
        });
    let report = selftest::run(&backend, &options);
    eprintln!("{report}");
    report
}

fn verdict(r: &Report, check: &str) -> Verdict {
    r.row(check)
        .unwrap_or_else(|| panic!("no {check} row in {r:#?}"))
        .verdict
}

#[test]
fn honest_counts_pass() {
    let r = run(&[], 100);
    for row in &r.rows {
        if row.check != "user-space reads" {
            assert_eq!(row.verdict, Verdict::Pass, "{row:?}");
        }
    }
    assert_eq!(r.rows.len(), 10);
    assert!(r.passed());
    let s = r.row("sampling period").unwrap();
    // Samples of 100 us whose periods add up to the task-clock the selftest read, within one
    // period (the fake kernel takes a sample at each whole period of CPU time). How many
    // there are depends on how long the spin ran: 500 on a quiet machine, 504 in the PMU
    // lab's qemu-user run under load, so the count is not pinned; the sum is.
    let m = s.measured.unwrap_or(0);
    let task_clock = s.expected.unwrap_or(0);
    assert!(
        m % 100_000 == 0 && m >= 49_900_000 && m.abs_diff(task_clock) <= 100_000,
        "samples of 100 us adding up to task-clock: {s:?}"
    );
    let l = r.row("log round trip").unwrap();
    assert_eq!((l.measured, l.expected), (Some(20), Some(20)), "{l:?}");
    let i = r.row("instructions").unwrap();
    assert_eq!((i.measured, i.expected), (Some(2_000_000), Some(2_000_000)));
    assert_eq!(
        verdict(&r, "user-space reads"),
        Verdict::Skip,
        "no FastReader probe given to selftest::run"
    );
}

#[test]
fn wrong_counts_fail_their_rows_only() {
    let r = run(
        &[
            (INSTRUCTIONS, 1.5),
            (PAGE_FAULTS, 0.0),
            (CONTEXT_SWITCHES, 0.25),
            (MIGRATIONS, 0.5),
            (CPU_CLOCK, 2.0),
        ],
        100,
    );
    for c in [
        "instructions",
        "page faults",
        "context switches",
        "cpu migrations",
        "sampling period",
    ] {
        assert_eq!(verdict(&r, c), Verdict::Fail, "{c}: {:?}", r.row(c));
    }
    // The multiplexing check counts instructions too: wrong there as well.
    assert_eq!(verdict(&r, "multiplexing"), Verdict::Fail);
    for c in ["branches", "cycles"] {
        assert_eq!(verdict(&r, c), Verdict::Pass, "{c}: {:?}", r.row(c));
    }
    assert!(!r.passed());
    let i = r.row("instructions").unwrap();
    assert_eq!(i.measured, Some(3_000_000));
    assert!(i.note.contains("50.0% off"), "{}", i.note);
    assert!(
        r.row("page faults")
            .unwrap()
            .causes
            .iter()
            .any(|c| c.contains("huge pages")),
        "a page-fault failure names huge pages"
    );
    let text = r.to_string();
    assert!(text.contains("FAIL"), "{text}");
    assert!(text.contains("some counts are wrong here"), "{text}");
}

#[test]
fn multiplexed_counts_scale_back() {
    // Hardware events run 25% of the time: the scaled counts are still right.
    let r = run(&[], 25);
    let m = r.row("multiplexing").unwrap();
    assert_eq!(m.verdict, Verdict::Pass, "{m:?}");
    assert!(
        m.note.contains("16 of 16 multiplexed, least running 25%"),
        "{}",
        m.note
    );
    assert_eq!(verdict(&r, "instructions"), Verdict::Pass);
    // A clock 20 times too fast is absurd: WARN, not FAIL.
    let r = run(&[(CYCLES, 20.0)], 100);
    assert_eq!(
        verdict(&r, "cycles"),
        Verdict::Warn,
        "{:?}",
        r.row("cycles")
    );
    assert!(r.passed(), "a WARN is not a failure");
}

#[test]
fn counters_that_never_run_fail_with_the_causes() {
    // Allocated and started, but the PMU never schedules them (the NMI
    // watchdog or the hypervisor holds the counters).
    let r = run(&[], 0);
    for c in ["instructions", "branches", "cycles", "multiplexing"] {
        let row = r.row(c).unwrap();
        assert_eq!(row.verdict, Verdict::Fail, "{row:?}");
        assert!(row.note.contains("never counted"), "{}", row.note);
    }
    for c in ["page faults", "context switches"] {
        assert_eq!(verdict(&r, c), Verdict::Pass, "software events still count");
    }
}

/// Issue 34: in a KVM guest without a virtual PMU, the hardware rows SKIP with one likely
/// cause that names the hypervisor (CPUID's signature, as dmesg's "Hypervisor detected:
/// KVM") and says the fix in it, not a second "likely cause" line that is a fix.
#[test]
fn a_vm_without_a_pmu_names_its_hypervisor_once() {
    let fake = Arc::new(FakeKernel::new());
    fake.set_facts(pmc_linux::internals::Facts {
        has_pmu: false,
        ..fake_facts()
    });
    fake.set_file(
        "/proc/cpuinfo",
        "processor\t: 0\nflags\t\t: fpu hypervisor\n",
    );
    fake.set_hypervisor(*b"KVMKVMKVM\0\0\0");
    let backend = pmc_linux::Backend::with_sys(fake.clone());
    let r = selftest::run(&backend, &Options::default().iterations(1_000));
    let i = r.row("instructions").unwrap();
    assert_eq!(i.verdict, Verdict::Skip, "{i:?}");
    assert_eq!(i.causes.len(), 1, "{:?}", i.causes);
    let cause = &i.causes[0];
    assert!(
        cause.contains("virtual machine (KVM)") && cause.contains("(fix: enable a virtual PMU"),
        "{cause}"
    );
    assert!(!r.to_string().contains("unknown hypervisor"), "{r}");
}

/// The fake kernel's default facts.
fn fake_facts() -> pmc_linux::internals::Facts {
    pmc_linux::internals::Facts {
        paranoid: Some(2),
        privileged: false,
        has_pmu: true,
        nofile: Some(1024),
        max_sample_rate: Some(100_000),
        ncpus: 2,
    }
}
