//! `pmc_core::Backend` over hwpmc: every operation is one or more
//! `PMC_OP_*` requests through a [`Sys`].

use crate::errno::Errno;
use crate::errno_map::{self, Context};
use crate::events::{self, Encoding, Machine};
use crate::log::{LogFormat, PumpCtl};
use crate::sys::abi::*;
use crate::sys::{self, OpArg, PmcOp, RealSys, Sys};
use pmc_core::lifecycle::{fan_out, fan_out_or_undo, Lifecycle, Refusal};
use pmc_core::{
    Allocation, Cpus, Error, ErrorKind, Flags, GroupInstanceReading, Instance, InstanceReading,
    LogSink, Mode, NativeField, Op, Rate, Reading, Result, Scope, State, Target,
};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// hwpmc has no frequency mode, so `Rate::Frequency(f)` becomes a period:
/// for hardware events `NOMINAL_EVENTS_PER_SEC / f` (about `f` samples a
/// second at 2 GHz); for the SOFT clock events `kern.hz / f` ticks; for
/// other SOFT events (page faults) a period of 1. hwpmc raises periods
/// below its minimum (`kern.hwpmc.mincount`, usually 1000).
pub const NOMINAL_EVENTS_PER_SEC: u64 = 2_000_000_000;

/// The `kern.hz` assumed when the driver cannot tell (`sysctl kern.hz`).
pub const ASSUMED_HZ: u64 = 1000;

/// hwpmc's smallest reload count of a sampling PMC when the kernel has no
/// `kern.hwpmc.mincount` sysctl: `MAX(1000, pm_count)` (hwpmc_mod.c,
/// PMC_OP_PMCALLOCATE, 2020 tree). Later kernels use
/// `MAX(MAX(1, kern.hwpmc.mincount), pm_count)`, read when present.
pub(crate) const DEFAULT_MIN_RELOAD: u64 = 1000;

/// The kernel logs the Backends of this process hold, by
/// (`Sys::kernel_id`, pid). hwpmc has one owner descriptor per process,
/// with at most one log (`hwpmc_mod.c`@009268db PMC_OP_CONFIGURELOG:
/// `pmc_find_owner_descriptor(p)`, then `pmclog_configure_log()` answers
/// EBUSY when a log is there), so only one Backend per process may hold it.
static KERNEL_LOGS: Mutex<BTreeSet<(usize, i32)>> = Mutex::new(BTreeSet::new());

fn kernel_logs() -> std::sync::MutexGuard<'static, BTreeSet<(usize, i32)>> {
    KERNEL_LOGS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kernel log, configured once per backend (see `log`).
struct LogPump {
    /// This process's entry in [`KERNEL_LOGS`].
    key: (usize, i32),
    /// The kernel's end of the socket pair.
    #[cfg(unix)]
    write_end: std::os::fd::OwnedFd,
    thread: Option<std::thread::JoinHandle<Option<Error>>>,
    ctl: Arc<PumpCtl>,
}

struct Inner<S: Sys> {
    sys: S,
    machine: Machine,
    ncpu: u32,
    /// `kern.hz`, for converting frequencies into clock ticks.
    hz: u64,
    /// The kernel's smallest reload count (`kern.hwpmc.mincount`, or
    /// [`DEFAULT_MIN_RELOAD`]).
    min_reload: u64,
    /// `pm_npmc`: rows per CPU.
    npmc: u32,
    /// CPUs `PMC_OP_GETPMCINFO` called absent or disabled at open time.
    offline: Vec<u32>,
    log: Mutex<Option<LogPump>>,
}

/// One PMC row on one CPU, from `PMC_OP_GETPMCINFO` (what `pmccontrol -l`
/// prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowInfo {
    /// The row's name (`IAP-0`, `SOFT-3`, `TSC-0`).
    pub name: String,
    /// `PMC_CLASS_*`.
    pub class: u32,
    /// Not administratively disabled.
    pub enabled: bool,
    /// `PMC_DISP_*`: free, in use by process PMCs (thread), or standalone.
    pub disposition: u32,
    /// The owner of the system PMC using the row on this CPU, if any.
    pub owner_pid: Option<i32>,
    /// `PMC_MODE_*` of that PMC.
    pub mode: u32,
    /// Its event.
    pub event: u32,
    /// Its `PMC_F_*` flags.
    pub flags: u32,
    /// Its reload count.
    pub reload_count: u64,
}

fn row_info(i: &pmc_info) -> RowInfo {
    RowInfo {
        name: sys::cstr::c_str(&i.pm_name),
        class: i.pm_class,
        enabled: i.pm_enabled != 0,
        disposition: i.pm_rowdisp,
        owner_pid: (i.pm_ownerpid > 0).then_some(i.pm_ownerpid),
        mode: i.pm_mode,
        event: i.pm_event,
        flags: i.pm_flags,
        reload_count: i.pm_reloadcount,
    }
}

/// The FreeBSD hwpmc backend, generic over the [`Sys`] seam ([`RealSys`],
/// the hwpmc syscall, or the simulator in tests) and monomorphised for it.
///
/// ```
/// # #[cfg(feature = "sim")] {
/// use pmc_core::{Allocation, Backend as _, Pmc as _};
/// use pmc_freebsd::{sys::sim::SimDriver, Backend};
/// use std::sync::Arc;
///
/// let sim = Arc::new(SimDriver::default());
/// let backend = Backend::with_sys(sim.clone()).unwrap();
/// let mut pmc = backend.allocate(&Allocation::counting("page-faults".parse().unwrap())).unwrap();
/// pmc.start().unwrap(); // attaches to the calling process
/// sim.tick(1_000_000, 0, 42); // the "kernel" sees 42 page faults
/// assert_eq!(pmc.read().unwrap().value, 42);
/// # }
/// ```
pub struct Backend<S: Sys = RealSys> {
    inner: Arc<Inner<S>>,
}

impl<S: Sys> std::fmt::Debug for Backend<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("machine", &self.inner.machine)
            .finish_non_exhaustive()
    }
}

impl Backend<RealSys> {
    /// Opens hwpmc: `modfind("hwpmc")`, `modstat`, then the version
    /// handshake, `PMC_OP_GETCPUINFO` and `PMC_OP_GETDYNEVENTINFO`.
    ///
    /// # Errors
    /// [`ErrorKind::DriverNotLoaded`] when hwpmc is not loaded (help:
    /// `kldload hwpmc`), [`ErrorKind::VersionMismatch`] for an ABI major
    /// other than 0x09/0x0A; [`ErrorKind::Unsupported`] on other systems.
    #[doc(alias = "pmc_init")]
    #[doc(alias = "modfind")]
    pub fn new() -> Result<Backend<RealSys>> {
        if let Some((why, help)) = RealSys::UNSUPPORTED {
            return Err(Error::new(ErrorKind::Unsupported, Op::Open, why).with_help(help));
        }
        Backend::with_sys(RealSys::find().map_err(errno_map::modfind_error)?)
    }

    /// The same as [`Backend::new`], under the name the `pmc` facade calls
    /// (`pmc::Native::open()`, as `pmc_linux::Backend::open`).
    ///
    /// # Errors
    /// As [`Backend::new`].
    pub fn open() -> Result<Backend<RealSys>> {
        Backend::new()
    }
}

fn call_err(op: PmcOp, e: Errno, ctx: &Context) -> Error {
    errno_map::to_error(op, e, ctx)
}

impl<S: Sys> Inner<S> {
    /// This process's key in [`KERNEL_LOGS`].
    fn log_key(&self) -> (usize, i32) {
        (self.sys.kernel_id(), self.sys.current_pid())
    }

