//! libpmc's global state and the operations behind each entry point, in safe
//! Rust: the backend opened by `pmc_init`, the allocated PMCs by id, the
//! machine facts, and the errno each refusal gets (each function's ERRORS
//! section in FreeBSD's manual pages). `sys/` converts C arguments and
//! results around these.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pmc_facade::{
    Allocation, Backend, Cpus, ErrorKind, EventSource, EventSpec, Flags, Group, Mode, Native,
    NativeGroup, NativePmc, Pmc, PortableEvent, Rate, Reading, Scope, Status, Target,
};

use crate::abi::*;
use crate::names;

/// A failure to report to C: the errno and the message `pmc_strerror_last`
/// returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CError {
    /// The errno.
    pub errno: i32,
    /// What went wrong and, when known, what to do.
    pub message: String,
}

impl CError {
    /// A failure with an errno and a message.
    pub(crate) fn new(errno: i32, message: impl Into<String>) -> CError {
        CError {
            errno,
            message: message.into(),
        }
    }
}

impl From<pmc_facade::Error> for CError {
    fn from(e: pmc_facade::Error) -> CError {
        CError::new(errno_of(&e), e.to_string())
    }
}

/// pmc_start(3)'s `EDOOFUS` ("a PMC that requires a log file and no log file
/// was configured"): FreeBSD's own; on Linux, which has none, `EBADFD`, the
/// value `<pmc.h>` defines `EDOOFUS` as there.
#[cfg(target_os = "freebsd")]
pub(crate) const EDOOFUS: i32 = libc::EDOOFUS;
/// pmc_start(3)'s `EDOOFUS` ("a PMC that requires a log file and no log file
/// was configured"): FreeBSD's own; on Linux, which has none, `EBADFD`, the
/// value `<pmc.h>` defines `EDOOFUS` as there.
#[cfg(not(target_os = "freebsd"))]
pub(crate) const EDOOFUS: i32 = libc::EBADFD;

/// The errno FreeBSD's libpmc would set for an error of this kind: what
/// hwpmc returns for the same refusal (the manual pages' ERRORS), and
/// `EOPNOTSUPP` for what the machine cannot do.
pub(crate) fn errno_of(e: &pmc_facade::Error) -> i32 {
    use libc::*;
    match e.kind() {
        // pmc_allocate(3), pmc_attach(3): "without adequate process privilege" is EPERM
        // (perf's EACCES included).
        ErrorKind::Permission => EPERM,
        ErrorKind::NoPmu | ErrorKind::NotSupported | ErrorKind::Unsupported => EOPNOTSUPP,
        ErrorKind::NoSuchEvent
        | ErrorKind::Parse
        | ErrorKind::InvalidArgument
        | ErrorKind::NotAttached
        | ErrorKind::InvalidState => EINVAL,
        ErrorKind::LogRequired => EDOOFUS,
        ErrorKind::NoSuchProcess => ESRCH,
        ErrorKind::Busy => EBUSY,
        ErrorKind::AlreadyAttached => EEXIST,
        ErrorKind::TooManyOpenFiles => e.errno().unwrap_or(EMFILE),
        ErrorKind::MlockLimit => ENOMEM,
        ErrorKind::NoSuchCpu | ErrorKind::DriverNotLoaded => ENXIO,
        ErrorKind::VersionMismatch => EPROTO,
        _ => e.errno().unwrap_or(EIO),
    }
}

type R<T> = Result<T, CError>;

/// Rows per class per CPU this library reports: PMCs are perf events, which
/// the kernel multiplexes, so the number is a bound this library keeps, not
/// a hardware count.
pub(crate) const ROWS_PER_CLASS: u32 = 64;

/// `PMC_CPU_ANY`'s 12 bits: the CPU field of a process-mode PMC's id.
const ID_CPU_ANY: u32 = 0xFFF;

struct Slot {
    pmc: NativePmc,
    mode: u32,
    class: u32,
    event: u32,
    /// The id's CPU field: the CPU, or [`ID_CPU_ANY`].
    cpu: u32,
    flags: u32,
    reload: u64,
    /// Started at least once (pmc_stop(3): stopping a PMC never started is EINVAL).
    started: bool,
    running: bool,
    /// The processes attached (pids; the caller's own as its pid).
    targets: Vec<u32>,
}

struct Lib {
    backend: Native,
    pmcs: BTreeMap<pmc_id_t, Slot>,
    /// The extension's measurements (`pmc_measure_begin`), by handle.
    measures: BTreeMap<pmc_measure_t, NativeGroup>,
    /// The next measurement handle (never 0, never reused).
    next_measure: pmc_measure_t,
    /// A log is configured (pmc_configure_logfile(3): a second one is EBUSY).
    log: bool,
}

static LIB: Mutex<Option<Lib>> = Mutex::new(None);
static CPUINFO: OnceLock<pmc_cpuinfo> = OnceLock::new();

/// Calls into the library and the calls that failed (`pmc_get_driver_stats`'s
/// `pm_syscalls` and `pm_syscall_errors`).
pub(crate) static CALLS: AtomicU32 = AtomicU32::new(0);
/// See [`CALLS`].
pub(crate) static FAILED_CALLS: AtomicU32 = AtomicU32::new(0);

