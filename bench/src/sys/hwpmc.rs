//! The bare hwpmc(4) system call pmc-freebsd is measured against:
//! `syscall(nr, PMC_OP_*, arg)` with the argument structs of
//! `pmc_freebsd::sys::abi`.

use pmc_freebsd::sys::abi::{pmc_op_pmcrw, pmc_op_simple, PMC_F_OLDVALUE, PMC_OP_PMCRW};
use std::io;

/// `PMC_OP_PMCRW` with `PMC_F_OLDVALUE`: the PMC's value.
///
/// # Errors
///
/// The syscall's errno.
#[inline]
pub fn read(nr: i32, id: u32) -> io::Result<u64> {
    let mut rw = pmc_op_pmcrw {
        pm_flags: PMC_F_OLDVALUE,
        pm_pmcid: id,
        pm_value: 0,
    };
    // SAFETY: `rw` is a live, exclusively borrowed `struct pmc_op_pmcrw` of
    // the layout the kernel expects for PMC_OP_PMCRW (pinned in
    // pmc-freebsd's abi); the kernel copies it in and out and keeps nothing.
    let r = unsafe { libc::syscall(nr, PMC_OP_PMCRW, std::ptr::addr_of_mut!(rw)) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rw.pm_value)
}

/// A request taking a `struct pmc_op_simple` (PMCSTART, PMCSTOP, ...).
///
/// # Errors
///
/// The syscall's errno.
#[inline]
pub fn simple(nr: i32, op: i32, id: u32) -> io::Result<()> {
    let mut s = pmc_op_simple { pm_pmcid: id };
    // SAFETY: `s` is a live `struct pmc_op_simple`, the argument of every
    // request that takes a bare PMC id; the kernel only reads it.
    let r = unsafe { libc::syscall(nr, op, std::ptr::addr_of_mut!(s)) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