    /// Whether this Backend holds the kernel log.
    fn has_log(&self) -> bool {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// After the log is deconfigured, hwpmc keeps the process's owner
    /// descriptor, shut down, for as long as the process lives:
    /// CONFIGURELOG(-1) never removes it, `pmclog_close()` left
    /// PMC_PO_SHUTDOWN, and PMCRELEASE's `pmc_maybe_remove_owner()` only
    /// removes an owner with no PMCs and no log ("if
    /// (LIST_EMPTY(&po->po_pmcs) && ((po->po_flags & PMC_PO_OWNS_LOGFILE)
    /// == 0))"), `hwpmc_mod.c`@009268db. A later CONFIGURELOG in this
    /// process would then fail with ENOMEM (its INITIALIZE record cannot be
    /// reserved under SHUTDOWN) and sampling starts with EDOOFUS. Allocating
    /// and releasing a throwaway SOFT PMC runs `pmc_maybe_remove_owner()`
    /// with neither, which removes the descriptor. (Another Backend's PMCs
    /// still allocated in this process keep it: see
    /// [`configure_log`](pmc_core::Backend::configure_log).)
    fn remove_owner(&self) {
        let Some((_, ev)) = self.machine.soft_events.first() else {
            return;
        };
        let mut a = pmc_op_pmcallocate {
            pm_mode: PMC_MODE_TC,
            pm_class: PMC_CLASS_SOFT,
            pm_ev: *ev,
            pm_cpu: PMC_CPU_ANY,
            ..Default::default()
        };
        if self.sys.call(OpArg::PmcAllocate(&mut a)).is_ok() {
            let mut s = pmc_op_simple {
                pm_pmcid: a.pm_pmcid,
            };
            let _ = self.sys.call(OpArg::PmcRelease(&mut s));
        }
    }

    /// The typed error for `e`; for EPERM, first reads the sysctls and uid
    /// behind it so the message can name the setting to change.
    fn err(&self, op: PmcOp, e: Errno, ctx: &Context) -> Error {
        if e == Errno::EPERM {
            let mut ctx = ctx.clone();
            ctx.facts = errno_map::Facts::read(&self.sys);
            return errno_map::to_error(op, e, &ctx);
        }
        errno_map::to_error(op, e, ctx)
    }
}

impl<S: Sys> Backend<S> {
    /// A backend over any [`Sys`] (the simulator in tests). Runs the
    /// handshake: `PMC_OP_GETMODULEVERSION` with 0 (always accepted),
    /// accepting ABI majors 0x09 and 0x0A, then `PMC_OP_GETCPUINFO` and the
    /// SOFT events.
    ///
    /// # Errors
    /// As [`Backend::open`].
    pub fn with_sys(sys: S) -> Result<Backend<S>> {
        let ctx = Context::default();
        let mut version = 0u32;
        sys.call(OpArg::GetModuleVersion(&mut version))
            .map_err(|e| call_err(PmcOp::GetModuleVersion, e, &ctx))?;
        let major = version >> 24;
        if major != 0x09 && major != 0x0A {
            return Err(Error::new(
                ErrorKind::VersionMismatch,
                Op::Open,
                format!("hwpmc ABI version {version:#010x} is not supported (this library speaks majors 0x09 and 0x0A)"),
            )
            .with_help("use a FreeBSD release from 12.0 on, or a newer pmc"));
        }
        let mut ci = pmc_op_getcpuinfo::default();
        sys.call(OpArg::GetCpuInfo(&mut ci))
            .map_err(|e| call_err(PmcOp::GetCpuInfo, e, &ctx))?;
        let nclass = (ci.pm_nclass as usize).min(PMC_CLASS_MAX);
        let mut machine = Machine {
            cputype: ci.pm_cputype,
            version,
            classes: ci.pm_classes[..nclass].to_vec(),
            soft_events: vec![],
            cpu: events::host_cpu_for(ci.pm_cputype),
            kernel_cpuid: sys.sysctl_string("kern.hwpmc.cpuid"),
        };
        // No host CPUID for this vendor (another machine's log, a
        // simulator): the kernel's own CPU id string, if it parses.
        if machine.cpu.is_none() {
            machine.cpu = machine
                .kernel_cpuid
                .as_deref()
                .and_then(pmc_events::CpuId::from_hwpmc_cpuid)
                .filter(|c| pmc_events::Table::for_cpu(c).is_some());
        }
        if machine.has_class(PMC_CLASS_SOFT) {
            let mut dyn_ev = pmc_op_getdyneventinfo::new_boxed(PMC_CLASS_SOFT);
            if sys.call(OpArg::GetDynEventInfo(&mut dyn_ev)).is_ok() {
                let n = (dyn_ev.pm_nevent as usize).min(PMC_EV_DYN_COUNT);
                machine.soft_events = dyn_ev.pm_events[..n]
                    .iter()
                    .map(|d| (sys::cstr::c_str(&d.pm_ev_name), d.pm_ev_code))
                    .filter(|(n, _)| !n.is_empty())
                    .collect();
            }
        }
        let ncpu = ci.pm_ncpu.clamp(1, 1 << 16);
        let npmc = ci.pm_npmc.min(1 << 12);
        // GETPMCINFO per CPU: which CPUs are absent or disabled now.
        let mut offline = Vec::new();
        for cpu in 0..ncpu.min(4096) {
            let mut req = sys::PmcInfoRequest {
                cpu: cpu as i32,
                npmc,
                pmcs: Vec::new(),
            };
            if sys.call(OpArg::GetPmcInfo(&mut req)) == Err(Errno::ENXIO) {
                offline.push(cpu);
            }
        }
        let min_reload = sys
            .sysctl_int("kern.hwpmc.mincount")
            .and_then(|m| u64::try_from(m).ok())
            .map_or(DEFAULT_MIN_RELOAD, |m| m.max(1));
        Ok(Backend {
            inner: Arc::new(Inner {
                min_reload,
                hz: sys
                    .sysctl_int("kern.hz")
                    .and_then(|h| u64::try_from(h).ok())
                    .filter(|h| (1..=1_000_000).contains(h))
                    .unwrap_or(ASSUMED_HZ),
                sys,
                machine,
                ncpu,
                npmc,
                offline,
                log: Mutex::new(None),
            }),
        })
    }

    /// What the handshake learnt: CPU type, ABI version, classes, SOFT events.
    pub fn machine(&self) -> &Machine {
        &self.inner.machine
    }

    /// Number of CPUs hwpmc reports (`pm_ncpu`).
    pub fn ncpu(&self) -> u32 {
        self.inner.ncpu
    }

    /// CPUs that were absent or disabled when the backend was opened
    /// (`Cpus::All` skips them).
    pub fn offline_cpus(&self) -> &[u32] {
        &self.inner.offline
    }

    /// `PMC_OP_GETPMCINFO`: the state of every PMC row on `cpu`.
    ///
    /// # Errors
    /// [`ErrorKind::NoSuchCpu`] for an absent or disabled CPU,
    /// [`ErrorKind::InvalidArgument`] for a CPU number out of range.
    #[doc(alias = "PMC_OP_GETPMCINFO")]
    #[doc(alias = "pmc_pmcinfo")]
    pub fn rows(&self, cpu: u32) -> Result<Vec<RowInfo>> {
        let ctx = Context {
            system: true,
            cpu: Some(cpu),
            ..Context::default()
        };
        let Ok(c) = i32::try_from(cpu) else {
            return Err(self.inner.err(PmcOp::GetPmcInfo, Errno::EINVAL, &ctx));
        };
        let mut req = sys::PmcInfoRequest {
            cpu: c,
            npmc: self.inner.npmc,
            pmcs: Vec::new(),
        };
        self.inner
            .sys
            .call(OpArg::GetPmcInfo(&mut req))
            .map_err(|e| self.inner.err(PmcOp::GetPmcInfo, e, &ctx))?;
        Ok(req.pmcs.iter().map(row_info).collect())
    }

    /// The [`Sys`] this backend talks to: [`RealSys`], or the simulator.
    pub fn sys(&self) -> &S {
        &self.inner.sys
    }