fn lock() -> MutexGuard<'static, Option<Lib>> {
    // A panic while holding the lock was caught at the boundary; the state
    // is still consistent (every change is one map insert or removal).
    LIB.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_initialized() -> CError {
    CError::new(
        libc::ENXIO,
        "pmc_init has not been called (or it failed): call pmc_init() first",
    )
}

fn with_lib<T>(f: impl FnOnce(&mut Lib) -> R<T>) -> R<T> {
    let mut g = lock();
    match g.as_mut() {
        Some(lib) => f(lib),
        None => Err(not_initialized()),
    }
}

/// `pmc_init`: opens the backend once; later calls succeed at once.
pub(crate) fn init() -> R<()> {
    let mut g = lock();
    if g.is_some() {
        return Ok(());
    }
    let backend = Native::open().map_err(|e| {
        let mut c = CError::from(e);
        if c.errno == libc::EOPNOTSUPP {
            c.errno = libc::ENXIO;
        }
        c
    })?;
    *g = Some(Lib {
        backend,
        pmcs: BTreeMap::new(),
        measures: BTreeMap::new(),
        next_measure: 1,
        log: false,
    });
    drop(g);
    let _ = cpuinfo();
    Ok(())
}

/// Whether `pmc_init` succeeded.
pub(crate) fn initialized() -> bool {
    lock().is_some()
}

/// Number of CPUs (the highest possible CPU number + 1).
pub(crate) fn ncpu() -> u32 {
    crate::sys::cpus_configured().max(1)
}

/// Whether CPU `cpu` (below [`ncpu`]) is online: Linux's
/// `/sys/devices/system/cpu/cpuN/online` ("0" offline; absent for CPUs that
/// cannot go offline). FreeBSD's hwpmc: "a disabled or absent CPU" is ENXIO.
fn cpu_online(cpu: u32) -> bool {
    if cfg!(not(target_os = "linux")) {
        return true;
    }
    std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/online"))
        .map_or(true, |s| s.trim() != "0")
}

/// The class of this machine's hardware events: by the CPU's vendor, when
/// it has a PMU perf drives.
pub(crate) fn hardware_class() -> Option<u32> {
    let pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        || std::fs::read_dir("/sys/bus/event_source/devices")
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("armv8"))
            })
            .unwrap_or(false);
    if !pmu {
        return None;
    }
    if cfg!(target_arch = "aarch64") {
        return Some(PMC_CLASS_ARMV8);
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if info.contains("AuthenticAMD") || info.contains("HygonGenuine") {
        Some(PMC_CLASS_K8)
    } else if info.contains("GenuineIntel") {
        Some(PMC_CLASS_IAP)
    } else {
        None
    }
}

const SOFT_CAPS: u32 =
    PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM;

fn class_caps(class: u32) -> u32 {
    if class == PMC_CLASS_SOFT {
        SOFT_CAPS
    } else {
        SOFT_CAPS | PMC_CAP_EDGE | PMC_CAP_THRESHOLD | PMC_CAP_INVERT | PMC_CAP_QUALIFIER
    }
}

/// `pmc_cpuinfo`'s answer, computed once.
pub(crate) fn cpuinfo() -> &'static pmc_cpuinfo {
    CPUINFO.get_or_init(|| {
        let empty = pmc_classinfo {
            pm_class: 0,
            pm_caps: 0,
            pm_width: 0,
            pm_num: 0,
        };
        let mut classes = [empty; PMC_CLASS_MAX as usize];
        let mut n = 0;
        for class in std::iter::once(PMC_CLASS_SOFT).chain(hardware_class()) {
            classes[n] = pmc_classinfo {
                pm_class: class,
                pm_caps: class_caps(class),
                pm_width: 64,
                pm_num: ROWS_PER_CLASS,
            };
            n += 1;
        }
        let nclass = u32::try_from(n).unwrap_or(1);
        pmc_cpuinfo {
            pm_cputype: PMC_CPU_GENERIC,
            pm_ncpu: ncpu(),
            pm_npmc: nclass * ROWS_PER_CLASS,
            pm_nclass: nclass,
            pm_classes: classes,
        }
    })
}

/// `pmc_cpuinfo`, after `pmc_init`.
pub(crate) fn checked_cpuinfo() -> R<&'static pmc_cpuinfo> {
    if !initialized() {
        return Err(not_initialized());
    }
    Ok(cpuinfo())
}

/// `pmc_npmc(cpu)`.
pub(crate) fn npmc(cpu: i32) -> R<u32> {
    let info = checked_cpuinfo()?;
    check_cpu(cpu, info)?;
    Ok(info.pm_npmc)
}

/// A CPU number: `EINVAL` outside `0..pmc_ncpu()`, `ENXIO` offline.
fn check_cpu(cpu: i32, info: &pmc_cpuinfo) -> R<u32> {
    match u32::try_from(cpu) {
        Ok(c) if c < info.pm_ncpu => {
            if cpu_online(c) {
                Ok(c)
            } else {
                Err(CError::new(
                    libc::ENXIO,
                    format!("CPU {c} is offline (/sys/devices/system/cpu/cpu{c}/online is 0)"),
                ))
            }
        }
        _ => Err(CError::new(
            libc::EINVAL,
            format!("CPU {cpu} is not in 0..{} (pmc_ncpu())", info.pm_ncpu),
        )),
    }
}

