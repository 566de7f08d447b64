//! `pmc_allocate`: the mode, CPU, flags and event checked as hwpmc checks
//! them, the event's class, and the new PMC's id.

use pmc_facade::{
    Allocation, Backend, Cpus, EventSource, EventSpec, Flags, Mode, NativePmc, Pmc, PortableEvent,
    Rate, Scope,
};
use pmc_log::hwpmc::{IdLayout, PMC_ID_CPU_ANY};

use crate::abi::*;
use crate::names;

use super::machine::{check_cpu, cpuinfo, hardware_class};
use super::{shown_spec, with_lib, CError, Slot, R};

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
        Ok((Scope::Process, m, PMC_ID_CPU_ANY, r))
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
                    shown_spec(spec)
                ),
            )
        })?;
        let class = if is_soft(&event) {
            PMC_CLASS_SOFT
        } else {
            hardware_class().unwrap_or(PMC_CLASS_SOFT)
        };
        let code = names::soft_code(spec).unwrap_or_else(|| names::event_code(&event.to_string()));
        let prefix = IdLayout::New.make(id_cpu, mode, class, 0);
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
