//! errno -> typed [`Error`], per operation, with the facts that explain it
//! (the paranoid level, the rlimit, whether a PMU exists).

use crate::errno;
use crate::events::Resolved;
use pmc_core::{Error, ErrorKind, Op, PermissionReason};

/// What was being opened, for explaining a `perf_event_open` failure.
#[derive(Debug, Clone)]
pub(crate) struct OpenContext<'a> {
    /// The event as the user wrote it.
    pub event: &'a str,
    /// Its resolution.
    pub resolved: &'a Resolved,
    /// `pid` argument (-1 for system-wide).
    pub pid: i32,
    /// `cpu` argument (-1 for any).
    pub cpu: i32,
    /// Whether kernel mode was to be counted.
    pub counts_kernel: bool,
    /// Whether it was a sampling event, and its frequency if any.
    pub sample_freq: Option<u64>,
}

pub(crate) use crate::sys::{Errno, Facts};

/// The user-mode-only form of the event string `ev`, as a string that parses: its
/// privilege modifiers replaced by `u` (precision kept), in the syntax it was written in
/// (`task-clock:k` -> `task-clock:u`, `cpu/event=0x3c/k` -> `cpu/event=0x3c/u`). Falls back
/// to appending `:u` only for a string that does not parse (it did, to get here).
pub(crate) fn user_only(ev: &str) -> String {
    match ev.parse::<pmc_core::EventSpec>() {
        Ok(mut spec) => {
            spec.modifiers.user = true;
            spec.modifiers.kernel = false;
            spec.modifiers.hv = false;
            spec.to_string()
        }
        Err(_) => format!("{ev}:u"),
    }
}

/// Maps a `perf_event_open` errno to a typed error.
pub(crate) fn open_error(errno: Errno, ctx: &OpenContext<'_>, f: &Facts) -> Error {
    let Errno(errno) = errno;
    let ev = ctx.event;
    let e = match errno {
        errno::EACCES | errno::EPERM => permission_error(ctx, f),
        errno::ENOENT | errno::EOPNOTSUPP | errno::ENODEV
            if ctx.resolved.is_hardware() && !f.has_pmu =>
        {
            no_pmu_error(ev)
        }
        errno::ENOENT => no_such_event_error(ctx),
        errno::EOPNOTSUPP => not_supported_error(ctx),
        errno::ESRCH => Error::new(
            ErrorKind::NoSuchProcess,
            Op::Attach,
            format!("no process with pid {}", ctx.pid),
        )
        .with_help("check the pid; the process may have exited"),
        errno::EMFILE | errno::ENFILE => too_many_files_error(f),
        errno::EINVAL => invalid_argument_error(ctx, f),
        errno::ENODEV => no_device_error(ctx, f),
        errno::E2BIG => Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "this kernel is older than the perf_event_attr layout requested",
        ),
        errno::EBUSY => Error::new(
            ErrorKind::Busy,
            Op::Allocate,
            format!("`{ev}`: the PMU is in exclusive use (another exclusive or pinned event, or the NMI watchdog)"),
        )
        .with_help("stop the other user, or free the watchdog's counter: sysctl -w kernel.nmi_watchdog=0"),
        errno::ENOSYS => Error::new(
            ErrorKind::Unsupported,
            Op::Allocate,
            "perf_event_open(2) is not available: the kernel lacks CONFIG_PERF_EVENTS, or this is not Linux",
        ),
        _ => Error::new(ErrorKind::Os, Op::Allocate, format!("perf_event_open for `{ev}` failed")),
    };
    e.with_errno(errno)
}

/// EACCES / EPERM: which permission was missing, by what was asked (system-wide,
/// a tracepoint, kernel mode, another process, or any event at all).
fn permission_error(ctx: &OpenContext<'_>, f: &Facts) -> Error {
    let ev = ctx.event;
    if ctx.pid == -1 {
        Error::permission(
            Op::Allocate,
            &format!(
                "count `{ev}` system-wide (every process on CPU {})",
                ctx.cpu
            ),
            PermissionReason::PerfEventParanoid {
                level: f.paranoid,
                needed: 0,
            },
        )
    } else if ctx.resolved.is_tracepoint() && f.paranoid.is_some_and(|p| p > -1) {
        Error::permission(
            Op::Allocate,
            &format!("use tracepoint `{ev}`"),
            PermissionReason::PerfEventParanoid {
                level: f.paranoid,
                needed: -1,
            },
        )
    } else if ctx.counts_kernel && f.paranoid.is_some_and(|p| p >= 2) {
        Error::permission(
            Op::Allocate,
            &format!("count `{ev}` in kernel mode"),
            PermissionReason::PerfEventParanoid { level: f.paranoid, needed: 1 },
        )
        .with_help(format!(
            "count user mode only (`{}`), or lower the level: sysctl -w kernel.perf_event_paranoid=1",
            user_only(ev)
        ))
    } else if ctx.pid > 0 {
        Error::permission(
            Op::Attach,
            &format!("count `{ev}`"),
            PermissionReason::Ptrace {
                pid: ctx.pid as u32,
            },
        )
    } else {
        Error::permission(
            Op::Allocate,
            &format!("count `{ev}`"),
            PermissionReason::PerfEventParanoid {
                level: f.paranoid,
                needed: 2,
            },
        )
    }
}

