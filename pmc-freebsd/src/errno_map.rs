//! errno x `PMC_OP_*` -> [`ErrorKind`] + message + FreeBSD remedy, following
//! the ERRORS section of hwpmc(4).
//!
//! [`explain`] is pure (unit-tested as a table); [`to_error`] builds the
//! `pmc_core::Error` the backend returns, keeping the raw errno.

use crate::errno::Errno;
use crate::sys::PmcOp;
use pmc_core::{Error, ErrorKind, Op, PermissionReason};
use ErrorKind as K;

/// What the caller was doing, for a precise message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Context {
    /// The PMC is (or would be) system-scope.
    pub system: bool,
    /// The PMC samples.
    pub sampling: bool,
    /// The CPU involved, if any.
    pub cpu: Option<u32>,
    /// The target pid involved (attach/detach), if any.
    pub pid: Option<i32>,
    /// `PMC_OP_PMCRW` was a write (`PMC_F_NEWVALUE`).
    pub write: bool,
    /// The event, as the user wrote it.
    pub event: Option<String>,
    /// For detach: whether the backend believes the target is attached.
    /// hwpmc answers ESRCH, not EINVAL, when the target has no PMC at all;
    /// for a target this PMC never attached, that is "not attached".
    pub attached: Option<bool>,
    /// Facts read for permission errors, when known.
    pub facts: Facts,
}

/// The settings behind hwpmc's EPERM answers, read from the system
/// (`sysctl`, `geteuid`) when a request is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// `security.jail.jailed`.
    pub jailed: Option<bool>,
    /// `security.bsd.unprivileged_syspmcs`.
    pub unprivileged_syspmcs: Option<i64>,
    /// `security.bsd.unprivileged_proc_debug`.
    pub unprivileged_proc_debug: Option<i64>,
    /// The effective uid.
    pub euid: Option<u32>,
}

impl Facts {
    /// Reads the facts through a driver.
    pub(crate) fn read(d: &dyn crate::sys::Sys) -> Facts {
        Facts {
            jailed: d.sysctl_int("security.jail.jailed").map(|v| v != 0),
            unprivileged_syspmcs: d.sysctl_int("security.bsd.unprivileged_syspmcs"),
            unprivileged_proc_debug: d.sysctl_int("security.bsd.unprivileged_proc_debug"),
            euid: d.euid(),
        }
    }
}

/// The explanation of one failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Explanation {
    /// The category.
    pub kind: ErrorKind,
    /// The fact.
    pub message: String,
    /// The remedy (`help:` line), if there is one.
    pub help: Option<String>,
    /// For [`ErrorKind::Permission`], why.
    pub permission: Option<PermissionReason>,
}

/// The pmc-core operation a request belongs to.
pub(crate) fn core_op(op: PmcOp, ctx: &Context) -> Op {
    match op {
        PmcOp::ConfigureLog | PmcOp::FlushLog | PmcOp::CloseLog | PmcOp::WriteLog => Op::Log,
        PmcOp::PmcAllocate => Op::Allocate,
        PmcOp::PmcAttach => Op::Attach,
        PmcOp::PmcDetach => Op::Detach,
        PmcOp::PmcStart => Op::Start,
        PmcOp::PmcStop => Op::Stop,
        PmcOp::PmcRw if ctx.write => Op::Write,
        PmcOp::PmcRw => Op::Read,
        PmcOp::PmcSetCount => Op::SetCount,
        PmcOp::PmcRelease => Op::Release,
        PmcOp::GetCpuInfo
        | PmcOp::GetDriverStats
        | PmcOp::GetModuleVersion
        | PmcOp::GetPmcInfo
        | PmcOp::PmcAdmin
        | PmcOp::PmcGetMsr
        | PmcOp::GetDynEventInfo
        | PmcOp::GetCaps => Op::Open,
    }
}

