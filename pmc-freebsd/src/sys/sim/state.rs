//! The driver's state behind its lock: the class rows, the PMCs, their
//! owners, the processes, the log, the sample ring; the lookups every
//! verb uses, and the dispatch of an operation to its verb.

use super::config::{Signal, SimConfig, SimTree, MIN_SAMPLING_COUNT, SAMPLE_PC};
use super::log::{LogEncoder, LogRecord};
use crate::errno::Errno;
use crate::sys::abi::*;
use crate::sys::OpArg;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone)]
pub(super) struct ClassDesc {
    pub(super) class: u32,
    pub(super) caps: u32,
    pub(super) width: u32,
    pub(super) num: u32,
    pub(super) first_row: usize,
    pub(super) name: &'static str,
}

#[derive(Debug, Clone, Default)]
pub(super) struct RowCpu {
    pub(super) disabled: bool,
    /// (owner pid, pmc id) of the system PMCs using this row on this CPU:
    /// one, or several on a shareable row (TSC); the last is the one
    /// configured on the hardware (`phw_pmc`), which GETPMCINFO shows.
    pub(super) system: Vec<(i32, u32)>,
}

#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) class_idx: usize,
    pub(super) index: u32,
    pub(super) cpus: Vec<RowCpu>,
    /// Process-mode PMCs allocated on this row.
    pub(super) thread_refs: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PState {
    Allocated,
    Stopped,
    Running,
}

#[derive(Debug, Clone)]
pub(super) struct SimPmc {
    pub(super) id: u32,
    pub(super) owner: i32,
    pub(super) mode: u32,
    pub(super) class: u32,
    pub(super) event: u32,
    pub(super) flags: u32,
    pub(super) cpu: u32,
    pub(super) row: usize,
    pub(super) md: pmc_md_op_pmcallocate,
    pub(super) state: PState,
    /// A counting PMC's count: `pm_gv.pm_savedvalue` for a process PMC
    /// (what PMCRW reads and writes), the hardware counter for a system
    /// PMC. A process sampling PMC's `pm_savedvalue`: written only by
    /// PMCRW NEWVALUE, never by sampling (see `rw`).
    pub(super) value: u64,
    /// `pm_sc.pm_initial`: set by PMCSETCOUNT (and allocation) on a
    /// counting PMC, read only by `pmc_start()` of a system PMC.
    pub(super) initial: u64,
    pub(super) reload: u64,
    /// Events left until the next sample of a system sampling PMC (its
    /// hardware counter on its CPU).
    pub(super) left: u64,
    /// A process sampling PMC's countdown per target thread (`pt_pmcval`,
    /// keyed by (pid, tid); see `State::step`).
    pub(super) thread_left: BTreeMap<(i32, i32), u64>,
    pub(super) targets: BTreeMap<i32, u64>,
}

impl SimPmc {
    pub(super) fn is_system(&self) -> bool {
        self.mode == PMC_MODE_SS || self.mode == PMC_MODE_SC
    }
    pub(super) fn is_sampling(&self) -> bool {
        self.mode == PMC_MODE_SS || self.mode == PMC_MODE_TS
    }
}

pub(super) struct LogState {
    pub(super) fd: i32,
    pub(super) buf: Vec<u8>,
    pub(super) error: Option<Errno>,
}

#[derive(Default)]
pub(super) struct Owner {
    pub(super) pmcs: BTreeSet<u32>,
    /// `PMC_PO_INITIAL_MAPPINGS_DONE`: the kernel objects (and, for system
    /// sampling, every process) were logged at a first sampling start.
    pub(super) initial_mappings_done: bool,
    /// `po_logprocmaps`: every process's mappings were logged at a first
    /// system sampling start.
    pub(super) logprocmaps: bool,
    /// `PMC_PO_OWNS_LOGFILE`: the configured log.
    pub(super) log: Option<LogState>,
    /// `PMC_PO_SHUTDOWN`, set by `pmclog_close()` (CLOSELOG and
    /// CONFIGURELOG(-1)) and never cleared while the owner descriptor lives
    /// (`hwpmc_logging.c`@0224710b `pmclog_close()`; only OWNS_LOGFILE is cleared, by
    /// `pmclog_stop_kthread`). `pmclog_reserve()` returns NULL while it is
    /// set, so nothing more is logged and the INITIALIZE record of a later
    /// CONFIGURELOG cannot be reserved (ENOMEM).
    pub(super) shutdown: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Proc {
    pub(super) parent: i32,
    pub(super) debuggable: bool,
    pub(super) path: String,
    /// `P_HWPMC` in `p_flag` (see `State::uses_hwpmc`).
    pub(super) hwpmc: bool,
    /// Executable mappings: (start, object path); the program at
    /// [`EXEC_BASE`] from its exec on.
    pub(super) maps: Vec<(u64, String)>,
    /// Thread ids (the first is `pid * 100`).
    pub(super) tids: Vec<i32>,
}

/// Where the simulator maps a program.
pub const EXEC_BASE: u64 = SAMPLE_PC & !0xFFFF;

/// The kernel and its modules, as `linker_hwpmc_list_objects()` lists them
/// (object path, load address), for the MAP_IN records of pid -1.
pub const KERNEL_OBJECTS: &[(&str, u64)] = &[
    ("/boot/kernel/kernel", 0xFFFF_FFFF_8020_0000),
    ("/boot/kernel/hwpmc.ko", 0xFFFF_FFFF_82C0_0000),
];

impl Proc {
    pub(super) fn new(pid: i32, parent: i32, debuggable: bool, path: impl Into<String>) -> Proc {
        let path = path.into();
        Proc {
            parent,
            debuggable,
            maps: vec![(EXEC_BASE, path.clone())],
            path,
            hwpmc: false,
            tids: vec![pid.wrapping_mul(100)],
        }
    }