    /// `PMC_OP_PMCADMIN`: enables or disables one PMC row on one CPU
    /// (`pmccontrol -e` / `-d`). Needs root outside a jail; only idle rows
    /// can be disabled.
    ///
    /// # Errors
    /// [`ErrorKind::Permission`] without privilege, [`ErrorKind::Busy`] for
    /// a row in use, [`ErrorKind::NoSuchCpu`] / [`ErrorKind::InvalidArgument`]
    /// for a bad CPU or row.
    #[doc(alias = "PMC_OP_PMCADMIN")]
    #[doc(alias = "pmc_enable")]
    #[doc(alias = "pmc_disable")]
    pub fn set_row_enabled(&self, cpu: u32, row: u32, enabled: bool) -> Result<()> {
        let ctx = Context {
            system: true,
            cpu: Some(cpu),
            ..Context::default()
        };
        let (Ok(c), Ok(r)) = (i32::try_from(cpu), i32::try_from(row)) else {
            return Err(self.inner.err(PmcOp::PmcAdmin, Errno::EINVAL, &ctx));
        };
        let mut a = pmc_op_pmcadmin {
            pm_cpu: c,
            pm_flags: 0,
            pm_pmc: r,
            pm_state: if enabled {
                PMC_STATE_FREE
            } else {
                PMC_STATE_DISABLED
            },
        };
        self.inner
            .sys
            .call(OpArg::PmcAdmin(&mut a))
            .map_err(|e| self.inner.err(PmcOp::PmcAdmin, e, &ctx))
    }

    fn allocate_one(
        &self,
        a: &Allocation,
        encs: &[Encoding],
        cpu: u32,
        count: u64,
    ) -> Result<(u32, Encoding)> {
        let sampling = a.mode.is_sampling();
        let system = a.scope.is_system();
        let mode = match (system, sampling) {
            (true, true) => PMC_MODE_SS,
            (true, false) => PMC_MODE_SC,
            (false, true) => PMC_MODE_TS,
            (false, false) => PMC_MODE_TC,
        };
        let mut flags = 0;
        for (f, b) in [
            (Flags::DESCENDANTS, PMC_F_DESCENDANTS),
            (Flags::CALLCHAIN, PMC_F_CALLCHAIN),
            (Flags::LOG_PROCEXIT, PMC_F_LOG_PROCEXIT),
            (Flags::LOG_PROCCSW, PMC_F_LOG_PROCCSW),
            (Flags::USERCALLCHAIN, PMC_F_USERCALLCHAIN),
        ] {
            if a.flags.contains(f) {
                flags |= b;
            }
        }
        if !sampling {
            // meaningless for counting; hwpmc ignores them
            flags &= !(PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN);
        }
        let ctx = Context {
            system,
            sampling,
            cpu: system.then_some(cpu),
            event: Some(a.event.to_string()),
            ..Context::default()
        };
        let mut last = None;
        for enc in encs {
            let mut req = pmc_op_pmcallocate {
                pm_caps: enc.caps,
                pm_cpu: if system { cpu } else { PMC_CPU_ANY },
                pm_class: enc.class,
                pm_ev: enc.ev,
                pm_flags: flags | enc.flags,
                pm_mode: mode,
                pm_count: count,
                pm_md: enc.md,
                ..Default::default()
            };
            match self.inner.sys.call(OpArg::PmcAllocate(&mut req)) {
                Ok(()) => return Ok((req.pm_pmcid, enc.clone())),
                // No suitable row in this class: try the next encoding.
                Err(e @ (Errno::EINVAL | Errno::EBUSY)) => last = Some(e),
                Err(e) => return Err(self.inner.err(PmcOp::PmcAllocate, e, &ctx)),
            }
        }
        Err(self
            .inner
            .err(PmcOp::PmcAllocate, last.unwrap_or(Errno::EINVAL), &ctx))
    }

    fn cpus(&self, cpus: &Cpus) -> Vec<(u32, bool)> {
        match cpus {
            Cpus::All => (0..self.inner.ncpu)
                .filter(|c| !self.inner.offline.contains(c))
                .map(|c| (c, true))
                .collect(),
            Cpus::One(c) => vec![(*c, false)],
            Cpus::List(l) => l.iter().map(|c| (*c, false)).collect(),
        }
    }
}

/// Nanoseconds per unit of `event` as this backend reports it: the portable `cpu-clock` and
/// `task-clock` are nanoseconds on every backend ([`pmc_core::PortableEvent::CpuClock`]), but
/// hwpmc has no nanosecond clock: they count `SOFT-CLOCK.HARD`, one per `hardclock()` call on
/// the CPU running the target (`kern_clock.c` `hardclock()`:
/// `PMC_SOFT_CALL_TF( , , clock, hard, ...)`; `hwpmc_soft.c` `pmc_soft_intr()` adds 1), so a
/// tick is `1e9 / kern.hz` ns of them. 1 for every other event (`SOFT-CLOCK.HARD` by its own
/// name counts ticks, as on FreeBSD).
fn ns_per_unit(event: &pmc_core::EventSpec, hz: u64) -> u64 {
    if event
        .as_portable()
        .is_some_and(pmc_core::PortableEvent::is_clock)
    {
        (1_000_000_000 / hz.max(1)).max(1)
    } else {
        1
    }
}

/// `value` of `event` in the kernel's unit: nanoseconds of a portable clock become ticks of
/// `kern.hz` (rounded to the nearest, at least 1), everything else stays.
fn to_kernel_units(event: &pmc_core::EventSpec, value: u64, hz: u64) -> u64 {
    match ns_per_unit(event, hz) {
        1 => value,
        ns => (value.saturating_add(ns / 2) / ns).max(1),
    }
}

/// The reload count for `rate`, raised to the kernel's floor, and a
/// warning when the kernel will not sample as asked (hwpmc raises any
/// smaller count, hwpmc_mod.c PMC_OP_PMCALLOCATE): the effective rate is
/// computed and the nearest count the kernel honours is asked for, so the
/// log and the descriptor say what really happens.
fn period(
    rate: Rate,
    enc: Option<&Encoding>,
    hz: u64,
    min_reload: u64,
    event: &str,
) -> (u64, Option<String>) {
    // Events per second of the event's own clock, where it has one.
    let clock = match enc {
        Some(e) if e.class == PMC_CLASS_SOFT && e.name.starts_with("SOFT-CLOCK") => {
            Some((hz, "clock ticks", format!("kern.hz {hz}")))
        }
        Some(e) if e.class == PMC_CLASS_SOFT => None,
        _ => Some((
            NOMINAL_EVENTS_PER_SEC,
            "events",
            format!("{NOMINAL_EVENTS_PER_SEC} events/s nominal"),
        )),
    };
    let (wanted, asked) = match rate {
        Rate::Period(p) => (p.max(1), format!("a period of {p}")),
        Rate::Frequency(f) => {
            let f = f.max(1);
            let p = match &clock {
                Some((per_sec, _, _)) => (per_sec / f).max(1),
                None => 1,
            };
            (p, format!("{f} Hz"))
        }
    };
    if wanted >= min_reload {
        return (wanted, None);
    }
    let effective = match (&clock, rate) {
        (Some((per_sec, unit, basis)), _) => {
            let hz_eff = *per_sec as f64 / min_reload as f64;
            format!(
                "one sample per {min_reload} {unit}, about {hz_eff:.3} Hz ({basis}){}",
                if matches!(enc, Some(e) if e.class == PMC_CLASS_SOFT) {
                    " per CPU"
                } else {
                    ""
                }
            )
        }
        (None, _) => format!("one sample per {min_reload} events"),
    };
    let warning = format!(
        "{event}: {asked} needs a reload count of {wanted}, below hwpmc's minimum of \
         {min_reload} (kern.hwpmc.mincount); sampling at {effective} instead"
    );
    (min_reload, Some(warning))
}

/// One allocated PMC: for system scope on several CPUs, one hwpmc PMC per
/// CPU (read as their sum).
pub struct FreebsdPmc<S: Sys = RealSys> {
    inner: Arc<Inner<S>>,
    allocation: Allocation,
    /// (CPU for system scope, hwpmc id).
    ids: Vec<(Option<u32>, u32)>,
    encoding: Encoding,
    count: u64,
    /// Why the PMC samples less often than asked, if it does.
    rate_warning: Option<String>,
    /// State and targets, with hwpmc's rules (`pmc_core::lifecycle`).
    life: Lifecycle,
    running_since: Option<Instant>,
    ran: Duration,
    released: bool,
}

impl<S: Sys> std::fmt::Debug for FreebsdPmc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreebsdPmc")
            .field("allocation", &self.allocation)
            .field("ids", &self.ids)
            .field("state", &self.life.state())
            .finish_non_exhaustive()
    }
}

