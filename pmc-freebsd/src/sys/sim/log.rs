//! The simulator's log writer: records in hwpmc's kernel format
//! (`sys/sys/pmclog.h`@2d614aa2, 15-CURRENT), emitted through a pluggable [`LogEncoder`]; the
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
    /// `PMCLOG_TYPE_PROCEXEC` (current layout).
    ProcExec {
        pid: i32,
        pmcid: u32,
        base: u64,
        dyn_base: u64,
        path: String,
    },
    /// `PMCLOG_TYPE_MAP_IN`.
    MapIn { pid: i32, start: u64, path: String },
    /// `PMCLOG_TYPE_MAP_OUT`.
    MapOut { pid: i32, start: u64, end: u64 },
    /// `PMCLOG_TYPE_PROCCSW` (with `PMC_F_LOG_PROCCSW`).
    ProcCsw {
        value: u64,
        pmcid: u32,
        pid: i32,
        tid: i32,
    },
    /// `PMCLOG_TYPE_USERDATA`.
    UserData { userdata: u32 },
    /// `PMCLOG_TYPE_SYSEXIT` (to system-sampling owners).
    SysExit { pid: i32 },
    /// `PMCLOG_TYPE_PROC_CREATE`: `p_flag` and `p_comm`.
    ProcCreate { pid: i32, flags: u32, comm: String },
    /// `PMCLOG_TYPE_THR_CREATE`: `td_tid`, the process, `p_flag`, `td_name`.
    ThrCreate {
        tid: i32,
        pid: i32,
        flags: u32,
        name: String,
    },
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
/// ([`pmc_log::hwpmc::Encoder`], which follows `hwpmc_logging.c`@0224710b's emit
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
            LogRecord::ProcExec {
                pid,
                pmcid,
                base,
                dyn_base,
                path,
            } => e.procexec(tsc, *pid, *pmcid, *base, *dyn_base, kpath(path)),
            LogRecord::MapIn { pid, start, path } => e.map_in(tsc, *pid, *start, kpath(path)),
            LogRecord::MapOut { pid, start, end } => e.map_out(tsc, *pid, *start, *end),
            LogRecord::ProcCsw {
                value,
                pmcid,
                pid,
                tid,
            } => e.proccsw(tsc, *pmcid, *pid, *tid, *value),
            LogRecord::UserData { userdata } => e.userdata(tsc, *userdata),
            LogRecord::SysExit { pid } => e.sysexit(tsc, *pid),
            LogRecord::ProcCreate { pid, flags, comm } => {
                e.proc_create(tsc, *pid, *flags, comm.as_bytes())
            }
            LogRecord::ThrCreate {
                tid,
                pid,
                flags,
                name,
            } => e.thr_create(tsc, *tid, *pid, *flags, name.as_bytes()),
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

/// The simulator's records against FreeBSD's layouts, not against another
/// encoder: sizes and field offsets come from `abi-amd64.json`'s `pmclog`
/// section (`sys/sys/pmclog.h`@5369f8e7 probed with the compiler; pmc-log keeps the
/// copy, `pmc-log/tests/data/abi-amd64-pmclog.json`).
#[cfg(test)]
mod tests {
    use super::*;
    use pmc_log::bytes::ByteCursor;

