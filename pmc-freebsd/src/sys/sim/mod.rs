//! A simulated hwpmc(4) driver (feature `sim`; also built for this crate's
//! own tests).
//!
//! [`SimDriver`] implements [`Sys`] with the behaviour hwpmc(4)
//! documents: PMC states, rows and their dispositions, process and system
//! scope, the attach/detach rules (including `PMC_OP_PMCSTART` on an
//! unattached process PMC attaching it to its owner), the TSC and SOFT
//! classes (plus IAF/IAP or K8 hardware classes, per [`SimCpu`]), the log
//! (records in the kernel's format, written to the configured fd), and the
//! errno of every case in hwpmc(4)'s ERRORS section that applies.
//!
//! Time, work and page faults are driven by the test, deterministically:
//! [`SimDriver::advance`] lets time pass on every CPU, and
//! [`SimDriver::run`] runs a process on a CPU for a while with the given
//! instructions and page faults.
//!
//! It exists so the backend's real code runs in tests on every OS; it is not
//! a backend anyone should ship.
//!
//! ## Where the details come from
//!
//! FreeBSD's own source, cited at each rule as file@commit and function
//! with the deciding condition quoted: mainly `freebsd/freebsd-src`
//! `sys/dev/hwpmc/hwpmc_mod.c`@009268db (2023+) and `hwpmc_logging.c`,
//! `hwpmc_amd.c`@eb5956fd, `hwpmc_tsc.c`, `hwpmc_soft.c`, `hwpmc_core.c`;
//! where the trees differ the configured [`SimTree`] decides (the 2020 tree
//! at 0x09, 2023+, 15-CURRENT at 0x0A, AMD's 2026 tree). A rule function
//! without a citation (or a `SIM-ONLY:` note saying why no kernel source
//! applies) fails `sim::tests::every_rule_cites_its_source`. Among the
//! rules:
//!
//! * `PMC_OP_PMCRW` looks only at OLDVALUE/NEWVALUE.
//! * `LOG_PROCCSW`/`LOG_PROCEXIT` on a system-mode allocation fail with
//!   `EINVAL`; `DESCENDANTS` is accepted and ignored there.
//! * System sampling, the log-process flags, and process sampling attached
//!   to another process need a log for `PMC_OP_PMCSTART` (`EDOOFUS`).
//! * A sampling PMC attached to its owner feeds profil(2): its samples are
//!   never logged (`hwpmc_mod.c:pmc_process_samples`).
//! * `PMC_OP_CLOSELOG` and `PMC_OP_CONFIGURELOG(-1)` run `pmclog_close()`,
//!   which sets `PMC_PO_SHUTDOWN` on the owner for as long as the owner
//!   descriptor lives (until its last PMC is released with no log): a
//!   later CONFIGURELOG fails with `ENOMEM`, WRITELOG after CLOSELOG too.
//! * The reload count of a sampling PMC is at least 1000, or
//!   `kern.hwpmc.mincount` where the kernel has it ([`SimConfig::mincount`]).
//! * PMC ids use the layout of the version, or [`SimConfig::id_layout`]
//!   (CheriBSD's 0x09 kernels use the new one).
//! * PROCCSW is logged only for TC PMCs, PROCEXIT for counting PMCs that
//!   need the log.
//! * A counting PMC keeps its value across stop/start. `PMC_OP_PMCSETCOUNT`
//!   sets `pm_initial`, which only `pmc_start()` of a system PMC loads: on
//!   a process counting PMC it changes nothing; a `PMC_F_NEWVALUE` write
//!   sets `pm_savedvalue` (process) or the counter (system).
//! * `PMC_OP_PMCRW` of a process sampling PMC reads `pm_savedvalue` (0
//!   unless written) unless it runs attached to its owner; only a system
//!   sampling PMC (or an owner-attached running one) reads the countdown.
//! * Hardware events are counted in user mode only; a PMC restricted to the
//!   kernel (`os` only) counts nothing.
//! * Each [`SimDriver::run`] is one time slice: TC PMCs with
//!   `PMC_F_LOG_PROCCSW` log one PROCCSW record at its end.
//! * Samples wait in a ring until the next hardclock tick (every
//!   `1e9 / HZ` ns of simulated time; a sample's time is its share of the
//!   slice's events) or `PMC_OP_FLUSHLOG`, which process them into the
//!   log only if their PMC is still running: stopping (or releasing) a
//!   sampling PMC before a flush loses the samples of its last tick, as
//!   `hwpmc_mod.c:pmc_process_samples` does.
//!
//! Not modelled: PMCATTACH records are written for kernel processes too
//! (the kernel skips them), module unload (SIGBUS to owners),
//! `tsc_allocate_pmc()`'s "if ((pm->pm_caps & TSC_CAPS) == 0) return
//! (EINVAL);" (a TSC allocation asking for no capability), the L3/DF
//! sub-class row checks of `amd_allocate_pmc()`, and `amd_event_codes[]`
//! beyond its cycles and instructions rows.

mod host;
pub mod log;

use crate::errno::Errno;
use crate::sys::abi::*;
use crate::sys::{OpArg, PmcInfoRequest, Sys};
use log::{KernelFormat, LogEncoder, LogRecord};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

/// The simulated CPU (decides the hardware PMC classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimCpu {
    /// An Intel Skylake (family 6, model 0x5E, stepping 3): IAP (4 rows)
    /// and IAF (3 rows).
    IntelSkylake,
    /// An AMD Zen 1 (`PMC_CPU_AMD_K8`, family 0x17, model 0x01, stepping
    /// 1): K8 (16 rows). Every tree sets `pmc_cpuid` for it, so
    /// `amd_allocate_pmc()` programs `pm_amd_config` as given.
    AmdZen,
    /// An AMD Zen 3 (`PMC_CPU_AMD_K8`, family 0x19, model 0x21, stepping
    /// 0): K8 (16 rows). The 2020 tree leaves `pmc_cpuid` empty for it, so
    /// `amd_allocate_pmc()` looks `pm_ev` up in its own K8 event table.
    AmdZen3,
    /// A VM without a virtual PMU (`PMC_CPU_GENERIC`): SOFT only.
    Generic,
}

impl SimCpu {
    /// The `pmc_cputype`.
    pub fn cputype(self) -> u32 {
        match self {
            SimCpu::IntelSkylake => PMC_CPU_INTEL_SKYLAKE,
            SimCpu::AmdZen | SimCpu::AmdZen3 => PMC_CPU_AMD_K8,
            SimCpu::Generic => PMC_CPU_GENERIC,
        }
    }

    /// `kern.hwpmc.cpuid` (`pmc_cpuid`) as the tree's initialisation
    /// writes it:
    ///
    /// * Intel, 2023+ and 15-CURRENT: `AMDESE/freebsd-src`
    ///   `sys/dev/hwpmc/hwpmc_intel.c`@1563168b `pmc_intel_initialize()`:
    ///   `snprintf(pmc_cpuid, sizeof(pmc_cpuid), "GenuineIntel-%d-%02X-%X",
    ///   family, model, stepping)`; the 2020 tree: `"GenuineIntel-%d-%02X"`
    ///   (no stepping; the audit's 2020-era `hwpmc_intel.c`).
    /// * AMD, 2023+: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd
    ///   `pmc_amd_initialize()`: `snprintf(pmc_cpuid, sizeof(pmc_cpuid),
    ///   "AuthenticAMD-%d-%02X-%X", family, model, stepping)` (HygonGenuine
    ///   for family 0x18), every family. The 2020 tree (the audit's A20
    ///   `hwpmc_amd.c` `pmc_amd_initialize()`): `if (CPUID_TO_FAMILY(cpu_id)
    ///   == 0x17) snprintf(pmc_cpuid, sizeof(pmc_cpuid),
    ///   "AuthenticAMD-%d-%02X", CPUID_TO_FAMILY(cpu_id), model)`, else empty.
    /// * No PMU (`pmc_generic_cpu_initialize()`): never set, empty.
    pub fn cpuid(self, tree: SimTree) -> String {
        let old = tree == SimTree::Y2020;
        match (self, old) {
            (SimCpu::IntelSkylake, false) => format!("GenuineIntel-{}-{:02X}-{:X}", 6, 0x5E, 3),
            (SimCpu::IntelSkylake, true) => format!("GenuineIntel-{}-{:02X}", 6, 0x5E),
            (SimCpu::AmdZen, false) => format!("AuthenticAMD-{}-{:02X}-{:X}", 0x17, 0x01, 1),
            (SimCpu::AmdZen, true) => format!("AuthenticAMD-{}-{:02X}", 0x17, 0x01),
            (SimCpu::AmdZen3, false) => format!("AuthenticAMD-{}-{:02X}-{:X}", 0x19, 0x21, 0),
            (SimCpu::AmdZen3, true) | (SimCpu::Generic, _) => String::new(),
        }
    }
}

/// Which FreeBSD source tree the simulator follows where the trees differ
/// (see [`SimConfig::tree`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimTree {
    /// The 2020 tree (`PMC_VERSION` 0x09030000): `PMC_OP_CONFIGURELOG`
    /// never looks at `pm_flags`.
    Y2020,
    /// `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db (2023+):
    /// `PMC_OP_CONFIGURELOG` refuses `pm_flags != 0` with EINVAL.
    Y2023,
    /// 15-CURRENT (`PMC_VERSION` 0x0A000000,
    /// `fel1x-developer/freebsd-src`@2d614aa2): as [`SimTree::Y2023`].
    Current15,
    /// AMD's 2026 tree (`AMDESE/freebsd-src`, extended errors): as
    /// [`SimTree::Current15`], and K8 allocations need `PMC_F_EV_PMU`. Its
    /// kernel source was not read; the rule is what its ATF test
    /// `amd_missing_pmu_flag` (`tests/sys/hwpmc`) expects of it:
    /// "ATF_REQUIRE_ERRNO(EINVAL, hwpmc_call(PMC_OP_PMCALLOCATE, &pa) ==
    /// -1); require_exterr(\"AMD PMCs require PMC_F_EV_PMU\");" for a K8
    /// allocation without the flag. Neither the 2020 nor the 2023
    /// `amd_allocate_pmc()` has it.
    Amd2026,
}

/// The simulated machine and its security settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// `PMC_VERSION` the "kernel" reports.
    pub version: u32,
    /// The CPU model.
    pub cpu: SimCpu,
    /// Number of CPUs (`pm_ncpu`).
    pub ncpu: u32,
    /// The caller is root (uid 0).
    pub privileged: bool,
    /// The caller runs in a jail.
    pub jailed: bool,
    /// sysctl `security.bsd.unprivileged_syspmcs`.
    pub unprivileged_syspmcs: bool,
    /// sysctl `security.bsd.unprivileged_proc_debug`.
    pub unprivileged_proc_debug: bool,
    /// The hardware supports RDPMC (`PMC_OP_PMCGETMSR`).
    pub rdpmc: bool,
    /// TSC frequency in Hz.
    pub tsc_freq: u64,
    /// Core clock in cycles per nanosecond.
    pub cycles_per_ns: u64,
    /// The calling process's pid.
    pub pid: i32,
    /// sysctl `kern.hwpmc.mincount`: the smallest reload count of a
    /// sampling PMC. `None`: a kernel without it (the 2020 tree), whose
    /// floor is 1000.
    pub mincount: Option<u64>,
    /// The PMC id layout. `None`: by the version, as FreeBSD's own trees
    /// do (0x09 old, 0x0A new); `Some(New)` with 0x09 is a CheriBSD kernel.
    pub id_layout: Option<pmc_log::hwpmc::IdLayout>,
    /// The source tree whose rules apply where trees differ. `None`: by the
    /// version, 0x09 the 2020 tree, 0x0A and later 15-CURRENT.
    pub tree: Option<SimTree>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            version: PMC_VERSION,
            cpu: SimCpu::IntelSkylake,
            ncpu: 2,
            privileged: true,
            jailed: false,
            unprivileged_syspmcs: false,
            unprivileged_proc_debug: true,
            rdpmc: true,
            tsc_freq: 2_000_000_000,
            cycles_per_ns: 3,
            pid: 1000,
            mincount: None,
            id_layout: None,
            tree: None,
        }
    }
}

