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
