//! `RealSys` on FreeBSD, the real hwpmc: `modfind("hwpmc")` + `modstat`
//! give the dynamic syscall number; every request is
//! `syscall(nr, op, arg)`; sysctls and the process table through
//! `sysctlbyname`/`sysctl`.

use super::abi::*;
use super::{OpArg, Sys};
use crate::errno::Errno;
use pmc_log::bytes::ByteCursor;
use std::ffi::{c_char, c_int, c_void};

unsafe extern "C" {
    /// `int modfind(const char *modname)` (FreeBSD libc).
    fn modfind(modname: *const c_char) -> c_int;
    /// `int modstat(int modid, struct module_stat *stat)` (FreeBSD libc).
    fn modstat(modid: c_int, stat: *mut module_stat) -> c_int;
}

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// The hwpmc syscall, found at run time.
#[derive(Debug)]
pub struct RealSys {
    syscall: c_int,
}

impl RealSys {
    /// Why this build cannot reach hwpmc, and what to do instead: `None`
    /// on LP64 (amd64, arm64), the only ABI `abi` pins.
    pub(crate) const UNSUPPORTED: Option<(&'static str, &'static str)> =
        if cfg!(target_pointer_width = "64") {
            None
        } else {
            Some((
                "pmc-freebsd speaks the LP64 hwpmc ABI (amd64, arm64) only",
                "build for amd64 or arm64",
            ))
        };

    /// `modfind("hwpmc")` then `modstat` to learn the syscall number.
    ///
    /// # Errors
    /// `ENOENT` when hwpmc is not loaded (`kldload hwpmc`); whatever
    /// `modstat` returns otherwise.
    #[doc(alias = "modfind")]
    #[doc(alias = "modstat")]
    pub fn find() -> Result<RealSys, Errno> {
        // SAFETY: `modfind` reads the NUL-terminated string, a 'static literal.
        let id = unsafe { modfind(c"hwpmc".as_ptr()) };
        if id < 0 {
            return Err(last_errno());
        }
        // `version` = sizeof(struct module_stat) = 56.
        let mut st = module_stat::default();
        // SAFETY: `modstat` writes at most `st.version` (56) bytes into `st`,
        // a live, properly aligned `module_stat` of exactly that size.
        let r = unsafe { modstat(id, &mut st) };
        if r < 0 {
            return Err(last_errno());
        }
        let nr = st.intval();
        if nr <= 0 {
            return Err(Errno::ENOSYS);
        }
        Ok(RealSys { syscall: nr })
    }

    /// The syscall number hwpmc registered (usually 210; never assumed).
    pub fn syscall_number(&self) -> i32 {
        self.syscall
    }

    fn raw(&self, op: c_int, arg: *mut c_void) -> Result<(), Errno> {
        // SAFETY: callers pass either NULL (FLUSHLOG, CLOSELOG) or a pointer
        // to a live, exclusively borrowed argument struct of the exact C
        // layout the kernel expects for `op` (pinned in `abi`); the kernel
        // copies in/out at most that struct's size and keeps no reference.
        let r = unsafe { libc::syscall(self.syscall, op, arg) };
        if r < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }
}

fn ptr<T>(r: &mut T) -> *mut c_void {
    (r as *mut T).cast()
}

