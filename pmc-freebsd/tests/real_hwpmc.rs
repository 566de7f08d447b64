//! Tests against the real hwpmc. They need FreeBSD with hwpmc loaded
//! (`kldload hwpmc`); the system-scope ones need root. Run them with
//! `cargo test -p pmc-freebsd -- --ignored` on such a machine.

#[cfg(target_os = "freebsd")]
mod freebsd {
    use pmc_core::{Allocation, Backend as _, Cpus, ErrorKind, Pmc as _, Rate, Target};
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    fn open() -> pmc_freebsd::Backend {
        pmc_freebsd::Backend::new().expect("hwpmc loaded (kldload hwpmc)")
    }

    /// hwpmc keeps one log per process and gives one owner one process PMC
    /// per row, and the tests of this binary share the process (the owner):
    /// they take turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// freebsd-audit-3 finding A on the real kernel: a Backend that logged
    /// leaves the process's owner descriptor shut down (PMC_PO_SHUTDOWN)
    /// when dropped; it removes it by allocating and releasing a throwaway
    /// SOFT PMC, which `soft_allocate_pmc()` accepts only with a capability
    /// asked for. Before the fix the second Backend's CONFIGURELOG failed
    /// with ENOMEM here (the simulator did not model the caps check).
    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn a_second_logging_backend_after_the_first_is_dropped() {
        let _turn = turn();
        {
            let b = open();
            b.configure_hwpmc_log(Box::new(Buf::default())).unwrap();
            let mut p = b
                .allocate(&Allocation::counting("page-faults".parse().unwrap()))
                .unwrap();
            p.start().unwrap();
            p.stop().unwrap();
        }
        let b = open();
        let buf = Buf::default();
        b.configure_hwpmc_log(Box::new(buf.clone()))
            .expect("a new log after the first Backend is gone (not ENOMEM)");
        b.close_log().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        assert!(bytes.len() >= 16, "INITIALIZE reached the new sink");
    }

    fn touch_pages() {
        let v: Vec<u8> = vec![1; 64 << 20];
        std::hint::black_box(&v);
    }

    /// AMD's ATF hwpmc syscall cases (tests/atf_cases.rs) against the
    /// real driver; the system-mode case needs root or
    /// security.bsd.unprivileged_syspmcs=1 and says SKIP otherwise.
    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn atf_syscall_cases() {
        let d = pmc_freebsd::sys::RealSys::find().expect("hwpmc loaded (kldload hwpmc)");
        let fails = crate::atf_cases::failures(crate::atf_cases::run_all(&d));
        assert!(fails.is_empty(), "{fails:?}");
    }

    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn handshake_reports_a_known_abi() {
        let _turn = turn();
        let b = open();
        let major = b.machine().version >> 24;
        assert!(major == 0x09 || major == 0x0A, "{:#x}", b.machine().version);
        assert!(b.ncpu() >= 1);
        assert!(
            !b.machine().soft_events.is_empty(),
            "SOFT events via GETDYNEVENTINFO"
        );
    }

    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn process_counting_page_faults() {
        let _turn = turn();
        let b = open();
        let mut pmc = b
            .allocate(&Allocation::counting("page-faults".parse().unwrap()))
            .unwrap();
        pmc.start().unwrap();
        assert_eq!(pmc.targets(), vec![Target::Current]);
        touch_pages();
        pmc.stop().unwrap();
        let faults = pmc.read().unwrap().value;
        assert!(faults > 0);
        // PMC_OP_PMCRW NEWVALUE sets pm_savedvalue, what a process PMC reads.
        assert_eq!(pmc.write(0).unwrap(), faults);
        assert_eq!(pmc.read().unwrap().value, 0, "NEWVALUE on a stopped PMC");
        // hwpmc's SETCOUNT alone would leave a process counting PMC's count
        // unchanged (it sets pm_initial, read only by pmc_start() of a system
        // PMC: hwpmc_mod.c PMC_OP_PMCSETCOUNT); Pmc::set_count also writes
        // the value, so the count starts from it.
        pmc.start().unwrap();
        touch_pages();
        pmc.stop().unwrap();
        assert!(pmc.read().unwrap().value > 0);
        pmc.set_count(0).unwrap();
        assert_eq!(
            pmc.read().unwrap().value,
            0,
            "set_count(0) on a stopped counting PMC"
        );
    }