impl<S: Sys> FreebsdPmc<S> {
    /// Nanoseconds per unit of this PMC's readings: `1e9 / kern.hz` for the portable clocks
    /// (hwpmc counts them in ticks), 1 otherwise.
    fn ns_per_unit(&self) -> u64 {
        ns_per_unit(&self.allocation.event, self.inner.hz)
    }

    /// `PMC_OP_PMCRW` of a system-scope sampling PMC: per CPU, the
    /// kernel's reload-down counter, the events left until the next sample
    /// (`hwpmc_core.c:iap_read_pmc`). Not an event total.
    ///
    /// A process-scope sampling PMC has no such value to read: hwpmc keeps
    /// its countdown per target thread and answers PMCRW with
    /// `pm_savedvalue`, which sampling never changes (0 unless written;
    /// `hwpmc_mod.c`@009268db `pmc_do_op_pmcrw()`, `pmc_process_csw_out()`),
    /// so this refuses it.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a counting PMC (use `read`);
    /// [`ErrorKind::NotSupported`] for process scope; the `PMC_OP_PMCRW`
    /// errors.
    pub fn sample_countdown(&self) -> Result<Vec<(Option<u32>, u64)>> {
        if !self.allocation.mode.is_sampling() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Read,
                "sample_countdown is for sampling PMCs",
            )
            .with_help("use Pmc::read for a counting PMC"));
        }
        if !self.allocation.scope.is_system() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc keeps the countdown of a process-scope sampling PMC ({}) per target thread; PMC_OP_PMCRW returns a saved value that sampling never changes",
                    self.allocation.event
                ),
            )
            .with_help("count the samples in the log, or use a system-scope PMC (Allocation::system) to read its countdown"));
        }
        self.ids
            .iter()
            .map(|(cpu, id)| Ok((*cpu, self.rw(*id, *cpu, None)?)))
            .collect()
    }

    /// Why this PMC samples less often than its allocation asked (hwpmc's
    /// minimum reload count), if it does; also in `native_config` as
    /// `warning`.
    pub fn rate_warning(&self) -> Option<&str> {
        self.rate_warning.as_deref()
    }

    /// hwpmc sends the samples of a PMC attached to its owner to profil(2),
    /// never to the log (`hwpmc_mod.c:pmc_process_samples`: "if
    /// (pm->pm_flags & PMC_F_ATTACHED_TO_OWNER) addupc_intr(...) else
    /// pmclog_process_callchain(...)"): refuse rather than log nothing.
    fn refuse_sampling_self(&self, op: Op) -> Result<()> {
        Err(Error::new(
            ErrorKind::NotSupported,
            op,
            format!(
                "hwpmc does not log the samples of a process-scope sampling PMC ({}) attached to the process that allocated it: it feeds them to profil(2)",
                self.allocation.event
            ),
        )
        .with_help(
            "sample another process (Pmc::attach with Target::Pid, or Target::Exec for a command launched paused), or use system scope (Allocation::system)",
        ))
    }

    /// A PMC whose records go to the log (sampling, or LOG_PROCCSW /
    /// LOG_PROCEXIT), in a Backend without a log while another Backend of
    /// this process holds hwpmc's one log: the kernel would start it (the
    /// process owns a log: `pmc_start()` tests the owner's
    /// PMC_PO_OWNS_LOGFILE) and write its records to the other Backend's
    /// sink. Refused instead.
    fn refuse_foreign_log(&self) -> Result<()> {
        let logs = self.allocation.mode.is_sampling()
            || self.allocation.flags.contains(Flags::LOG_PROCCSW)
            || self.allocation.flags.contains(Flags::LOG_PROCEXIT);
        if !logs || self.inner.has_log() || !kernel_logs().contains(&self.inner.log_key()) {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::LogRequired,
            Op::Start,
            format!(
                "{} writes to hwpmc's log, which another pmc_freebsd::Backend in this process holds: the kernel keeps one log per process, so its records would go to that Backend's sink",
                self.allocation.event
            ),
        )
        .with_help("allocate it from the Backend that holds the log, or drop that Backend and configure_log on this one"))
    }

    /// Whether a `PMC_F_DESCENDANTS` attach to `target` would take in the
    /// owner (this process): `target` is one of its ancestors. hwpmc then
    /// links the owner too (`hwpmc_mod.c`@009268db `pmc_attach_process()`
    /// walks the target's `p_children`), `pmc_link_target_process()` sets
    /// `PMC_F_ATTACHED_TO_OWNER` ("if (pm->pm_owner->po_owner ==
    /// pp->pp_proc) pm->pm_flags |= PMC_F_ATTACHED_TO_OWNER"), and
    /// `pmc_process_samples()` then sends every sample of the PMC to
    /// profil(2), none to the log. The ancestors come from
    /// [`Sys::parent_pid`]; where it cannot tell, this says no.
    fn subtree_holds_owner(&self, target: Target) -> bool {
        if !self.allocation.flags.contains(Flags::DESCENDANTS) {
            return false;
        }
        let (Target::Pid(t) | Target::Exec(t)) = target else {
            return false;
        };
        let Ok(t) = i32::try_from(t) else {
            return false;
        };
        let mut pid = self.inner.sys.current_pid();
        // A bounded walk: pid 1 (init) or 0 ends it, as does a loop.
        for _ in 0..4096 {
            if pid == t {
                return true;
            }
            if pid <= 1 {
                return false;
            }
            match self.inner.sys.parent_pid(pid) {
                Some(parent) if parent != pid => pid = parent,
                _ => return false,
            }
        }
        false
    }

    /// The hwpmc handles: `(cpu, pmcid)`, one per CPU for system scope.
    pub fn pmc_ids(&self) -> &[(Option<u32>, u32)] {
        &self.ids
    }

    fn ctx(&self, cpu: Option<u32>) -> Context {
        Context {
            system: self.allocation.scope.is_system(),
            sampling: self.allocation.mode.is_sampling(),
            cpu,
            event: Some(self.allocation.event.to_string()),
            ..Context::default()
        }
    }

    /// START or STOP on every per-CPU PMC. A START that fails part-way
    /// stops the ones already started, so the PMC stays all-or-nothing.
    fn simple(&self, op: PmcOp) -> Result<()> {
        for (i, (cpu, id)) in self.ids.iter().enumerate() {
            let mut s = pmc_op_simple { pm_pmcid: *id };
            let arg = match op {
                PmcOp::PmcStart => OpArg::PmcStart(&mut s),
                _ => OpArg::PmcStop(&mut s),
            };
            if let Err(e) = self.inner.sys.call(arg) {
                if op == PmcOp::PmcStart {
                    for (_, started) in &self.ids[..i] {
                        let mut s = pmc_op_simple { pm_pmcid: *started };
                        let _ = self.inner.sys.call(OpArg::PmcStop(&mut s));
                    }
                }
                return Err(self.inner.err(op, e, &self.ctx(*cpu)));
            }
        }
        Ok(())
    }

    /// The error hwpmc gives for what the life cycle refused (the same errno
    /// through the same map, so the same message as the kernel's answer).
    fn refused(&self, op: PmcOp, r: Refusal, pid: Option<i32>) -> Error {
        let mut ctx = self.ctx(self.ids.first().and_then(|(cpu, _)| *cpu));
        ctx.write = r.op() == Op::Write;
        ctx.pid = pid;
        self.inner.err(op, Errno(r.hwpmc_errno()), &ctx)
    }

    fn attach_op(&mut self, target: Target, detach: bool) -> Result<()> {
        let pid = match target {
            Target::Current => 0,
            Target::CurrentThread => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    if detach { Op::Detach } else { Op::Attach },
                    "hwpmc counts whole processes: there is no per-thread target on FreeBSD",
                )
                .with_help("attach Target::Current (every thread of the calling process)"));
            }
            Target::Pid(p) | Target::Exec(p) => i32::try_from(p).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    if detach { Op::Detach } else { Op::Attach },
                    format!("pid {p} is out of range"),
                )
            })?,
        };
        let op = if detach {
            PmcOp::PmcDetach
        } else {
            PmcOp::PmcAttach
        };
        let me = self.inner.sys.current_pid();
        let ctx_pid = if pid == 0 { me } else { pid };
        if !detach {
            // PMC_OP_PMCATTACH's checks of the PMC itself (system scope: EINVAL;
            // running: EBUSY), answered here as hwpmc would. Detach and the target
            // rules stay the kernel's: it keeps the real target set (descendants
            // added, exited targets dropped) and tells ESRCH from EINVAL.
            self.life
                .check_process_scope(Op::Attach)
                .and_then(|()| self.life.check_stopped(Op::Attach))
                .map_err(|r| self.refused(op, r, Some(ctx_pid)))?;
        }
        let attached = self.life.is_attached(target);
        for (cpu, id) in &self.ids {
            let mut a = pmc_op_pmcattach {
                pm_pmc: *id,
                pm_pid: pid,
            };
            let arg = if detach {
                OpArg::PmcDetach(&mut a)
            } else {
                OpArg::PmcAttach(&mut a)
            };
            self.inner.sys.call(arg).map_err(|e| {
                let mut ctx = self.ctx(*cpu);
                ctx.pid = Some(ctx_pid);
                ctx.attached = Some(attached);
                self.inner.err(op, e, &ctx)
            })?;
        }
        if detach {
            self.life.record_detach(target);
        } else {
            self.life.record_attach(target);
        }
        Ok(())
    }

    fn rw(&self, id: u32, cpu: Option<u32>, new: Option<u64>) -> Result<u64> {
        let mut rw = pmc_op_pmcrw {
            pm_flags: PMC_F_OLDVALUE | if new.is_some() { PMC_F_NEWVALUE } else { 0 },
            pm_pmcid: id,
            pm_value: new.unwrap_or(0),
        };
        self.inner.sys.call(OpArg::PmcRw(&mut rw)).map_err(|e| {
            let mut ctx = self.ctx(cpu);
            ctx.write = new.is_some();
            self.inner.err(PmcOp::PmcRw, e, &ctx)
        })?;
        Ok(rw.pm_value)
    }

    fn times(&self) -> u64 {
        let mut d = self.ran;
        if let Some(s) = self.running_since {
            d += s.elapsed();
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if ns == 0 && (self.running_since.is_some() || self.life.state() == State::Stopped) {
            1
        } else {
            ns
        }
    }

    /// hwpmc keeps a sampling PMC's recent samples in per-CPU rings until
    /// the next hardclock tick, and then logs only those whose PMC still
    /// runs (`hwpmc_mod.c`@009268db `pmc_process_samples()`: "/* skip
    /// non-running samples */ if (pm->pm_state != PMC_STATE_RUNNING) goto
    /// entrydone;"); PMCSTOP and PMCRELEASE do not drain the rings. So
    /// before stopping or releasing a running sampling PMC, FLUSHLOG, which
    /// processes every CPU's ring first (`hwpmc_logging.c` `pmclog_flush()`
    /// -> `pmclog_schedule_all()` -> `pmclog_schedule_one_cond()`: "if
    /// (PMC_CPU_HAS_SAMPLES(cpu)) PMC_CALL_HOOK_UNLOCKED(curthread,
    /// PMC_FN_DO_SAMPLES, NULL)"). Errors are ignored: without a log there
    /// is nothing to keep.
    fn drain_samples(&self) {
        if !self.allocation.mode.is_sampling() || self.life.state() != State::Running {
            return;
        }
        let has_log = self
            .inner
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if has_log {
            let _ = self.inner.sys.call(OpArg::FlushLog);
        }
    }

    fn do_release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        self.drain_samples();
        let mut first = None;
        for (cpu, id) in &self.ids {
            let mut s = pmc_op_simple { pm_pmcid: *id };
            if let Err(e) = self.inner.sys.call(OpArg::PmcRelease(&mut s)) {
                first.get_or_insert_with(|| self.inner.err(PmcOp::PmcRelease, e, &self.ctx(*cpu)));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl<S: Sys> Drop for FreebsdPmc<S> {
    fn drop(&mut self) {
        let _ = self.do_release();
    }
}

impl<S: Sys + 'static> pmc_core::Pmc for FreebsdPmc<S> {
    fn allocation(&self) -> &Allocation {
        &self.allocation
    }

    fn state(&self) -> State {
        self.life.state()
    }

    fn attach(&mut self, target: Target) -> Result<()> {
        if self.allocation.mode.is_sampling()
            && !self.allocation.scope.is_system()
            && self.life.is_owner(target)
        {
            return self.refuse_sampling_self(Op::Attach);
        }
        if self.allocation.mode.is_sampling()
            && !self.allocation.scope.is_system()
            && self.subtree_holds_owner(target)
        {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Attach,
                format!(
                    "{target:?} is an ancestor of this process: with descendants, hwpmc would attach this process too and then feed every sample of {} to profil(2), logging none",
                    self.allocation.event
                ),
            )
            .with_help(
                "attach without Flags::DESCENDANTS, attach to a process that is not an ancestor (e.g. Target::Exec for a command launched paused), or use system scope (Allocation::system)",
            ));
        }
        self.attach_op(target, false)
    }

    fn detach(&mut self, target: Target) -> Result<()> {
        self.attach_op(target, true)
    }

    fn targets(&self) -> Vec<Target> {
        self.life.targets().to_vec()
    }

    fn start(&mut self) -> Result<()> {
        if !self.life.start_needed() {
            return Ok(());
        }
        // Started without a target, hwpmc attaches it to its owner
        // (hwpmc_mod.c:pmc_start), which for sampling logs nothing.
        if self.allocation.mode.is_sampling() && self.life.start_attaches_owner() {
            return self.refuse_sampling_self(Op::Start);
        }
        self.refuse_foreign_log()?;
        self.simple(PmcOp::PmcStart)?;
        // Running, and attached to the owner if it had no target.
        self.life.record_start();
        self.running_since = Some(Instant::now());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        if !self.life.stop_needed() {
            // Nothing to stop. (hwpmc answers EINVAL for a PMC that never
            // started; like the other backends, this is a no-op.)
            return Ok(());
        }
        self.drain_samples();
        self.simple(PmcOp::PmcStop)?;
        self.life.record_stop();
        if let Some(s) = self.running_since.take() {
            self.ran += s.elapsed();
        }
        Ok(())
    }

    /// Counting PMCs only: hwpmc reads a system sampling PMC as its
    /// reload-down counter (the events left until the next sample,
    /// `hwpmc_core.c:iap_read_pmc`) and a process sampling PMC as
    /// `pm_savedvalue` (0 unless written), never an event total, so `read`
    /// refuses them ([`ErrorKind::NotSupported`]); a system PMC's
    /// countdown is `FreebsdPmc::sample_countdown`.
    fn read(&self) -> Result<Reading> {
        if self.allocation.mode.is_sampling() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc reads a sampling PMC ({}) as the countdown to its next sample (system scope) or a saved value sampling never changes (process scope), not as an event total",
                    self.allocation.event
                ),
            )
            .with_help(
                "allocate a counting PMC for totals (Allocation::counting), or count the samples in the log; FreebsdPmc::sample_countdown gives a system PMC's countdown",
            ));
        }
        let mut total = 0u64;
        for (cpu, id) in &self.ids {
            total = total.wrapping_add(self.rw(*id, *cpu, None)?);
        }
        let t = self.times();
        Ok(Reading::new(total.saturating_mul(self.ns_per_unit()), t, t))
    }

    fn read_instances(&self) -> Result<Vec<InstanceReading>> {
        let t = self.times();
        if self.allocation.scope.is_system() {
            let mut out = Vec::with_capacity(self.ids.len());
            for (cpu, id) in &self.ids {
                let v = self.rw(*id, *cpu, None)?.saturating_mul(self.ns_per_unit());
                out.push(InstanceReading {
                    instance: Instance::Cpu(cpu.unwrap_or(0)),
                    reading: Reading::new(v, t, t),
                });
            }
            return Ok(out);
        }
        match self.life.targets() {
            [one] => Ok(vec![InstanceReading {
                instance: Instance::Target(*one),
                reading: self.read()?,
            }]),
            _ => Err(Error::new(
                ErrorKind::NotSupported,
                Op::Read,
                format!(
                    "hwpmc reads a process PMC only as the total over its {} targets",
                    self.life.targets().len()
                ),
            )
            .with_help("use one PMC per target, or read() for the total")),
        }
    }

    fn write(&mut self, value: u64) -> Result<u64> {
        // PMC_OP_PMCRW with PMC_F_NEWVALUE on a running PMC: EBUSY.
        self.life
            .check_stopped(Op::Write)
            .map_err(|r| self.refused(PmcOp::PmcRw, r, None))?;
        let mut old = 0u64;
        let unit = self.ns_per_unit();
        for (i, (cpu, id)) in self.ids.clone().into_iter().enumerate() {
            let v = if i == 0 { value / unit } else { 0 };
            old = old.wrapping_add(self.rw(id, cpu, Some(v))?);
        }
        Ok(old.saturating_mul(unit))
    }

    /// Sampling PMCs: `PMC_OP_PMCSETCOUNT`, the reload count of every
    /// per-CPU PMC. Counting PMCs: the count starts from `count`. hwpmc's
    /// SETCOUNT of a counting PMC only sets `pm_initial`, which only
    /// `pmc_start()` of a system PMC loads (`hwpmc_mod.c`@009268db
    /// PMC_OP_PMCSETCOUNT: "else pm->pm_sc.pm_initial = sc.pm_count"): a
    /// process PMC would ignore it. So a counting PMC gets SETCOUNT (for the
    /// next start of a system PMC) and a `PMC_F_NEWVALUE` write (the value
    /// read from now on, and what a process PMC counts on from), as
    /// [`write`](pmc_core::Pmc::write) does: all of `count` on the first
    /// CPU, 0 on the others.
    fn set_count(&mut self, count: u64) -> Result<()> {
        // PMC_OP_PMCSETCOUNT on a running PMC: EBUSY.
        self.life
            .check_stopped(Op::SetCount)
            .map_err(|r| self.refused(PmcOp::PmcSetCount, r, None))?;
        // A portable clock's count is nanoseconds; hwpmc's is ticks.
        let count = to_kernel_units(&self.allocation.event, count, self.inner.hz);
        let sampling = self.allocation.mode.is_sampling();
        for (i, (cpu, id)) in self.ids.clone().into_iter().enumerate() {
            let this = if sampling || i == 0 { count } else { 0 };
            let mut s = pmc_op_pmcsetcount {
                pm_count: this,
                pm_pmcid: id,
            };
            self.inner
                .sys
                .call(OpArg::PmcSetCount(&mut s))
                .map_err(|e| self.inner.err(PmcOp::PmcSetCount, e, &self.ctx(cpu)))?;
            if !sampling {
                self.rw(id, cpu, Some(this))?;
            }
        }
        self.count = count;
        Ok(())
    }

    fn native_config(&self) -> Vec<NativeField> {
        let f = |n: &str, v: String| NativeField {
            name: n.to_owned(),
            value: v,
        };
        let mode = match (
            self.allocation.scope.is_system(),
            self.allocation.mode.is_sampling(),
        ) {
            (true, true) => "PMC_MODE_SS",
            (true, false) => "PMC_MODE_SC",
            (false, true) => "PMC_MODE_TS",
            (false, false) => "PMC_MODE_TC",
        };
        let w = self.encoding.md.words();
        vec![
            f("event", self.encoding.name.clone()),
            f("pm_class", format!("{:#x}", self.encoding.class)),
            f("pm_ev", format!("{:#x}", self.encoding.ev)),
            f("pm_mode", mode.to_owned()),
            f("pm_caps", format!("{:#x}", self.encoding.caps)),
            f("pm_flags", format!("{:#x}", self.encoding.flags)),
            f("pm_count", self.count.to_string()),
            f(
                "pm_md",
                format!("{:#x} {:#x} {:#x} {:#x}", w[0], w[1], w[2], w[3]),
            ),
            f(
                "pm_pmcid",
                self.ids
                    .iter()
                    .map(|(_, id)| format!("{id:#x}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ]
        .into_iter()
        .chain(
            matches!(
                self.encoding.class,
                PMC_CLASS_IAF | PMC_CLASS_IAP | PMC_CLASS_K8
            )
            .then(|| {
                f(
                    "freebsd-name",
                    events::freebsd_pmclog_name(self.encoding.ev, self.encoding.flags).describe(),
                )
            }),
        )
        .chain(self.rate_warning.clone().map(|w| f("warning", w)))
        .collect()
    }

    fn release(mut self) -> Result<()> {
        self.do_release()
    }
}

/// PMCs started and stopped together. hwpmc has no hardware groups, so the
/// members are programmed one after another; their reads are not taken at
/// the same instant.
pub struct FreebsdGroup<S: Sys = RealSys> {
    allocations: Vec<Allocation>,
    members: Vec<FreebsdPmc<S>>,
    /// The group's state and targets (each member keeps its own too).
    life: Lifecycle,
}

impl<S: Sys> std::fmt::Debug for FreebsdGroup<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreebsdGroup")
            .field("members", &self.members)
            .finish()
    }
}

impl<S: Sys + 'static> pmc_core::Group for FreebsdGroup<S> {
    fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }
    fn state(&self) -> State {
        self.life.state()
    }
    /// Attaches every member; if one fails, the members already attached
    /// are detached again, so the group stays as it was.
    fn attach(&mut self, target: Target) -> Result<()> {
        fan_out_or_undo(
            &mut self.members,
            |m| pmc_core::Pmc::attach(m, target),
            |m| {
                let _ = pmc_core::Pmc::detach(m, target);
            },
        )?;
        self.life.record_attach(target);
        Ok(())
    }
    /// Detaches every member, stopping at the first error.
    fn detach(&mut self, target: Target) -> Result<()> {
        fan_out(&mut self.members, |m| pmc_core::Pmc::detach(m, target))?;
        self.life.record_detach(target);
        Ok(())
    }
    /// Starts every member; if one fails, the members already started are
    /// stopped again, so the group runs whole or not at all.
    fn start(&mut self) -> Result<()> {
        fan_out_or_undo(&mut self.members, pmc_core::Pmc::start, |m| {
            let _ = pmc_core::Pmc::stop(m);
        })?;
        self.life.record_start();
        Ok(())
    }
    /// Stops every member, stopping at the first error.
    fn stop(&mut self) -> Result<()> {
        fan_out(&mut self.members, pmc_core::Pmc::stop)?;
        self.life.record_stop();
        Ok(())
    }
    /// Each member's [`read_instances`](pmc_core::Pmc::read_instances), joined by
    /// instance (hwpmc has no group read: the members are read one after the other).
    fn read_instances(&self) -> Result<Vec<GroupInstanceReading>> {
        let mut out: Vec<GroupInstanceReading> = Vec::new();
        for (n, m) in self.members.iter().enumerate() {
            let mine = pmc_core::Pmc::read_instances(m)?;
            if n == 0 {
                out = mine
                    .into_iter()
                    .map(|i| GroupInstanceReading {
                        instance: i.instance,
                        readings: vec![i.reading],
                    })
                    .collect();
                continue;
            }
            if mine.len() != out.len()
                || mine.iter().zip(&out).any(|(a, b)| a.instance != b.instance)
            {
                return Err(Error::new(
                    ErrorKind::InvalidState,
                    Op::Read,
                    format!(
                        "group member {n} counts on other instances than the leader \
                         ({} against {})",
                        mine.len(),
                        out.len()
                    ),
                )
                .with_help(
                    "attach and detach the group as a whole (Group::attach, Group::detach)",
                ));
            }
            for (slot, i) in out.iter_mut().zip(mine) {
                slot.readings.push(i.reading);
            }
        }
        Ok(out)
    }
    fn read_into(&self, out: &mut [Reading]) -> Result<()> {
        if out.len() != self.members.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Read,
                format!(
                    "read_into needs {} slots, got {}",
                    self.members.len(),
                    out.len()
                ),
            ));
        }
        for (slot, m) in out.iter_mut().zip(&self.members) {
            *slot = pmc_core::Pmc::read(m)?;
        }
        Ok(())
    }
}