/// ENOENT / EOPNOTSUPP / ENODEV for a hardware event on a machine without a PMU.
fn no_pmu_error(ev: &str) -> Error {
    Error::new(
        ErrorKind::NoPmu,
        Op::Allocate,
        format!("`{ev}` is not supported: this machine exposes no hardware PMU (no /sys/bus/event_source/devices/cpu; common in virtual machines)"),
    )
    .with_help("use software events (task-clock, cpu-clock, page-faults, context-switches), or enable a virtual PMU in the hypervisor")
}

/// ENOENT (with a PMU): the kernel or CPU does not know the event.
fn no_such_event_error(ctx: &OpenContext<'_>) -> Error {
    let ev = ctx.event;
    Error::new(
        ErrorKind::NoSuchEvent,
        Op::Allocate,
        format!(
            "`{ev}` is not supported by this kernel or CPU (type {}, config {:#x})",
            ctx.resolved.type_, ctx.resolved.config
        ),
    )
    .with_help("`Backend::list_events` lists the events this machine has")
}

/// EOPNOTSUPP (with a PMU): sampling without an overflow interrupt, or an
/// unsupported option.
fn not_supported_error(ctx: &OpenContext<'_>) -> Error {
    let ev = ctx.event;
    if ctx.sample_freq.is_some() {
        Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!("`{ev}` cannot sample here: its PMU has no overflow interrupt"),
        )
        .with_help("count it instead, or sample a software event such as cpu-clock")
    } else {
        Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!("`{ev}`: this kernel or CPU does not support the requested options (type {}, config {:#x})", ctx.resolved.type_, ctx.resolved.config),
        )
    }
}

/// EMFILE / ENFILE: the descriptor limit, and how far to raise it.
fn too_many_files_error(f: &Facts) -> Error {
    too_many_files(f, Op::Allocate)
}

/// The error of a descriptor the process could not get (`EMFILE`, `ENFILE`) during `op`.
pub(crate) fn too_many_files(f: &Facts, op: Op) -> Error {
    let lim = f
        .nofile
        .map_or_else(|| "unknown".to_owned(), |l| l.to_string());
    Error::new(
        ErrorKind::TooManyOpenFiles,
        op,
        format!("too many open files: each PMC needs one descriptor per CPU or thread, and RLIMIT_NOFILE is {lim}"),
    )
    .with_help(match f.nofile {
        Some(l) => format!("raise the limit: ulimit -n {}", l.saturating_mul(4).max(4096)),
        None => "raise the limit with ulimit -n".to_owned(),
    })
}

/// Whether `ctx.cpu` names a CPU this machine does not have online.
fn cpu_missing(ctx: &OpenContext<'_>, f: &Facts) -> bool {
    ctx.cpu >= 0 && ctx.cpu as usize >= f.ncpus.max(1)
}

/// EINVAL / ENODEV for a CPU that does not exist or is offline.
fn no_such_cpu_error(ctx: &OpenContext<'_>, f: &Facts) -> Error {
    Error::new(
        ErrorKind::NoSuchCpu,
        Op::Allocate,
        format!(
            "CPU {} does not exist or is offline ({} online)",
            ctx.cpu, f.ncpus
        ),
    )
    .with_help("see /sys/devices/system/cpu/online")
}

/// EINVAL: a system-wide event without a CPU, a missing CPU, a frequency above
/// the kernel's limit, or any other rejected configuration.
fn invalid_argument_error(ctx: &OpenContext<'_>, f: &Facts) -> Error {
    let ev = ctx.event;
    if ctx.pid == -1 && ctx.cpu == -1 {
        Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!("`{ev}`: a system-wide event needs a CPU (pid == -1 and cpu == -1 is invalid)"),
        )
    } else if cpu_missing(ctx, f) {
        no_such_cpu_error(ctx, f)
    } else if ctx
        .sample_freq
        .zip(f.max_sample_rate)
        .is_some_and(|(q, m)| q > m)
    {
        Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!(
                "sampling frequency {} Hz is above kernel.perf_event_max_sample_rate = {}",
                ctx.sample_freq.unwrap_or(0),
                f.max_sample_rate.unwrap_or(0)
            ),
        )
        .with_help("use a lower frequency, or raise the limit: sysctl -w kernel.perf_event_max_sample_rate=<hz>")
    } else {
        Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!("the kernel rejected the configuration of `{ev}` (type {}, config {:#x}, pid {}, cpu {})", ctx.resolved.type_, ctx.resolved.config, ctx.pid, ctx.cpu),
        )
        .with_help("`Pmc::native_config` shows the perf_event_attr that was opened")
    }
}

