//! The errno families `explain` tries in turn: driver, EPERM, log, CPU,
//! EBUSY, attach, allocation, log requests, row administration, generic.

use super::{Context, Explanation, KLDLOAD};
use crate::errno::Errno;
use crate::sys::PmcOp;
use pmc_core::{ErrorKind, PermissionReason};
use ErrorKind as K;

pub(super) fn ex(kind: ErrorKind, message: String, help: Option<&str>) -> Explanation {
    Explanation {
        kind,
        message,
        help: help.map(str::to_owned),
        permission: None,
    }
}

pub(super) const LOG_FIRST: &str =
    "configure a log first (`Backend::configure_log`), then start the PMC";
pub(super) const STOP_FIRST: &str = "stop the PMC first, then retry";
pub(super) const NO_CPU: &str =
    "pick an online CPU (sysctl kern.smp.cpus; pmccontrol -l lists them) or bring it back online";
pub(super) const LIST: &str =
    "list the rows and their state with `pmccontrol -l`, and the events with `Backend::list_events`";

/// Finding the driver: hwpmc not loaded, or of another ABI version.
pub(super) fn driver_errors(op: PmcOp, errno: Errno) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::GetModuleVersion, Errno::ENOENT) => ex(
            K::DriverNotLoaded,
            "the hwpmc kernel module is not loaded".into(),
            Some(KLDLOAD),
        ),
        (PmcOp::GetModuleVersion, Errno::EPROGMISMATCH) => ex(
            K::VersionMismatch,
            "hwpmc's ABI version is older than this library's request".into(),
            Some("upgrade FreeBSD, or use a pmc release that supports this hwpmc version"),
        ),
        _ => return None,
    })
}

/// EPERM: system-scope PMCs (jail, disabled row, sysctl), attaching to another
/// process, row administration, anything else.
pub(super) fn permission_errors(
    op: PmcOp,
    errno: Errno,
    ctx: &Context,
    cpu: &str,
    pid: &str,
) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcAllocate, Errno::EPERM) if ctx.system && ctx.facts.jailed == Some(true) => Explanation {
            kind: K::Permission,
            message: format!(
                "permission denied to allocate a system-scope PMC on {cpu}: this process runs in a jail \
                 (security.jail.jailed = 1), where hwpmc refuses system PMCs whatever the sysctls say"
            ),
            help: Some("run it on the host, outside the jail, or count in process scope".into()),
            permission: Some(PermissionReason::Jail),
        },
        (PmcOp::PmcAllocate, Errno::EPERM)
            if ctx.system && ctx.facts.euid == Some(0) && ctx.facts.jailed == Some(false) =>
        {
            ex(
                K::Permission,
                format!(
                    "hwpmc refused a system-scope PMC on {cpu} although this process is root outside a jail: \
                     the counter row it picked is administratively disabled there"
                ),
                Some("re-enable the row with `pmccontrol -c <cpu> -e <row>` (see `pmccontrol -l`), or use another CPU"),
            )
        }
        (PmcOp::PmcAllocate, Errno::EPERM) if ctx.system => {
            let setting = ctx
                .facts
                .unprivileged_syspmcs
                .map_or_else(String::new, |v| format!(" (security.bsd.unprivileged_syspmcs = {v})"));
            let who = ctx.facts.euid.map_or_else(String::new, |u| format!(", and this process runs as uid {u}"));
            Explanation {
                kind: K::Permission,
                message: format!(
                    "permission denied to allocate a system-scope PMC on {cpu}: hwpmc needs root or \
                     security.bsd.unprivileged_syspmcs=1{setting}{who}; inside a jail it always refuses"
                ),
                help: Some(
                    "run as root, or allow it: sysctl security.bsd.unprivileged_syspmcs=1; in a jail, run on \
                     the host instead (or use process scope)"
                        .into(),
                ),
                permission: Some(PermissionReason::Sysctl { name: "security.bsd.unprivileged_syspmcs".into() }),
            }
        }
        (PmcOp::PmcAttach, Errno::EPERM) if ctx.facts.unprivileged_proc_debug == Some(0) => Explanation {
            kind: K::Permission,
            message: format!(
                "permission denied to attach to {pid}: security.bsd.unprivileged_proc_debug = 0, so only \
                 root may attach PMCs to other processes"
            ),
            help: Some("run as root, or allow it: sysctl security.bsd.unprivileged_proc_debug=1".into()),
            permission: Some(PermissionReason::Sysctl { name: "security.bsd.unprivileged_proc_debug".into() }),
        },
        (PmcOp::PmcAttach, Errno::EPERM) => Explanation {
            kind: K::Permission,
            message: format!(
                "permission denied to attach to {pid}: this process may not debug it (p_candebug: another \
                 user, a setuid program, or another jail)"
            ),
            help: Some(
                "run as the target's owner or as root (not jailed); unprivileged debugging also needs \
                 sysctl security.bsd.unprivileged_proc_debug=1"
                    .into(),
            ),
            permission: Some(PermissionReason::Sysctl { name: "security.bsd.unprivileged_proc_debug".into() }),
        },
        (PmcOp::PmcAdmin, Errno::EPERM) => Explanation {
            kind: K::Permission,
            message: "permission denied to enable or disable PMC rows: needs root outside a jail".into(),
            help: Some("run pmccontrol as root on the host".into()),
            permission: Some(PermissionReason::Other("PRIV_PMC_MANAGE".into())),
        },
        (_, Errno::EPERM) => Explanation {
            kind: K::Permission,
            message: "permission denied by hwpmc".into(),
            help: Some(
                "run as root outside a jail, or check sysctl security.bsd.unprivileged_syspmcs and \
                 security.bsd.unprivileged_proc_debug"
                    .into(),
            ),
            permission: Some(PermissionReason::Other("hwpmc refused".into())),
        },
        _ => return None,
    })
}

