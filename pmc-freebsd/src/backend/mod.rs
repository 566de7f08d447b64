//! `pmc_core::Backend` over hwpmc: every operation is one or more `PMC_OP_*` requests
//! through a [`Sys`]. Here: [`Backend`] (the handshake, rows and admin, the trait);
//! `inner.rs` what a Backend and its PMCs share; `alloc.rs` the allocation side, `units.rs`
//! ticks and nanoseconds; `pmc.rs` ([`FreebsdPmc`]) and `group.rs` ([`FreebsdGroup`]) the
//! read side and the verbs; `log_verbs.rs` the log verbs over `crate::log`.

use crate::errno::Errno;
use crate::errno_map::{self, Context};
use crate::events::{self, Machine};
use crate::log::LogFormat;
use crate::sys::abi::*;
use crate::sys::{self, OpArg, PmcOp, RealSys, Sys};
use pmc_core::{Allocation, Error, ErrorKind, LogSink, Op, Result};
use std::sync::{Arc, Mutex};

mod alloc;
mod group;
mod inner;
mod log_verbs;
mod pmc;
mod units;

use inner::Inner;

pub use group::FreebsdGroup;
pub use pmc::FreebsdPmc;

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
            cpu: events::host_cpu_for(ci.pm_cputype, sys.cpu_id()),
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
        self.allocate_pmc(a)
    }

    fn allocate_group<A: AsRef<[Allocation]> + ?Sized>(
        &self,
        allocations: &A,
    ) -> Result<FreebsdGroup<S>> {
        let allocations = allocations.as_ref();
        self.allocate_members(allocations)
    }

    /// Sends this process's hwpmc log, converted to pmc-log, to `sink`.
    ///
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
        self.event_listing()
    }

    /// As the `info` module checks them.
    fn diagnose(&self) -> Vec<pmc_core::info::Check> {
        self.checks()
    }

    /// As the inherent `Backend::log_error`. `sampling_summary` and
    /// `log_counts` stay NotSupported: hwpmc counts no samples or losses
    /// outside its log, and its log has no counter records.
    fn log_error(&self) -> Option<Error> {
        self.pump_ctl()?.sink_error()
    }
}