/// ENODEV (with a PMU): a missing CPU, or the event is not available on it.
fn no_device_error(ctx: &OpenContext<'_>, f: &Facts) -> Error {
    if cpu_missing(ctx, f) {
        no_such_cpu_error(ctx, f)
    } else {
        Error::new(
            ErrorKind::NoSuchCpu,
            Op::Allocate,
            format!(
                "`{}`: CPU {} is offline, or the event is not available on it",
                ctx.event, ctx.cpu
            ),
        )
    }
}

/// Maps a failed ioctl or read.
pub(crate) fn op_error(op: Op, errno: Errno) -> Error {
    let Errno(errno) = errno;
    let kind = match errno {
        errno::ENODEV | errno::ENXIO => ErrorKind::NoSuchCpu,
        errno::ESRCH => ErrorKind::NoSuchProcess,
        errno::EINVAL => ErrorKind::InvalidArgument,
        _ => ErrorKind::Os,
    };
    Error::new(kind, op, format!("perf_event {op} failed")).with_errno(errno)
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Facts = Facts {
        paranoid: Some(2),
        privileged: false,
        has_pmu: false,
        nofile: Some(1024),
        max_sample_rate: Some(100_000),
        ncpus: 2,
    };

    fn ctx<'a>(r: &'a Resolved, pid: i32, cpu: i32) -> OpenContext<'a> {
        OpenContext {
            event: "cycles",
            resolved: r,
            pid,
            cpu,
            counts_kernel: false,
            sample_freq: None,
        }
    }

    #[test]
    fn system_wide_permission_names_paranoid_and_cap() {
        let r = crate::events::portable(pmc_core::PortableEvent::CpuClock);
        let e = open_error(Errno(errno::EACCES), &ctx(&r, -1, 0), &F);
        assert_eq!(e.kind(), ErrorKind::Permission);
        let m = e.to_string();
        assert!(
            m.contains("perf_event_paranoid = 2")
                && m.contains("CAP_PERFMON")
                && m.contains("<= 0"),
            "{m}"
        );
        assert_eq!(e.errno(), Some(errno::EACCES));
    }

    #[test]
    fn no_pmu_is_said() {
        let r = crate::events::portable(pmc_core::PortableEvent::Cycles);
        let e = open_error(Errno(errno::ENOENT), &ctx(&r, 0, -1), &F);
        assert_eq!(e.kind(), ErrorKind::NoPmu);
        assert!(e.to_string().contains("no hardware PMU"));
        let with_pmu = Facts { has_pmu: true, ..F };
        assert_eq!(
            open_error(Errno(errno::ENOENT), &ctx(&r, 0, -1), &with_pmu).kind(),
            ErrorKind::NoSuchEvent
        );
    }

    #[test]
    fn known_einval_causes() {
        let r = crate::events::portable(pmc_core::PortableEvent::CpuClock);
        let e = open_error(Errno(errno::EINVAL), &ctx(&r, -1, -1), &F);
        assert!(e.to_string().contains("needs a CPU"), "{e}");
        let e = open_error(Errno(errno::EINVAL), &ctx(&r, -1, 7), &F);
        assert_eq!(e.kind(), ErrorKind::NoSuchCpu);
        let mut c = ctx(&r, 0, -1);
        c.sample_freq = Some(200_000);
        let e = open_error(Errno(errno::EINVAL), &c, &F);
        assert!(
            e.to_string()
                .contains("perf_event_max_sample_rate = 100000"),
            "{e}"
        );
        let e = open_error(Errno(errno::EMFILE), &ctx(&r, 0, -1), &F);
        assert_eq!(e.kind(), ErrorKind::TooManyOpenFiles);
        assert!(
            e.to_string().contains("RLIMIT_NOFILE is 1024")
                && e.to_string().contains("ulimit -n 4096"),
            "{e}"
        );
        assert_eq!(
            open_error(Errno(errno::ESRCH), &ctx(&r, 99, -1), &F).kind(),
            ErrorKind::NoSuchProcess
        );
        let mut k = ctx(&r, 0, -1);
        k.counts_kernel = true;
        let e = open_error(Errno(errno::EACCES), &k, &F);
        assert!(e.to_string().contains(":u"), "{e}");
        // The suggestion is a valid event string (it was `task-clock:k:u`).
        for (given, want) in [
            ("task-clock:k", "task-clock:u"),
            ("task-clock:kpp", "task-clock:upp"),
            ("cycles", "cycles:u"),
            ("sched:sched_switch:k", "sched:sched_switch:u"),
            ("instructions,os", "instructions:u"),
            ("cpu/event=0x3c/k", "cpu/event=0x3c/u"),
        ] {
            let mut k = ctx(&r, 0, -1);
            k.event = given;
            k.counts_kernel = true;
            let e = open_error(Errno(errno::EACCES), &k, &F).to_string();
            assert!(e.contains(&format!("(`{want}`)")), "{given}: {e}");
            assert!(want.parse::<pmc_core::EventSpec>().is_ok(), "{want}");
        }
    }
}