/// The software events the simulated kernel registers, in order (codes
/// from `PMC_EV_SOFT_FIRST`).
pub const SOFT_EVENTS: &[&str] = &[
    "CLOCK.HARD",
    "CLOCK.STAT",
    "CLOCK.PROF",
    "PAGE_FAULT.ALL",
    "PAGE_FAULT.READ",
    "PAGE_FAULT.WRITE",
];

/// Two rows of `amd_event_codes[]` (`freebsd/freebsd-src`
/// `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd): `{ PMC_EV_K8_..., pe_code,
/// pe_mask }` for core cycles (0x76) and retired instructions (0xC0), both
/// with unit mask 0x00.
const AMD_EVENT_CODES: &[(u32, u64)] = &[
    (PMC_EV_K8_BU_CPU_CLK_UNHALTED, 0x76),
    (PMC_EV_K8_FR_RETIRED_X86_INSTRUCTIONS, 0xC0),
];

/// `SOFT_NPMCS` in hwpmc_soft.c.
const SOFT_NROWS: u32 = 16;
/// The kernel's minimum sampling count.
pub const MIN_SAMPLING_COUNT: u64 = 1000;
/// Clock ticks per second of the SOFT CLOCK.* events (`hz`).
pub const HZ: u64 = 1000;
/// The PC the simulator samples at (user space).
pub const SAMPLE_PC: u64 = 0x0040_1000;

/// Work a process does on a CPU, for [`SimDriver::run`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// The process that runs (0: the caller).
    pub pid: i32,
    /// The CPU it runs on.
    pub cpu: u32,
    /// How long it runs, in nanoseconds (time passes for everyone).
    pub nanos: u64,
    /// Instructions retired.
    pub instructions: u64,
    /// Branches retired.
    pub branches: u64,
    /// Mispredicted branches.
    pub branch_misses: u64,
    /// Page faults taken while reading.
    pub page_faults_read: u64,
    /// Page faults taken while writing.
    pub page_faults_write: u64,
}

/// A signal the driver sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGIO`: a process PMC lost its last target.
    Io,
}

#[derive(Debug, Clone)]
struct ClassDesc {
    class: u32,
    caps: u32,
    width: u32,
    num: u32,
    first_row: usize,
    name: &'static str,
}

#[derive(Debug, Clone, Default)]
struct RowCpu {
    disabled: bool,
    /// (owner pid, pmc id) of the system PMC using this row on this CPU.
    system: Option<(i32, u32)>,
}

#[derive(Debug, Clone)]
struct Row {
    class_idx: usize,
    index: u32,
    cpus: Vec<RowCpu>,
    /// Process-mode PMCs allocated on this row.
    thread_refs: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PState {
    Allocated,
    Stopped,
    Running,
}

#[derive(Debug, Clone)]
struct SimPmc {
    id: u32,
    owner: i32,
    mode: u32,
    class: u32,
    event: u32,
    flags: u32,
    cpu: u32,
    row: usize,
    md: pmc_md_op_pmcallocate,
    state: PState,
    /// A counting PMC's count: `pm_gv.pm_savedvalue` for a process PMC
    /// (what PMCRW reads and writes), the hardware counter for a system
    /// PMC. A process sampling PMC's `pm_savedvalue`: written only by
    /// PMCRW NEWVALUE, never by sampling (see `rw`).
    value: u64,
    /// `pm_sc.pm_initial`: set by PMCSETCOUNT (and allocation) on a
    /// counting PMC, read only by `pmc_start()` of a system PMC.
    initial: u64,
    reload: u64,
    /// Events left until the next sample.
    left: u64,
    targets: BTreeMap<i32, u64>,
}

impl SimPmc {
    fn is_system(&self) -> bool {
        self.mode == PMC_MODE_SS || self.mode == PMC_MODE_SC
    }
    fn is_sampling(&self) -> bool {
        self.mode == PMC_MODE_SS || self.mode == PMC_MODE_TS
    }
}

struct LogState {
    fd: i32,
    buf: Vec<u8>,
    error: Option<Errno>,
}

#[derive(Default)]
struct Owner {
    pmcs: BTreeSet<u32>,
    /// `PMC_PO_OWNS_LOGFILE`: the configured log.
    log: Option<LogState>,
    /// `PMC_PO_SHUTDOWN`, set by `pmclog_close()` (CLOSELOG and
    /// CONFIGURELOG(-1)) and never cleared while the owner descriptor lives
    /// (`hwpmc_logging.c:pmclog_close`; only OWNS_LOGFILE is cleared, by
    /// `pmclog_stop_kthread`). `pmclog_reserve()` returns NULL while it is
    /// set, so nothing more is logged and the INITIALIZE record of a later
    /// CONFIGURELOG cannot be reserved (ENOMEM).
    shutdown: bool,
}

#[derive(Debug, Clone)]
struct Proc {
    parent: i32,
    debuggable: bool,
    path: String,
}

struct State {
    cfg: SimConfig,
    current: i32,
    classes: Vec<ClassDesc>,
    rows: Vec<Row>,
    online: Vec<bool>,
    procs: BTreeMap<i32, Proc>,
    owners: BTreeMap<i32, Owner>,
    pmcs: BTreeMap<(i32, u32), SimPmc>,
    now_ns: u64,
    signals: Vec<(i32, Signal)>,
    stats: pmc_op_getdriverstats,
    encoder: Box<dyn LogEncoder>,
    calls: Vec<(crate::sys::PmcOp, Result<(), Errno>)>,
    /// The per-CPU sample rings (`pc_sb[]`): samples taken since the last
    /// hardclock tick, not yet processed into the log (see `step`).
    ring: Vec<((i32, u32), LogRecord)>,
}

/// The simulated hwpmc driver. Cheap to share behind an `Arc`; every method
/// takes `&self`.
pub struct SimDriver {
    st: Mutex<State>,
}

impl std::fmt::Debug for SimDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDriver")
            .field("config", &self.lock().cfg)
            .finish_non_exhaustive()
    }
}

impl Default for SimDriver {
    fn default() -> Self {
        Self::new(SimConfig::default())
    }
}

/// Writes `name` into a fixed buffer, truncated and always NUL-terminated.
fn set_c_str(buf: &mut [u8], name: &str) {
    buf.fill(0);
    let n = name.len().min(buf.len().saturating_sub(1));
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
}

fn ticks(from_ns: u64, nanos: u64) -> u64 {
    let per = 1_000_000_000 / HZ;
    (from_ns.saturating_add(nanos)) / per - from_ns / per
}