fn ex(kind: ErrorKind, message: String, help: Option<&str>) -> Explanation {
    Explanation {
        kind,
        message,
        help: help.map(str::to_owned),
        permission: None,
    }
}

const KLDLOAD: &str =
    "load the driver: kldload hwpmc (or add hwpmc_load=\"YES\" to /boot/loader.conf)";
const LOG_FIRST: &str = "configure a log first (`Backend::configure_log`), then start the PMC";
const STOP_FIRST: &str = "stop the PMC first, then retry";
const NO_CPU: &str =
    "pick an online CPU (sysctl kern.smp.cpus; pmccontrol -l lists them) or bring it back online";
const LIST: &str =
    "list the rows and their state with `pmccontrol -l`, and the events with `Backend::list_events`";

/// Explains `errno` from `op`.
pub(crate) fn explain(op: PmcOp, errno: Errno, ctx: &Context) -> Explanation {
    let cpu = ctx
        .cpu
        .map_or_else(|| "the CPU".to_owned(), |c| format!("CPU {c}"));
    let pid = ctx
        .pid
        .map_or_else(|| "the target".to_owned(), |p| format!("pid {p}"));
    let event = ctx.event.as_deref().unwrap_or("the event");
    driver_errors(op, errno)
        .or_else(|| permission_errors(op, errno, ctx, &cpu, &pid))
        .or_else(|| log_required_error(op, errno, ctx))
        .or_else(|| cpu_errors(op, errno, &cpu))
        .or_else(|| busy_errors(op, errno, &pid, event))
        .or_else(|| attach_errors(op, errno, ctx, &pid))
        .or_else(|| allocation_errors(op, errno, event))
        .or_else(|| log_errors(op, errno))
        .or_else(|| admin_errors(op, errno, &cpu))
        .unwrap_or_else(|| generic_error(errno))
}

