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

    /// hwpmc keeps one log per process, and the tests of this binary share
    /// the process: the ones that log take turns.
    static LOG_TURN: Mutex<()> = Mutex::new(());

    fn log_turn() -> std::sync::MutexGuard<'static, ()> {
        LOG_TURN.lock().unwrap_or_else(|e| e.into_inner())
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
        let _turn = log_turn();
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

    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded"]
    fn busy_and_already_attached_errors() {
        let b = open();
        let mut pmc = b
            .allocate(&Allocation::counting("page-faults".parse().unwrap()))
            .unwrap();
        pmc.start().unwrap();
        assert_eq!(pmc.set_count(5).unwrap_err().kind(), ErrorKind::Busy);
        assert_eq!(pmc.write(5).unwrap_err().kind(), ErrorKind::Busy);
        pmc.stop().unwrap();
        assert_eq!(
            pmc.attach(Target::Current).unwrap_err().kind(),
            ErrorKind::AlreadyAttached
        );
    }

    #[test]
    #[ignore = "needs FreeBSD with hwpmc loaded, as root"]
    fn system_counting_tsc_and_sampling_log() {
        let _turn = log_turn();
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
