//! The only door to the OS, and the only module of pmc-freebsd that may use `unsafe`: the
//! [`Sys`] seam (here, with the types its signatures use: [`PmcOp`], [`OpArg`]), the raw
//! ABI ([`abi`]), [`RealSys`] (`freebsd.rs` on FreeBSD, `unsupported.rs` elsewhere, picked by
//! one `cfg_if!`) and the hwpmc simulator (`sim/`, feature `sim`).
//!
//! Nothing here imports from the layers above but `Errno`.
//!
//! # Safety
//!
//! Functions here take references and return `Result<_, Errno>`; raw
//! pointers never leave this module. Each `unsafe` block names the user
//! memory the kernel reads or writes.
#![allow(unsafe_code)]

pub mod abi;
pub(crate) mod cstr;
#[cfg(any(test, feature = "sim"))]
pub mod sim;

cfg_if::cfg_if! {
    if #[cfg(target_os = "freebsd")] {
        mod freebsd;
        pub use freebsd::RealSys;
    } else {
        mod unsupported;
        pub use unsupported::RealSys;
    }
}

use crate::errno::Errno;
use abi::*;

/// The `PMC_OP_*` request codes (`enum pmc_ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[allow(missing_docs)]
pub enum PmcOp {
    ConfigureLog = PMC_OP_CONFIGURELOG,
    FlushLog = PMC_OP_FLUSHLOG,
    GetCpuInfo = PMC_OP_GETCPUINFO,
    GetDriverStats = PMC_OP_GETDRIVERSTATS,
    GetModuleVersion = PMC_OP_GETMODULEVERSION,
    GetPmcInfo = PMC_OP_GETPMCINFO,
    PmcAdmin = PMC_OP_PMCADMIN,
    PmcAllocate = PMC_OP_PMCALLOCATE,
    PmcAttach = PMC_OP_PMCATTACH,
    PmcDetach = PMC_OP_PMCDETACH,
    PmcGetMsr = PMC_OP_PMCGETMSR,
    PmcRelease = PMC_OP_PMCRELEASE,
    PmcRw = PMC_OP_PMCRW,
    PmcSetCount = PMC_OP_PMCSETCOUNT,
    PmcStart = PMC_OP_PMCSTART,
    PmcStop = PMC_OP_PMCSTOP,
    WriteLog = PMC_OP_WRITELOG,
    CloseLog = PMC_OP_CLOSELOG,
    GetDynEventInfo = PMC_OP_GETDYNEVENTINFO,
    GetCaps = PMC_OP_GETCAPS,
}

impl PmcOp {
    /// The C name (`"PMC_OP_PMCALLOCATE"`).
    pub fn c_name(self) -> &'static str {
        match self {
            PmcOp::ConfigureLog => "PMC_OP_CONFIGURELOG",
            PmcOp::FlushLog => "PMC_OP_FLUSHLOG",
            PmcOp::GetCpuInfo => "PMC_OP_GETCPUINFO",
            PmcOp::GetDriverStats => "PMC_OP_GETDRIVERSTATS",
            PmcOp::GetModuleVersion => "PMC_OP_GETMODULEVERSION",
            PmcOp::GetPmcInfo => "PMC_OP_GETPMCINFO",
            PmcOp::PmcAdmin => "PMC_OP_PMCADMIN",
            PmcOp::PmcAllocate => "PMC_OP_PMCALLOCATE",
            PmcOp::PmcAttach => "PMC_OP_PMCATTACH",
            PmcOp::PmcDetach => "PMC_OP_PMCDETACH",
            PmcOp::PmcGetMsr => "PMC_OP_PMCGETMSR",
            PmcOp::PmcRelease => "PMC_OP_PMCRELEASE",
            PmcOp::PmcRw => "PMC_OP_PMCRW",
            PmcOp::PmcSetCount => "PMC_OP_PMCSETCOUNT",
            PmcOp::PmcStart => "PMC_OP_PMCSTART",
            PmcOp::PmcStop => "PMC_OP_PMCSTOP",
            PmcOp::WriteLog => "PMC_OP_WRITELOG",
            PmcOp::CloseLog => "PMC_OP_CLOSELOG",
            PmcOp::GetDynEventInfo => "PMC_OP_GETDYNEVENTINFO",
            PmcOp::GetCaps => "PMC_OP_GETCAPS",
        }
    }
}