impl SimDriver {
    /// A simulated machine with hwpmc loaded.
    pub fn new(cfg: SimConfig) -> SimDriver {
        let mut classes = Vec::new();
        let mut next = 0usize;
        let mut add = |class, caps, width, num, name| {
            classes.push(ClassDesc {
                class,
                caps,
                width,
                num,
                first_row: next,
                name,
            });
            next += num as usize;
        };
        let hw = PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM | PMC_CAP_READ | PMC_CAP_WRITE;
        let prog = hw | PMC_CAP_EDGE | PMC_CAP_THRESHOLD | PMC_CAP_INVERT | PMC_CAP_QUALIFIER;
        add(PMC_CLASS_SOFT, hw, 64, SOFT_NROWS, "SOFT");
        // TSC comes with the vendor's machine-dependent initialisation
        // (tsc_initialize from pmc_intel_initialize / pmc_amd_initialize);
        // a CPU hwpmc does not know gets pmc_generic_cpu_initialize(),
        // SOFT only (hwpmc_mod.c).
        if cfg.cpu != SimCpu::Generic {
            add(PMC_CLASS_TSC, PMC_CAP_READ, 64, 1, "TSC");
        }
        match cfg.cpu {
            SimCpu::IntelSkylake => {
                add(PMC_CLASS_IAP, prog | PMC_CAP_PRECISE, 48, 4, "IAP");
                add(PMC_CLASS_IAF, hw, 48, 3, "IAF");
            }
            // 16 K8 rows: hwpmc_amd.h AMD_NPMCS 16 in the 2020 tree, and
            // AMD_PMC_CORE_DEFAULT 6 + AMD_PMC_L3_DEFAULT 6 +
            // AMD_PMC_DF_DEFAULT 4 later (amd_allocate_pmc picks the
            // sub-class by row range). The simulator programs the
            // core rows; the L3/DF rows exist and are allocatable.
            SimCpu::AmdZen | SimCpu::AmdZen3 => add(PMC_CLASS_K8, prog, 48, 16, "K8"),
            SimCpu::Generic => {}
        }
        let ncpu = cfg.ncpu.clamp(1, 4096) as usize;
        let mut rows = Vec::new();
        for (ci, c) in classes.iter().enumerate() {
            for i in 0..c.num {
                rows.push(Row {
                    class_idx: ci,
                    index: i,
                    cpus: vec![RowCpu::default(); ncpu],
                    thread_refs: 0,
                });
            }
        }
        let mut procs = BTreeMap::new();
        procs.insert(
            cfg.pid,
            Proc {
                parent: 1,
                debuggable: true,
                path: "/usr/bin/sim-self".into(),
            },
        );
        procs.insert(
            1,
            Proc {
                parent: 0,
                debuggable: false,
                path: "/sbin/init".into(),
            },
        );
        SimDriver {
            st: Mutex::new(State {
                current: cfg.pid,
                classes,
                rows,
                online: vec![true; ncpu],
                procs,
                owners: BTreeMap::new(),
                pmcs: BTreeMap::new(),
                now_ns: 0,
                signals: Vec::new(),
                stats: pmc_op_getdriverstats::default(),
                encoder: Box::new(KernelFormat),
                calls: Vec::new(),
                ring: Vec::new(),
                cfg,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The configuration.
    pub fn config(&self) -> SimConfig {
        self.lock().cfg.clone()
    }

    /// Changes the privilege and sysctl settings at run time.
    pub fn set_security(
        &self,
        privileged: bool,
        jailed: bool,
        unprivileged_syspmcs: bool,
        unprivileged_proc_debug: bool,
    ) {
        let mut st = self.lock();
        st.cfg.privileged = privileged;
        st.cfg.jailed = jailed;
        st.cfg.unprivileged_syspmcs = unprivileged_syspmcs;
        st.cfg.unprivileged_proc_debug = unprivileged_proc_debug;
    }

    /// Makes requests come from another process (to simulate other owners).
    /// The process is created if needed.
    pub fn set_current_pid(&self, pid: i32) {
        let mut st = self.lock();
        st.procs.entry(pid).or_insert(Proc {
            parent: 1,
            debuggable: true,
            path: format!("/usr/bin/p{pid}"),
        });
        st.current = pid;
    }

    /// Brings a CPU on- or off-line (hot-plug). Out-of-range CPUs are ignored.
    pub fn set_cpu_online(&self, cpu: u32, online: bool) {
        if let Some(c) = self.lock().online.get_mut(cpu as usize) {
            *c = online;
        }
    }

    /// Creates a process. `debuggable`: whether the caller may debug it
    /// (p_candebug) without privilege. If its parent is the target of a
    /// PMC with `PMC_F_DESCENDANTS`, the child is attached too.
    /// Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_process_fork()`, quoted at each step below.
    pub fn spawn(&self, pid: i32, parent: i32, debuggable: bool, path: &str) {
        let mut st = self.lock();
        st.procs.insert(
            pid,
            Proc {
                parent,
                debuggable,
                path: path.to_owned(),
            },
        );
        let fork = LogRecord::ProcFork {
            oldpid: parent,
            newpid: pid,
        };
        // hwpmc_mod.c@009268db pmc_process_fork: first every owner of a
        // running system sampling PMC ("CK_LIST_FOREACH(po, &pmc_ss_owners,
        // po_ssnext) { if (po->po_flags & PMC_PO_OWNS_LOGFILE) {
        // pmclog_process_procfork(...); pmclog_process_proccreate(...); }"
        // (PROC_CREATE not modelled) ...
        let ss_owners = st.ss_owners();
        for o in &ss_owners {
            st.emit(*o, fork.clone());
        }
        let keys: Vec<(i32, u32)> = st
            .pmcs
            .iter()
            .filter(|(_, p)| p.flags & PMC_F_DESCENDANTS != 0 && p.targets.contains_key(&parent))
            .map(|(k, _)| *k)
            .collect();
        // ... then, in the loop over the parent's DESCENDANTS PMCs, one
        // PROCFORK per PMC, not per owner: "pmc_link_target_process(pm,
        // ppnew); po = pm->pm_owner; if (po->po_sscount == 0 &&
        // (po->po_flags & PMC_PO_OWNS_LOGFILE) != 0)
        // pmclog_process_procfork(po, p1->p_pid, newproc->p_pid);".
        for k in keys {
            if let Some(p) = st.pmcs.get_mut(&k) {
                p.targets.insert(pid, 0);
            }
            if !ss_owners.contains(&k.0) {
                st.emit(k.0, fork.clone());
            }
        }
    }

    /// `pid` execs `path` (`hwpmc_mod.c`@009268db `pmc_process_exec`): a
    /// PROCEXEC record with `PMC_ID_INVALID` to each owner of a running
    /// system sampling PMC ("CK_LIST_FOREACH(po, &pmc_ss_owners, ...)
    /// pmclog_process_procexec(po, PMC_ID_INVALID, ...)"), then one per
    /// PMC targeting `pid` whose owner has no such PMC ("if
    /// (po->po_sscount == 0 && (po->po_flags & PMC_PO_OWNS_LOGFILE) != 0)
    /// pmclog_process_procexec(po, pm->pm_id, ...)"). Not modelled: the
    /// release of PMCs `pid` owns, the credential-change detach.
    pub fn exec(&self, pid: i32, path: &str) {
        let mut st = self.lock();
        if let Some(p) = st.procs.get_mut(&pid) {
            p.path = path.to_owned();
        }
        let rec = |pmcid| LogRecord::ProcExec {
            pid,
            pmcid,
            base: SAMPLE_PC & !0xFFFF,
            dyn_base: 0,
            path: path.to_owned(),
        };
        let ss_owners = st.ss_owners();
        for o in &ss_owners {
            st.emit(*o, rec(PMC_ID_INVALID));
        }
        for (owner, id) in st.pmcs_targeting(pid) {
            if !ss_owners.contains(&owner) {
                st.emit(owner, rec(id));
            }
        }
    }

    /// `pid` maps `path` at `start` (`hwpmc_mod.c`@009268db
    /// `pmc_process_mmap`): MAP_IN to each owner of a running system
    /// sampling PMC, then to the owner of each sampling PMC targeting
    /// `pid` (`if ((pm = pp->pp_pmcs[ri].pp_pmc) != NULL &&`
    /// `PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))) pmclog_process_map_in(...)`).
    pub fn map(&self, pid: i32, start: u64, path: &str) {
        let rec = LogRecord::MapIn {
            pid,
            start,
            path: path.to_owned(),
        };
        self.lock().log_mapping(pid, &rec);
    }

    /// `pid` unmaps `[start, end)` (`hwpmc_mod.c`@009268db
    /// `pmc_process_munmap`): MAP_OUT to the same owners as
    /// [`map`](Self::map).
    pub fn unmap(&self, pid: i32, start: u64, end: u64) {
        let rec = LogRecord::MapOut { pid, start, end };
        self.lock().log_mapping(pid, &rec);
    }

    /// Ends a process: PMCs attached to it are detached (PROCEXIT records
    /// for `PMC_F_LOG_PROCEXIT`, SIGIO to owners whose PMC lost its last
    /// target).
    pub fn exit(&self, pid: i32) {
        let mut st = self.lock();
        st.procs.remove(&pid);
        let keys: Vec<(i32, u32)> = st
            .pmcs
            .iter()
            .filter(|(_, p)| p.targets.contains_key(&pid))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            let Some(p) = st.pmcs.get_mut(&k) else {
                continue;
            };
            let v = p.targets.remove(&pid).unwrap_or(0);
            if pid == p.owner {
                p.flags &= !PMC_F_ATTACHED_TO_OWNER;
            }
            let (flags, id, empty) = (p.flags, p.id, p.targets.is_empty());
            let counting = p.mode == PMC_MODE_TC || p.mode == PMC_MODE_SC;
            // hwpmc_mod.c:pmc_process_exit: "if (pm->pm_flags &
            // PMC_F_NEEDS_LOGFILE && PMC_IS_COUNTING_MODE(PMC_TO_MODE(pm)))
            // pmclog_process_procexit(pm, pp)": so also for LOG_PROCCSW-only
            // PMCs, never for sampling ones.
            if flags & PMC_F_NEEDS_LOGFILE != 0 && counting {
                st.emit(
                    k.0,
                    LogRecord::ProcExit {
                        pmcid: id,
                        pid,
                        value: v,
                    },
                );
            }
            if empty {
                st.signals.push((k.0, Signal::Io));
            }
        }
    }

    /// Lets `nanos` pass on every CPU with no process running: TSC and the
    /// SOFT clock events of system PMCs advance.
    pub fn advance(&self, nanos: u64) {
        let mut st = self.lock();
        st.step(None, nanos);
    }

    /// Runs a process on a CPU (time passes for everyone as in
    /// [`advance`](Self::advance)).
    pub fn run(&self, work: Work) {
        let mut st = self.lock();
        let mut w = work;
        if w.pid == 0 {
            w.pid = st.current;
        }
        st.step(Some(w), w.nanos);
    }

    /// Shorthand: the caller runs on CPU 0 for `nanos` and takes
    /// `page_faults` (read) faults and retires `instructions`.
    pub fn tick(&self, nanos: u64, instructions: u64, page_faults: u64) {
        self.run(Work {
            nanos,
            instructions,
            page_faults_read: page_faults,
            ..Work::default()
        });
    }

    /// The signals sent so far (drained).
    pub fn take_signals(&self) -> Vec<(i32, Signal)> {
        std::mem::take(&mut self.lock().signals)
    }

    /// Every request so far with its result (drained).
    pub fn take_calls(&self) -> Vec<(crate::sys::PmcOp, Result<(), Errno>)> {
        std::mem::take(&mut self.lock().calls)
    }

    /// Replaces the log encoder (default: [`KernelFormat`]).
    pub fn set_encoder(&self, enc: Box<dyn LogEncoder>) {
        self.lock().encoder = enc;
    }

    /// How many PMCs are allocated, by anyone.
    pub fn allocated(&self) -> usize {
        self.lock().pmcs.len()
    }

    /// The current simulated TSC.
    pub fn tsc(&self) -> u64 {
        self.lock().tsc()
    }
}

impl State {
    /// (owner, PMC id) of every PMC targeting `pid`.
    fn pmcs_targeting(&self, pid: i32) -> Vec<(i32, u32)> {
        self.pmcs
            .iter()
            .filter(|(_, p)| p.targets.contains_key(&pid))
            .map(|(k, _)| *k)
            .collect()
    }

    /// MAP_IN / MAP_OUT: every running-SS owner, then the owner of each
    /// sampling PMC targeting `pid` (once per PMC, as the kernel's loop).
    fn log_mapping(&mut self, pid: i32, rec: &LogRecord) {
        for o in self.ss_owners() {
            self.emit(o, rec.clone());
        }
        for (owner, id) in self.pmcs_targeting(pid) {
            if self.pmcs.get(&(owner, id)).is_some_and(SimPmc::is_sampling) {
                self.emit(owner, rec.clone());
            }
        }
    }

    /// Owners with a running system sampling PMC (`po_sscount > 0`, the
    /// `pmc_ss_owners` list: pmc_start adds, pmc_stop removes).
    fn ss_owners(&self) -> BTreeSet<i32> {
        self.pmcs
            .values()
            .filter(|p| p.mode == PMC_MODE_SS && p.state == PState::Running)
            .map(|p| p.owner)
            .collect()
    }

    fn tsc(&self) -> u64 {
        (u128::from(self.now_ns) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64
    }

    fn ncpu(&self) -> u32 {
        self.online.len() as u32
    }

    fn class(&self, class: u32) -> Option<usize> {
        self.classes.iter().position(|c| c.class == class)
    }

    fn npmc(&self) -> usize {
        self.rows.len()
    }

    fn is_privileged(&self) -> bool {
        self.cfg.privileged && !self.cfg.jailed
    }

    /// `PMC_ID_MAKE_ID` (`sys/sys/pmc.h`): the old layout in FreeBSD's 0x09
    /// trees, the new one in 0x0A trees and in CheriBSD's 0x09 tree.
    fn make_id(&self, cpu: u32, mode: u32, class: u32, row: usize) -> u32 {
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
    fn tree(&self) -> SimTree {
        self.cfg.tree.unwrap_or(if self.cfg.version >> 24 >= 0x0A {
            SimTree::Current15
        } else {
            SimTree::Y2020
        })
    }

    /// The smallest reload count of a sampling PMC:
    /// `MAX(1000, pa.pm_count)` in the 2020 tree (hwpmc_mod.c
    /// PMC_OP_PMCALLOCATE and PMC_OP_PMCSETCOUNT, with "pmcallocate: passed
    /// sample rate %ju - setting to 1000"), `MAX(MAX(1, pmc_mincount),
    /// pm_count)` with sysctl kern.hwpmc.mincount in later trees
    /// (hwpmc_mod.c:pmc_do_op_pmcallocate).
    fn min_reload(&self) -> u64 {
        self.cfg.mincount.map_or(MIN_SAMPLING_COUNT, |m| m.max(1))
    }

    fn disposition(&self, row: usize) -> u32 {
        let r = &self.rows[row];
        if r.thread_refs > 0 {
            PMC_DISP_THREAD
        } else if r.cpus.iter().any(|c| c.disabled || c.system.is_some()) {
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
    fn find(&self, id: u32) -> Result<(i32, u32), Errno> {
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

    fn pmc_mut(&mut self, key: (i32, u32)) -> Result<&mut SimPmc, Errno> {
        self.pmcs.get_mut(&key).ok_or(Errno::EINVAL)
    }

    fn emit(&mut self, owner: i32, rec: LogRecord) {
        let tsc = self.tsc();
        let State {
            owners, encoder, ..
        } = self;
        let Some(o) = owners.get_mut(&owner) else {
            return;
        };
        // hwpmc_logging.c:pmclog_reserve: "No more data when shutdown in
        // progress."
        if o.shutdown {
            return;
        }
        let Some(log) = o.log.as_mut() else {
            return;
        };
        if log.error.is_some() {
            return;
        }
        encoder.encode(tsc, &rec, &mut log.buf);
        if log.buf.len() >= 4096 {
            Self::write_out(log);
        }
    }

    fn write_out(log: &mut LogState) {
        if log.error.is_some() || log.buf.is_empty() {
            log.buf.clear();
            return;
        }
        if let Err(e) = host::write_all_fd(log.fd, &log.buf) {
            log.error = Some(e);
        }
        log.buf.clear();
    }

    /// What a hardware PMC counts in a slice of [`Work`]. SIM-ONLY: no
    /// kernel rule decides this, the hardware does; the simulator counts
    /// user-mode events only (a PMC restricted to the kernel counts
    /// nothing) and knows a handful of event selects (cycles, reference
    /// cycles, instructions, branches, mispredicted branches).
    fn hw_events(&self, p: &SimPmc, w: &Work) -> u64 {
        let cycles = w.nanos.saturating_mul(self.cfg.cycles_per_ns);
        let ref_cycles =
            (u128::from(w.nanos) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64;
        match p.class {
            PMC_CLASS_IAP | PMC_CLASS_IAF => {
                let cfg = p.md.as_iap().pm_iap_config;
                if cfg & IAP_USR == 0 && cfg & (IAP_OS) != 0 {
                    return 0;
                }
                match (cfg & IAP_EVSEL_MASK, (cfg & IAP_UMASK_MASK) >> 8) {
                    (0xC0, _) => w.instructions,
                    (0x3C, 1) => ref_cycles,
                    (0x3C, _) => cycles,
                    (0x00, 3) => ref_cycles,
                    (0xC4, _) => w.branches,
                    (0xC5, _) => w.branch_misses,
                    _ => 0,
                }
            }
            PMC_CLASS_K8 => {
                let cfg = p.md.as_amd().pm_amd_config;
                if cfg & AMD_PMC_USR == 0 && cfg & AMD_PMC_OS != 0 {
                    return 0;
                }
                match (cfg & 0xFF) | ((cfg >> 24) & 0xF00) {
                    0x76 => cycles,
                    0xC0 => w.instructions,
                    0xC2 => w.branches,
                    0xC3 => w.branch_misses,
                    _ => 0,
                }
            }
            _ => 0,
        }
    }

    fn soft_events(p: &SimPmc, ticks: u64, w: Option<&Work>) -> u64 {
        let idx = p.event.wrapping_sub(PMC_EV_SOFT_FIRST) as usize;
        match SOFT_EVENTS.get(idx).copied() {
            Some("CLOCK.HARD" | "CLOCK.STAT" | "CLOCK.PROF") => ticks,
            Some("PAGE_FAULT.ALL") => w.map_or(0, |w| {
                w.page_faults_read.saturating_add(w.page_faults_write)
            }),
            Some("PAGE_FAULT.READ") => w.map_or(0, |w| w.page_faults_read),
            Some("PAGE_FAULT.WRITE") => w.map_or(0, |w| w.page_faults_write),
            _ => 0,
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_process_samples()`, run by hardclock
    /// (PMC_FN_DO_SAMPLES) and by FLUSHLOG: the ring's samples go to the
    /// log only if their PMC still runs ("/* skip non-running samples */
    /// if (pm->pm_state != PMC_STATE_RUNNING) goto entrydone;"), so a PMC
    /// stopped or released before the next tick loses them.
    fn process_samples(&mut self) {
        for (key, rec) in std::mem::take(&mut self.ring) {
            if self
                .pmcs
                .get(&key)
                .is_some_and(|p| p.state == PState::Running)
            {
                self.emit(key.0, rec);
            }
        }
    }

    /// One time slice. SIM-ONLY in its time model (work spread evenly over
    /// the slice, one context switch at its end); the kernel rules it
    /// applies are cited inline: the hardclock sweep is
    /// `pmc_process_samples()` ("/* skip non-running samples */ if
    /// (pm->pm_state != PMC_STATE_RUNNING) goto entrydone;", `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db),
    /// PROCCSW for TC only (`pmc_process_csw_out()`), samples of a PMC
    /// attached to its owner to profil(2) ("if (pm->pm_flags &
    /// PMC_F_ATTACHED_TO_OWNER) { ... addupc_intr(...) } else
    /// pmclog_process_callchain(pm, ps);").
    fn step(&mut self, work: Option<Work>, nanos: u64) {
        let t = ticks(self.now_ns, nanos);
        // A hardclock tick in this slice processes what the rings hold
        // (pmc_hook_handler PMC_FN_DO_SAMPLES -> pmc_process_samples).
        if t > 0 {
            self.process_samples();
        }
        let per_tick = 1_000_000_000 / HZ;
        let last_tick_ns = self.now_ns.saturating_add(nanos) / per_tick * per_tick;
        let tsc_delta = (u128::from(nanos) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64;
        let keys: Vec<(i32, u32)> = self.pmcs.keys().copied().collect();
        let mut samples: Vec<(i32, LogRecord)> = Vec::new();
        for k in keys {
            let Some(p) = self.pmcs.get(&k) else { continue };
            if p.state != PState::Running {
                continue;
            }
            let n = if p.is_system() {
                if !self.online.get(p.cpu as usize).copied().unwrap_or(false) {
                    continue;
                }
                match p.class {
                    PMC_CLASS_TSC => tsc_delta,
                    PMC_CLASS_SOFT => {
                        let on_cpu = work.filter(|w| w.cpu == p.cpu);
                        Self::soft_events(p, t, on_cpu.as_ref())
                    }
                    _ => work
                        .filter(|w| w.cpu == p.cpu)
                        .map_or(0, |w| self.hw_events(p, &w)),
                }
            } else {
                match work {
                    Some(w) if p.targets.contains_key(&w.pid) => match p.class {
                        PMC_CLASS_SOFT => Self::soft_events(p, t, Some(&w)),
                        _ => self.hw_events(p, &w),
                    },
                    _ => 0,
                }
            };
            if n == 0 {
                continue;
            }
            let (pid, cpu) = work.map_or((-1, p.cpu), |w| (w.pid, w.cpu));
            let Some(p) = self.pmcs.get_mut(&k) else {
                continue;
            };
            // A process sampling PMC's pm_savedvalue is not touched by
            // sampling (pmc_process_csw_out saves a TS countdown per thread).
            if !p.is_sampling() || p.is_system() {
                p.value = p.value.wrapping_add(n);
            }
            if let Some(v) = p.targets.get_mut(&pid) {
                *v = v.wrapping_add(n);
                // hwpmc_mod.c:pmc_process_csw_out logs PROCCSW only for a
                // PMC_MODE_TC PMC with PMC_F_LOG_PROCCSW.
                if p.flags & PMC_F_LOG_PROCCSW != 0 && p.mode == PMC_MODE_TC {
                    // The time slice ends with a context switch out.
                    samples.push((
                        k.0,
                        LogRecord::ProcCsw {
                            value: n,
                            pmcid: p.id,
                            pid,
                            tid: pid.wrapping_mul(100),
                        },
                    ));
                }
            }
            // Samples of a PMC attached to its owner go to profil(2), not
            // to the log.
            let logs_samples = p.flags & PMC_F_ATTACHED_TO_OWNER == 0;
            if p.is_sampling() {
                let mut left = n;
                while left >= p.left {
                    left -= p.left;
                    // When in the slice the sample was taken (events spread
                    // evenly over it): before the slice's last hardclock
                    // tick it was processed at that tick; after it, it waits
                    // in the ring for the next tick (or FLUSHLOG).
                    let at = self.now_ns.saturating_add(
                        (u128::from(nanos) * u128::from(n - left) / u128::from(n)) as u64,
                    );
                    let processed = t > 0 && at <= last_tick_ns;
                    p.left = p.reload.max(1);
                    let depth = if p.flags & PMC_F_CALLCHAIN != 0 { 3 } else { 1 };
                    let pcs: Vec<u64> = (0..depth).map(|i| SAMPLE_PC + 0x100 * i).collect();
                    let sample_pid = if pid < 0 { 11 } else { pid };
                    if !logs_samples {
                        continue;
                    }
                    let rec = LogRecord::Callchain {
                        pid: sample_pid,
                        tid: sample_pid.wrapping_mul(100),
                        pmcid: p.id,
                        cpu,
                        flags: PMC_CC_F_USERSPACE,
                        pcs,
                    };
                    if processed {
                        samples.push((k.0, rec));
                    } else if self.ring.len() < 100_000 {
                        self.ring.push((k, rec));
                    }
                    if samples.len() > 100_000 {
                        break;
                    }
                }
                p.left -= left.min(p.left);
                self.stats.pm_intr_processed = self.stats.pm_intr_processed.wrapping_add(1);
            }
        }
        self.now_ns = self.now_ns.saturating_add(nanos);
        for (owner, rec) in samples {
            self.emit(owner, rec);
        }
    }

    // ----- the ops -----

    /// `hwpmc_mod.c:pmc_syscall_handler` PMC_OP_CONFIGURELOG and
    /// `hwpmc_logging.c:pmclog_configure_log` / `pmclog_deconfigure_log`.
    fn configure_log(&mut self, a: &mut pmc_op_configurelog) -> Result<(), Errno> {
        // 2023+ and 15-CURRENT: hwpmc_mod.c@009268db pmc_syscall_handler
        // PMC_OP_CONFIGURELOG, before the owner is looked up: "/* No flags
        // currently implemented */ if (cl.pm_flags != 0) { ... error =
        // EINVAL; break; }" (the same in fel1x-developer/freebsd-src
        // @2d614aa2, 15-CURRENT). The 2020 tree copies `pm_flags` in and
        // never looks at it (freebsd-audit-2 section 2; that tree was not
        // re-read here).
        if a.pm_flags != 0 && self.tree() != SimTree::Y2020 {
            return Err(Errno::EINVAL);
        }
        let me = self.current;
        // The owner descriptor is found or created first, whatever follows
        // (pmc_find_owner_descriptor / pmc_allocate_owner_descriptor).
        let owner = self.owners.entry(me).or_default();
        if a.pm_logfd < 0 {
            // "if 'fd' was less than zero and there was a log file
            // configured, flush its buffers and de-configure it", else EINVAL.
            if owner.log.is_none() {
                return Err(Errno::EINVAL);
            }
            // pmclog_close(): CLOSELOG record (unless already shut down),
            // then PMC_PO_SHUTDOWN.
            self.emit(me, LogRecord::CloseLog);
            if let Some(o) = self.owners.get_mut(&me) {
                o.shutdown = true;
            }
            // Running PMCs that need the log are stopped (pmc_stop).
            let ids: Vec<u32> = self
                .owners
                .get(&me)
                .map(|o| o.pmcs.iter().copied().collect())
                .unwrap_or_default();
            for id in ids {
                if let Some(p) = self.pmcs.get_mut(&(me, id)) {
                    if p.flags & PMC_F_NEEDS_LOGFILE != 0 && p.state == PState::Running {
                        p.state = PState::Stopped;
                    }
                }
            }
            // pmclog_deconfigure_log(): the kthread writes what was queued,
            // OWNS_LOGFILE is cleared, the file reference dropped. The owner
            // descriptor (with SHUTDOWN) stays: only pmc_maybe_remove_owner,
            // on PMC release, or process exit remove it.
            if let Some(owner) = self.owners.get_mut(&me) {
                if let Some(mut log) = owner.log.take() {
                    Self::write_out(&mut log);
                }
            }
            return Ok(());
        }
        // pmclog_configure_log: EBUSY if a log file was already present.
        if owner.log.is_some() {
            return Err(Errno::EBUSY);
        }
        // fget_write().
        if !host::fd_is_writable(a.pm_logfd) {
            return Err(Errno::EBADF);
        }
        // PMCLOG_RESERVE_WITH_ERROR(po, INITIALIZE, ...): pmclog_reserve()
        // returns NULL under PMC_PO_SHUTDOWN -> error = ENOMEM, the file is
        // dropped and OWNS_LOGFILE cleared again.
        if owner.shutdown {
            return Err(Errno::ENOMEM);
        }
        owner.log = Some(LogState {
            fd: a.pm_logfd,
            buf: Vec::new(),
            error: None,
        });
        let rec = LogRecord::Initialize {
            version: self.cfg.version,
            cputype: self.cfg.cpu.cputype(),
            tsc_freq: self.cfg.tsc_freq,
            ts_sec: 1_700_000_000 + (self.now_ns / 1_000_000_000) as i64,
            ts_nsec: (self.now_ns % 1_000_000_000) as i64,
            cpuid: self.cfg.cpu.cpuid(self.tree()),
        };
        self.emit(me, rec);
        Ok(())
    }

    fn with_log(&mut self) -> Result<&mut LogState, Errno> {
        let me = self.current;
        self.owners
            .get_mut(&me)
            .and_then(|o| o.log.as_mut())
            .ok_or(Errno::EINVAL)
    }

    /// `hwpmc_logging.c:pmclog_flush`: a pending writer error first, then
    /// EINVAL without OWNS_LOGFILE (so it still works after CLOSELOG),
    /// then the sample rings are processed and the buffers written.
    fn flush_log(&mut self) -> Result<(), Errno> {
        self.with_log()?;
        // hwpmc_logging.c pmclog_flush() -> pmclog_schedule_all() ->
        // pmclog_schedule_one_cond() on each CPU: "if
        // (PMC_CPU_HAS_SAMPLES(cpu)) PMC_CALL_HOOK_UNLOCKED(curthread,
        // PMC_FN_DO_SAMPLES, NULL)" (2018+ trees): the rings are processed
        // first, while their PMCs still run.
        self.process_samples();
        let log = self.with_log()?;
        if let Some(e) = log.error {
            return Err(e);
        }
        Self::write_out(log);
        match log.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// PMC_OP_CLOSELOG (`freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if ((po =
    /// pmc_find_owner_descriptor(td->td_proc)) == NULL) { error = EINVAL;
    /// break; } error = pmclog_close(po);"): EINVAL only
    /// without an owner descriptor; otherwise `pmclog_close()`, which
    /// writes CLOSELOG (when a log is there to take it), sets
    /// PMC_PO_SHUTDOWN and returns 0, even when no log is configured. The
    /// log stays configured (OWNS_LOGFILE) until CONFIGURELOG(-1).
    fn close_log(&mut self) -> Result<(), Errno> {
        let me = self.current;
        if !self.owners.contains_key(&me) {
            return Err(Errno::EINVAL);
        }
        self.emit(me, LogRecord::CloseLog);
        if let Some(o) = self.owners.get_mut(&me) {
            o.shutdown = true;
            if let Some(log) = o.log.as_mut() {
                Self::write_out(log);
            }
        }
        Ok(())
    }

    /// PMC_OP_WRITELOG (`freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if ((po =
    /// pmc_find_owner_descriptor(td->td_proc)) == NULL) { error = EINVAL;
    /// ...} if ((po->po_flags & PMC_PO_OWNS_LOGFILE) == 0) { error = EINVAL;
    /// ...} error = pmclog_process_userlog(po, &wl);"): EINVAL without an owner or OWNS_LOGFILE, else
    /// `hwpmc_logging.c:pmclog_process_userlog`, whose
    /// PMCLOG_RESERVE_WITH_ERROR fails with ENOMEM under PMC_PO_SHUTDOWN.
    fn write_log(&mut self, a: &mut pmc_op_writelog) -> Result<(), Errno> {
        self.with_log()?;
        let me = self.current;
        if self.owners.get(&me).is_some_and(|o| o.shutdown) {
            return Err(Errno::ENOMEM);
        }
        self.emit(
            me,
            LogRecord::UserData {
                userdata: a.pm_userdata,
            },
        );
        Ok(())
    }

    fn cpuinfo(&self, a: &mut pmc_op_getcpuinfo) {
        *a = pmc_op_getcpuinfo::default();
        a.pm_cputype = self.cfg.cpu.cputype();
        a.pm_ncpu = self.ncpu();
        a.pm_npmc = self.npmc() as u32;
        a.pm_nclass = self.classes.len().min(PMC_CLASS_MAX) as u32;
        for (slot, c) in a.pm_classes.iter_mut().zip(&self.classes) {
            *slot = pmc_classinfo {
                pm_class: c.class,
                pm_caps: c.caps,
                pm_width: c.width,
                pm_num: c.num,
            };
        }
    }

    fn check_cpu(&self, cpu: i64) -> Result<usize, Errno> {
        if cpu < 0 || cpu >= i64::from(self.ncpu()) {
            return Err(Errno::EINVAL);
        }
        let c = cpu as usize;
        if !self.online[c] {
            return Err(Errno::ENXIO);
        }
        Ok(c)
    }

    /// PMC_OP_GETPMCINFO. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (cpu >= pmc_cpu_max()) { error = EINVAL; ...}", "if
    /// (!pmc_cpu_is_active(cpu)) { error = ENXIO; ...}", then every row:
    /// "npmc = md->pmd_npmc; pmcinfo_size = npmc * sizeof(struct
    /// pmc_info); ... error = copyout(pmcinfo, &gpi->pm_pmcs,
    /// pmcinfo_size);". The kernel never looks at the size of the caller's
    /// buffer: it writes all `pmd_npmc` rows, so a smaller buffer is
    /// overrun (EFAULT only if the overrun reaches unmapped memory). The
    /// simulator answers every row whatever `req.npmc` says; the backend
    /// sizes its buffer from PMC_OP_GETCPUINFO's `pm_npmc`. (It used to
    /// answer EFAULT, a rule no kernel has: issue 23.)
    fn pmcinfo(&self, req: &mut PmcInfoRequest) -> Result<(), Errno> {
        let cpu = self.check_cpu(i64::from(req.cpu))?;
        req.pmcs.clear();
        for (ri, r) in self.rows.iter().enumerate() {
            let c = &self.classes[r.class_idx];
            let mut info = pmc_info::default();
            set_c_str(&mut info.pm_name, &format!("{}-{}", c.name, r.index));
            info.pm_class = c.class;
            info.pm_enabled = i32::from(!r.cpus[cpu].disabled);
            info.pm_rowdisp = self.disposition(ri);
            info.pm_ownerpid = -1;
            if let Some(p) = r.cpus[cpu].system.and_then(|k| self.pmcs.get(&k)) {
                info.pm_ownerpid = p.owner;
                info.pm_mode = p.mode;
                info.pm_event = p.event;
                info.pm_flags = p.flags;
                info.pm_reloadcount = p.reload;
            }
            req.pmcs.push(info);
        }
        Ok(())
    }

    /// PMC_OP_PMCADMIN. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "error =
    /// priv_check(td, PRIV_PMC_MANAGE);" (EPERM), "if (cpu < 0 || cpu >=
    /// (int) pmc_cpu_max()) { error = EINVAL; ...}", "if
    /// (!pmc_cpu_is_active(cpu)) { error = ENXIO; ...}", "if (request !=
    /// PMC_STATE_DISABLED && request != PMC_STATE_FREE) { error = EINVAL;
    /// ...}", "if (ri < 0 || ri >= (int) md->pmd_npmc) { error = EINVAL;
    /// ...}", "if (PMC_ROW_DISP_IS_THREAD(ri) && request ==
    /// PMC_STATE_DISABLED) { error = EBUSY; ...}", and "if (phw->phw_pmc ==
    /// NULL) { ... } else error = EBUSY;" (a system PMC configured on the
    /// row; a process PMC is on `phw_pmc` only while it runs on that CPU,
    /// which the simulator does not model).
    fn admin(&mut self, a: &mut pmc_op_pmcadmin) -> Result<(), Errno> {
        if !self.is_privileged() {
            return Err(Errno::EPERM);
        }
        let cpu = self.check_cpu(i64::from(a.pm_cpu))?;
        let disable = match a.pm_state {
            PMC_STATE_DISABLED => true,
            PMC_STATE_FREE => false,
            _ => return Err(Errno::EINVAL),
        };
        if a.pm_pmc < 0 || a.pm_pmc as usize >= self.npmc() {
            return Err(Errno::EINVAL);
        }
        let ri = a.pm_pmc as usize;
        // Rows reserved for process PMCs cannot be disabled; a row holding a
        // system PMC on this CPU cannot change at all.
        if (disable && self.rows[ri].thread_refs > 0) || self.rows[ri].cpus[cpu].system.is_some() {
            return Err(Errno::EBUSY);
        }
        self.rows[ri].cpus[cpu].disabled = disable;
        Ok(())
    }

    fn allocate(&mut self, a: &mut pmc_op_pmcallocate) -> Result<(), Errno> {
        let mode = a.pm_mode;
        if mode > PMC_MODE_TC {
            return Err(Errno::EINVAL);
        }
        let system = mode == PMC_MODE_SS || mode == PMC_MODE_SC;
        let sampling = mode == PMC_MODE_SS || mode == PMC_MODE_TS;
        let cpu = self.allocation_cpu(a.pm_cpu, system)?;
        // Privilege.
        if system && (self.cfg.jailed || (!self.cfg.privileged && !self.cfg.unprivileged_syspmcs)) {
            return Err(Errno::EPERM);
        }
        let flags = a.pm_flags;
        self.check_allocation_flags(flags, system, sampling)?;
        let cd = self.allocation_class(a, sampling)?;
        let fixed = class_rules(&cd, a)?;
        let md = if cd.class == PMC_CLASS_K8 {
            self.amd_allocate(a, sampling)?
        } else {
            a.pm_md
        };
        let me = self.current;
        let ri = self
            .free_row(&cd, fixed, system, cpu)
            .ok_or(Errno::EINVAL)?;
        // hwpmc configures system PMCs at once and refuses an
        // administratively disabled counter with EPERM.
        if system && self.rows[ri].cpus[cpu as usize].disabled {
            return Err(Errno::EPERM);
        }
        let id = self.make_id(cpu, mode, cd.class, ri);
        let mut pflags = flags;
        // Process logging options and system-wide sampling need a log.
        if (sampling && system) || flags & (PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT) != 0 {
            pflags |= PMC_F_NEEDS_LOGFILE;
        }
        let reload = if sampling {
            a.pm_count.max(self.min_reload())
        } else {
            0
        };
        let pmc = SimPmc {
            id,
            owner: me,
            mode,
            class: cd.class,
            event: a.pm_ev,
            flags: pflags,
            cpu,
            row: ri,
            md,
            state: PState::Allocated,
            // pmc_allocate_pmc_descriptor() zeroes the descriptor
            // (M_ZERO); the allocation's count only sets pm_initial
            // (hwpmc_mod.c@009268db pmc_do_op_pmcallocate: "else
            // pmc->pm_sc.pm_initial = pa->pm_count;").
            value: 0,
            initial: if sampling { 0 } else { a.pm_count },
            reload,
            left: reload,
            targets: BTreeMap::new(),
        };
        self.install(pmc, system);
        self.emit(me, allocation_record(cd.class, a, flags, reload, id));
        a.pm_pmcid = id;
        Ok(())
    }

    /// `amd_allocate_pmc()` (`freebsd/freebsd-src`
    /// `sys/dev/hwpmc/hwpmc_amd.c`@eb5956fd; the 2020 tree's is the same):
    /// with a CPU id string, "if (strlen(pmc_cpuid) != 0) {
    /// pm->pm_md.pm_amd.pm_amd_evsel = a->pm_md.pm_amd.pm_amd_config;
    /// return (0); }"; without one (the 2020 tree on any family but 0x17,
    /// see [`SimCpu::cpuid`]) the legacy path: "pe = a->pm_ev; ... if
    /// (amd_event_codes[i].pe_ev == pe) ... if (i == amd_event_codes_size)
    /// return EINVAL;", "if (unitmask & ~allowed_unitmask) return EINVAL;",
    /// then USR/OS, EDGE, INVERT and INT from the caps ("if (caps &
    /// PMC_CAP_INTERRUPT) config |= AMD_PMC_INT;"). Neither path looks at
    /// `PMC_F_EV_PMU` (issue 23 item 11: the simulator used to demand it).
    /// The simulator's `amd_event_codes` holds two of the kernel's rows,
    /// the two whose `PMC_EV_K8_*` values `abi-amd64.json` pins.
    fn amd_allocate(
        &self,
        a: &pmc_op_pmcallocate,
        sampling: bool,
    ) -> Result<pmc_md_op_pmcallocate, Errno> {
        // SimTree::Amd2026 only (its ATF test `amd_missing_pmu_flag`).
        if self.tree() == SimTree::Amd2026 && a.pm_flags & PMC_F_EV_PMU == 0 {
            return Err(Errno::EINVAL);
        }
        if !self.cfg.cpu.cpuid(self.tree()).is_empty() {
            return Ok(a.pm_md);
        }
        let code: u64 = AMD_EVENT_CODES
            .iter()
            .find(|(ev, _)| *ev == a.pm_ev)
            .map(|(_, code)| *code)
            .ok_or(Errno::EINVAL)?;
        let given = a.pm_md.as_amd();
        // allowed_unitmask is 0x00 for both rows.
        if given.pm_amd_config & AMD_PMC_UNITMASK != 0 {
            return Err(Errno::EINVAL);
        }
        let mut caps = a.pm_caps;
        if sampling {
            caps |= PMC_CAP_INTERRUPT;
        }
        let mut config = code;
        if caps & PMC_CAP_USER != 0 {
            config |= AMD_PMC_USR;
        }
        if caps & PMC_CAP_SYSTEM != 0 {
            config |= AMD_PMC_OS;
        }
        if caps & (PMC_CAP_USER | PMC_CAP_SYSTEM) == 0 {
            config |= AMD_PMC_USR | AMD_PMC_OS;
        }
        if caps & PMC_CAP_EDGE != 0 {
            config |= AMD_PMC_EDGE;
        }
        if caps & PMC_CAP_INVERT != 0 {
            config |= AMD_PMC_INVERT;
        }
        if caps & PMC_CAP_INTERRUPT != 0 {
            config |= AMD_PMC_INT;
        }
        Ok(pmc_md_op_pmcallocate::amd(config, given.pm_amd_sub_class))
    }

    /// The CPU of an allocation: a valid, online CPU for a system PMC,
    /// `PMC_CPU_ANY` for a process PMC. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db
    /// `pmc_do_op_pmcallocate()`: "if (cpu != PMC_CPU_ANY && cpu >=
    /// pmc_cpu_max()) return (EINVAL);", "if ((PMC_IS_VIRTUAL_MODE(mode) &&
    /// cpu != PMC_CPU_ANY) || (PMC_IS_SYSTEM_MODE(mode) && cpu ==
    /// PMC_CPU_ANY)) return (EINVAL);", "if (PMC_IS_SYSTEM_MODE(mode) &&
    /// !pmc_cpu_is_active(cpu)) return (ENXIO);".
    fn allocation_cpu(&self, pm_cpu: u32, system: bool) -> Result<u32, Errno> {
        if system {
            if pm_cpu == PMC_CPU_ANY {
                return Err(Errno::EINVAL);
            }
            Ok(self.check_cpu(i64::from(pm_cpu))? as u32)
        } else {
            if pm_cpu != PMC_CPU_ANY {
                return Err(Errno::EINVAL);
            }
            Ok(PMC_CPU_ANY)
        }
    }

    /// The allocation flags this version accepts, and their combinations.
    /// Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcallocate()`: "if ((flags &
    /// ~(PMC_F_DESCENDANTS | PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT |
    /// PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN | PMC_F_EV_PMU)) != 0) return
    /// (EINVAL);" (0x09 trees lack `PMC_F_EV_PMU` in that mask: the audit's
    /// K20 `hwpmc_mod.c` PMC_OP_PMCALLOCATE), "if ((flags & (PMC_F_CALLCHAIN
    /// | PMC_F_USERCALLCHAIN)) == PMC_F_USERCALLCHAIN) return (EINVAL);",
    /// "if ((flags & PMC_F_USERCALLCHAIN) != 0 && mode != PMC_MODE_TS &&
    /// mode != PMC_MODE_SS) return (EINVAL);", "if
    /// (PMC_IS_SYSTEM_MODE(mode) && (flags & (PMC_F_LOG_PROCCSW |
    /// PMC_F_LOG_PROCEXIT)) != 0) return (EINVAL);".
    fn check_allocation_flags(
        &self,
        flags: u32,
        system: bool,
        sampling: bool,
    ) -> Result<(), Errno> {
        let mut allowed = PMC_F_DESCENDANTS
            | PMC_F_LOG_PROCCSW
            | PMC_F_LOG_PROCEXIT
            | PMC_F_CALLCHAIN
            | PMC_F_USERCALLCHAIN;
        if self.cfg.version >> 24 >= 0x0A {
            allowed |= PMC_F_EV_PMU;
        }
        if flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & PMC_F_USERCALLCHAIN != 0 && (flags & PMC_F_CALLCHAIN == 0 || !sampling) {
            return Err(Errno::EINVAL);
        }
        if system && flags & (PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT) != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// The class asked for, if this machine has it and it has the caps
    /// asked for (sampling asks for `PMC_CAP_INTERRUPT`). Source:
    /// `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcallocate()`: "if
    /// (PMC_IS_SAMPLING_MODE(mode)) caps |= PMC_CAP_INTERRUPT;", "pcd =
    /// pmc_class_to_classdep(class); if (pcd == NULL) return (EINVAL);",
    /// "if ((pcd->pcd_caps & caps) != caps) return (EOPNOTSUPP);".
    fn allocation_class(&self, a: &pmc_op_pmcallocate, sampling: bool) -> Result<ClassDesc, Errno> {
        let ci = self.class(a.pm_class).ok_or(Errno::EINVAL)?;
        let cd = self.classes[ci].clone();
        let mut caps = a.pm_caps;
        if sampling {
            caps |= PMC_CAP_INTERRUPT;
        }
        if caps & !cd.caps != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(cd)
    }

    /// Row search (pmc_can_allocate_row): the first row of the class (or
    /// the `fixed` one) that the caller may use in this scope.
    fn free_row(
        &self,
        cd: &ClassDesc,
        fixed: Option<u32>,
        system: bool,
        cpu: u32,
    ) -> Option<usize> {
        let me = self.current;
        let mut chosen = None;
        for i in 0..cd.num {
            if fixed.is_some_and(|f| f != i) {
                continue;
            }
            let ri = cd.first_row + i as usize;
            let owner_has_row = self.pmcs.values().any(|p| {
                p.owner == me && p.row == ri && (!p.is_system() || (system && p.cpu == cpu))
            });
            // Nor may the caller be the target of a PMC on this row (a
            // later attach to itself would fail).
            let target_of_row = self
                .pmcs
                .values()
                .any(|p| p.row == ri && p.targets.contains_key(&me));
            if owner_has_row || target_of_row {
                continue;
            }
            let disp = self.disposition(ri);
            let ok = if system {
                disp != PMC_DISP_THREAD && self.rows[ri].cpus[cpu as usize].system.is_none()
            } else {
                disp != PMC_DISP_STANDALONE
            };
            if ok {
                chosen = Some(ri);
                break;
            }
        }
        chosen
    }

    /// Records an allocated PMC: its row (taken on its CPU for a system
    /// PMC, one more thread reference otherwise) and its owner.
    fn install(&mut self, pmc: SimPmc, system: bool) {
        let (me, id, ri, cpu) = (pmc.owner, pmc.id, pmc.row, pmc.cpu);
        if system {
            self.rows[ri].cpus[cpu as usize].system = Some((me, id));
        } else {
            self.rows[ri].thread_refs += 1;
        }
        self.pmcs.insert((me, id), pmc);
        self.owners.entry(me).or_default().pmcs.insert(id);
    }

    fn target_pid(&self, pid: i32) -> Result<i32, Errno> {
        if pid < 0 {
            return Err(Errno::EINVAL);
        }
        let pid = if pid == 0 { self.current } else { pid };
        if !self.procs.contains_key(&pid) {
            return Err(Errno::ESRCH);
        }
        Ok(pid)
    }

    fn can_debug(&self, pid: i32) -> bool {
        if pid == self.current || self.is_privileged() {
            return true;
        }
        self.cfg.unprivileged_proc_debug && self.procs.get(&pid).is_some_and(|p| p.debuggable)
    }

    fn descendants(&self, pid: i32) -> Vec<i32> {
        let mut out = vec![pid];
        let mut i = 0;
        while i < out.len() {
            let parent = out[i];
            out.extend(
                self.procs
                    .iter()
                    .filter(|(c, p)| p.parent == parent && **c != parent)
                    .map(|(c, _)| *c),
            );
            i += 1;
            if out.len() > 100_000 {
                break;
            }
        }
        out
    }

    /// PMC_OP_PMCATTACH, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcattach()`: "if
    /// (a.pm_pid < 0) { return (EINVAL); } else if (a.pm_pid == 0) {
    /// a.pm_pid = td->td_proc->p_pid; }", `pmc_find_pmc()`, "if
    /// (PMC_IS_SYSTEM_MODE(PMC_TO_MODE(pm))) return (EINVAL);", "if
    /// (pm->pm_state == PMC_STATE_RUNNING) { return (EBUSY); }", "if ((p =
    /// pfind(a.pm_pid)) == NULL) return (ESRCH);", then "error =
    /// p_candebug(curthread, p);" and `pmc_attach_process()`.
    fn attach(&mut self, a: &mut pmc_op_pmcattach) -> Result<(), Errno> {
        if a.pm_pid < 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmc)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        if p.is_system() {
            return Err(Errno::EINVAL);
        }
        if p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        let pid = self.target_pid(a.pm_pid)?;
        self.attach_checked(key, pid)
    }

    fn attach_checked(&mut self, key: (i32, u32), pid: i32) -> Result<(), Errno> {
        if !self.can_debug(pid) {
            return Err(Errno::EPERM);
        }
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        // No "GETMSR was used" refusal: hwpmc_mod.c:pmc_attach_process tests
        // `pm->pm_flags & PMC_PP_ENABLE_MSR_ACCESS`, a process-descriptor
        // flag (0x1, the never-set PMC_F_UNUSED1 in pm_flags), so the check
        // is dead and the attach goes ahead.
        // hwpmc_mod.c:pmc_attach_one_process: same PMC at the row: EEXIST;
        // another PMC at the row: EBUSY.
        if p.targets.contains_key(&pid) {
            return Err(Errno::EEXIST);
        }
        let row = p.row;
        let busy = self
            .pmcs
            .iter()
            .any(|(k, o)| *k != key && o.row == row && o.targets.contains_key(&pid));
        if busy {
            return Err(Errno::EBUSY);
        }
        let pids = if p.flags & PMC_F_DESCENDANTS != 0 {
            self.descendants(pid)
        } else {
            vec![pid]
        };
        let path = self
            .procs
            .get(&pid)
            .map(|p| p.path.clone())
            .unwrap_or_default();
        let id = key.1;
        let p = self.pmc_mut(key)?;
        // A sampling PMC attached to another process logs its samples, so
        // it needs a log (hwpmc_mod.c); attached to its owner, it feeds
        // profil(2) instead.
        if p.is_sampling() && p.flags & PMC_F_ATTACHED_TO_OWNER == 0 && pid != p.owner {
            p.flags |= PMC_F_NEEDS_LOGFILE;
        }
        for t in pids {
            p.targets.entry(t).or_insert(0);
        }
        // hwpmc_mod.c@009268db pmc_link_target_process, for each process of
        // the (DESCENDANTS) subtree: "if (pm->pm_owner->po_owner ==
        // pp->pp_proc) pm->pm_flags |= PMC_F_ATTACHED_TO_OWNER", so an
        // attach to an ancestor of the owner takes the owner in too.
        if p.targets.contains_key(&p.owner) {
            p.flags |= PMC_F_ATTACHED_TO_OWNER;
        }
        p.flags |= PMC_F_ATTACH_DONE;
        self.emit(
            key.0,
            LogRecord::PmcAttach {
                pmcid: id,
                pid,
                path,
            },
        );
        Ok(())
    }

    /// PMC_OP_PMCDETACH, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcdetach()`: "if
    /// (a.pm_pid < 0) { return (EINVAL); }", `pmc_find_pmc()`, "if ((p =
    /// pfind(a.pm_pid)) == NULL) return (ESRCH);", then
    /// `pmc_detach_process()` (no system-mode check).
    fn detach(&mut self, a: &mut pmc_op_pmcattach) -> Result<(), Errno> {
        if a.pm_pid < 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmc)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        // PMC_OP_PMCDETACH has no system-mode check (hwpmc_mod.c): a
        // system PMC is at no process's row, so pmc_detach_one_process
        // answers ESRCH (the pid is nobody's target) or EINVAL (it is the
        // target of another PMC).
        let pid = self.target_pid(a.pm_pid)?;
        let descendants = p.flags & PMC_F_DESCENDANTS != 0;
        let pids = if descendants {
            self.descendants(pid)
        } else {
            vec![pid]
        };
        if !descendants {
            if !self.pmcs.values().any(|o| o.targets.contains_key(&pid)) {
                return Err(Errno::ESRCH);
            }
            if !p.targets.contains_key(&pid) {
                return Err(Errno::EINVAL);
            }
        }
        // With DESCENDANTS the whole tree is detached and errors are
        // ignored (a partially attached tree), as in hwpmc_mod.c.
        let p = self.pmc_mut(key)?;
        let removed: Vec<i32> = pids
            .into_iter()
            .filter(|t| p.targets.remove(t).is_some())
            .collect();
        let owner = p.owner;
        if !p.targets.contains_key(&owner) {
            p.flags &= !PMC_F_ATTACHED_TO_OWNER;
        }
        let (id, empty) = (p.id, p.targets.is_empty());
        if empty && descendants {
            p.flags &= !PMC_F_ATTACH_DONE;
        }
        for t in &removed {
            self.emit(key.0, LogRecord::PmcDetach { pmcid: id, pid: *t });
        }
        if empty && !removed.is_empty() {
            self.signals.push((key.0, Signal::Io));
        }
        Ok(())
    }

    /// PMC_OP_PMCSTART. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_RUNNING) /* already running */ break;
    /// else if (pm->pm_state != PMC_STATE_STOPPED && pm->pm_state !=
    /// PMC_STATE_ALLOCATED) { error = EINVAL; ...}"; `pmc_start()`: "if
    /// ((pm->pm_flags & PMC_F_NEEDS_LOGFILE) != 0 && (po->po_flags &
    /// PMC_PO_OWNS_LOGFILE) == 0) return (EDOOFUS);", for a process PMC "if
    /// (LIST_EMPTY(&pm->pm_targets)) { error = (pm->pm_flags &
    /// PMC_F_ATTACH_DONE) != 0 ? ESRCH : pmc_attach_process(po->po_owner,
    /// pm); }", for a system PMC "if (!pmc_cpu_is_active(cpu)) return
    /// (ENXIO);".
    fn start(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let p = self.pmcs.get(&key).ok_or(Errno::EINVAL)?;
        if p.state == PState::Running {
            return Ok(());
        }
        let has_log = self.owners.get(&key.0).is_some_and(|o| o.log.is_some());
        if p.flags & PMC_F_NEEDS_LOGFILE != 0 && !has_log {
            return Err(Errno::EDOOFUS);
        }
        if p.is_system() {
            if !self.online.get(p.cpu as usize).copied().unwrap_or(false) {
                return Err(Errno::ENXIO);
            }
        } else if p.targets.is_empty() {
            if p.flags & PMC_F_ATTACH_DONE != 0 {
                return Err(Errno::ESRCH);
            }
            let owner = p.owner;
            self.attach_checked(key, owner)?;
        }
        let p = self.pmc_mut(key)?;
        // hwpmc_mod.c@009268db pmc_start, system PMC: "v =
        // PMC_IS_SAMPLING_MODE(mode) ? pm->pm_sc.pm_reloadcount :
        // pm->pm_sc.pm_initial; ... pcd->pcd_write_pmc(cpu, adjri, pm, v)".
        // (A sampling system PMC's countdown is left as it was: the
        // simulator does not model the reload on restart.)
        if p.is_system() && !p.is_sampling() {
            p.value = p.initial;
        }
        p.state = PState::Running;
        Ok(())
    }

    /// PMC_OP_PMCSTOP. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_STOPPED) /* already stopped */ break; else
    /// if (pm->pm_state != PMC_STATE_RUNNING) { error = EINVAL; ...}";
    /// `pmc_stop()`: "pm->pm_state = PMC_STATE_STOPPED;", "if
    /// (PMC_IS_VIRTUAL_MODE(PMC_TO_MODE(pm))) return (0);", then for a
    /// system PMC "if (!pmc_cpu_is_active(cpu)) return (ENXIO);".
    fn stop(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let online = self.online.clone();
        let p = self.pmc_mut(key)?;
        match p.state {
            PState::Stopped => return Ok(()),
            // Never started.
            PState::Allocated => return Err(Errno::EINVAL),
            PState::Running => p.state = PState::Stopped,
        }
        if p.is_system() && !online.get(p.cpu as usize).copied().unwrap_or(false) {
            return Err(Errno::ENXIO);
        }
        // hwpmc_mod.c@009268db pmc_stop, system PMC: "error =
        // pcd->pcd_read_pmc(cpu, adjri, pm, &pm->pm_sc.pm_initial)", so a
        // later PMCSTART resumes from the count.
        if p.is_system() && !p.is_sampling() {
            p.initial = p.value;
        }
        Ok(())
    }

    /// PMC_OP_PMCRELEASE, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_do_op_pmcrelease()`: "error =
    /// pmc_find_pmc(pmcid, &pm); if (error != 0) return (error);", then
    /// `pmc_release_pmc_descriptor(pm); pmc_maybe_remove_owner(po);` (the
    /// owner goes with its last PMC unless it owns a log).
    fn release(&mut self, a: &mut pmc_op_simple) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let p = self.pmcs.remove(&key).ok_or(Errno::EINVAL)?;
        if p.is_system() {
            if let Some(rc) = self
                .rows
                .get_mut(p.row)
                .and_then(|r| r.cpus.get_mut(p.cpu as usize))
            {
                rc.system = None;
            }
        } else if let Some(r) = self.rows.get_mut(p.row) {
            r.thread_refs = r.thread_refs.saturating_sub(1);
        }
        if let Some(o) = self.owners.get_mut(&key.0) {
            o.pmcs.remove(&key.1);
            if o.pmcs.is_empty() && o.log.is_none() {
                self.owners.remove(&key.0);
            }
        }
        Ok(())
    }

    fn rw(&mut self, a: &mut pmc_op_pmcrw) -> Result<(), Errno> {
        // At least one of OLDVALUE/NEWVALUE; other bits are ignored
        // (hwpmc_mod.c PMC_OP_PMCRW: "if ((prw.pm_flags & (PMC_F_OLDVALUE |
        // PMC_F_NEWVALUE)) == 0) error = EINVAL").
        let rw = PMC_F_OLDVALUE | PMC_F_NEWVALUE;
        if a.pm_flags & rw == 0 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmcid)?;
        let online = self.online.clone();
        let p = self.pmc_mut(key)?;
        if a.pm_flags & PMC_F_NEWVALUE != 0 && p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        if p.is_system() && !online.get(p.cpu as usize).copied().unwrap_or(false) {
            return Err(Errno::ENXIO);
        }
        // hwpmc_mod.c@009268db pmc_do_op_pmcrw, process (virtual) PMC:
        // "if ((pm->pm_flags & PMC_F_ATTACHED_TO_OWNER) && (pm->pm_state ==
        // PMC_STATE_RUNNING)) error = (*pcd->pcd_read_pmc)(...); else *valp =
        // pm->pm_gv.pm_savedvalue;" and NEWVALUE "pm->pm_gv.pm_savedvalue =
        // prw->pm_value". A TS PMC's countdown lives per thread
        // (pmc_process_csw_out: "pt->pt_pmcs[ri].pt_pmcval = newvalue"),
        // never in pm_savedvalue, so a TS PMC on another process reads 0 or
        // the last NEWVALUE. Reads from the hardware (a system PMC, or a
        // running PMC attached to its owner) of a sampling PMC give the
        // reload-down counter, the events left until the next sample
        // (hwpmc_core.c:iap_read_pmc: "if (PMC_IS_SAMPLING_MODE(...)) *v =
        // iap_perfctr_value_to_reload_count(tmp)").
        let from_hw =
            p.is_system() || (p.flags & PMC_F_ATTACHED_TO_OWNER != 0 && p.state == PState::Running);
        let old = if p.is_sampling() && from_hw {
            p.left
        } else {
            p.value
        };
        if a.pm_flags & PMC_F_NEWVALUE != 0 {
            if p.is_sampling() && p.is_system() {
                // pcd_write_pmc of a sampling PMC loads the countdown.
                p.left = a.pm_value.max(1);
            } else {
                p.value = a.pm_value;
            }
        }
        if a.pm_flags & PMC_F_OLDVALUE != 0 {
            a.pm_value = old;
        }
        Ok(())
    }

    /// PMC_OP_PMCSETCOUNT. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (pm->pm_state == PMC_STATE_RUNNING) { error = EBUSY; break; }", then
    /// the reload count or `pm_initial` (quoted below).
    fn setcount(&mut self, a: &mut pmc_op_pmcsetcount) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let floor = self.min_reload();
        let p = self.pmc_mut(key)?;
        if p.state == PState::Running {
            return Err(Errno::EBUSY);
        }
        // hwpmc_mod.c@009268db PMC_OP_PMCSETCOUNT: "if
        // (PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))) { ... pm->pm_sc.pm_reloadcount
        // = MAX(MAX(1, pmc_mincount), sc.pm_count); } else
        // pm->pm_sc.pm_initial = sc.pm_count;". pm_initial is read only by
        // pmc_start() of a system PMC: on a process counting PMC SETCOUNT
        // changes nothing anyone reads (PMCRW reads pm_savedvalue).
        if p.is_sampling() {
            p.reload = a.pm_count.max(floor);
            p.left = p.reload;
        } else {
            p.initial = a.pm_count;
        }
        Ok(())
    }

    /// PMC_OP_PMCGETMSR, `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if
    /// (!PMC_IS_VIRTUAL_MODE(PMC_TO_MODE(pm)) || (pm->pm_flags &
    /// PMC_F_DESCENDANTS)) { error = EINVAL; ...}", "if ((pt =
    /// LIST_FIRST(&pm->pm_targets)) == NULL || LIST_NEXT(pt, pt_next) !=
    /// NULL || pt->pt_process->pp_proc != pm->pm_owner->po_owner) { error =
    /// EINVAL; ...}", "/* PMC class has no 'GETMSR' support */ if
    /// (pcd->pcd_get_msr == NULL) { error = ENOSYS; ...}". The simulator's
    /// ENOSYS without RDPMC ([`SimConfig::rdpmc`]) is SIM-ONLY: a machine
    /// choice, not a kernel rule.
    fn getmsr(&mut self, a: &mut pmc_op_getmsr) -> Result<(), Errno> {
        let key = self.find(a.pm_pmcid)?;
        let rdpmc = self.cfg.rdpmc;
        let index = self
            .pmcs
            .get(&key)
            .and_then(|p| self.rows.get(p.row))
            .map_or(0, |r| r.index);
        let p = self.pmc_mut(key)?;
        // hwpmc(4): process-private, no DESCENDANTS, attached only to its owner.
        let only_owner = p.targets.len() == 1 && p.targets.contains_key(&p.owner);
        if p.is_system() || p.flags & PMC_F_DESCENDANTS != 0 || !only_owner {
            return Err(Errno::EINVAL);
        }
        match p.class {
            PMC_CLASS_IAP | PMC_CLASS_K8 => a.pm_msr = index,
            PMC_CLASS_IAF => a.pm_msr = 0x4000_0000 | index,
            // The class has no RDPMC access (SOFT).
            _ => return Err(Errno::ENOSYS),
        }
        if !rdpmc {
            return Err(Errno::ENOSYS);
        }
        Ok(())
    }

    /// PMC_OP_GETDYNEVENTINFO. Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`:
    /// "/* Only SOFT class is dynamic. */ if (cl != PMC_CLASS_SOFT) { error
    /// = EINVAL; break; }", then one `pmc_dyn_event_descr` per registered
    /// SOFT event and "copyout(&nevent, &gei->pm_nevent, ...)".
    fn dyneventinfo(&self, a: &mut pmc_op_getdyneventinfo) -> Result<(), Errno> {
        if a.pm_class != PMC_CLASS_SOFT {
            return Err(Errno::EINVAL);
        }
        a.pm_nevent = SOFT_EVENTS.len() as u32;
        for (i, (slot, name)) in a.pm_events.iter_mut().zip(SOFT_EVENTS).enumerate() {
            set_c_str(&mut slot.pm_ev_name, name);
            slot.pm_ev_code = PMC_EV_SOFT_FIRST + i as u32;
        }
        Ok(())
    }

    /// PMC_OP_GETCAPS. Below 0x0A03 the op does not exist: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db
    /// `pmc_syscall_handler()` has no case for it and ends "default: error =
    /// EINVAL;". HEAD's `sys/sys/pmc.h`@5369f8e7 (0x0A030000) adds it; its
    /// kernel handler was not read, so the answer (the class's caps, via
    /// `pmc_find_pmc()`'s ESRCH/EINVAL) is the simulator's assumption.
    fn caps(&self, a: &mut pmc_op_caps) -> Result<(), Errno> {
        if self.cfg.version < 0x0A03_0000 {
            return Err(Errno::EINVAL);
        }
        let key = self.find(a.pm_pmcid)?;
        let class = self.pmcs.get(&key).ok_or(Errno::EINVAL)?.class;
        // What the PMC's counter can do: its class's capabilities.
        a.pm_caps = self.class(class).map_or(0, |ci| self.classes[ci].caps);
        Ok(())
    }

    fn dispatch(&mut self, arg: OpArg<'_>) -> Result<(), Errno> {
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

/// Class-specific allocation checks; the answer pins the row within the
/// class (IAF's fixed counters), if any. Sources: TSC, `hwpmc_tsc.c`
/// `tsc_allocate_pmc()`: "if (a->pm_ev != PMC_EV_TSC_TSC || a->pm_mode !=
/// PMC_MODE_SC) return (EINVAL);"; SOFT, `hwpmc_soft.c`
/// `soft_allocate_pmc()`: "if ((int)ev < PMC_EV_SOFT_FIRST || (int)ev >
/// PMC_EV_SOFT_LAST) return (EINVAL);" and "ps = pmc_soft_ev_acquire(ev);
/// if (ps == NULL) return (EINVAL);"; IAF, the post-2018 `hwpmc_core.c`
/// `iaf_allocate_pmc()`: "if (ev == 0xC0 && ri != 0) return (EINVAL);",
/// "if (ev == 0x3C && ri != 1) return (EINVAL);", "if (ev == 0x0 && umask
/// == 0x3 && ri != 2) return (EINVAL);" (the simulator also refuses other
/// event selects, which a fixed counter cannot count). K8 is
/// `State::amd_allocate` (no EV_PMU rule: issue 23 item 11).
fn class_rules(cd: &ClassDesc, a: &pmc_op_pmcallocate) -> Result<Option<u32>, Errno> {
    let mode = a.pm_mode;
    let mut fixed: Option<u32> = None;
    match cd.class {
        PMC_CLASS_TSC if a.pm_ev != PMC_EV_TSC_TSC || mode != PMC_MODE_SC => {
            return Err(Errno::EINVAL)
        }
        PMC_CLASS_SOFT => {
            let idx = a.pm_ev.wrapping_sub(PMC_EV_SOFT_FIRST) as usize;
            if a.pm_ev < PMC_EV_SOFT_FIRST || idx >= SOFT_EVENTS.len() {
                return Err(Errno::EINVAL);
            }
        }
        PMC_CLASS_IAF => {
            let cfg = a.pm_md.as_iap().pm_iap_config;
            fixed = Some(match (cfg & IAP_EVSEL_MASK, (cfg & IAP_UMASK_MASK) >> 8) {
                (0xC0, _) => 0,
                (0x3C, _) => 1,
                (0x00, 3) => 2,
                _ => return Err(Errno::EINVAL),
            });
        }
        _ => {}
    }
    Ok(fixed)
}

/// The log record of an allocation: PMCALLOCATEDYN (with the event's name)
/// for a SOFT PMC, PMCALLOCATE otherwise.
fn allocation_record(
    class: u32,
    a: &pmc_op_pmcallocate,
    flags: u32,
    reload: u64,
    id: u32,
) -> LogRecord {
    if class == PMC_CLASS_SOFT {
        let name = SOFT_EVENTS
            .get(a.pm_ev.wrapping_sub(PMC_EV_SOFT_FIRST) as usize)
            .copied()
            .unwrap_or("");
        LogRecord::PmcAllocateDyn {
            pmcid: id,
            event: a.pm_ev,
            flags,
            rate: reload,
            name: name.to_owned(),
        }
    } else {
        LogRecord::PmcAllocate {
            pmcid: id,
            event: a.pm_ev,
            flags,
            rate: reload,
        }
    }
}

impl Sys for SimDriver {
    fn call(&self, arg: OpArg<'_>) -> Result<(), Errno> {
        let mut st = self.lock();
        let op = arg.op();
        st.stats.pm_syscalls = st.stats.pm_syscalls.wrapping_add(1);
        let r = st.dispatch(arg);
        if r.is_err() {
            st.stats.pm_syscall_errors = st.stats.pm_syscall_errors.wrapping_add(1);
        }
        if st.calls.len() < 1_000_000 {
            st.calls.push((op, r));
        }
        r
    }

    fn current_pid(&self) -> i32 {
        self.lock().current
    }

    fn sysctl_int(&self, name: &str) -> Option<i64> {
        let st = self.lock();
        match name {
            "security.bsd.unprivileged_syspmcs" => Some(i64::from(st.cfg.unprivileged_syspmcs)),
            "security.bsd.unprivileged_proc_debug" => {
                Some(i64::from(st.cfg.unprivileged_proc_debug))
            }
            "security.jail.jailed" => Some(i64::from(st.cfg.jailed)),
            "kern.hz" => Some(HZ as i64),
            "kern.hwpmc.mincount" => st.cfg.mincount.map(|m| m as i64),
            _ => None,
        }
    }

    /// `kern.hwpmc.cpuid`, the kernel's `pmc_cpuid` (libpmc reads it so:
    /// `freebsd/freebsd-src` `lib/libpmc/libpmc_pmu_util.c`@0024f1aa
    /// `pmu_events_map_get()`: `sysctlbyname("kern.hwpmc.cpuid", buf, &s,
    /// (void *)NULL, 0)`): the string of [`SimCpu::cpuid`] for the
    /// configured tree.
    fn sysctl_string(&self, name: &str) -> Option<String> {
        let st = self.lock();
        (name == "kern.hwpmc.cpuid").then(|| st.cfg.cpu.cpuid(st.tree()))
    }

    fn euid(&self) -> Option<u32> {
        Some(if self.lock().cfg.privileged { 0 } else { 1001 })
    }

    fn parent_pid(&self, pid: i32) -> Option<i32> {
        self.lock().procs.get(&pid).map(|p| p.parent)
    }

    /// Each simulator is its own kernel: its address.
    fn kernel_id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

#[cfg(test)]
mod tests;
