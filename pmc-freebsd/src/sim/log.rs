//! The simulator's log writer: records in hwpmc's kernel format
//! (`sys/sys/pmclog.h`), emitted through a pluggable [`LogEncoder`]; the
//! default, [`KernelFormat`], is pmc-log's kernel-format encoder.

use crate::sys::abi::*;

/// One log record the simulated kernel emits (the header's TSC is passed
/// separately).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum LogRecord {
    /// `PMCLOG_TYPE_INITIALIZE`.
    Initialize {
        version: u32,
        cputype: u32,
        tsc_freq: u64,
        ts_sec: i64,
        ts_nsec: i64,
        cpuid: String,
    },
    /// `PMCLOG_TYPE_CLOSELOG`.
    CloseLog,
    /// `PMCLOG_TYPE_PMCALLOCATE`.
    PmcAllocate {
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
    },
    /// `PMCLOG_TYPE_PMCALLOCATEDYN` (SOFT events).
    PmcAllocateDyn {
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
        name: String,
    },
    /// `PMCLOG_TYPE_PMCATTACH`.
    PmcAttach { pmcid: u32, pid: i32, path: String },
    /// `PMCLOG_TYPE_PMCDETACH`.
    PmcDetach { pmcid: u32, pid: i32 },
    /// `PMCLOG_TYPE_PROCEXIT`.
    ProcExit { pmcid: u32, pid: i32, value: u64 },
    /// `PMCLOG_TYPE_PROCFORK`.
    ProcFork { oldpid: i32, newpid: i32 },
    /// `PMCLOG_TYPE_PROCCSW` (with `PMC_F_LOG_PROCCSW`).
    ProcCsw {
        value: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
    },
    /// `PMCLOG_TYPE_USERDATA`.
    UserData { userdata: u32 },
    /// `PMCLOG_TYPE_CALLCHAIN`.
    Callchain {
        pid: i32,
        tid: i32,
        pmcid: u32,
        cpu: u32,
        flags: u32,
        pcs: Vec<u64>,
    },
}

/// Turns [`LogRecord`]s into bytes. The built-in [`KernelFormat`] writes
/// hwpmc's format; a test can plug in another encoder (for example one that
/// damages records) with `SimDriver::set_encoder`.
pub trait LogEncoder: Send {
    /// Appends the encoding of `rec`, stamped with `tsc`, to `out`.
    fn encode(&mut self, tsc: u64, rec: &LogRecord, out: &mut Vec<u8>);
}

/// hwpmc's own on-disk format, written by pmc-log's kernel-format encoder
/// ([`pmc_log::hwpmc::Encoder`], which follows `hwpmc_logging.c`'s emit
/// rules): one encoder for the simulator and for pmc-log, so the two
/// cannot drift apart. Like the kernel, it cuts what cannot be represented
/// instead of failing: paths to `PATH_MAX - 1` bytes (and at a NUL),
/// callchains to `PMC_CALLCHAIN_DEPTH_MAX` frames.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelFormat;

/// A path as `PMCLOG_EMITSTRING` copies it: up to its NUL, at most
/// `PATH_MAX - 1` bytes.
fn kpath(s: &str) -> &[u8] {
    let b = s.as_bytes();
    let b = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    &b[..b.len().min(FBSD_PATH_MAX - 1)]
}