/// EDOOFUS: starting a PMC that needs a log before one is configured.
pub(super) fn log_required_error(op: PmcOp, errno: Errno, ctx: &Context) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcStart, Errno::EDOOFUS) => ex(
            K::LogRequired,
            if ctx.sampling {
                "a sampling PMC cannot start before a log is configured".into()
            } else {
                "a PMC with log-procexit/log-proccsw cannot start before a log is configured".into()
            },
            Some(LOG_FIRST),
        ),
        _ => return None,
    })
}

/// ENXIO: an absent or disabled CPU.
pub(super) fn cpu_errors(op: PmcOp, errno: Errno, cpu: &str) -> Option<Explanation> {
    Some(match (op, errno) {
        (
            PmcOp::PmcAllocate
            | PmcOp::PmcStart
            | PmcOp::PmcStop
            | PmcOp::PmcRw
            | PmcOp::GetPmcInfo
            | PmcOp::PmcAdmin,
            Errno::ENXIO,
        ) => ex(
            K::NoSuchCpu,
            format!("{cpu} is absent or disabled"),
            Some(NO_CPU),
        ),
        _ => return None,
    })
}

/// EBUSY: a running PMC, a taken counter, row or log.
pub(super) fn busy_errors(
    op: PmcOp,
    errno: Errno,
    ctx: &Context,
    pid: &str,
    event: &str,
) -> Option<Explanation> {
    Some(match (op, errno) {
        // The running case is answered before any request is sent, so the
        // kernel's EBUSY is the row: another owner's PMC (one owner's PMCs
        // never share a row) uses this counter on the process.
        (PmcOp::PmcAttach, Errno::EBUSY) => ex(
            K::Busy,
            format!(
                "cannot attach to {pid}: the PMC is running, or another PMC (another hwpmc owner's) already uses the same hardware counter there{}",
                flag_note(ctx)
            ),
            Some("stop the PMC before attaching; for a counter in use, allocate another event (it gets another counter row), or stop the other profiler of that process"),
        ),
        (PmcOp::PmcRw, Errno::EBUSY) => {
            ex(K::Busy, "cannot write the count of a running PMC".into(), Some(STOP_FIRST))
        }
        (PmcOp::PmcSetCount, Errno::EBUSY) => {
            ex(K::Busy, "cannot set the count of a running PMC".into(), Some(STOP_FIRST))
        }

        (PmcOp::ConfigureLog, Errno::EBUSY) => ex(
            K::Busy,
            "a log is already configured for this process (hwpmc keeps one log per process, whoever in the process configured it)".into(),
            Some("log through the pmc_freebsd::Backend that holds the log (configure_log replaces its sink), or drop it first"),
        ),
        (PmcOp::PmcAdmin, Errno::EBUSY) => {
            ex(K::Busy, "the PMC row is in use".into(), Some("release the PMCs using that row first"))
        }
        (PmcOp::PmcAllocate, Errno::EBUSY) => {
            ex(K::Busy, format!("no free hardware counter for {event}"), Some(LIST))
        }
        (_, Errno::EBUSY) => ex(K::Busy, "the PMC or its hardware is busy".into(), Some(STOP_FIRST)),
        _ => return None,
    })
}