    fn layouts() -> serde_json::Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pmc-log/tests/data/abi-amd64-pmclog.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).expect("abi-amd64-pmclog.json parses")
    }

    /// `sizeof(struct pmclog_<st>)`.
    fn size(st: &str) -> usize {
        let v = &layouts()["pmclog"]["records"][format!("struct pmclog_{st}")]["size"];
        v.as_u64().unwrap_or_else(|| panic!("pmclog_{st}: no size")) as usize
    }

    /// `offsetof(struct pmclog_<st>, <field>)`.
    fn off(st: &str, field: &str) -> usize {
        let v = &layouts()["pmclog"]["records"][format!("struct pmclog_{st}")]["fields"][field]
            ["offset"];
        v.as_u64()
            .unwrap_or_else(|| panic!("pmclog_{st}.{field}: no offset")) as usize
    }

    fn enc(rec: LogRecord) -> Vec<u8> {
        let mut out = Vec::new();
        KernelFormat.encode(0x1122_3344_5566_7788, &rec, &mut out);
        out
    }

    fn u32_at(b: &[u8], o: usize) -> u32 {
        ByteCursor::le(b)
            .u32_at(o)
            .expect("field inside the record")
    }

    fn u64_at(b: &[u8], o: usize) -> u64 {
        ByteCursor::le(b)
            .u64_at(o)
            .expect("field inside the record")
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
        let st = "initialize";
        assert_eq!(b.len(), size(st));
        assert_eq!(b.len(), 112); // sizeof(struct pmclog_initialize)
        assert_eq!(
            u32_at(&b, off(st, "pl_header")),
            pmclog_header_word(PMCLOG_TYPE_INITIALIZE, 112)
        );
        assert_eq!(u32_at(&b, 0), 0xEE03_0070);
        assert_eq!(u32_at(&b, 4), 0);
        assert_eq!(u64_at(&b, off(st, "pl_tsc")), 0x1122_3344_5566_7788);
        assert_eq!(u32_at(&b, off(st, "pl_version")), PMC_VERSION);
        assert_eq!(u32_at(&b, off(st, "pl_cpu")), PMC_CPU_INTEL_SKYLAKE);
        assert_eq!(u64_at(&b, off(st, "pl_tsc_freq")), 3_000_000_000);
        // pl_ts: struct timespec { tv_sec; tv_nsec; }.
        assert_eq!(u64_at(&b, off(st, "pl_ts")), 5);
        assert_eq!(u64_at(&b, off(st, "pl_ts") + 8), 6);
        let id = off(st, "pl_cpuid");
        assert_eq!(&b[id..id + 19], b"GenuineIntel-6-55-4");
    }

    #[test]
    fn fixed_sizes() {
        assert_eq!(enc(LogRecord::CloseLog).len(), size("closelog"));
        assert_eq!(
            enc(LogRecord::PmcAllocate {
                pmcid: 1,
                event: 2,
                flags: 3,
                rate: 4
            })
            .len(),
            size("pmcallocate")
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
            size("pmcallocatedyn")
        );
        assert_eq!(
            enc(LogRecord::PmcDetach { pmcid: 1, pid: 2 }).len(),
            size("pmcdetach")
        );
        assert_eq!(
            enc(LogRecord::ProcExit {
                pmcid: 1,
                pid: 2,
                value: 3
            })
            .len(),
            size("procexit")
        );
        assert_eq!(
            enc(LogRecord::ProcFork {
                oldpid: 1,
                newpid: 2
            })
            .len(),
            size("procfork")
        );
        assert_eq!(
            enc(LogRecord::ProcCsw {
                value: 1,
                pmcid: 2,
                pid: 3,
                tid: 4
            })
            .len(),
            size("proccsw")
        );
        assert_eq!(
            enc(LogRecord::UserData { userdata: 7 }).len(),
            size("userdata")
        );
    }

    #[test]
    fn variable_records_are_rounded_to_4() {
        let path_at = off("pmcattach", "pl_pathname");
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: "/bin/sh".into(),
        });
        // offsetof(pl_pathname) + "/bin/sh\0" (8) = 32
        assert_eq!(b.len(), path_at + 8);
        assert_eq!(u32_at(&b, 0) & 0xFFFF, 32);
        assert_eq!(u32_at(&b, 0) >> 16, 0xEE06);
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: "/a".into(),
        });
        assert_eq!(b.len(), path_at + 4);
        let pc_at = off("callchain", "pl_pc");
        let b = enc(LogRecord::Callchain {
            pid: 1,
            tid: 2,
            pmcid: 3,
            cpu: 1,
            flags: 1,
            pcs: vec![10, 20, 30],
        });
        assert_eq!(b.len(), pc_at + 24);
        assert_eq!(u32_at(&b, off("callchain", "pl_cpuflags")), (1 << 16) | 1);
        assert_eq!(u64_at(&b, pc_at), 10);
        let huge = "x".repeat(5000);
        let b = enc(LogRecord::PmcAttach {
            pmcid: 9,
            pid: 42,
            path: huge,
        });
        // Capped at PATH_MAX: the whole struct, pl_pathname[PATH_MAX] full.
        assert_eq!(b.len(), size("pmcattach"));
        assert_eq!(b.len(), path_at + FBSD_PATH_MAX);
        let deep = enc(LogRecord::Callchain {
            pid: 1,
            tid: 2,
            pmcid: 3,
            cpu: 0,
            flags: 0,
            pcs: vec![7; PMC_CALLCHAIN_DEPTH_MAX + 5],
        });
        assert_eq!(
            deep.len(),
            size("callchain"),
            "cut to PMC_CALLCHAIN_DEPTH_MAX"
        );
    }

    /// Field offsets of `sys/sys/pmclog.h`@5369f8e7 (abi-amd64.json "pmclog.records").
    #[test]
    fn fields_sit_at_the_pmclog_h_offsets() {
        let st = "pmcallocate";
        let b = enc(LogRecord::PmcAllocate {
            pmcid: 0x11,
            event: 0x22,
            flags: 0x33,
            rate: 0x4444_0000_5555,
        });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_event")),
                u32_at(&b, off(st, "pl_flags")),
                u32_at(&b, off(st, "pl_pad"))
            ),
            (0x11, 0x22, 0x33, 0)
        );
        assert_eq!(u64_at(&b, off(st, "pl_rate")), 0x4444_0000_5555);
        let st = "pmcallocatedyn";
        let b = enc(LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 2,
            flags: 3,
            rate: 1 << 33,
            name: "PAGE_FAULT.ALL".into(),
        });
        assert_eq!(b.len(), size(st));
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_event")),
                u32_at(&b, off(st, "pl_flags"))
            ),
            (1, 2, 3)
        );
        // Not the struct's layout: hwpmc_logging.c@0224710b pmclog_process_pmcallocate()
        // emits pad at 28, PMCLOG_EMIT64(pm_reloadcount) at 32 (where
        // pl_evname is declared), then the name from 40.
        assert_eq!(off(st, "pl_evname"), 32);
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
        assert_eq!(
            long.len(),
            size(st),
            "the name never overflows the reservation"
        );
        assert_eq!(long[size(st) - 1], 0);
        let st = "pmcattach";
        let b = enc(LogRecord::PmcAttach {
            pmcid: 7,
            pid: -1,
            path: "/k".into(),
        });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_pid")) as i32
            ),
            (7, -1)
        );
        let p = off(st, "pl_pathname");
        assert_eq!(&b[p..p + 3], b"/k\0");
        let st = "pmcdetach";
        let b = enc(LogRecord::PmcDetach { pmcid: 7, pid: 9 });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_pid"))
            ),
            (7, 9)
        );
        let st = "procexit";
        let b = enc(LogRecord::ProcExit {
            pmcid: 7,
            pid: 9,
            value: 1 << 40,
        });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_pid")),
                u64_at(&b, off(st, "pl_value"))
            ),
            (7, 9, 1 << 40)
        );
        let st = "procfork";
        let b = enc(LogRecord::ProcFork {
            oldpid: 5,
            newpid: 6,
        });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_oldpid")),
                u32_at(&b, off(st, "pl_newpid"))
            ),
            (5, 6)
        );
        let st = "proccsw";
        let b = enc(LogRecord::ProcCsw {
            value: 1 << 35,
            pmcid: 4,
            pid: 5,
            tid: 6,
        });
        assert_eq!(b.len(), size(st));
        assert_eq!(u64_at(&b, off(st, "pl_value")), 1 << 35);
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pmcid")),
                u32_at(&b, off(st, "pl_pid")),
                u32_at(&b, off(st, "pl_tid")),
                u32_at(&b, off(st, "pl_pad"))
            ),
            (4, 5, 6, 0)
        );
        let st = "userdata";
        let b = enc(LogRecord::UserData { userdata: 0xABCD });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_userdata")),
                u32_at(&b, off(st, "pl_pad"))
            ),
            (0xABCD, 0)
        );
        let st = "callchain";
        let b = enc(LogRecord::Callchain {
            pid: 5,
            tid: 6,
            pmcid: 7,
            cpu: 3,
            flags: PMC_CC_F_USERSPACE,
            pcs: vec![1 << 33],
        });
        assert_eq!(
            (
                u32_at(&b, off(st, "pl_pid")),
                u32_at(&b, off(st, "pl_tid")),
                u32_at(&b, off(st, "pl_pmcid"))
            ),
            (5, 6, 7)
        );
        assert_eq!(
            u32_at(&b, off(st, "pl_cpuflags")),
            (3 << 16) | PMC_CC_F_USERSPACE
        );
        assert_eq!(u64_at(&b, off(st, "pl_pc")), 1 << 33);
        let st = "closelog";
        let b = enc(LogRecord::CloseLog);
        assert_eq!(
            u32_at(&b, off(st, "pl_header")),
            pmclog_header_word(PMCLOG_TYPE_CLOSELOG, 16)
        );
        assert_eq!(u64_at(&b, off(st, "pl_tsc")), 0x1122_3344_5566_7788);
    }
}