/// Whether `spec` names a software event (class SOFT on Linux).
fn is_soft(spec: &EventSpec) -> bool {
    match &spec.source {
        EventSource::Portable(p) => matches!(
            p,
            PortableEvent::CpuClock
                | PortableEvent::TaskClock
                | PortableEvent::PageFaults
                | PortableEvent::ContextSwitches
                | PortableEvent::CpuMigrations
        ),
        EventSource::Generic(g) => matches!(
            g.as_str(),
            "minor-faults"
                | "major-faults"
                | "alignment-faults"
                | "emulation-faults"
                | "dummy"
                | "bpf-output"
                | "cgroup-switches"
                | "cs"
                | "migrations"
                | "faults"
        ),
        EventSource::Tracepoint { .. } => true,
        EventSource::Hwpmc(n) => {
            let n = n.to_ascii_uppercase();
            n.starts_with("SOFT") || n.starts_with("PAGE_FAULT") || n.starts_with("CLOCK.")
        }
        _ => false,
    }
}

/// The reload count of a sampling PMC when `pmc_allocate`'s count is 0
/// (pmcstat's default).
pub(crate) const DEFAULT_RELOAD: u64 = 65536;

/// The flags pmc_allocate(3) takes.
const KNOWN_FLAGS: u32 = PMC_F_DESCENDANTS
    | PMC_F_LOG_PROCCSW
    | PMC_F_LOG_PROCEXIT
    | PMC_F_CALLCHAIN
    | PMC_F_USERCALLCHAIN
    | PMC_F_EV_PMU;

/// pmc_allocate(3)'s "flags ... unsupported or otherwise incompatible with
/// the requested PMC mode" (EINVAL), as hwpmc checks them: known bits only;
/// `PMC_F_USERCALLCHAIN` only with `PMC_F_CALLCHAIN`, callchains only when
/// sampling; descendants and the process logs only in process modes.
fn check_flags(flags: u32, mode: u32) -> R<Flags> {
    let bad = |why: String| Err(CError::new(libc::EINVAL, why));
    if flags & !KNOWN_FLAGS != 0 {
        return bad(format!(
            "flags {flags:#x} have bits pmc_allocate does not take ({:#x}); allowed: \
             PMC_F_DESCENDANTS, PMC_F_LOG_PROCCSW, PMC_F_LOG_PROCEXIT, PMC_F_CALLCHAIN, \
             PMC_F_USERCALLCHAIN, PMC_F_EV_PMU",
            flags & !KNOWN_FLAGS
        ));
    }
    if flags & PMC_F_USERCALLCHAIN != 0 && flags & PMC_F_CALLCHAIN == 0 {
        return bad("PMC_F_USERCALLCHAIN needs PMC_F_CALLCHAIN".into());
    }
    if flags & (PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN) != 0 && !is_sampling_mode(mode) {
        return bad(
            "PMC_F_CALLCHAIN and PMC_F_USERCALLCHAIN are for sampling PMCs (PMC_MODE_TS, \
             PMC_MODE_SS), not counting ones"
                .into(),
        );
    }
    if flags & (PMC_F_DESCENDANTS | PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT) != 0
        && is_system_mode(mode)
    {
        return bad(
            "PMC_F_DESCENDANTS, PMC_F_LOG_PROCCSW and PMC_F_LOG_PROCEXIT are for process-mode \
             PMCs (PMC_MODE_TC, PMC_MODE_TS), not system-mode ones"
                .into(),
        );
    }
    let mut f = Flags::NONE;
    for (bit, flag) in [
        (PMC_F_DESCENDANTS, Flags::DESCENDANTS),
        (PMC_F_LOG_PROCCSW, Flags::LOG_PROCCSW),
        (PMC_F_LOG_PROCEXIT, Flags::LOG_PROCEXIT),
        (PMC_F_CALLCHAIN, Flags::CALLCHAIN),
        (PMC_F_USERCALLCHAIN, Flags::USERCALLCHAIN),
    ] {
        if flags & bit != 0 {
            f |= flag;
        }
    }
    Ok(f)
}

/// The PMC_MODE_* value and CPU as pmc-core's scope and mode, and the id's
/// CPU field; pmc_allocate(3)'s EINVAL for a bad mode or CPU (a process-mode
/// PMC takes `PMC_CPU_ANY`, a system-mode one a CPU of `0..pmc_ncpu()`),
/// ENXIO for an offline CPU.
fn mode_of(mode: u32, cpu: i32, count: u64, info: &pmc_cpuinfo) -> R<(Scope, Mode, u32, u64)> {
    let reload = if count == 0 { DEFAULT_RELOAD } else { count };
    let sampling = Mode::Sampling(Rate::Period(reload));
    let process = |m: Mode| -> R<(Scope, Mode, u32, u64)> {
        if cpu != PMC_CPU_ANY {
            return Err(CError::new(
                libc::EINVAL,
                format!(
                    "a process-mode PMC takes cpu PMC_CPU_ANY (-1), not {cpu}: it counts its \
                     processes on every CPU"
                ),
            ));
        }
        let r = if m.is_sampling() { reload } else { 0 };
        Ok((Scope::Process, m, ID_CPU_ANY, r))
    };
    match mode {
        PMC_MODE_SC | PMC_MODE_SS => {
            if cpu == PMC_CPU_ANY {
                return Err(CError::new(
                    libc::EINVAL,
                    format!(
                        "a system-mode PMC needs a CPU in 0..{}, not PMC_CPU_ANY (which is for \
                         process modes)",
                        info.pm_ncpu
                    ),
                ));
            }
            let c = check_cpu(cpu, info)?;
            let (m, r) = if mode == PMC_MODE_SS {
                (sampling, reload)
            } else {
                (Mode::Counting, 0)
            };
            Ok((Scope::System { cpu: Cpus::One(c) }, m, c, r))
        }
        PMC_MODE_TC => process(Mode::Counting),
        PMC_MODE_TS => process(sampling),
        _ => Err(CError::new(
            libc::EINVAL,
            format!("mode {mode} is not a PMC_MODE_* value (SS 0, SC 1, TS 2, TC 3)"),
        )),
    }
}