impl LogEncoder for KernelFormat {
    fn encode(&mut self, tsc: u64, rec: &LogRecord, out: &mut Vec<u8>) {
        let mut e = pmc_log::hwpmc::Encoder::new(&mut *out);
        // Every input is cut to fit above, so the encoder cannot refuse it;
        // a refusal would leave the record out (the kernel never fails
        // to emit either).
        let _ = match rec {
            LogRecord::Initialize {
                version,
                cputype,
                tsc_freq,
                ts_sec,
                ts_nsec,
                cpuid,
            } => e.initialize(tsc, *version, *cputype, *tsc_freq, *ts_sec, *ts_nsec, cpuid),
            LogRecord::CloseLog => e.closelog(tsc),
            LogRecord::PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => e.pmc_allocate(tsc, *pmcid, *event, *flags, *rate),
            LogRecord::PmcAllocateDyn {
                pmcid,
                event,
                flags,
                rate,
                name,
            } => e.pmc_allocate_dyn(tsc, *pmcid, *event, *flags, *rate, name),
            LogRecord::PmcAttach { pmcid, pid, path } => {
                e.pmc_attach(tsc, *pmcid, *pid, kpath(path))
            }
            LogRecord::PmcDetach { pmcid, pid } => e.pmc_detach(tsc, *pmcid, *pid),
            LogRecord::ProcExit { pmcid, pid, value } => e.procexit(tsc, *pmcid, *pid, *value),
            LogRecord::ProcFork { oldpid, newpid } => e.procfork(tsc, *oldpid, *newpid),
            LogRecord::ProcCsw {
                value,
                pmcid,
                pid,
                tid,
            } => e.proccsw(tsc, *pmcid, *pid, *tid, *value),
            LogRecord::UserData { userdata } => e.userdata(tsc, *userdata),
            LogRecord::Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                flags,
                pcs,
            } => e.callchain(
                tsc,
                *pid,
                *tid,
                *pmcid,
                *cpu as u16,
                flags & PMC_CC_F_USERSPACE != 0,
                &pcs[..pcs.len().min(PMC_CALLCHAIN_DEPTH_MAX)],
            ),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(rec: LogRecord) -> Vec<u8> {
        let mut out = Vec::new();
        KernelFormat.encode(0x1122_3344_5566_7788, &rec, &mut out);
        out
    }

    fn u32_at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
    }

    #[test]
    fn initialize_matches_struct_layout() {
        let b = enc(LogRecord::Initialize {
            version: PMC_VERSION,
            cputype: PMC_CPU_INTEL_SKYLAKE,
            tsc_freq: 3_000_000_000,
            ts_sec: 5,
            ts_nsec: 6,
            cpuid: "GenuineIntel-6-55-4".into(),
        });
        assert_eq!(b.len(), 112); // sizeof(struct pmclog_initialize)
        assert_eq!(u32_at(&b, 0), 0xEE03_0070);
        assert_eq!(u32_at(&b, 4), 0);
        assert_eq!(u32_at(&b, 8), 0x5566_7788);
        assert_eq!(u32_at(&b, 12), 0x1122_3344);
        assert_eq!(u32_at(&b, 16), PMC_VERSION);
        assert_eq!(u32_at(&b, 20), PMC_CPU_INTEL_SKYLAKE);
        assert_eq!(u32_at(&b, 24), 3_000_000_000u32);
        assert_eq!(u32_at(&b, 32), 5);
        assert_eq!(u32_at(&b, 40), 6);
        assert_eq!(&b[48..67], b"GenuineIntel-6-55-4");
    }

    #[test]
    fn fixed_sizes() {
        assert_eq!(enc(LogRecord::CloseLog).len(), 16);
        assert_eq!(
            enc(LogRecord::PmcAllocate {
                pmcid: 1,
                event: 2,
                flags: 3,
                rate: 4
            })
            .len(),
            40
        );
        assert_eq!(
            enc(LogRecord::PmcAllocateDyn {
                pmcid: 1,
                event: 2,
                flags: 3,
                rate: 0,
                name: "CLOCK.HARD".into()
            })
            .len(),
            96
        );
        assert_eq!(enc(LogRecord::PmcDetach { pmcid: 1, pid: 2 }).len(), 24);
        assert_eq!(
            enc(LogRecord::ProcExit {
                pmcid: 1,
                pid: 2,
                value: 3
            })
            .len(),
            32
        );
        assert_eq!(
            enc(LogRecord::ProcFork {
                oldpid: 1,
                newpid: 2
            })
            .len(),
            24
        );
        assert_eq!(enc(LogRecord::UserData { userdata: 7 }).len(), 24);
    }