    /// freebsd-audit-3 finding B on the real kernel: a second attach of a
    /// PMC to the process it measures is refused by the backend, unsent.
    /// hwpmc would answer EEXIST and clear the process's P_HWPMC flag on the
    /// way out (`pmc_attach_one_process()`'s "fail:" path): the PMC, still
    /// attached, would then count nothing more.
    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn busy_and_already_attached_errors() {
        let _turn = turn();
        let b = open();
        let mut pmc = b
            .allocate(&Allocation::counting("page-faults".parse().unwrap()))
            .unwrap();
        pmc.start().unwrap();
        assert_eq!(pmc.set_count(5).unwrap_err().kind(), ErrorKind::Busy);
        assert_eq!(pmc.write(5).unwrap_err().kind(), ErrorKind::Busy);
        pmc.stop().unwrap();
        let before = pmc.read().unwrap().value;
        let e = pmc.attach(Target::Current).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyAttached);
        assert!(e.message().contains("not sent"), "{e}");
        pmc.start().unwrap();
        touch_pages();
        pmc.stop().unwrap();
        assert!(
            pmc.read().unwrap().value > before,
            "still counting after the refused attach (P_HWPMC kept)"
        );
    }

    /// The environment variable that makes [`second_profiler`] act: the
    /// pid to attach to.
    const SECOND_PROFILER_OF: &str = "PMC_TEST_SECOND_PROFILER_OF";

    /// Run by [`another_profilers_busy_row_leaves_the_target_measured`] in a
    /// child process (another hwpmc owner); a no-op otherwise.
    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn second_profiler() {
        let Ok(pid) = std::env::var(SECOND_PROFILER_OF) else {
            return;
        };
        let pid: u32 = pid.parse().unwrap();
        let b = open();
        let mut pmc = b
            .allocate(&Allocation::counting("cpu-clock".parse().unwrap()))
            .unwrap();
        match pmc.attach(Target::Pid(pid)) {
            Ok(()) => println!("SECOND: attached"),
            Err(e) => println!("SECOND: {:?}: {e}", e.kind()),
        }
    }

    /// freebsd-audit-3 finding B across owners on the real kernel: two
    /// profilers' first process PMCs share SOFT row 0; the second's attach
    /// to the first's target is refused (EBUSY) and hwpmc clears the
    /// target's P_HWPMC. The second backend gives it back (a throwaway SOFT
    /// PMC attached and detached), so the first profiler's PMC keeps
    /// counting. As root (attaching to another process).
    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded, as root"]
    fn another_profilers_busy_row_leaves_the_target_measured() {
        let _turn = turn();
        let mut target = std::process::Command::new("/bin/sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let b = open();
        let mut pmc = b
            .allocate(&Allocation::counting("cpu-clock".parse().unwrap()))
            .unwrap();
        pmc.attach(Target::Pid(target.id())).unwrap();
        pmc.start().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let v1 = pmc.read().unwrap().value;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "real_hwpmc::freebsd::second_profiler",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SECOND_PROFILER_OF, target.id().to_string())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let v2 = pmc.read().unwrap().value;
        pmc.stop().unwrap();
        let _ = target.kill();
        let _ = target.wait();
        assert!(out.status.success(), "{text}");
        assert!(text.contains("SECOND: Busy"), "{text}");
        assert!(text.contains("gave the flag back"), "{text}");
        assert!(v1 > 0, "counting before");
        assert!(
            v2 > v1,
            "still counting after the other profiler's refused attach: {v1} -> {v2}"
        );
    }

    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded, as root"]
    fn system_counting_tsc_and_sampling_log() {
        let _turn = turn();
        let b = open();
        let mut tsc = b
            .allocate(&Allocation::counting("tsc-tsc".parse().unwrap()).system(Cpus::One(0)))
            .unwrap();
        tsc.start().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(tsc.read().unwrap().value > 0);

        let a = Allocation::sampling("SOFT-CLOCK.HARD".parse().unwrap(), Rate::Period(10))
            .system(Cpus::All);
        let mut s = b.allocate(&a).unwrap();
        assert_eq!(
            s.start().unwrap_err().kind(),
            ErrorKind::LogRequired,
            "EDOOFUS before CONFIGURELOG"
        );
        let buf = Buf::default();
        b.configure_hwpmc_log(Box::new(buf.clone())).unwrap();
        s.start().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        s.stop().unwrap();
        b.close_log().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        assert!(bytes.len() >= 16);
        let h = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
        assert_eq!(h >> 24, 0xEE, "hwpmc log magic");
        assert_eq!((h >> 16) & 0xFF, 3, "INITIALIZE first");
        let (_, report) =
            pmc_log::hwpmc::convert(&bytes, Vec::new()).expect("pmc-log imports a real hwpmc log");
        assert!(report.closed_cleanly);
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    }
}

#[cfg(not(target_os = "freebsd"))]
#[test]
fn open_elsewhere_is_unsupported() {
    let e = pmc_freebsd::Backend::new().unwrap_err();
    assert_eq!(e.kind(), pmc_core::ErrorKind::Unsupported);
    assert!(e.help().unwrap_or("").contains("facade"));
}