/// The kernel's id of a PMC hwpmc allocated (FreeBSD: the log names it so;
/// one id, for one CPU or a process).
fn kernel_id(pmc: &NativePmc) -> Option<pmc_id_t> {
    let ids = pmc
        .native_config()
        .into_iter()
        .find(|f| f.name == "pm_pmcid")?
        .value;
    let hex = ids.strip_prefix("0x")?;
    (!hex.contains(',')).then(|| u32::from_str_radix(hex, 16).ok())?
}

/// `pmc_allocate(spec, mode, flags, cpu, count)`: the new PMC's id.
pub(crate) fn allocate(spec: &str, mode: u32, flags: u32, cpu: i32, count: u64) -> R<pmc_id_t> {
    with_lib(|lib| {
        let info = cpuinfo();
        let (scope, pmode, id_cpu, reload) = mode_of(mode, cpu, count, info)?;
        let pflags = check_flags(flags, mode)?;
        let event: EventSpec = spec.trim().parse().map_err(|e| {
            CError::new(
                libc::EINVAL,
                format!(
                    "event specification {:?} does not parse: {e}",
                    crate::sys::cut(spec)
                ),
            )
        })?;
        let class = if is_soft(&event) {
            PMC_CLASS_SOFT
        } else {
            hardware_class().unwrap_or(PMC_CLASS_SOFT)
        };
        let code = names::soft_code(spec).unwrap_or_else(|| names::event_code(&event.to_string()));
        let prefix = pmc_id_make(id_cpu, mode, class, 0);
        let Some(id) = (0..=0xFFu32)
            .map(|row| prefix | row)
            .find(|id| !lib.pmcs.contains_key(id))
        else {
            return Err(CError::new(
                libc::EBUSY,
                "no free row: 256 PMCs of this CPU, mode and class are allocated; pmc_release some",
            ));
        };
        let alloc = Allocation::counting(event)
            .scope(scope)
            .mode(pmode)
            .flags(pflags)
            .log_id(id);
        let pmc = lib.backend.allocate(&alloc)?;
        // hwpmc names its PMCs: its log uses the kernel's ids, so this library does too.
        let id = match kernel_id(&pmc) {
            Some(k) if !lib.pmcs.contains_key(&k) => k,
            _ => id,
        };
        lib.pmcs.insert(
            id,
            Slot {
                pmc,
                mode,
                class,
                event: code,
                cpu: id_cpu,
                flags,
                reload,
                started: false,
                running: false,
                targets: Vec::new(),
            },
        );
        Ok(id)
    })
}

impl Lib {
    /// The PMC `id`: pmc(3)'s EINVAL when this process owns no PMC of that id.
    fn slot(&mut self, id: pmc_id_t) -> R<&mut Slot> {
        self.pmcs.get_mut(&id).ok_or_else(|| {
            CError::new(
                libc::EINVAL,
                format!("PMC id {id:#x} is not allocated (pmc_allocate returns the ids)"),
            )
        })
    }

    /// pmc_attach(3), pmc_detach(3), pmc_release(3): ESRCH when the process
    /// owns no PMCs at all.
    fn owns_pmcs(&self, call: &str) -> R<()> {
        if self.pmcs.is_empty() {
            return Err(CError::new(
                libc::ESRCH,
                format!("{call}: this process owns no PMCs (pmc_allocate one first)"),
            ));
        }
        Ok(())
    }
}

/// The pid a pmc_attach/pmc_detach argument names (0: the caller), or
/// pmc_attach(3)'s EINVAL for "an illegal process id".
fn pid_arg(pid: libc::pid_t) -> R<u32> {
    match pid {
        0 => Ok(std::process::id()),
        p if p > 0 => Ok(p.unsigned_abs()),
        p => Err(CError::new(
            libc::EINVAL,
            format!("pid {p} is not a process id (0 is this process)"),
        )),
    }
}

fn target_of(pid: u32) -> Target {
    if pid == std::process::id() {
        Target::Current
    } else {
        Target::Pid(pid)
    }
}

/// ESRCH for a process that does not exist ("the process specified ... did
/// not exist").
fn check_exists(pid: u32) -> R<()> {
    if pmc_facade::process::exists(pid) {
        Ok(())
    } else {
        Err(CError::new(
            libc::ESRCH,
            format!("no process with pid {pid}"),
        ))
    }
}