/// pmc-core's [`Backend`](pmc_core::Backend) trait, implemented by this crate's `Backend`
/// struct (`pmc_freebsd::Backend`, which the `pmc` facade names `pmc::Native` on FreeBSD):
/// the struct is named after the trait it implements, so this reads `impl Backend for Backend`.
impl<S: Sys + 'static> pmc_core::Backend for Backend<S> {
    type Pmc = FreebsdPmc<S>;
    type Group = FreebsdGroup<S>;

    fn name(&self) -> &'static str {
        "freebsd-hwpmc"
    }

    fn allocate(&self, a: &Allocation) -> Result<FreebsdPmc<S>> {
        refuse_dwarf(a)?;
        let sampling = a.mode.is_sampling();
        let encs = events::resolve(&a.event, &self.inner.machine, sampling)?;
        let (count, rate_warning) = match a.mode {
            Mode::Sampling(rate) => period(
                // A portable clock's period is nanoseconds; hwpmc counts ticks.
                match rate {
                    Rate::Period(p) => Rate::Period(to_kernel_units(&a.event, p, self.inner.hz)),
                    f => f,
                },
                encs.first(),
                self.inner.hz,
                self.inner.min_reload,
                &a.event.to_string(),
            ),
            Mode::Counting => (0, None),
        };
        let mut ids = Vec::new();
        let mut chosen = None;
        match &a.scope {
            Scope::Process => {
                let (id, enc) = self.allocate_one(a, &encs, PMC_CPU_ANY, count)?;
                ids.push((None, id));
                chosen = Some(enc);
            }
            Scope::System { cpu } => {
                let mut held: Vec<(Option<u32>, u32)> = Vec::new();
                let mut first_err = None;
                for (c, skip_absent) in self.cpus(cpu) {
                    // Once one CPU chose an encoding, use it on every CPU.
                    let encs_here = chosen
                        .as_ref()
                        .map_or_else(|| encs.clone(), |e: &Encoding| vec![e.clone()]);
                    match self.allocate_one(a, &encs_here, c, count) {
                        Ok((id, enc)) => {
                            held.push((Some(c), id));
                            chosen = Some(enc);
                        }
                        Err(e) if skip_absent && e.kind() == ErrorKind::NoSuchCpu => {}
                        Err(e) => {
                            first_err = Some(e);
                            break;
                        }
                    }
                }
                if let Some(e) = first_err.or_else(|| {
                    held.is_empty().then(|| {
                        Error::new(ErrorKind::NoSuchCpu, Op::Allocate, "no CPU is online")
                            .with_help("check sysctl kern.smp.cpus")
                    })
                }) {
                    for (_, id) in held {
                        let mut s = pmc_op_simple { pm_pmcid: id };
                        let _ = self.inner.sys.call(OpArg::PmcRelease(&mut s));
                    }
                    return Err(e);
                }
                ids = held;
            }
        }
        let Some(encoding) = chosen else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "nothing was allocated",
            ));
        };
        Ok(FreebsdPmc {
            inner: self.inner.clone(),
            allocation: a.clone(),
            ids,
            encoding,
            count,
            rate_warning,
            life: Lifecycle::new(
                &a.scope,
                u32::try_from(self.inner.sys.current_pid()).unwrap_or(0),
            ),
            running_since: None,
            ran: Duration::ZERO,
            released: false,
        })
    }

    fn allocate_group(&self, allocations: &[Allocation]) -> Result<FreebsdGroup<S>> {
        for a in allocations {
            refuse_dwarf(a)?;
        }
        let Some(first) = allocations.first() else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "a group needs at least one member",
            ));
        };
        if allocations.iter().any(|a| a.scope != first.scope) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Op::Allocate,
                "all members of a group must share the scope",
            ));
        }
        let members = allocations
            .iter()
            .map(|a| self.allocate(a))
            .collect::<Result<Vec<_>>>()?;
        Ok(FreebsdGroup {
            allocations: allocations.to_vec(),
            members,
            life: Lifecycle::new(
                &first.scope,
                u32::try_from(self.inner.sys.current_pid()).unwrap_or(0),
            ),
        })
    }

    /// hwpmc's stream is read by a thread that converts each kernel record
    /// into the pmc-log format as it arrives (`pmc_log::hwpmc::StreamImporter`,
    /// holding at most `pmc_log::hwpmc::MAX_BUFFERED` bytes of an incomplete
    /// record) and writes it to `sink` a pmc-log block at a time;
    /// [`flush_log`](pmc_core::Backend::flush_log) pushes everything so far
    /// to `sink`, and the end of the sink (`close_log`, a replacing
    /// `configure_log`, or dropping the backend) writes the clean-close
    /// marker. Use the inherent `Backend::configure_hwpmc_log` for hwpmc's own
    /// format.
    ///
    /// hwpmc gives a process one log for as long as it owns PMCs (after
    /// `PMC_OP_CLOSELOG` it refuses a new one with ENOMEM), so the kernel
    /// log is configured on the first call and kept until the backend is
    /// dropped; later calls swap the sink in user space. A new sink starts
    /// with the records that describe the session so far and that the
    /// kernel never writes again (INITIALIZE, PMC allocations, attaches and
    /// detaches, mappings and unmappings, execs, forks, exits, the process
    /// and thread dump of system sampling), so each sink is a complete log.
    ///
    /// The log is the process's, not the Backend's: while one Backend of a
    /// process holds it, another's `configure_log` fails with
    /// [`ErrorKind::Busy`], and starting that other Backend's sampling or
    /// log-process PMCs fails with [`ErrorKind::LogRequired`] (the kernel
    /// would send their records to the first Backend's sink). Dropping the
    /// Backend that holds the log frees it for the next one, once no other
    /// Backend of the process has PMCs allocated (hwpmc keeps the
    /// process's shut-down owner descriptor while it owns PMCs).
    fn configure_log(&self, sink: LogSink) -> Result<()> {
        self.configure_log_impl(sink, LogFormat::PmcLog)
    }

    /// `PMC_OP_FLUSHLOG`, then waits (at most a few tens of ms on an idle
    /// log) until the log reader has taken in what the kernel wrote to the
    /// log, converted it, and flushed `sink`: a reader of `sink` then sees
    /// every record written so far. (hwpmc writes its buffers from a kernel
    /// thread: records still in flight there come with the next flush.)
    fn flush_log(&self) -> Result<()> {
        let ctl = self.sink_ctl(PmcOp::FlushLog)?;
        self.inner
            .sys
            .call(OpArg::FlushLog)
            .map_err(|e| self.inner.err(PmcOp::FlushLog, e, &Context::default()))?;
        ctl.flush()
    }

    /// Ends the sink: everything the kernel wrote so far reaches it, then
    /// the clean-close marker. The kernel log itself stays configured (see
    /// [`configure_log`](pmc_core::Backend::configure_log)): samples of
    /// PMCs still running are dropped until the next `configure_log`, and
    /// counted in the inherent `Backend::log_bytes_discarded`.
    fn close_log(&self) -> Result<()> {
        let ctl = self.sink_ctl(PmcOp::CloseLog)?;
        let _ = self.inner.sys.call(OpArg::FlushLog);
        ctl.swap(None)
    }

    fn write_log(&self, user_data: u32) -> Result<()> {
        self.sink_ctl(PmcOp::WriteLog)?;
        let mut w = pmc_op_writelog {
            pm_userdata: user_data,
        };
        self.inner
            .sys
            .call(OpArg::WriteLog(&mut w))
            .map_err(|e| self.inner.err(PmcOp::WriteLog, e, &Context::default()))
    }

    /// As the `info` module lists them (hwpmc has no tracepoints).
    fn list_events(&self, _tracepoints: bool) -> Vec<pmc_core::info::EventInfo> {
        crate::info::list_events(self)
    }

    /// As the `info` module checks them.
    fn diagnose(&self) -> Vec<pmc_core::info::Check> {
        crate::info::diagnose(self)
    }

    /// As the inherent `Backend::log_error`. `sampling_summary` and
    /// `log_counts` stay NotSupported: hwpmc counts no samples or losses
    /// outside its log, and its log has no counter records.
    fn log_error(&self) -> Option<Error> {
        self.pump_ctl()?.sink_error()
    }
}