    #[test]
    fn variable_records_are_rounded_to_4() {
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: "/bin/sh".into(),
        });
        // 24 + "/bin/sh\0" (8) = 32
        assert_eq!(b.len(), 32);
        assert_eq!(u32_at(&b, 0) & 0xFFFF, 32);
        assert_eq!(u32_at(&b, 0) >> 16, 0xEE06);
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: "/a".into(),
        });
        assert_eq!(b.len(), 28);
        let b = enc(LogRecord::Callchain {
            pid: 1,
            tid: 2,
            pmcid: 3,
            cpu: 1,
            flags: 1,
            pcs: vec![10, 20, 30],
        });
        assert_eq!(b.len(), 32 + 24);
        assert_eq!(u32_at(&b, 28), (1 << 16) | 1);
        assert_eq!(u32_at(&b, 32), 10);
        let huge = "x".repeat(5000);
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: huge,
        });
        assert_eq!(b.len(), 1048); // capped at PATH_MAX
    }

    fn u64_at(b: &[u8], o: usize) -> u64 {
        u64::from(u32_at(b, o)) | (u64::from(u32_at(b, o + 4)) << 32)
    }

    /// Field offsets of `sys/sys/pmclog.h` (abi-amd64.json "pmclog.records").
    #[test]
    fn fields_sit_at_the_pmclog_h_offsets() {
        let b = enc(LogRecord::PmcAllocate {
            pmcid: 0x11,
            event: 0x22,
            flags: 0x33,
            rate: 0x4444_0000_5555,
        });
        assert_eq!(
            (
                u32_at(&b, 16),
                u32_at(&b, 20),
                u32_at(&b, 24),
                u32_at(&b, 28)
            ),
            (0x11, 0x22, 0x33, 0)
        );
        assert_eq!(u64_at(&b, 32), 0x4444_0000_5555);
        let b = enc(LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 2,
            flags: 3,
            rate: 1 << 33,
            name: "PAGE_FAULT.ALL".into(),
        });
        assert_eq!(b.len(), 96);
        assert_eq!(
            u64_at(&b, 32),
            1 << 33,
            "the kernel emits the reload count at 32"
        );
        assert_eq!(&b[40..54], b"PAGE_FAULT.ALL");
        assert_eq!(b[54], 0);
        let long = enc(LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 2,
            flags: 3,
            rate: 0,
            name: "N".repeat(80),
        });
        assert_eq!(long.len(), 96, "the name never overflows the reservation");
        assert_eq!(long[95], 0);
        let b = enc(LogRecord::PmcAttach {
            pmcid: 7,
            pid: -1,
            path: "/k".into(),
        });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20) as i32), (7, -1));
        assert_eq!(&b[24..27], b"/k\0");
        let b = enc(LogRecord::PmcDetach { pmcid: 7, pid: 9 });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20)), (7, 9));
        let b = enc(LogRecord::ProcExit {
            pmcid: 7,
            pid: 9,
            value: 1 << 40,
        });
        assert_eq!(
            (u32_at(&b, 16), u32_at(&b, 20), u64_at(&b, 24)),
            (7, 9, 1 << 40)
        );
        let b = enc(LogRecord::ProcFork {
            oldpid: 5,
            newpid: 6,
        });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20)), (5, 6));
        let b = enc(LogRecord::ProcCsw {
            value: 1 << 35,
            pmcid: 4,
            pid: 5,
            tid: 6,
        });
        assert_eq!(b.len(), 40);
        assert_eq!(u64_at(&b, 16), 1 << 35);
        assert_eq!(
            (
                u32_at(&b, 24),
                u32_at(&b, 28),
                u32_at(&b, 32),
                u32_at(&b, 36)
            ),
            (4, 5, 6, 0)
        );
        let b = enc(LogRecord::UserData { userdata: 0xABCD });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20)), (0xABCD, 0));
        let b = enc(LogRecord::Callchain {
            pid: 5,
            tid: 6,
            pmcid: 7,
            cpu: 3,
            flags: PMC_CC_F_USERSPACE,
            pcs: vec![1 << 33],
        });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20), u32_at(&b, 24)), (5, 6, 7));
        assert_eq!(u32_at(&b, 28), (3 << 16) | PMC_CC_F_USERSPACE);
        assert_eq!(u64_at(&b, 32), 1 << 33);
        let b = enc(LogRecord::CloseLog);
        assert_eq!(u32_at(&b, 0), pmclog_header_word(PMCLOG_TYPE_CLOSELOG, 16));
        assert_eq!(u64_at(&b, 8), 0x1122_3344_5566_7788);
    }
}