/// `pmc_attach(id, pid)`; pid 0 is the caller.
pub(crate) fn attach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let pid = pid_arg(pid)?;
        lib.owns_pmcs("pmc_attach")?;
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} has system scope: only process-mode PMCs attach to processes"),
            ));
        }
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before pmc_attach"),
            ));
        }
        check_exists(pid)?;
        if slot.targets.contains(&pid) {
            return Err(CError::new(
                libc::EEXIST,
                format!("PMC {id:#x} is already attached to pid {pid}"),
            ));
        }
        slot.pmc.attach(target_of(pid))?;
        slot.targets.push(pid);
        Ok(())
    })
}

/// `pmc_detach(id, pid)`; pid 0 is the caller.
pub(crate) fn detach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let pid = pid_arg(pid)?;
        lib.owns_pmcs("pmc_detach")?;
        let monitored = lib.pmcs.values().any(|s| s.targets.contains(&pid));
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} has system scope: it has no processes to detach"),
            ));
        }
        check_exists(pid)?;
        if !slot.targets.contains(&pid) {
            return Err(if monitored {
                CError::new(
                    libc::EINVAL,
                    format!("PMC {id:#x} is not attached to pid {pid} (another PMC is)"),
                )
            } else {
                CError::new(
                    libc::ESRCH,
                    format!("pid {pid} is not monitored by any PMC of this process"),
                )
            });
        }
        slot.pmc.detach(target_of(pid))?;
        slot.targets.retain(|p| *p != pid);
        Ok(())
    })
}

/// `pmc_start(id)`: a process-mode PMC with no target is attached to the
/// caller (pmc_start(3)).
pub(crate) fn start(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if is_system_mode(slot.mode) && !cpu_online(slot.cpu) {
            return Err(CError::new(
                libc::ENXIO,
                format!("PMC {id:#x} counts CPU {}, which is offline", slot.cpu),
            ));
        }
        slot.pmc.start().map_err(|e| {
            let mut c = CError::from(e);
            if c.errno == EDOOFUS {
                c.message = format!(
                    "{}; pmc_configure_logfile first (pmc_start(3): EDOOFUS)",
                    c.message
                );
            }
            c
        })?;
        slot.started = true;
        slot.running = true;
        if !is_system_mode(slot.mode) && slot.targets.is_empty() {
            slot.targets.push(std::process::id());
        }
        Ok(())
    })
}

/// `pmc_stop(id)`: EINVAL for a PMC never started (pmc_start(3)).
pub(crate) fn stop(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if !slot.started {
            return Err(CError::new(
                libc::EINVAL,
                format!("PMC {id:#x} was never started (pmc_start it first)"),
            ));
        }
        slot.pmc.stop()?;
        slot.running = false;
        Ok(())
    })
}

/// `pmc_release(id)`.
pub(crate) fn release(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
        lib.owns_pmcs("pmc_release")?;
        lib.slot(id)?;
        match lib.pmcs.remove(&id) {
            Some(slot) => Ok(slot.pmc.release()?),
            None => Err(CError::new(libc::EINVAL, "PMC vanished")),
        }
    })
}

/// `pmc_read(id)`: the count, scaled when the kernel multiplexed it.
pub(crate) fn read(id: pmc_id_t) -> R<pmc_value_t> {
    with_lib(|lib| {
        let r = lib.slot(id)?.pmc.read()?;
        match r.status() {
            Status::NotSupported => Err(CError::new(
                libc::EOPNOTSUPP,
                "the kernel cannot count this event on this machine (perf: <not supported>)",
            )),
            // Never scheduled (or never started): the raw value, which holds
            // what pmc_write/pmc_set put there.
            _ => Ok(r.scaled().unwrap_or(r.value)),
        }
    })
}

/// `pmc_rw(id, new)`: writes `new`, returns the value before; EBUSY while
/// running (pmc_read(3)).
pub(crate) fn write(id: pmc_id_t, value: pmc_value_t) -> R<pmc_value_t> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before writing its count"),
            ));
        }
        Ok(slot.pmc.write(value)?)
    })
}

/// `pmc_set(id, value)`: the reload count of a sampling PMC, the start
/// value of a counting one; EBUSY while running (pmc_set(3)).
pub(crate) fn set(id: pmc_id_t, value: pmc_value_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        if slot.running {
            return Err(CError::new(
                libc::EBUSY,
                format!("PMC {id:#x} is running: pmc_stop it before pmc_set"),
            ));
        }
        slot.pmc.set_count(value)?;
        if is_sampling_mode(slot.mode) {
            slot.reload = value;
        }
        Ok(())
    })
}

/// `pmc_capabilities(id)`.
pub(crate) fn capabilities(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| Ok(class_caps(lib.slot(id)?.class)))
}

/// `pmc_width(id)`: perf keeps 64-bit counts for every event.
pub(crate) fn width(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| lib.slot(id).map(|_| 64))
}

/// `pmc_get_msr(id)`: pmc_get_msr(3)'s EINVAL cases, then ENOSYS ("the
/// underlying hardware does not support an RDPMC instruction" for a
/// register of its own): perf moves a counter between registers as it
/// schedules it, and a register holds the count less an offset.
pub(crate) fn get_msr(id: pmc_id_t) -> R<u32> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        let own = std::process::id();
        let why = if slot.mode != PMC_MODE_TC {
            Some("it is not a process-mode counting PMC (PMC_MODE_TC)")
        } else if slot.flags & PMC_F_DESCENDANTS != 0 {
            Some("it was allocated with PMC_F_DESCENDANTS")
        } else if slot.targets.iter().any(|p| *p != own) {
            Some("it is attached to processes other than its owner")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(CError::new(
                libc::EINVAL,
                format!("pmc_get_msr({id:#x}): {why}"),
            ));
        }
        Err(CError::new(
            libc::ENOSYS,
            "pmc_get_msr: no register holds this PMC's count on Linux: perf moves a counter \
             between registers as it schedules it, and a register holds the count less an \
             offset kept in the event's page; use pmc_read",
        ))
    })
}

