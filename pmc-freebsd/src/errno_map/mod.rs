//! errno x `PMC_OP_*` -> [`ErrorKind`] + message + FreeBSD remedy, following
//! the ERRORS section of hwpmc(4).
//!
//! [`explain`] is pure (unit-tested as a table); [`to_error`] builds the
//! `pmc_core::Error` the backend returns, keeping the raw errno.
//!
//! Map: `mod.rs` (`Context`, `Facts`, `Explanation`, `explain`, `to_error`,
//! `modfind_error`); `families.rs` (the errno families `explain` tries, one
//! function each); `tests.rs` (the hwpmc(4) table as a unit test).

use crate::errno::Errno;
use crate::sys::PmcOp;
use pmc_core::{Error, ErrorKind, Op, PermissionReason};

mod families;

use families::{
    admin_errors, allocation_errors, attach_errors, busy_errors, cpu_errors, driver_errors,
    generic_error, log_errors, log_required_error, permission_errors,
};

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
    /// For attach: the backend did not send the request, foreseeing this
    /// errno; the process it conflicts at (with descendants, maybe not
    /// `pid`).
    pub not_sent: Option<i32>,
    /// For an attach hwpmc refused: the processes whose P_HWPMC flag the
    /// refusal cleared that the backend gave it back to, and those it could
    /// not.
    pub flag_repair: Option<(Vec<i32>, Vec<i32>)>,
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

const KLDLOAD: &str =
    "load the driver: kldload hwpmc (or add hwpmc_load=\"YES\" to /boot/loader.conf)";

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
        .or_else(|| busy_errors(op, errno, ctx, &pid, event))
        .or_else(|| attach_errors(op, errno, ctx, &pid))
        .or_else(|| allocation_errors(op, errno, event))
        .or_else(|| log_errors(op, errno))
        .or_else(|| admin_errors(op, errno, &cpu))
        .unwrap_or_else(|| generic_error(errno))
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
mod tests;