/// Closes our end of the socket pair and waits for the reader thread;
/// returns the error it met, if any.
fn finish_pump(mut p: LogPump) -> Option<Error> {
    #[cfg(unix)]
    drop(p.write_end);
    let t = p.thread.take()?;
    match t.join() {
        Ok(e) => e,
        Err(_) => Some(Error::new(
            ErrorKind::Os,
            Op::Log,
            "the log reader thread panicked",
        )),
    }
}

impl<S: Sys> Backend<S> {
    /// `PMC_OP_CONFIGURELOG` with hwpmc's own record format: the kernel's
    /// log stream is copied to `sink` unchanged, as `pmcstat -O` writes it
    /// (readable by `pmcstat -R` and pmclog(3)). Replaces any earlier sink,
    /// as [`configure_log`](pmc_core::Backend::configure_log) does.
    ///
    /// # Errors
    /// [`ErrorKind::Os`] when the socket pair or reader thread cannot be
    /// created; the `PMC_OP_CONFIGURELOG` errors (e.g. [`ErrorKind::Busy`]).
    #[doc(alias = "PMC_OP_CONFIGURELOG")]
    #[doc(alias = "pmc_configure_logfile")]
    pub fn configure_hwpmc_log(&self, sink: LogSink) -> Result<()> {
        self.configure_log_impl(sink, LogFormat::Hwpmc)
    }