/// `pmc_enable`/`pmc_disable(cpu, row)`: pmc_disable(3)'s errors (EPERM
/// without privilege, EINVAL for a bad CPU or row, ENXIO for an offline CPU,
/// EBUSY to disable a row in use), then EOPNOTSUPP: perf has no per-row
/// administration.
pub(crate) fn admin(call: &str, cpu: i32, row: i32, disable: bool) -> R<()> {
    let info = checked_cpuinfo()?;
    if !nix::unistd::geteuid().is_root() {
        return Err(CError::new(
            libc::EPERM,
            format!("{call}: administering PMC rows needs root (FreeBSD: PRIV_PMC_MANAGE)"),
        ));
    }
    let c = check_cpu(cpu, info)?;
    let r = usize::try_from(row)
        .ok()
        .filter(|r| *r < info.pm_npmc as usize)
        .ok_or_else(|| {
            CError::new(
                libc::EINVAL,
                format!(
                    "{call}: row {row} is not in 0..{} (pmc_npmc())",
                    info.pm_npmc
                ),
            )
        })?;
    if disable {
        let rows = pmcinfo(i32::try_from(c).unwrap_or(0))?;
        if rows.get(r).is_some_and(|x| x.pm_rowdisp != PMC_DISP_FREE) {
            return Err(CError::new(
                libc::EBUSY,
                format!("{call}: row {row} of CPU {c} is in use by an allocated PMC"),
            ));
        }
    }
    Err(unsupported(call, "perf has no per-row administration"))
}

/// `pmc_pmcinfo(cpu)`: the rows of `cpu`, this process's PMCs on it first.
pub(crate) fn pmcinfo(cpu: i32) -> R<Vec<pmc_info>> {
    let info = checked_cpuinfo()?;
    let cpu = check_cpu(cpu, info)?;
    with_lib(|lib| {
        let pid = i32::try_from(std::process::id()).unwrap_or(0);
        let free = |class: u32, row: u32| {
            let mut r = pmc_info {
                pm_name: [0; PMC_NAME_MAX as usize],
                pm_class: class,
                pm_enabled: 1,
                pm_rowdisp: PMC_DISP_FREE,
                pm_ownerpid: -1,
                pm_mode: 0,
                pm_event: 0,
                pm_flags: 0,
                pm_reloadcount: 0,
            };
            let cls = names::class(class).map(CStr::to_bytes).unwrap_or(b"?");
            let name = format!("{}-{row}", String::from_utf8_lossy(cls));
            for (d, s) in r
                .pm_name
                .iter_mut()
                .zip(name.bytes().take(PMC_NAME_MAX as usize - 1))
            {
                *d = s as std::ffi::c_char;
            }
            r
        };
        let mut rows = Vec::new();
        for c in &info.pm_classes[..info.pm_nclass as usize] {
            let class = c.pm_class;
            let mut mine = lib
                .pmcs
                .iter()
                .filter(|(_, s)| s.class == class && (s.cpu == cpu || s.cpu == ID_CPU_ANY));
            for row in 0..c.pm_num {
                let mut r = free(class, row);
                if let Some((_, s)) = mine.next() {
                    r.pm_rowdisp = if s.cpu != ID_CPU_ANY {
                        PMC_DISP_STANDALONE
                    } else {
                        PMC_DISP_THREAD
                    };
                    r.pm_ownerpid = pid;
                    r.pm_mode = s.mode;
                    r.pm_event = s.event;
                    r.pm_flags = s.flags;
                    r.pm_reloadcount = s.reload;
                }
                rows.push(r);
            }
        }
        Ok(rows)
    })
}

/// `pmc_event_names_of_class`: the SOFT events, and the machine's hardware
/// class's; EINVAL for any other class (pmc_event_names_of_class(3): "cl was
/// invalid").
pub(crate) fn event_names_of_class(class: u32) -> R<&'static [&'static CStr]> {
    if !initialized() {
        return Err(not_initialized());
    }
    if class == PMC_CLASS_SOFT {
        return Ok(&names::SOFT_EVENTS);
    }
    let Some(name) = names::class(class) else {
        return Err(CError::new(
            libc::EINVAL,
            format!("{class} is not a PMC_CLASS_* value"),
        ));
    };
    // The classes pmc_cpuinfo reports (computed once), so that the two answers agree.
    let info = cpuinfo();
    let listed = info.pm_classes[..(info.pm_nclass as usize).min(PMC_CLASS_MAX as usize)]
        .iter()
        .any(|c| c.pm_class == class);
    if listed {
        if let Some(names) = HARDWARE_NAMES.get() {
            return Ok(names);
        }
        let events = with_lib(|lib| Ok(lib.backend.list_events(false)))?;
        return Ok(HARDWARE_NAMES.get_or_init(|| hardware_event_names(&events)));
    }
    Err(CError::new(
        libc::EINVAL,
        format!(
            "class {} is not this machine's: pmc_cpuinfo lists its classes",
            name.to_string_lossy()
        ),
    ))
}

