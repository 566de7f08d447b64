//! The simulator's log writer: records in hwpmc's kernel format
//! (`sys/sys/pmclog.h`), emitted through a pluggable [`LogEncoder`].

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
/// hwpmc's format; a test can plug in another encoder (for example
/// `pmc_log`'s public hwpmc encoder) to cross-check.
pub trait LogEncoder: Send {
    /// Appends the encoding of `rec`, stamped with `tsc`, to `out`.
    fn encode(&mut self, tsc: u64, rec: &LogRecord, out: &mut Vec<u8>);
}

/// hwpmc's own on-disk format: `__packed`, native-endian (little-endian on
/// amd64/arm64), 16-byte header, lengths rounded up to 4.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelFormat;

struct Rec {
    buf: Vec<u8>,
}

impl Rec {
    fn new(ty: u32, tsc: u64) -> Rec {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&pmclog_header_word(ty, 0).to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&tsc.to_le_bytes());
        Rec { buf }
    }
    fn u32(mut self, v: u32) -> Rec {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(self, v: i32) -> Rec {
        self.u32(v as u32)
    }
    fn u64(mut self, v: u64) -> Rec {
        // PMCLOG_EMIT64: two 32-bit words, low word first.
        self.buf.extend_from_slice(&(v as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&((v >> 32) as u32).to_le_bytes());
        self
    }
    /// A fixed-size, NUL-padded string field.
    fn fixed_str(mut self, s: &str, len: usize) -> Rec {
        let mut b = vec![0u8; len];
        crate::sys::set_c_str(&mut b, s);
        self.buf.extend_from_slice(&b);
        self
    }
    /// A variable-length NUL-terminated string (PMCLOG_EMITSTRING), at most
    /// `max` bytes including the NUL.
    fn var_str(mut self, s: &str, max: usize) -> Rec {
        let n = s.len().min(max.saturating_sub(1));
        self.buf.extend_from_slice(&s.as_bytes()[..n]);
        self.buf.push(0);
        self
    }
    fn finish(mut self, out: &mut Vec<u8>) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
        let len = self.buf.len().min(PMCLOG_ENTRY_MAX) as u32;
        self.buf.truncate(len as usize);
        let ty =
            (u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) >> 16) & 0xFF;
        self.buf[0..4].copy_from_slice(&pmclog_header_word(ty, len).to_le_bytes());
        out.extend_from_slice(&self.buf);
    }
}

impl LogEncoder for KernelFormat {
    fn encode(&mut self, tsc: u64, rec: &LogRecord, out: &mut Vec<u8>) {
        match rec {
            LogRecord::Initialize {
                version,
                cputype,
                tsc_freq,
                ts_sec,
                ts_nsec,
                cpuid,
            } => Rec::new(PMCLOG_TYPE_INITIALIZE, tsc)
                .u32(*version)
                .u32(*cputype)
                .u64(*tsc_freq)
                .u64(*ts_sec as u64)
                .u64(*ts_nsec as u64)
                .fixed_str(cpuid, PMC_CPUID_LEN)
                .finish(out),
            LogRecord::CloseLog => Rec::new(PMCLOG_TYPE_CLOSELOG, tsc).finish(out),
            LogRecord::PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => Rec::new(PMCLOG_TYPE_PMCALLOCATE, tsc)
                .u32(*pmcid)
                .u32(*event)
                .u32(*flags)
                .u32(0)
                .u64(*rate)
                .finish(out),
            LogRecord::PmcAllocateDyn {
                pmcid,
                event,
                flags,
                rate,
                name,
            } => {
                // As the kernel's emitter writes it, not as the struct
                // declares it (hwpmc.md §4.3): the 8-byte reload count at
                // 32, then the name from 40, cut to stay within the 96-byte
                // reservation. Readers must accept both layouts.
                Rec::new(PMCLOG_TYPE_PMCALLOCATEDYN, tsc)
                    .u32(*pmcid)
                    .u32(*event)
                    .u32(*flags)
                    .u32(0)
                    .u64(*rate)
                    .fixed_str(name, PMC_NAME_MAX - 8)
                    .finish(out)
            }
            LogRecord::PmcAttach { pmcid, pid, path } => Rec::new(PMCLOG_TYPE_PMCATTACH, tsc)
                .u32(*pmcid)
                .i32(*pid)
                .var_str(path, FBSD_PATH_MAX)
                .finish(out),
            LogRecord::PmcDetach { pmcid, pid } => Rec::new(PMCLOG_TYPE_PMCDETACH, tsc)
                .u32(*pmcid)
                .i32(*pid)
                .finish(out),
            LogRecord::ProcExit { pmcid, pid, value } => Rec::new(PMCLOG_TYPE_PROCEXIT, tsc)
                .u32(*pmcid)
                .i32(*pid)
                .u64(*value)
                .finish(out),
            LogRecord::ProcCsw {
                value,
                pmcid,
                pid,
                tid,
            } => Rec::new(PMCLOG_TYPE_PROCCSW, tsc)
                .u64(*value)
                .u32(*pmcid)
                .i32(*pid)
                .i32(*tid)
                .u32(0)
                .finish(out),
            LogRecord::ProcFork { oldpid, newpid } => Rec::new(PMCLOG_TYPE_PROCFORK, tsc)
                .i32(*oldpid)
                .i32(*newpid)
                .finish(out),
            LogRecord::UserData { userdata } => Rec::new(PMCLOG_TYPE_USERDATA, tsc)
                .u32(*userdata)
                .u32(0)
                .finish(out),
            LogRecord::Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                flags,
                pcs,
            } => {
                let mut r = Rec::new(PMCLOG_TYPE_CALLCHAIN, tsc)
                    .i32(*pid)
                    .i32(*tid)
                    .u32(*pmcid)
                    .u32((cpu << 16) | (flags & 0xFFFF));
                for pc in pcs.iter().take(PMC_CALLCHAIN_DEPTH_MAX as usize) {
                    r = r.u64(*pc);
                }
                r.finish(out)
            }
        }
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
            flags: 2,
            pcs: vec![1 << 33],
        });
        assert_eq!((u32_at(&b, 16), u32_at(&b, 20), u32_at(&b, 24)), (5, 6, 7));
        assert_eq!(u32_at(&b, 28), (3 << 16) | 2);
        assert_eq!(u64_at(&b, 32), 1 << 33);
        let b = enc(LogRecord::CloseLog);
        assert_eq!(u32_at(&b, 0), pmclog_header_word(PMCLOG_TYPE_CLOSELOG, 16));
        assert_eq!(u64_at(&b, 8), 0x1122_3344_5566_7788);
    }
}