    /// The error that stopped the configured log's sink, if one did (a sink
    /// write error such as a full disk, or a conversion error), as the log
    /// reader made it where it failed: for I/O errors the errno and a
    /// `std::io::Error` (its `kind()`) as the source, with the kind
    /// `ErrorKind::Os` (a full disk: ENOSPC, `StorageFull`) or
    /// `ErrorKind::Permission` (EACCES/EPERM); a sink whose `io::Error`
    /// wraps a `pmc_core::Error` gives that error's kind, errno and help,
    /// with the error itself as the source. The log reader records
    /// it the moment it happens, so a caller polling this learns of it at
    /// once rather than at `close_log`. After it the sink receives nothing
    /// more; the reader keeps reading and dropping hwpmc's stream so the
    /// kernel's writer never blocks.
    pub fn log_error(&self) -> Option<Error> {
        self.pump_ctl()?.sink_error()
    }

    fn pump_ctl(&self) -> Option<Arc<PumpCtl>> {
        let g = self.inner.log.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map(|p| p.ctl.clone())
    }

    /// The reader of a log with a sink, or the error hwpmc gives `op`
    /// without a log (EINVAL: "no log is configured").
    fn sink_ctl(&self, op: PmcOp) -> Result<Arc<PumpCtl>> {
        match self.pump_ctl() {
            Some(c) if c.has_sink() => Ok(c),
            _ => Err(self.inner.err(op, Errno::EINVAL, &Context::default())),
        }
    }