/// The most events one measurement takes (the group read's bound).
pub(crate) const MEASURE_MAX_EVENTS: usize = 32;

/// `pmc_measure_begin`: the events, as one group counting the calling process and the
/// threads it creates later, started; its handle.
pub(crate) fn measure_begin(specs: &[&str]) -> R<pmc_measure_t> {
    if specs.is_empty() || specs.len() > MEASURE_MAX_EVENTS {
        return Err(CError::new(
            libc::EINVAL,
            format!(
                "pmc_measure_begin takes 1 to {MEASURE_MAX_EVENTS} events, not {}",
                specs.len()
            ),
        ));
    }
    let allocations = specs
        .iter()
        .map(|spec| {
            spec.trim()
                .parse::<EventSpec>()
                .map(Allocation::counting)
                .map_err(|e| {
                    CError::new(
                        libc::EINVAL,
                        format!("event specification {spec:?} does not parse: {e}"),
                    )
                })
        })
        .collect::<R<Vec<_>>>()?;
    with_lib(|lib| {
        let mut group = lib.backend.allocate_group(&allocations)?;
        group.attach(Target::Current)?;
        group.start()?;
        let handle = lib.next_measure;
        lib.next_measure = lib.next_measure.checked_add(1).ok_or_else(|| {
            CError::new(libc::ENOMEM, "no measurement handles left in this process")
        })?;
        lib.measures.insert(handle, group);
        Ok(handle)
    })
}

/// The scaled counts of a measurement's group, in event order.
fn measure_values(group: &NativeGroup) -> R<Vec<pmc_value_t>> {
    let readings: Vec<Reading> = group.read()?;
    readings
        .iter()
        .zip(group.allocations())
        .map(|(r, a)| match r.status() {
            Status::NotSupported => Err(CError::new(
                libc::EOPNOTSUPP,
                format!(
                    "the kernel cannot count {} on this machine (perf: <not supported>)",
                    a.event
                ),
            )),
            // Members of a group run together: one never ran if the group never got
            // the counters. A 0 would be a wrong number.
            _ => r.scaled().ok_or_else(|| {
                CError::new(
                    libc::EBUSY,
                    format!(
                        "the group never ran ({} ns enabled, 0 running): other PMCs hold the \
                         counters it needs; measure fewer events at once",
                        r.time_enabled
                    ),
                )
            }),
        })
        .collect()
}

fn unknown_measure(handle: pmc_measure_t) -> CError {
    CError::new(
        libc::EINVAL,
        format!(
            "measurement {handle} is not running (pmc_measure_begin returns the handles; \
             pmc_measure_end frees them)"
        ),
    )
}

fn measure_of(lib: &mut Lib, handle: pmc_measure_t) -> R<&mut NativeGroup> {
    lib.measures
        .get_mut(&handle)
        .ok_or_else(|| unknown_measure(handle))
}

/// Whether `capacity` values hold the group's counts (`None`: the caller wants none).
fn check_capacity(group: &NativeGroup, capacity: Option<usize>) -> R<()> {
    let n = group.allocations().len();
    match capacity {
        Some(c) if c < n => Err(CError::new(
            libc::EINVAL,
            format!("nvalues is {c}: the measurement has {n} events, one value each"),
        )),
        _ => Ok(()),
    }
}

/// `pmc_measure_read`: the group's counts now, without stopping it, into `capacity`
/// values.
pub(crate) fn measure_read(handle: pmc_measure_t, capacity: usize) -> R<Vec<pmc_value_t>> {
    with_lib(|lib| {
        let group = measure_of(lib, handle)?;
        check_capacity(group, Some(capacity))?;
        measure_values(group)
    })
}

/// `pmc_measure_end`: stops the group, its final counts (when `capacity` is some), and
/// frees the handle. A buffer too small is refused first, the measurement kept; once
/// stopping begins, the handle is freed whatever follows.
pub(crate) fn measure_end(handle: pmc_measure_t, capacity: Option<usize>) -> R<Vec<pmc_value_t>> {
    with_lib(|lib| {
        check_capacity(measure_of(lib, handle)?, capacity)?;
        let Some(mut group) = lib.measures.remove(&handle) else {
            return Err(CError::new(libc::EINVAL, "measurement vanished"));
        };
        group.stop()?;
        if capacity.is_none() {
            return Ok(Vec::new());
        }
        measure_values(&group)
    })
}

