//! libpmc's global state and the operations behind each entry point, in safe
//! Rust: the backend opened by `pmc_init`, the allocated PMCs by id, the
//! machine facts. `sys/` converts C arguments and results around these.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
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

/// The errno FreeBSD's libpmc would set for an error of this kind: what
/// hwpmc returns for the same refusal, and `EOPNOTSUPP` for what the
/// machine cannot do.
pub(crate) fn errno_of(e: &pmc_facade::Error) -> i32 {
    use libc::*;
    match e.kind() {
        ErrorKind::Permission => e.errno().filter(|&n| n == EACCES).unwrap_or(EPERM),
        ErrorKind::NoPmu | ErrorKind::NotSupported | ErrorKind::Unsupported => EOPNOTSUPP,
        ErrorKind::NoSuchEvent
        | ErrorKind::Parse
        | ErrorKind::InvalidArgument
        | ErrorKind::NotAttached
        | ErrorKind::InvalidState
        | ErrorKind::LogRequired => EINVAL,
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

struct Slot {
    pmc: NativePmc,
    mode: u32,
    class: u32,
    event: u32,
    cpu: u32,
    flags: u32,
    reload: u64,
}

struct Lib {
    backend: Native,
    pmcs: BTreeMap<pmc_id_t, Slot>,
    /// The extension's measurements (`pmc_measure_begin`), by handle.
    measures: BTreeMap<pmc_measure_t, NativeGroup>,
    /// The next measurement handle (never 0, never reused).
    next_measure: pmc_measure_t,
    /// Names of the events with dynamic codes, `PMC_EV_LINUX_FIRST + i`.
    dyn_events: Vec<CString>,
}

static LIB: Mutex<Option<Lib>> = Mutex::new(None);
static CPUINFO: OnceLock<pmc_cpuinfo> = OnceLock::new();

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
        dyn_events: Vec::new(),
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

/// The class of this machine's hardware events: by the CPU's vendor, when
/// it has a PMU perf drives.
fn hardware_class() -> Option<u32> {
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
        return Some(pmc_class::PMC_CLASS_ARMV8 as u32);
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if info.contains("AuthenticAMD") || info.contains("HygonGenuine") {
        Some(pmc_class::PMC_CLASS_K8 as u32)
    } else if info.contains("GenuineIntel") {
        Some(pmc_class::PMC_CLASS_IAP as u32)
    } else {
        None
    }
}

const SOFT_CAPS: u32 = pmc_caps::PMC_CAP_READ as u32
    | pmc_caps::PMC_CAP_WRITE as u32
    | pmc_caps::PMC_CAP_INTERRUPT as u32
    | pmc_caps::PMC_CAP_USER as u32
    | pmc_caps::PMC_CAP_SYSTEM as u32;

fn class_caps(class: u32) -> u32 {
    if class == pmc_class::PMC_CLASS_SOFT as u32 {
        SOFT_CAPS
    } else {
        SOFT_CAPS
            | pmc_caps::PMC_CAP_EDGE as u32
            | pmc_caps::PMC_CAP_THRESHOLD as u32
            | pmc_caps::PMC_CAP_INVERT as u32
            | pmc_caps::PMC_CAP_QUALIFIER as u32
    }
}

/// `pmc_cpuinfo`'s answer, computed once.
pub(crate) fn cpuinfo() -> &'static pmc_cpuinfo {
    CPUINFO.get_or_init(|| {
        let empty = pmc_classinfo {
            pm_class: ClassArg(0),
            pm_caps: 0,
            pm_width: 0,
            pm_num: 0,
        };
        let mut classes = [empty; PMC_CLASS_MAX];
        let mut n = 0;
        for class in std::iter::once(pmc_class::PMC_CLASS_SOFT as u32).chain(hardware_class()) {
            classes[n] = pmc_classinfo {
                pm_class: ClassArg(class),
                pm_caps: class_caps(class),
                pm_width: 64,
                pm_num: ROWS_PER_CLASS,
            };
            n += 1;
        }
        let nclass = u32::try_from(n).unwrap_or(1);
        pmc_cpuinfo {
            pm_cputype: CpuTypeArg(pmc_cputype::PMC_CPU_GENERIC as u32),
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

fn check_cpu(cpu: i32, info: &pmc_cpuinfo) -> R<u32> {
    match u32::try_from(cpu) {
        Ok(c) if c < info.pm_ncpu => Ok(c),
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

/// The PMC_MODE_* value as pmc-core's scope and mode.
fn mode_of(mode: u32, cpu: i32, ncpu: u32) -> R<(Scope, Mode, u32)> {
    let sampling = Mode::Sampling(Rate::Period(DEFAULT_RELOAD));
    let system = |m: Mode| -> R<(Scope, Mode, u32)> {
        match u32::try_from(cpu) {
            Ok(c) if c < ncpu => Ok((Scope::System { cpu: Cpus::One(c) }, m, c)),
            _ => Err(CError::new(
                libc::EINVAL,
                format!(
                    "a system-mode PMC needs a CPU in 0..{ncpu}, not {cpu} (PMC_CPU_ANY is for \
                     process modes)"
                ),
            )),
        }
    };
    match mode {
        x if x == pmc_mode::PMC_MODE_SC as u32 => system(Mode::Counting),
        x if x == pmc_mode::PMC_MODE_SS as u32 => system(sampling),
        x if x == pmc_mode::PMC_MODE_TC as u32 => Ok((Scope::Process, Mode::Counting, 0xFF)),
        x if x == pmc_mode::PMC_MODE_TS as u32 => Ok((Scope::Process, sampling, 0xFF)),
        _ => Err(CError::new(
            libc::EINVAL,
            format!("mode {mode} is not a PMC_MODE_* value (SS 0, SC 1, TS 2, TC 3)"),
        )),
    }
}

/// The reload count of a sampling PMC before `pmc_set` (pmcstat's default).
pub(crate) const DEFAULT_RELOAD: u64 = 65536;

const KNOWN_FLAGS: u32 = PMC_F_DESCENDANTS
    | PMC_F_LOG_PROCCSW
    | PMC_F_LOG_PROCEXIT
    | PMC_F_CALLCHAIN
    | PMC_F_USERCALLCHAIN
    | PMC_F_EV_PMU;

fn flags_of(flags: u32) -> R<Flags> {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(CError::new(
            libc::EINVAL,
            format!(
                "flags {flags:#x} have bits pmc_allocate does not take ({:#x}); allowed: \
                 PMC_F_DESCENDANTS, PMC_F_LOG_PROCCSW, PMC_F_LOG_PROCEXIT, PMC_F_CALLCHAIN, \
                 PMC_F_USERCALLCHAIN, PMC_F_EV_PMU",
                flags & !KNOWN_FLAGS
            ),
        ));
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

/// `pmc_allocate(spec, mode, flags, cpu)`: the new PMC's id.
pub(crate) fn allocate(spec: &str, mode: u32, flags: u32, cpu: i32) -> R<pmc_id_t> {
    let ncpu = cpuinfo().pm_ncpu;
    with_lib(|lib| {
        let (scope, pmode, id_cpu) = mode_of(mode, cpu, ncpu)?;
        let pflags = flags_of(flags)?;
        let event: EventSpec = spec.trim().parse().map_err(|e| {
            CError::new(
                libc::EINVAL,
                format!("event specification {spec:?} does not parse: {e}"),
            )
        })?;
        let class = if is_soft(&event) {
            pmc_class::PMC_CLASS_SOFT as u32
        } else {
            hardware_class().unwrap_or(pmc_class::PMC_CLASS_SOFT as u32)
        };
        let code = names::soft_code(spec.trim()).unwrap_or_else(|| lib.dyn_code(&event));
        let alloc = Allocation::counting(event)
            .scope(scope)
            .mode(pmode)
            .flags(pflags);
        let pmc = lib.backend.allocate(&alloc)?;
        let prefix = id_cpu << 24 | (mode & 0xFF) << 16 | (class & 0xFF) << 8;
        let Some(id) = (0..=0xFFu32)
            .map(|row| prefix | row)
            .find(|id| !lib.pmcs.contains_key(id))
        else {
            return Err(CError::new(
                libc::EINVAL,
                "no free row: 256 PMCs of this CPU, mode and class are allocated; pmc_release some",
            ));
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
                reload: if pmode.is_sampling() {
                    DEFAULT_RELOAD
                } else {
                    0
                },
            },
        );
        Ok(id)
    })
}

impl Lib {
    fn dyn_code(&mut self, event: &EventSpec) -> u32 {
        let name = CString::new(event.to_string()).unwrap_or_default();
        let i = match self.dyn_events.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.dyn_events.push(name);
                self.dyn_events.len() - 1
            }
        };
        PMC_EV_LINUX_FIRST.saturating_add(u32::try_from(i).unwrap_or(u32::MAX))
    }

    fn slot(&mut self, id: pmc_id_t) -> R<&mut Slot> {
        self.pmcs.get_mut(&id).ok_or_else(|| {
            CError::new(
                libc::EINVAL,
                format!("PMC id {id:#x} is not allocated (pmc_allocate returns the ids)"),
            )
        })
    }
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

fn target_of(pid: libc::pid_t) -> R<Target> {
    match pid {
        0 => Ok(Target::Current),
        p if p > 0 => Ok(Target::Pid(p.unsigned_abs())),
        p => Err(CError::new(
            libc::ESRCH,
            format!("pid {p} is not a process"),
        )),
    }
}

/// `pmc_attach(id, pid)`; pid 0 is the caller.
pub(crate) fn attach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let t = target_of(pid)?;
        Ok(lib.slot(id)?.pmc.attach(t)?)
    })
}

/// `pmc_detach(id, pid)`; pid 0 is the caller.
pub(crate) fn detach(id: pmc_id_t, pid: libc::pid_t) -> R<()> {
    with_lib(|lib| {
        let t = target_of(pid)?;
        Ok(lib.slot(id)?.pmc.detach(t)?)
    })
}

/// `pmc_start(id)`.
pub(crate) fn start(id: pmc_id_t) -> R<()> {
    with_lib(|lib| Ok(lib.slot(id)?.pmc.start()?))
}

/// `pmc_stop(id)`.
pub(crate) fn stop(id: pmc_id_t) -> R<()> {
    with_lib(|lib| Ok(lib.slot(id)?.pmc.stop()?))
}

/// `pmc_release(id)`.
pub(crate) fn release(id: pmc_id_t) -> R<()> {
    with_lib(|lib| {
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

/// `pmc_rw(id, new)`: writes `new`, returns the value before.
pub(crate) fn write(id: pmc_id_t, value: pmc_value_t) -> R<pmc_value_t> {
    with_lib(|lib| Ok(lib.slot(id)?.pmc.write(value)?))
}

/// `pmc_set(id, value)`: the reload count of a sampling PMC, the start
/// value of a counting one.
pub(crate) fn set(id: pmc_id_t, value: pmc_value_t) -> R<()> {
    with_lib(|lib| {
        let slot = lib.slot(id)?;
        slot.pmc.set_count(value)?;
        if slot.mode == pmc_mode::PMC_MODE_SS as u32 || slot.mode == pmc_mode::PMC_MODE_TS as u32 {
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

/// `pmc_name_of_event`: fixed codes, then this library's dynamic ones.
pub(crate) fn event_name(code: u32) -> Option<*const std::ffi::c_char> {
    if let Some(n) = names::fixed_event(code) {
        return Some(n.as_ptr());
    }
    let i = code.checked_sub(PMC_EV_LINUX_FIRST)? as usize;
    let g = lock();
    // The CString's heap buffer does not move when the Vec grows, and
    // entries are never removed: the pointer stays valid.
    g.as_ref()?.dyn_events.get(i).map(|n| n.as_ptr())
}

/// `pmc_pmcinfo(cpu)`: the rows of `cpu`, this process's PMCs on it first.
pub(crate) fn pmcinfo(cpu: i32) -> R<Vec<pmc_info>> {
    let info = checked_cpuinfo()?;
    let cpu = check_cpu(cpu, info)?;
    with_lib(|lib| {
        let pid = i32::try_from(std::process::id()).unwrap_or(0);
        let free = |class: u32, row: u32| {
            let mut r = pmc_info {
                pm_name: [0; PMC_NAME_MAX],
                pm_class: ClassArg(class),
                pm_enabled: 1,
                pm_rowdisp: DispArg(pmc_disp::PMC_DISP_FREE as u32),
                pm_ownerpid: -1,
                pm_mode: ModeArg(0),
                pm_event: EventArg(0),
                pm_flags: 0,
                pm_reloadcount: 0,
            };
            let cls = names::class(class).map(CStr::to_bytes).unwrap_or(b"?");
            let name = format!("{}-{row}", String::from_utf8_lossy(cls));
            for (d, s) in r
                .pm_name
                .iter_mut()
                .zip(name.bytes().take(PMC_NAME_MAX - 1))
            {
                *d = s as std::ffi::c_char;
            }
            r
        };
        let mut rows = Vec::new();
        for c in &info.pm_classes[..info.pm_nclass as usize] {
            let class = c.pm_class.0;
            let mut mine = lib
                .pmcs
                .iter()
                .filter(|(_, s)| s.class == class && (s.cpu == cpu || s.cpu == 0xFF));
            for row in 0..c.pm_num {
                let mut r = free(class, row);
                if let Some((_, s)) = mine.next() {
                    let system = s.cpu != 0xFF;
                    r.pm_rowdisp = DispArg(if system {
                        pmc_disp::PMC_DISP_STANDALONE
                    } else {
                        pmc_disp::PMC_DISP_THREAD
                    } as u32);
                    r.pm_ownerpid = pid;
                    r.pm_mode = ModeArg(s.mode);
                    r.pm_event = EventArg(s.event);
                    r.pm_flags = s.flags;
                    r.pm_reloadcount = s.reload;
                }
                rows.push(r);
            }
        }
        Ok(rows)
    })
}

/// `pmc_event_names_of_class`: the SOFT events; other classes' names are
/// not listed on Linux.
pub(crate) fn event_names_of_class(class: u32) -> R<&'static [&'static CStr]> {
    if !initialized() {
        return Err(not_initialized());
    }
    if class == pmc_class::PMC_CLASS_SOFT as u32 {
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
    let listed = info.pm_classes[..(info.pm_nclass as usize).min(PMC_CLASS_MAX)]
        .iter()
        .any(|c| c.pm_class.0 == class);
    if listed {
        if let Some(names) = HARDWARE_NAMES.get() {
            return Ok(names);
        }
        let events = with_lib(|lib| Ok(lib.backend.list_events(false)))?;
        return Ok(HARDWARE_NAMES.get_or_init(|| hardware_event_names(&events)));
    }
    Err(CError::new(
        libc::EOPNOTSUPP,
        format!(
            "class {} is not this machine's: pmc_cpuinfo lists its classes",
            name.to_string_lossy()
        ),
    ))
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
/// `None` (fd -1) closes it.
pub(crate) fn configure_log(sink: Option<std::fs::File>) -> R<()> {
    with_lib(|lib| match sink {
        Some(f) => Ok(lib.backend.configure_log(Box::new(f))?),
        None => Ok(lib.backend.close_log()?),
    })
}

/// `pmc_flush_logfile`.
pub(crate) fn flush_log() -> R<()> {
    with_lib(|lib| Ok(lib.backend.flush_log()?))
}

/// `pmc_close_logfile`.
pub(crate) fn close_log() -> R<()> {
    with_lib(|lib| Ok(lib.backend.close_log()?))
}

/// `pmc_writelog(udata)`.
pub(crate) fn write_log(udata: u32) -> R<()> {
    with_lib(|lib| Ok(lib.backend.write_log(udata)?))
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