impl Sys for RealSys {
    fn call(&self, arg: OpArg<'_>) -> Result<(), Errno> {
        let op = arg.op() as c_int;
        match arg {
            OpArg::FlushLog | OpArg::CloseLog => self.raw(op, std::ptr::null_mut()),
            OpArg::ConfigureLog(a) => self.raw(op, ptr(a)),
            OpArg::GetCpuInfo(a) => self.raw(op, ptr(a)),
            OpArg::GetDriverStats(a) => self.raw(op, ptr(a)),
            OpArg::GetModuleVersion(a) => self.raw(op, ptr(a)),
            OpArg::PmcAdmin(a) => self.raw(op, ptr(a)),
            OpArg::PmcAllocate(a) => self.raw(op, ptr(a)),
            OpArg::PmcAttach(a) | OpArg::PmcDetach(a) => self.raw(op, ptr(a)),
            OpArg::PmcGetMsr(a) => self.raw(op, ptr(a)),
            OpArg::PmcRelease(a) | OpArg::PmcStart(a) | OpArg::PmcStop(a) => self.raw(op, ptr(a)),
            OpArg::PmcRw(a) => self.raw(op, ptr(a)),
            OpArg::PmcSetCount(a) => self.raw(op, ptr(a)),
            OpArg::WriteLog(a) => self.raw(op, ptr(a)),
            OpArg::GetDynEventInfo(a) => self.raw(op, ptr(a)),
            OpArg::GetCaps(a) => self.raw(op, ptr(a)),
            OpArg::GetPmcInfo(req) => {
                // Header (8 bytes) + npmc * 104, 8-aligned: a Vec<u64> of
                // 1 + 13 * npmc words.
                // Rows per CPU are a few dozen; refuse absurd sizes rather
                // than allocate gigabytes.
                if req.npmc > 1 << 16 {
                    return Err(Errno::EINVAL);
                }
                let n = req.npmc as usize;
                let words = 1usize
                    .checked_add(n.checked_mul(13).ok_or(Errno::ENOMEM)?)
                    .ok_or(Errno::ENOMEM)?;
                let mut buf = vec![0u64; words];
                let hdr = pmc_op_getpmcinfo {
                    pm_cpu: req.cpu,
                    __pad0: 0,
                    pm_pmcs: [],
                };
                // SAFETY: `buf` holds at least 8 bytes, is 8-aligned, and
                // `pmc_op_getpmcinfo` is 8 bytes of plain integers.
                unsafe { std::ptr::write(buf.as_mut_ptr().cast::<pmc_op_getpmcinfo>(), hdr) };
                self.raw(op, buf.as_mut_ptr().cast())?;
                req.pmcs.clear();
                for i in 0..n {
                    // SAFETY: entry i lies at byte 8 + 104 * i, inside `buf`
                    // (8 + 104 * n bytes), 8-aligned; `pmc_info` is plain
                    // integers, valid for any bit pattern the kernel wrote.
                    let info =
                        unsafe { std::ptr::read(buf.as_ptr().add(1 + 13 * i).cast::<pmc_info>()) };
                    req.pmcs.push(info);
                }
                Ok(())
            }
        }
    }

    fn current_pid(&self) -> i32 {
        std::process::id() as i32
    }

    fn sysctl_int(&self, name: &str) -> Option<i64> {
        let mut buf = [0u8; 8];
        match sysctl_read(name, &mut buf)? {
            4 => ByteCursor::ne(&buf).i32_at(0).ok().map(i64::from),
            8 => ByteCursor::ne(&buf).i64_at(0).ok(),
            _ => None,
        }
    }

    fn sysctl_string(&self, name: &str) -> Option<String> {
        // PMC_CPUID_LEN is 64; room for more, cut at the first NUL.
        let mut buf = [0u8; 256];
        let len = sysctl_read(name, &mut buf)?;
        let got = buf.get(..len.min(buf.len()))?;
        Some(super::cstr::c_str(got))
    }

    /// CPUID / MIDR of this machine (`pmc_events::sys::host`).
    fn cpu_id(&self) -> Option<pmc_events::CpuId> {
        pmc_events::sys::host()
    }

    fn euid(&self) -> Option<u32> {
        Some(nix::unistd::geteuid().as_raw())
    }

    /// `sysctl kern.proc.pid.<pid>`: the process's `ki_ppid`.
    fn parent_pid(&self, pid: i32) -> Option<i32> {
        proc_info(pid).map(|kp| kp.ki_ppid)
    }

    /// `sysctl kern.proc.proc`: every process whose `ki_ppid` is `pid`.
    fn children(&self, pid: i32) -> Option<Vec<i32>> {
        let all = all_procs()?;
        Some(
            all.iter()
                .filter(|kp| kp.ki_ppid == pid && kp.ki_pid != pid)
                .map(|kp| kp.ki_pid)
                .collect(),
        )
    }

    /// `sysctl kern.proc.pid.<pid>`: `P_HWPMC` in `ki_flag` (`p_flag`).
    fn uses_hwpmc(&self, pid: i32) -> Option<bool> {
        proc_info(pid).map(|kp| kp.ki_flag & libc::c_long::from(libc::P_HWPMC) != 0)
    }
}