/// The hardware class's event names, listed once per process (the caller's
/// arrays point into it, as into FreeBSD's tables).
static HARDWARE_NAMES: OnceLock<Box<[&'static CStr]>> = OnceLock::new();

/// The names of this machine's hardware events, in the backend's listing
/// order, each once: the portable hardware names (`cycles`, `instructions`),
/// perf's generic hardware and cache events, and the CPU PMU's own (sysfs
/// aliases, the pmu-events table), less those the listing found unavailable.
fn hardware_event_names(events: &[pmc_facade::info::EventInfo]) -> Box<[&'static CStr]> {
    use pmc_facade::info::{Availability, EventSource};
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in events {
        let hardware = match &e.source {
            EventSource::Portable => pmc_facade::PortableEvent::ALL
                .iter()
                .any(|p| p.is_hardware() && p.name() == e.name),
            EventSource::Hardware | EventSource::Cache => true,
            EventSource::Pmu(pmu) => pmu.starts_with("cpu") || pmu.starts_with("armv8"),
            _ => false,
        };
        if !hardware
            || matches!(e.availability, Availability::Unavailable(_))
            || e.name.contains("/.../")
            || !seen.insert(e.name.clone())
        {
            continue;
        }
        if let Ok(c) = CString::new(e.name.clone()) {
            // Leaked once per process: the names live as long as FreeBSD's tables.
            out.push(&*Box::leak(c.into_boxed_c_str()));
        }
    }
    out.into_boxed_slice()
}

/// `pmc_configure_logfile(fd)`: the log goes to `sink` (pmc-log format);
/// `None` (fd -1) ends it. pmc_configure_logfile(3): EBUSY when a log is
/// configured already, EINVAL for -1 without one.
pub(crate) fn configure_log(sink: Option<pmc_facade::LogSink>) -> R<()> {
    with_lib(|lib| match sink {
        Some(f) => {
            if lib.log {
                return Err(CError::new(
                    libc::EBUSY,
                    "a log file is configured already: pmc_configure_logfile(-1) or \
                     pmc_close_logfile ends it",
                ));
            }
            lib.backend.configure_log(f)?;
            lib.log = true;
            Ok(())
        }
        None => {
            no_log(lib, "pmc_configure_logfile(-1)")?;
            lib.log = false;
            Ok(lib.backend.close_log()?)
        }
    })
}

/// EINVAL for a log call without a log (pmc_configure_logfile(3)).
fn no_log(lib: &Lib, call: &str) -> R<()> {
    if lib.log {
        return Ok(());
    }
    Err(CError::new(
        libc::EINVAL,
        format!("{call}: no log file is configured (pmc_configure_logfile first)"),
    ))
}

/// `pmc_flush_logfile`.
pub(crate) fn flush_log() -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_flush_logfile")?;
        Ok(lib.backend.flush_log()?)
    })
}

/// `pmc_close_logfile`.
pub(crate) fn close_log() -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_close_logfile")?;
        lib.log = false;
        Ok(lib.backend.close_log()?)
    })
}

/// `pmc_writelog(udata)`.
pub(crate) fn write_log(udata: u32) -> R<()> {
    with_lib(|lib| {
        no_log(lib, "pmc_writelog")?;
        Ok(lib.backend.write_log(udata)?)
    })
}

/// `pmc_get_driver_stats`: this library's counts in hwpmc's terms: calls and
/// failed calls, samples written to the log ("interrupts processed") and
/// samples lost ("interrupts with ENOSPC").
pub(crate) fn driver_stats() -> R<pmc_driverstats> {
    with_lib(|lib| {
        let sum = lib.backend.sampling_summary().unwrap_or_default();
        let c = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Ok(pmc_driverstats {
            pm_intr_ignored: 0,
            pm_intr_processed: c(sum.samples),
            pm_intr_bufferfull: c(sum.lost),
            pm_syscalls: CALLS.load(Ordering::Relaxed),
            pm_syscall_errors: FAILED_CALLS.load(Ordering::Relaxed),
            pm_buffer_requests: 0,
            pm_buffer_requests_failed: 0,
            pm_log_sweeps: 0,
        })
    })
}

/// What Linux cannot do: `EOPNOTSUPP` with the reason.
pub(crate) fn unsupported(call: &str, why: &str) -> CError {
    CError::new(
        libc::EOPNOTSUPP,
        format!("{call}: not supported on Linux: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_facade::info::{Availability, EventInfo, EventSource};

    fn ev(name: &str, source: EventSource, availability: Availability) -> EventInfo {
        EventInfo {
            name: name.into(),
            source,
            description: String::new(),
            availability,
        }
    }

    #[test]
    fn the_hardware_class_lists_the_cpus_events_that_can_open() {
        let no = || Availability::Unavailable("no".into());
        let events = [
            ev("cycles", EventSource::Portable, Availability::Available),
            ev(
                "page-faults",
                EventSource::Portable,
                Availability::Available,
            ),
            ev("ref-cycles", EventSource::Hardware, no()),
            ev(
                "L1-dcache-loads",
                EventSource::Cache,
                Availability::Available,
            ),
            ev("task-clock", EventSource::Software, Availability::Available),
            ev(
                "armv8_pmuv3_0/cpu_cycles/",
                EventSource::Pmu("armv8_pmuv3_0".into()),
                Availability::Available,
            ),
            ev(
                "inst_retired",
                EventSource::Pmu("cpu (pmu-events x)".into()),
                Availability::NotProbed("many".into()),
            ),
            ev(
                "uncore/.../",
                EventSource::Pmu("uncore".into()),
                Availability::Available,
            ),
            ev(
                "cpu/.../",
                EventSource::Pmu("cpu".into()),
                Availability::Available,
            ),
            ev(
                "sched:sched_switch",
                EventSource::Tracepoint,
                Availability::Available,
            ),
            ev("cycles", EventSource::Hardware, Availability::Available),
        ];
        let names: Vec<&str> = hardware_event_names(&events)
            .iter()
            .map(|c| c.to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "cycles",
                "L1-dcache-loads",
                "armv8_pmuv3_0/cpu_cycles/",
                "inst_retired"
            ]
        );
    }
}
