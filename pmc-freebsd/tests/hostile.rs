//! A driver that answers every request with arbitrary values or errnos:
//! the backend must never panic on odd kernel data.

use pmc_core::{Allocation, Backend as _, Cpus, Pmc as _, Rate};
use pmc_freebsd::sys::abi::*;
use pmc_freebsd::sys::{OpArg, Sys};
use pmc_freebsd::{Backend, Errno};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
struct Hostile {
    words: Vec<u64>,
    next: AtomicUsize,
}

impl Hostile {
    fn word(&self) -> u64 {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        if self.words.is_empty() {
            return 0;
        }
        self.words[i % self.words.len()]
    }
    fn u32(&self) -> u32 {
        self.word() as u32
    }
}

impl Sys for Hostile {
    fn call(&self, arg: OpArg<'_>) -> Result<(), Errno> {
        let w = self.word();
        // One call in eight fails with an arbitrary errno (never for the
        // handshake's version request, so the rest gets exercised).
        let fail = w % 8 == 7;
        match arg {
            OpArg::GetModuleVersion(v) => {
                *v = if w % 5 == 0 {
                    self.u32()
                } else {
                    0x0A00_0000 | (self.u32() & 0xFFFF)
                };
                return Ok(());
            }
            _ if fail => return Err(Errno((w >> 8) as i32)),
            OpArg::GetCpuInfo(ci) => {
                ci.pm_cputype = self.u32();
                ci.pm_ncpu = self.u32();
                ci.pm_npmc = self.u32();
                ci.pm_nclass = self.u32();
                for c in ci.pm_classes.iter_mut() {
                    *c = pmc_classinfo {
                        pm_class: self.u32() % 32,
                        pm_caps: self.u32(),
                        pm_width: self.u32(),
                        pm_num: self.u32(),
                    };
                }
            }
            OpArg::GetDynEventInfo(d) => {
                d.pm_nevent = self.u32();
                for e in d.pm_events.iter_mut().take(16) {
                    for b in e.pm_ev_name.iter_mut() {
                        *b = self.word() as u8;
                    }
                    e.pm_ev_code = self.u32();
                }
            }
            OpArg::GetPmcInfo(req) => {
                req.pmcs = vec![pmc_info::default(); (self.u32() % 64) as usize];
            }
            OpArg::PmcAllocate(a) => a.pm_pmcid = self.u32(),
            OpArg::PmcRw(rw) => rw.pm_value = self.word(),
            OpArg::PmcGetMsr(m) => m.pm_msr = self.u32(),
            OpArg::GetCaps(c) => c.pm_caps = self.u32(),
            _ => {}
        }
        Ok(())
    }

    fn current_pid(&self) -> i32 {
        self.u32() as i32
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(words in proptest::collection::vec(any::<u64>(), 1..64)) {
        let d = Hostile { words, next: AtomicUsize::new(0) };
        let Ok(b) = Backend::with_sys(d) else { return Ok(()) };
        let _ = b.list_events(false);
        let _ = b.diagnose();
        for spec in ["page-faults", "instructions", "SOFT-CLOCK.HARD", "event=0xc0,umask=1", "tsc-tsc"] {
            let ev = spec.parse().unwrap();
            for a in [
                Allocation::counting(ev),
                Allocation::counting(spec.parse().unwrap()).system(Cpus::All),
                Allocation::sampling(spec.parse().unwrap(), Rate::Frequency(0)),
            ] {
                if let Ok(mut p) = b.allocate(&a) {
                    let _ = p.start();
                    let _ = p.read();
                    let _ = p.read_instances();
                    let _ = p.write(1);
                    let _ = p.set_count(u64::MAX);
                    let _ = p.stop();
                    let _ = p.native_config();
                }
            }
        }
        let _ = b.flush_log();
        let _ = b.write_log(1);
        let _ = b.close_log();
    }
}