    /// Bytes of hwpmc's log stream the log reader has taken in so far;
    /// `None` before the first `configure_log`.
    pub fn log_bytes_read(&self) -> Option<u64> {
        self.pump_ctl().map(|c| c.stats().bytes_read)
    }

    /// The most bytes of hwpmc's stream the log reader has held at once
    /// while waiting for the rest of a record (at most
    /// `pmc_log::hwpmc::MAX_BUFFERED` plus one record, however long the
    /// session); `None` before the first `configure_log`.
    pub fn log_max_buffered(&self) -> Option<usize> {
        self.pump_ctl().map(|c| c.stats().max_buffered)
    }

    /// Bytes of kernel log records that arrived while no sink was
    /// configured (after `close_log`, from PMCs still running) and were
    /// dropped; `None` before the first `configure_log`.
    pub fn log_bytes_discarded(&self) -> Option<u64> {
        self.pump_ctl().map(|c| c.stats().discarded)
    }

    #[cfg(unix)]
    fn configure_log_impl(&self, sink: LogSink, format: LogFormat) -> Result<()> {
        use std::os::fd::AsRawFd;
        let ctx = Context::default();
        let mut guard = self.inner.log.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let key = self.inner.log_key();
            let mut logs = kernel_logs();
            if logs.contains(&key) {
                return Err(Error::new(
                    ErrorKind::Busy,
                    Op::Log,
                    "another pmc_freebsd::Backend in this process holds hwpmc's log: the kernel keeps one log per process, and its records (this Backend's too) go there",
                )
                .with_help(
                    "log through one Backend per process: give that Backend the sink (configure_log replaces its sink), or drop it first",
                ));
            }
            // A socket pair rather than a pipe: the reader can wait with a
            // timeout and drain without blocking (hwpmc writes to any
            // writable fd; pmcstat -O host:port logs to a socket too).
            let (read_end, write_end) = std::os::unix::net::UnixStream::pair().map_err(|e| {
                Error::new(
                    ErrorKind::Os,
                    Op::Log,
                    format!("cannot create the log socket pair: {e}"),
                )
                .with_source(e)
            })?;
            let write_end = std::os::fd::OwnedFd::from(write_end);
            let mut cl = pmc_op_configurelog {
                pm_flags: 0,
                pm_logfd: write_end.as_raw_fd(),
            };
            self.inner
                .sys
                .call(OpArg::ConfigureLog(&mut cl))
                .map_err(|e| self.inner.err(PmcOp::ConfigureLog, e, &ctx))?;
            let ctl = Arc::new(PumpCtl::default());
            let thread_ctl = ctl.clone();
            let thread = std::thread::Builder::new()
                .name("pmc-freebsd-log".into())
                .spawn(move || crate::log::run(read_end, &thread_ctl));
            let thread = match thread {
                Ok(t) => t,
                Err(e) => {
                    let mut off = pmc_op_configurelog {
                        pm_flags: 0,
                        pm_logfd: -1,
                    };
                    let _ = self.inner.sys.call(OpArg::ConfigureLog(&mut off));
                    self.inner.remove_owner();
                    return Err(Error::new(
                        ErrorKind::Os,
                        Op::Log,
                        format!("cannot start the log reader: {e}"),
                    )
                    .with_source(e));
                }
            };
            logs.insert(key);
            drop(logs);
            *guard = Some(LogPump {
                key,
                write_end,
                thread: Some(thread),
                ctl,
            });
        }
        let ctl = guard.as_ref().map(|p| p.ctl.clone());
        drop(guard);
        let Some(ctl) = ctl else {
            return Err(Error::new(ErrorKind::Os, Op::Log, "no log reader"));
        };
        // Everything the kernel wrote so far goes to the old sink (if any),
        // which then ends cleanly; its errors have no caller left to report
        // to, so only the new sink's start counts.
        let _ = self.inner.sys.call(OpArg::FlushLog);
        ctl.swap(Some((sink, format)))
    }

    #[cfg(not(unix))]
    fn configure_log_impl(&self, _sink: LogSink, _format: LogFormat) -> Result<()> {
        Err(Error::new(
            ErrorKind::Unsupported,
            Op::Log,
            "hwpmc logs need file descriptors",
        ))
    }
}

impl<S: Sys> Drop for Inner<S> {
    fn drop(&mut self) {
        let pump = self.log.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = pump {
            // The end of the kernel log: CLOSELOG (its record ends the
            // current sink), then deconfigure so the reader sees EOF.
            let _ = self.sys.call(OpArg::FlushLog);
            let _ = self.sys.call(OpArg::CloseLog);
            let mut off = pmc_op_configurelog {
                pm_flags: 0,
                pm_logfd: -1,
            };
            let _ = self.sys.call(OpArg::ConfigureLog(&mut off));
            let key = p.key;
            let _ = finish_pump(p);
            // Every PMC of this Backend is released by now (each holds the
            // Inner): remove the shut-down owner descriptor so a later
            // Backend in this process can log.
            self.remove_owner();
            kernel_logs().remove(&key);
        }
    }
}

/// hwpmc cannot copy user stacks with a sample (its callchains are the kernel's frame-pointer
/// walks, `pmc_save_user_callchain`), so DWARF call graphs are refused.
fn refuse_dwarf(a: &Allocation) -> Result<()> {
    if a.call_graph.stack_size().is_some() {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "hwpmc(4) cannot capture user stacks, so DWARF call graphs are not available on FreeBSD",
        )
        .with_help("use CallGraph::FramePointers (the default) and build the profiled code with -fno-omit-frame-pointer"));
    }
    Ok(())
}