/// `PMC_OP_GETPMCINFO` in safe form: `cpu` in, one `pmc_info` per row out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PmcInfoRequest {
    /// `pm_cpu` (in).
    pub cpu: i32,
    /// How many rows to make room for (`pm_npmc` from `PMC_OP_GETCPUINFO`).
    pub npmc: u32,
    /// The rows (out), `npmc` of them.
    pub pmcs: Vec<pmc_info>,
}

/// One `PMC_OP_*` request with its argument. The op code is derived from the
/// variant, so a request can never carry the wrong argument type.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum OpArg<'a> {
    ConfigureLog(&'a mut pmc_op_configurelog),
    FlushLog,
    GetCpuInfo(&'a mut pmc_op_getcpuinfo),
    GetDriverStats(&'a mut pmc_op_getdriverstats),
    /// In: the client's version (0 is always accepted); out: the kernel's.
    GetModuleVersion(&'a mut u32),
    GetPmcInfo(&'a mut PmcInfoRequest),
    PmcAdmin(&'a mut pmc_op_pmcadmin),
    PmcAllocate(&'a mut pmc_op_pmcallocate),
    PmcAttach(&'a mut pmc_op_pmcattach),
    PmcDetach(&'a mut pmc_op_pmcattach),
    PmcGetMsr(&'a mut pmc_op_getmsr),
    PmcRelease(&'a mut pmc_op_simple),
    PmcRw(&'a mut pmc_op_pmcrw),
    PmcSetCount(&'a mut pmc_op_pmcsetcount),
    PmcStart(&'a mut pmc_op_simple),
    PmcStop(&'a mut pmc_op_simple),
    WriteLog(&'a mut pmc_op_writelog),
    CloseLog,
    GetDynEventInfo(&'a mut pmc_op_getdyneventinfo),
    GetCaps(&'a mut pmc_op_caps),
}

impl OpArg<'_> {
    /// The request code this argument goes with.
    pub fn op(&self) -> PmcOp {
        match self {
            OpArg::ConfigureLog(_) => PmcOp::ConfigureLog,
            OpArg::FlushLog => PmcOp::FlushLog,
            OpArg::GetCpuInfo(_) => PmcOp::GetCpuInfo,
            OpArg::GetDriverStats(_) => PmcOp::GetDriverStats,
            OpArg::GetModuleVersion(_) => PmcOp::GetModuleVersion,
            OpArg::GetPmcInfo(_) => PmcOp::GetPmcInfo,
            OpArg::PmcAdmin(_) => PmcOp::PmcAdmin,
            OpArg::PmcAllocate(_) => PmcOp::PmcAllocate,
            OpArg::PmcAttach(_) => PmcOp::PmcAttach,
            OpArg::PmcDetach(_) => PmcOp::PmcDetach,
            OpArg::PmcGetMsr(_) => PmcOp::PmcGetMsr,
            OpArg::PmcRelease(_) => PmcOp::PmcRelease,
            OpArg::PmcRw(_) => PmcOp::PmcRw,
            OpArg::PmcSetCount(_) => PmcOp::PmcSetCount,
            OpArg::PmcStart(_) => PmcOp::PmcStart,
            OpArg::PmcStop(_) => PmcOp::PmcStop,
            OpArg::WriteLog(_) => PmcOp::WriteLog,
            OpArg::CloseLog => PmcOp::CloseLog,
            OpArg::GetDynEventInfo(_) => PmcOp::GetDynEventInfo,
            OpArg::GetCaps(_) => PmcOp::GetCaps,
        }
    }
}

/// The seam every `PMC_OP_*` request and OS fact passes through:
/// [`RealSys`] (the hwpmc syscall on FreeBSD, `ENOSYS` elsewhere), or the
/// simulator (`sim::SimDriver`, feature `sim`) anywhere.
///
/// `call` returns `Ok(())` for a 0 return and `Err(errno)` for -1, exactly
/// like `syscall(pmc_syscall, op, arg)`.
pub trait Sys: Send + Sync {
    /// Issues one request.
    fn call(&self, arg: OpArg<'_>) -> Result<(), Errno>;

    /// The pid of the calling process, as the driver sees it (the "owner").
    fn current_pid(&self) -> i32;

    /// An integer sysctl (`security.bsd.unprivileged_syspmcs`, `kern.hz`,
    /// ...), for error messages and defaults; `None` if unknown.
    fn sysctl_int(&self, name: &str) -> Option<i64> {
        let _ = name;
        None
    }

    /// A string sysctl (`kern.hwpmc.cpuid`), `None` if unknown. An empty
    /// string is an answer: the kernel left it unset.
    fn sysctl_string(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// The caller's effective uid, if known.
    fn euid(&self) -> Option<u32> {
        None
    }

    /// The parent of process `pid` (`kinfo_proc.ki_ppid`), if known: the
    /// backend walks the owner's ancestors with it to refuse a
    /// `PMC_F_DESCENDANTS` sampling attach whose subtree holds the owner.
    fn parent_pid(&self, pid: i32) -> Option<i32> {
        let _ = pid;
        None
    }

    /// The children of process `pid` (every process whose
    /// `kinfo_proc.ki_ppid` is `pid`), if known: the subtree hwpmc walks
    /// for a `PMC_F_DESCENDANTS` attach.
    fn children(&self, pid: i32) -> Option<Vec<i32>> {
        let _ = pid;
        None
    }

    /// Whether process `pid` has `P_HWPMC` in its flags
    /// (`kinfo_proc.ki_flag`): hwpmc calls its context-switch, fork, exec
    /// and exit hooks only for such a process. `None` if unknown.
    fn uses_hwpmc(&self, pid: i32) -> Option<bool> {
        let _ = pid;
        None
    }

    /// Lets `d` pass: the real one sleeps; the simulator advances its
    /// clock (hardclock ticks, returns to user mode).
    fn pause(&self, d: std::time::Duration) {
        std::thread::sleep(d);
    }

    /// Which kernel this driver talks to: drivers with the same id share
    /// hwpmc's per-process state (one owner descriptor, one log per
    /// process). Every real driver is the one kernel (0, the default); each
    /// simulator is its own.
    fn kernel_id(&self) -> usize {
        0
    }

    /// The CPU's own identity (CPUID on x86, MIDR on Arm), if this `Sys`
    /// can read it: the real one reads the machine it runs on; a simulator
    /// has none (its `kern.hwpmc.cpuid` names its CPU).
    fn cpu_id(&self) -> Option<pmc_events::CpuId> {
        None
    }
}

impl<S: Sys + ?Sized> Sys for std::sync::Arc<S> {
    fn call(&self, arg: OpArg<'_>) -> Result<(), Errno> {
        (**self).call(arg)
    }
    fn current_pid(&self) -> i32 {
        (**self).current_pid()
    }
    fn sysctl_int(&self, name: &str) -> Option<i64> {
        (**self).sysctl_int(name)
    }
    fn sysctl_string(&self, name: &str) -> Option<String> {
        (**self).sysctl_string(name)
    }
    fn euid(&self) -> Option<u32> {
        (**self).euid()
    }
    fn parent_pid(&self, pid: i32) -> Option<i32> {
        (**self).parent_pid(pid)
    }
    fn children(&self, pid: i32) -> Option<Vec<i32>> {
        (**self).children(pid)
    }
    fn uses_hwpmc(&self, pid: i32) -> Option<bool> {
        (**self).uses_hwpmc(pid)
    }
    fn kernel_id(&self) -> usize {
        (**self).kernel_id()
    }
    fn pause(&self, d: std::time::Duration) {
        (**self).pause(d);
    }
    fn cpu_id(&self) -> Option<pmc_events::CpuId> {
        (**self).cpu_id()
    }
}

/// The socket pair a kernel log is written into: (the reader's end, the
/// end `PMC_OP_CONFIGURELOG` is given). A socket pair rather than a pipe:
/// the reader can wait with a timeout and drain without blocking (hwpmc
/// writes to any writable fd; pmcstat -O host:port logs to a socket too).
/// The same for every `Sys`: the simulator writes its log into the host fd
/// as hwpmc's writer thread would.
#[cfg(unix)]
pub(crate) fn log_socket_pair(
) -> std::io::Result<(std::os::unix::net::UnixStream, std::os::fd::OwnedFd)> {
    let (read_end, write_end) = std::os::unix::net::UnixStream::pair()?;
    Ok((read_end, write_end.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_codes_match_variants() {
        let mut v = 0u32;
        let mut cl = pmc_op_configurelog::default();
        assert_eq!(
            OpArg::ConfigureLog(&mut cl).op() as i32,
            PMC_OP_CONFIGURELOG
        );
        assert_eq!(
            OpArg::GetModuleVersion(&mut v).op() as i32,
            PMC_OP_GETMODULEVERSION
        );
        assert_eq!(OpArg::CloseLog.op() as i32, PMC_OP_CLOSELOG);
        assert_eq!(PmcOp::GetCaps as i32, 19);
        assert_eq!(PmcOp::PmcStart.c_name(), "PMC_OP_PMCSTART");
    }
}