/// What a refused attach did to the P_HWPMC flags and what the backend
/// did about it (`Context::flag_repair`).
fn flag_note(ctx: &Context) -> String {
    let list = |v: &[i32]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &ctx.flag_repair {
        Some((ok, bad)) if !ok.is_empty() || !bad.is_empty() => {
            let mut s = String::from(
                "; hwpmc's refusal cleared the P_HWPMC flag of the process it failed on, which stops every PMC measuring it",
            );
            if !ok.is_empty() {
                s.push_str(&format!("; pmc gave the flag back to pid {}", list(ok)));
            }
            if !bad.is_empty() {
                s.push_str(&format!(
                    "; pmc could not give it back to pid {}: their PMCs count nothing until attached again",
                    list(bad)
                ));
            }
            s
        }
        _ => String::new(),
    }
}

/// Attach and detach (EEXIST, EINVAL, ESRCH), and ESRCH for any other request.
pub(super) fn attach_errors(
    op: PmcOp,
    errno: Errno,
    ctx: &Context,
    pid: &str,
) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcAttach, Errno::EEXIST) => match ctx.not_sent {
            Some(at) => ex(
                K::AlreadyAttached,
                format!(
                    "the PMC is already attached to pid {at}{}; not sent: hwpmc would refuse it (EEXIST) and, refusing, clear P_HWPMC on that process, which stops every PMC measuring it, and with descendants detach the PMC from the whole subtree again",
                    if ctx.pid == Some(at) { "" } else { " (in the subtree of this attach, or this attach's target in the subtree of an earlier one)" }
                ),
                Some("detach it first (Pmc::detach), or attach to a process the PMC does not measure yet"),
            ),
            None => ex(
                K::AlreadyAttached,
                format!("the PMC is already attached to {pid}{}", flag_note(ctx)),
                None,
            ),
        },
        (PmcOp::PmcAttach | PmcOp::PmcDetach, Errno::EINVAL) if ctx.system => ex(
            K::InvalidState,
            "attach and detach apply to process-scope PMCs only; this one is system-scope".into(),
            None,
        ),
        (PmcOp::PmcAttach | PmcOp::PmcDetach, Errno::EINVAL) if ctx.pid.is_some_and(|p| p < 0) => {
            ex(K::InvalidArgument, format!("{pid} is not a valid process id"), None)
        }
        (PmcOp::PmcDetach, Errno::EINVAL) => {
            ex(K::NotAttached, format!("the PMC is not attached to {pid}"), None)
        }
        (PmcOp::PmcDetach, Errno::ESRCH) if ctx.attached == Some(false) => ex(
            K::NotAttached,
            format!("the PMC is not attached to {pid} (hwpmc monitors nothing there, or it does not exist)"),
            None,
        ),
        (PmcOp::PmcAttach | PmcOp::PmcDetach, Errno::ESRCH) => ex(
            K::NoSuchProcess,
            format!("{pid} does not exist, or is not monitored by hwpmc"),
            Some("check the pid with ps(1); it may have exited"),
        ),
        (PmcOp::PmcStart, Errno::ESRCH) => ex(
            K::InvalidState,
            "the PMC was detached from all of its targets, so it has nothing to count".into(),
            Some("attach it to a process again before starting it"),
        ),
        (_, Errno::ESRCH) => ex(
            K::InvalidState,
            "this process owns no PMC with that handle (it was released, or never allocated)".into(),
            None,
        ),
        _ => return None,
    })
}