    /// `p_comm`: the program's name, at most `MAXCOMLEN` (19) bytes.
    pub(super) fn comm(&self) -> String {
        let base = self.path.rsplit('/').next().unwrap_or("");
        let mut end = base.len().min(19);
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        base[..end].to_owned()
    }
}

pub(super) struct State {
    pub(super) cfg: SimConfig,
    pub(super) current: i32,
    pub(super) classes: Vec<ClassDesc>,
    pub(super) rows: Vec<Row>,
    pub(super) online: Vec<bool>,
    pub(super) procs: BTreeMap<i32, Proc>,
    pub(super) owners: BTreeMap<i32, Owner>,
    pub(super) pmcs: BTreeMap<(i32, u32), SimPmc>,
    pub(super) now_ns: u64,
    pub(super) signals: Vec<(i32, Signal)>,
    pub(super) stats: pmc_op_getdriverstats,
    pub(super) encoder: Box<dyn LogEncoder>,
    pub(super) calls: Vec<(crate::sys::PmcOp, Result<(), Errno>)>,
    /// The per-CPU sample rings (`pc_sb[]`): samples taken since the last
    /// hardclock tick, not yet processed into the log (see `step`).
    pub(super) ring: Vec<RingEntry>,
}

/// One sample in a ring (`struct pmc_sample`).
pub(super) struct RingEntry {
    /// (owner, PMC id).
    pub(super) key: (i32, u32),
    pub(super) rec: LogRecord,
    /// The hardclock tick it was taken at (`ps_ticks`).
    pub(super) tick: u64,
    /// `PMC_USER_CALLCHAIN_PENDING`: a kernel-mode sample of a PMC with
    /// `PMC_F_USERCALLCHAIN` waiting for its thread's return to user mode
    /// at this time (ns), when the AST appends the user callchain.
    pub(super) pending_until: Option<u64>,
}

impl State {
    /// (owner, PMC id) of every PMC targeting `pid`.
    pub(super) fn pmcs_targeting(&self, pid: i32) -> Vec<(i32, u32)> {
        self.pmcs
            .iter()
            .filter(|(_, p)| p.targets.contains_key(&pid))
            .map(|(k, _)| *k)
            .collect()
    }

    /// Owners with a running system sampling PMC (`po_sscount > 0`, the
    /// `pmc_ss_owners` list: pmc_start adds, pmc_stop removes).
    pub(super) fn ss_owners(&self) -> BTreeSet<i32> {
        self.pmcs
            .values()
            .filter(|p| p.mode == PMC_MODE_SS && p.state == PState::Running)
            .map(|p| p.owner)
            .collect()
    }