/// `sysctl kern.proc.pid.<pid>`: the process's `kinfo_proc`.
fn proc_info(pid: i32) -> Option<libc::kinfo_proc> {
    let mut mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid];
    // SAFETY: `kinfo_proc` is plain C data (integers, arrays, raw
    // pointers), for which all-zero bytes are a valid value.
    let mut kp: libc::kinfo_proc = unsafe { std::mem::zeroed() };
    let mut len: libc::size_t = std::mem::size_of::<libc::kinfo_proc>();
    // SAFETY: `sysctl` reads the 4-element `mib`, writes at most `len`
    // bytes into `kp` (which is `len` bytes long) and the size written
    // into `len`; no new value is passed (NULL, 0).
    let r = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            4,
            std::ptr::addr_of_mut!(kp).cast(),
            &mut len,
            std::ptr::null(),
            0,
        )
    };
    let whole = len == std::mem::size_of::<libc::kinfo_proc>();
    (r == 0 && whole).then_some(kp)
}

/// The most processes [`all_procs`] reads (`kern.maxproc` is far below).
const MAX_PROCS: usize = 1 << 20;

/// `sysctl kern.proc.proc`: one `kinfo_proc` per process (not per thread).
fn all_procs() -> Option<Vec<libc::kinfo_proc>> {
    let mut mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    let size = std::mem::size_of::<libc::kinfo_proc>();
    // Processes come and go between the size query and the read: retry.
    for _ in 0..4 {
        let mut len: libc::size_t = 0;
        // SAFETY: a size query: NULL output buffer, `sysctl` writes only
        // `len`; the 3-element `mib` (the fourth is unused) is read.
        let r = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                std::ptr::null_mut(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if r != 0 {
            return None;
        }
        let n = (len / size).saturating_add(16).min(MAX_PROCS);
        let mut v: Vec<libc::kinfo_proc> = Vec::with_capacity(n);
        let mut len = n * size;
        // SAFETY: `sysctl` writes at most `len` bytes, the capacity of `v`
        // (n elements of `size` bytes), and the size written into `len`.
        let r = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                v.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if r == 0 {
            // SAFETY: the kernel initialised `len` bytes, whole
            // `kinfo_proc`s (plain C data), within the capacity.
            unsafe { v.set_len((len / size).min(n)) };
            return Some(v);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM) {
            return None;
        }
    }
    None
}

/// `sysctlbyname(name)` into `buf`: the value's size, or `None` when the name
/// is unknown or its value does not fit.
fn sysctl_read(name: &str, buf: &mut [u8]) -> Option<usize> {
    let cname = std::ffi::CString::new(name).ok()?;
    let mut len: libc::size_t = buf.len();
    // SAFETY: `sysctlbyname` reads the NUL-terminated `cname`, writes at most
    // `len` (`buf.len()`) bytes into `buf` and the result size into `len`; no
    // new value is passed (NULL, 0).
    let r = unsafe {
        libc::sysctlbyname(
            cname.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null(),
            0,
        )
    };
    (r == 0).then_some(len)
}

/// On FreeBSD itself, the fixed errno numbers of [`Errno`] must equal libc's.
#[cfg(test)]
mod host_errno {
    use crate::errno::Errno;

    #[test]
    fn match_host_libc() {
        for (e, l) in [
            (Errno::EPERM, libc::EPERM),
            (Errno::ENOENT, libc::ENOENT),
            (Errno::ESRCH, libc::ESRCH),
            (Errno::ENXIO, libc::ENXIO),
            (Errno::EBUSY, libc::EBUSY),
            (Errno::EEXIST, libc::EEXIST),
            (Errno::EINVAL, libc::EINVAL),
            (Errno::EOPNOTSUPP, libc::EOPNOTSUPP),
            (Errno::EPROGMISMATCH, libc::EPROGMISMATCH),
            (Errno::ENOSYS, libc::ENOSYS),
            (Errno::EDOOFUS, libc::EDOOFUS),
        ] {
            assert_eq!(e.0, l, "{e:?}");
        }
    }
}