/// Allocation (EINVAL, EOPNOTSUPP), and the EINVAL of reads, writes and stops.
pub(super) fn allocation_errors(op: PmcOp, errno: Errno, event: &str) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcAllocate, Errno::EINVAL) => ex(
            K::InvalidArgument,
            format!(
                "hwpmc could not allocate a PMC for {event}: no free counter can count it in this mode, or the \
                 mode/CPU/flags are invalid"
            ),
            Some(LIST),
        ),
        (PmcOp::PmcAllocate, Errno::EOPNOTSUPP) => ex(
            K::NotSupported,
            format!("this PMC class cannot provide the capabilities {event} needs (qualifiers, sampling...)"),
            Some("drop the qualifiers, or pick another event; `pmccontrol -L` lists each class"),
        ),
        (PmcOp::PmcRw, Errno::EINVAL) => ex(
            K::InvalidArgument,
            "hwpmc refused the read/write request (neither PMC_F_OLDVALUE nor PMC_F_NEWVALUE)"
                .into(),
            None,
        ),
        (PmcOp::PmcStop, Errno::EINVAL) => ex(
            K::InvalidState,
            "the PMC was never started, so there is nothing to stop".into(),
            None,
        ),
        _ => return None,
    })
}

/// Logs: a bad descriptor, no log configured, no writer thread.
pub(super) fn log_errors(op: PmcOp, errno: Errno) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::ConfigureLog, Errno::EBADF) => ex(
            K::InvalidArgument,
            "the log descriptor is not open for writing".into(),
            Some("pass a file, pipe or socket opened for writing"),
        ),
        (
            PmcOp::ConfigureLog | PmcOp::FlushLog | PmcOp::CloseLog | PmcOp::WriteLog,
            Errno::EINVAL,
        ) => ex(
            K::InvalidState,
            "no log is configured".into(),
            Some("configure a log first (configure_log)"),
        ),
        // hwpmc_logging.c pmclog_configure_log: the INITIALIZE record is
        // reserved with PMCLOG_RESERVE_WITH_ERROR, which fails with ENOMEM
        // while the owner is PMC_PO_SHUTDOWN (an earlier log was closed and
        // the owner descriptor survived, holding PMCs).
        (PmcOp::ConfigureLog, Errno::ENOMEM) => ex(
            K::InvalidState,
            "hwpmc refuses a new log for this process: an earlier log of the process was closed, and the process's owner descriptor, shut down, stays while the process has PMCs allocated".into(),
            Some("release every PMC of this process (drop every pmc_freebsd::Backend and its PMCs), then configure the log again"),
        ),
        (PmcOp::ConfigureLog, Errno::EAGAIN) => ex(
            K::Os,
            "the kernel could not start the log writer thread (temporary shortage)".into(),
            Some("retry"),
        ),
        _ => return None,
    })
}

/// Admin, rdpmc and getpmcinfo (ENOSYS, EINVAL), and GETCAPS on an old hwpmc.
pub(super) fn admin_errors(op: PmcOp, errno: Errno, cpu: &str) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcGetMsr, Errno::ENOSYS) => ex(
            K::NotSupported,
            "this hardware cannot read PMCs with RDPMC".into(),
            Some("read the PMC with PMC_OP_PMCRW instead"),
        ),
        (PmcOp::PmcGetMsr, Errno::EINVAL) => ex(
            K::InvalidState,
            "RDPMC needs a process-scope PMC without descendants, attached only to its owner"
                .into(),
            None,
        ),
        (PmcOp::GetPmcInfo | PmcOp::PmcAdmin, Errno::EINVAL) => ex(
            K::InvalidArgument,
            format!("{cpu} or the row number is out of range"),
            Some(NO_CPU),
        ),
        (PmcOp::GetCaps, Errno::EINVAL) => ex(
            K::NotSupported,
            "this hwpmc does not know PMC_OP_GETCAPS (before FreeBSD's 0x0A03 ABI)".into(),
            None,
        ),
        _ => return None,
    })
}

/// What any request's errno means when no case above names it.
pub(super) fn generic_error(errno: Errno) -> Explanation {
    match errno {
        Errno::EINVAL => ex(
            K::InvalidArgument,
            "hwpmc rejected the request as invalid".into(),
            None,
        ),
        Errno::ENOMEM => ex(K::Os, "the kernel could not allocate memory".into(), None),
        Errno::EFAULT => ex(
            K::Os,
            "a bad address was passed to hwpmc (a bug in pmc)".into(),
            None,
        ),
        Errno::ENOSYS => ex(
            K::DriverNotLoaded,
            "the hwpmc system call is not available".into(),
            Some(KLDLOAD),
        ),
        e => ex(K::Os, format!("hwpmc failed with {e}"), None),
    }
}