    pub(super) fn tsc(&self) -> u64 {
        (u128::from(self.now_ns) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64
    }

    pub(super) fn ncpu(&self) -> u32 {
        self.online.len() as u32
    }

    pub(super) fn class(&self, class: u32) -> Option<usize> {
        self.classes.iter().position(|c| c.class == class)
    }

    pub(super) fn npmc(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn is_privileged(&self) -> bool {
        self.cfg.privileged && !self.cfg.jailed
    }

    /// `PMC_ID_MAKE_ID` (`sys/sys/pmc.h`@5369f8e7): the old layout in FreeBSD's 0x09
    /// trees, the new one in 0x0A trees and in CheriBSD's 0x09 tree.
    pub(super) fn make_id(&self, cpu: u32, mode: u32, class: u32, row: usize) -> u32 {
        use pmc_log::hwpmc::IdLayout;
        let layout = self
            .cfg
            .id_layout
            .unwrap_or(if self.cfg.version >> 24 >= 0x0A {
                IdLayout::New
            } else {
                IdLayout::Old
            });
        layout.make(cpu, mode, class, row as u32)
    }

    /// The source tree the rules follow ([`SimConfig::tree`]).
    pub(super) fn tree(&self) -> SimTree {
        self.cfg.tree.unwrap_or(if self.cfg.version >> 24 >= 0x0A {
            SimTree::Current15
        } else {
            SimTree::Y2020
        })
    }

    /// The smallest reload count of a sampling PMC:
    /// `MAX(1000, pa.pm_count)` in the 2019-2021 trees (`zdleaf/freebsd-morello`
    /// `hwpmc_mod.c`@3bd874d8 "pmc->pm_sc.pm_reloadcount = MAX(1000,
    /// pa.pm_count);"
    /// PMC_OP_PMCALLOCATE and PMC_OP_PMCSETCOUNT, with "pmcallocate: passed
    /// sample rate %ju - setting to 1000"), `MAX(MAX(1, pmc_mincount),
    /// pm_count)` with sysctl kern.hwpmc.mincount in later trees
    /// (`hwpmc_mod.c`@009268db `pmc_do_op_pmcallocate()`: "MAX(MAX(1,
    /// pmc_mincount), pa->pm_count)").
    pub(super) fn min_reload(&self) -> u64 {
        self.cfg.mincount.map_or(MIN_SAMPLING_COUNT, |m| m.max(1))
    }

    pub(super) fn disposition(&self, row: usize) -> u32 {
        let r = &self.rows[row];
        if r.thread_refs > 0 {
            PMC_DISP_THREAD
        } else if r.cpus.iter().any(|c| c.disabled || !c.system.is_empty()) {
            PMC_DISP_STANDALONE
        } else {
            PMC_DISP_FREE
        }
    }

    /// `pmc_find_pmc()` (`freebsd/freebsd-src`
    /// `sys/dev/hwpmc/hwpmc_mod.c`@009268db): "if
    /// (PMC_ID_TO_ROWINDEX(pmcid) >= md->pmd_npmc) return (EINVAL);",
    /// ESRCH when the caller has no
    /// owner descriptor ("if ((po = pmc_find_owner_descriptor(...)) ==
    /// NULL) { ... if (pp == NULL) return (ESRCH); ...}"; the DESCENDANTS
    /// child's path to its owner's PMC is not modelled), and "if ((pm =
    /// pmc_find_pmc_descriptor_in_process(po, pmcid)) == NULL) return
    /// (EINVAL);". An owner that only configured a log (or kept a
    /// shut-down one) has a descriptor: EINVAL, not ESRCH (the audit's
    /// finding; the simulator said ESRCH).
    pub(super) fn find(&self, id: u32) -> Result<(i32, u32), Errno> {
        if (id & 0xFF) as usize >= self.npmc() {
            return Err(Errno::EINVAL);
        }
        let me = self.current;
        match self.owners.get(&me) {
            None => Err(Errno::ESRCH),
            Some(o) if o.pmcs.contains(&id) => Ok((me, id)),
            Some(_) => Err(Errno::EINVAL),
        }
    }

    pub(super) fn pmc_mut(&mut self, key: (i32, u32)) -> Result<&mut SimPmc, Errno> {
        self.pmcs.get_mut(&key).ok_or(Errno::EINVAL)
    }

    pub(super) fn dispatch(&mut self, arg: OpArg<'_>) -> Result<(), Errno> {
        match arg {
            OpArg::ConfigureLog(a) => self.configure_log(a),
            OpArg::FlushLog => self.flush_log(),
            OpArg::GetCpuInfo(a) => {
                self.cpuinfo(a);
                Ok(())
            }
            OpArg::GetDriverStats(a) => {
                *a = self.stats;
                Ok(())
            }
            OpArg::GetModuleVersion(v) => {
                // `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db pmc_syscall_handler() PMC_OP_GETMODULEVERSION:
                // "/* don't service clients newer than our driver */ modv =
                // PMC_VERSION; if ((cv & 0xFFFF0000) > (modv & 0xFFFF0000))
                // { error = EPROGMISMATCH; break; }".
                if (*v & 0xFFFF_0000) > (self.cfg.version & 0xFFFF_0000) {
                    return Err(Errno::EPROGMISMATCH);
                }
                *v = self.cfg.version;
                Ok(())
            }
            OpArg::GetPmcInfo(req) => self.pmcinfo(req),
            OpArg::PmcAdmin(a) => self.admin(a),
            OpArg::PmcAllocate(a) => self.allocate(a),
            OpArg::PmcAttach(a) => self.attach(a),
            OpArg::PmcDetach(a) => self.detach(a),
            OpArg::PmcGetMsr(a) => self.getmsr(a),
            OpArg::PmcRelease(a) => self.release(a),
            OpArg::PmcRw(a) => self.rw(a),
            OpArg::PmcSetCount(a) => self.setcount(a),
            OpArg::PmcStart(a) => self.start(a),
            OpArg::PmcStop(a) => self.stop(a),
            OpArg::WriteLog(a) => self.write_log(a),
            OpArg::CloseLog => self.close_log(),
            OpArg::GetDynEventInfo(a) => self.dyneventinfo(a),
            OpArg::GetCaps(a) => self.caps(a),
        }
    }
}