/// Finding the driver: hwpmc not loaded, or of another ABI version.
fn driver_errors(op: PmcOp, errno: Errno) -> Option<Explanation> {
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
fn permission_errors(
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
fn log_required_error(op: PmcOp, errno: Errno, ctx: &Context) -> Option<Explanation> {
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
fn cpu_errors(op: PmcOp, errno: Errno, cpu: &str) -> Option<Explanation> {
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
fn busy_errors(op: PmcOp, errno: Errno, pid: &str, event: &str) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcRw, Errno::EBUSY) => {
            ex(K::Busy, "cannot write the count of a running PMC".into(), Some(STOP_FIRST))
        }
        (PmcOp::PmcSetCount, Errno::EBUSY) => {
            ex(K::Busy, "cannot set the count of a running PMC".into(), Some(STOP_FIRST))
        }
        (PmcOp::PmcAttach, Errno::EBUSY) => ex(
            K::Busy,
            format!("cannot attach to {pid}: the PMC is running, or {pid} already has another PMC on the same hardware counter"),
            Some("stop the PMC before attaching, or release the other PMC attached to that process"),
        ),
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

/// Attach and detach (EEXIST, EINVAL, ESRCH), and ESRCH for any other request.
fn attach_errors(op: PmcOp, errno: Errno, ctx: &Context, pid: &str) -> Option<Explanation> {
    Some(match (op, errno) {
        (PmcOp::PmcAttach, Errno::EEXIST) => {
            ex(K::AlreadyAttached, format!("the PMC is already attached to {pid}"), None)
        }
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
fn allocation_errors(op: PmcOp, errno: Errno, event: &str) -> Option<Explanation> {
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
fn log_errors(op: PmcOp, errno: Errno) -> Option<Explanation> {
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
fn admin_errors(op: PmcOp, errno: Errno, cpu: &str) -> Option<Explanation> {
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
fn generic_error(errno: Errno) -> Explanation {
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

/// The typed error for `errno` from `op`, with the raw errno kept.
pub(crate) fn to_error(op: PmcOp, errno: Errno, ctx: &Context) -> Error {
    let e = explain(op, errno, ctx);
    let core = core_op(op, ctx);
    let mut err = Error::new(
        e.kind,
        core,
        format!("{} failed: {}", op.c_name(), e.message),
    )
    .with_errno(errno.0);
    if let (Some(name), Some(desc)) = (errno.name(), errno.description()) {
        err = err.with_errno_text(format!("{name}: {desc}"));
    }
    if let Some(h) = e.help {
        err = err.with_help(h);
    }
    err
}

/// The error for a `modfind("hwpmc")` failure.
pub(crate) fn modfind_error(errno: Errno) -> Error {
    let (kind, msg, help) = if errno == Errno::ENOENT {
        (
            ErrorKind::DriverNotLoaded,
            "the hwpmc kernel module is not loaded (modfind(\"hwpmc\") failed)",
            KLDLOAD,
        )
    } else {
        (
            ErrorKind::Os,
            "could not find the hwpmc system call (modfind/modstat failed)",
            KLDLOAD,
        )
    };
    let mut err = Error::new(kind, Op::Open, msg)
        .with_errno(errno.0)
        .with_help(help);
    if let (Some(name), Some(desc)) = (errno.name(), errno.description()) {
        err = err.with_errno_text(format!("{name}: {desc}"));
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind as K;

    fn sys() -> Context {
        Context {
            system: true,
            cpu: Some(1),
            ..Context::default()
        }
    }
    fn pid(p: i32) -> Context {
        Context {
            pid: Some(p),
            ..Context::default()
        }
    }

    /// (op, errno, context, kind, substring of the help line or message).
    #[test]
    fn the_hwpmc4_errors_table() {
        let table: Vec<(PmcOp, Errno, Context, ErrorKind, &str)> = vec![
            (
                PmcOp::GetModuleVersion,
                Errno::ENOENT,
                Context::default(),
                K::DriverNotLoaded,
                "kldload hwpmc",
            ),
            (
                PmcOp::GetModuleVersion,
                Errno::EPROGMISMATCH,
                Context::default(),
                K::VersionMismatch,
                "upgrade",
            ),
            (
                PmcOp::ConfigureLog,
                Errno::EAGAIN,
                Context::default(),
                K::Os,
                "retry",
            ),
            (
                PmcOp::ConfigureLog,
                Errno::EBUSY,
                Context::default(),
                K::Busy,
                "one log per process",
            ),
            (
                PmcOp::PmcAdmin,
                Errno::EBUSY,
                Context::default(),
                K::Busy,
                "release",
            ),
            (PmcOp::PmcAttach, Errno::EBUSY, pid(7), K::Busy, "pid 7"),
            (
                PmcOp::PmcRw,
                Errno::EBUSY,
                Context {
                    write: true,
                    ..Context::default()
                },
                K::Busy,
                "stop the PMC",
            ),
            (
                PmcOp::PmcSetCount,
                Errno::EBUSY,
                Context::default(),
                K::Busy,
                "stop the PMC",
            ),
            (
                PmcOp::PmcStart,
                Errno::EDOOFUS,
                Context {
                    sampling: true,
                    ..sys()
                },
                K::LogRequired,
                "configure a log first",
            ),
            (
                PmcOp::PmcStart,
                Errno::EDOOFUS,
                Context::default(),
                K::LogRequired,
                "log-procexit",
            ),
            (
                PmcOp::PmcAttach,
                Errno::EEXIST,
                pid(7),
                K::AlreadyAttached,
                "already attached to pid 7",
            ),
            (
                PmcOp::PmcStart,
                Errno::EINVAL,
                Context::default(),
                K::InvalidArgument,
                "invalid",
            ),
            (
                PmcOp::GetPmcInfo,
                Errno::EINVAL,
                sys(),
                K::InvalidArgument,
                "CPU 1",
            ),
            (
                PmcOp::ConfigureLog,
                Errno::EINVAL,
                Context::default(),
                K::InvalidState,
                "no log",
            ),
            (
                PmcOp::FlushLog,
                Errno::EINVAL,
                Context::default(),
                K::InvalidState,
                "no log",
            ),
            (
                PmcOp::WriteLog,
                Errno::EINVAL,
                Context::default(),
                K::InvalidState,
                "no log",
            ),
            (
                PmcOp::PmcAdmin,
                Errno::EINVAL,
                sys(),
                K::InvalidArgument,
                "out of range",
            ),
            (
                PmcOp::PmcAllocate,
                Errno::EINVAL,
                Context::default(),
                K::InvalidArgument,
                "pmccontrol -l",
            ),
            (
                PmcOp::PmcAttach,
                Errno::EINVAL,
                sys(),
                K::InvalidState,
                "process-scope",
            ),
            (
                PmcOp::PmcDetach,
                Errno::EINVAL,
                sys(),
                K::InvalidState,
                "process-scope",
            ),
            (
                PmcOp::PmcAttach,
                Errno::EINVAL,
                pid(-3),
                K::InvalidArgument,
                "not a valid process id",
            ),
            (
                PmcOp::PmcDetach,
                Errno::EINVAL,
                pid(7),
                K::NotAttached,
                "not attached to pid 7",
            ),
            (
                PmcOp::PmcRw,
                Errno::EINVAL,
                Context::default(),
                K::InvalidArgument,
                "PMC_F_OLDVALUE",
            ),
            (
                PmcOp::PmcStop,
                Errno::EINVAL,
                Context::default(),
                K::InvalidState,
                "never started",
            ),
            (PmcOp::PmcRw, Errno::ENXIO, sys(), K::NoSuchCpu, "CPU 1"),
            (
                PmcOp::PmcAllocate,
                Errno::EPERM,
                Context {
                    facts: Facts {
                        euid: Some(0),
                        jailed: Some(false),
                        ..Facts::default()
                    },
                    ..sys()
                },
                K::Permission,
                "pmccontrol -c <cpu> -e <row>",
            ),
            (
                PmcOp::PmcGetMsr,
                Errno::EINVAL,
                Context::default(),
                K::InvalidState,
                "owner",
            ),
            (
                PmcOp::PmcStart,
                Errno::ENOMEM,
                Context::default(),
                K::Os,
                "memory",
            ),
            (
                PmcOp::ConfigureLog,
                Errno::ENOMEM,
                Context::default(),
                K::InvalidState,
                "shut down",
            ),
            (
                PmcOp::PmcGetMsr,
                Errno::ENOSYS,
                Context::default(),
                K::NotSupported,
                "RDPMC",
            ),
            (
                PmcOp::GetPmcInfo,
                Errno::ENXIO,
                sys(),
                K::NoSuchCpu,
                "CPU 1 is absent or disabled",
            ),
            (
                PmcOp::PmcAllocate,
                Errno::ENXIO,
                sys(),
                K::NoSuchCpu,
                "online CPU",
            ),
            (
                PmcOp::PmcStart,
                Errno::ENXIO,
                sys(),
                K::NoSuchCpu,
                "online CPU",
            ),
            (
                PmcOp::PmcStop,
                Errno::ENXIO,
                sys(),
                K::NoSuchCpu,
                "online CPU",
            ),
            (
                PmcOp::PmcAllocate,
                Errno::EOPNOTSUPP,
                Context::default(),
                K::NotSupported,
                "qualifiers",
            ),
            (
                PmcOp::PmcAdmin,
                Errno::EPERM,
                Context::default(),
                K::Permission,
                "root",
            ),
            (
                PmcOp::PmcAttach,
                Errno::EPERM,
                pid(7),
                K::Permission,
                "security.bsd.unprivileged_proc_debug=1",
            ),
            (
                PmcOp::PmcAllocate,
                Errno::EPERM,
                sys(),
                K::Permission,
                "security.bsd.unprivileged_syspmcs=1",
            ),
            (
                PmcOp::PmcAllocate,
                Errno::EPERM,
                sys(),
                K::Permission,
                "jail",
            ),
            (
                PmcOp::PmcStart,
                Errno::ESRCH,
                Context::default(),
                K::InvalidState,
                "attach it",
            ),
            (
                PmcOp::PmcRw,
                Errno::ESRCH,
                Context::default(),
                K::InvalidState,
                "owns no PMC",
            ),
            (
                PmcOp::PmcAttach,
                Errno::ESRCH,
                pid(7),
                K::NoSuchProcess,
                "pid 7",
            ),
            (
                PmcOp::PmcDetach,
                Errno::ESRCH,
                pid(7),
                K::NoSuchProcess,
                "not monitored",
            ),
            (
                PmcOp::ConfigureLog,
                Errno::EBADF,
                Context::default(),
                K::InvalidArgument,
                "opened for writing",
            ),
            (
                PmcOp::GetCaps,
                Errno::EINVAL,
                Context::default(),
                K::NotSupported,
                "GETCAPS",
            ),
            (
                PmcOp::PmcStart,
                Errno(4242),
                Context::default(),
                K::Os,
                "errno 4242",
            ),
        ];
        for (op, errno, ctx, kind, needle) in table {
            let e = to_error(op, errno, &ctx);
            assert_eq!(e.kind(), kind, "{op:?} {errno:?}");
            assert_eq!(
                e.errno(),
                Some(errno.0),
                "{op:?} {errno:?} keeps the raw errno"
            );
            let text = format!("{} {}", e.message(), e.help().unwrap_or(""));
            assert!(
                text.contains(needle),
                "{op:?} {errno:?}: {text:?} lacks {needle:?}"
            );
            assert!(
                e.message().starts_with(op.c_name()),
                "{op:?}: {}",
                e.message()
            );
        }
    }

    #[test]
    fn ops_map_to_core_ops() {
        let w = Context {
            write: true,
            ..Context::default()
        };
        assert_eq!(core_op(PmcOp::PmcRw, &w), Op::Write);
        assert_eq!(core_op(PmcOp::PmcRw, &Context::default()), Op::Read);
        assert_eq!(core_op(PmcOp::CloseLog, &w), Op::Log);
        assert_eq!(core_op(PmcOp::PmcSetCount, &w), Op::SetCount);
    }

    #[test]
    fn modfind_enoent_says_kldload() {
        let e = modfind_error(Errno::ENOENT);
        assert_eq!(e.kind(), K::DriverNotLoaded);
        assert!(e
            .to_string()
            .contains("help: load the driver: kldload hwpmc"));
    }

    proptest::proptest! {
        #[test]
        fn every_errno_of_every_op_explains_itself(op in 0i32..20, errno in -5i32..200, system: bool, pid in proptest::option::of(-3i32..5)) {
            let ops = [
                PmcOp::ConfigureLog, PmcOp::FlushLog, PmcOp::GetCpuInfo, PmcOp::GetDriverStats,
                PmcOp::GetModuleVersion, PmcOp::GetPmcInfo, PmcOp::PmcAdmin, PmcOp::PmcAllocate,
                PmcOp::PmcAttach, PmcOp::PmcDetach, PmcOp::PmcGetMsr, PmcOp::PmcRelease, PmcOp::PmcRw,
                PmcOp::PmcSetCount, PmcOp::PmcStart, PmcOp::PmcStop, PmcOp::WriteLog, PmcOp::CloseLog,
                PmcOp::GetDynEventInfo, PmcOp::GetCaps,
            ];
            let op = ops[op as usize];
            let ctx = Context { system, pid, ..Context::default() };
            let e = to_error(op, Errno(errno), &ctx);
            proptest::prop_assert_eq!(e.errno(), Some(errno));
            proptest::prop_assert!(e.message().len() > op.c_name().len() + 10);
        }
    }
}
