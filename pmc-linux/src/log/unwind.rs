//! DWARF call graphs ([`pmc_core::CallGraph::Dwarf`]): what a sample carries, and the drain's
//! unwinding stage.
//!
//! The PMC's events are opened as `perf record --call-graph dwarf` opens them:
//! `PERF_SAMPLE_REGS_USER` with the registers an unwind starts from ([`REGS_MASK`]),
//! `PERF_SAMPLE_STACK_USER` with the stack size asked for, and `exclude_callchain_user`, so the
//! kernel's `PERF_SAMPLE_CALLCHAIN` holds only kernel frames. The drain thread keeps each
//! sample's registers and stack with it until the sample is written (after the reorder
//! buffer has put every ring's records in time order, so the process's `MMAP2` records come
//! first), then [`Stage::complete`] replaces the user part of its callchain with the frames
//! [`pmc_unwind`] recovers, and drops the stack: the log stores callchains, not stacks.
//!
//! The stage sees every record the log takes ([`Stage::observe`]): executable maps, execs,
//! forks and exits, so it knows each process's mappings when a sample of it comes.
//!
//! The unwinder (pmc-unwind: framehop, object, gimli, memmap2) is the `dwarf` feature, on by
//! default. Without it, `CallGraph::Dwarf` is refused at allocation (NotSupported, naming
//! the feature) and the stage passes records through; `CallGraph::DwarfRaw`, which only
//! captures registers and stacks into the log for a later unwind, still works.

use pmc_core::{Allocation, CallGraph, Error, ErrorKind, Op, Result};
use pmc_log::record as log;

use crate::record::SampleFields;

/// `perf_event_attr.sample_regs_user`: the registers an unwind starts from. x86-64
/// (`arch/x86/include/uapi/asm/perf_regs.h`): `PERF_REG_X86_BP` (6), `_SP` (7), `_IP` (8).
#[cfg(target_arch = "x86_64")]
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// `perf_event_attr.sample_regs_user`: the registers an unwind starts from. AArch64
/// (`arch/arm64/include/uapi/asm/perf_regs.h`): `PERF_REG_ARM64_X29` (29, the frame
/// pointer), `_LR` (30), `_SP` (31), `_PC` (32).
#[cfg(target_arch = "aarch64")]
pub(crate) const REGS_MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32);
/// No unwinder for this architecture: [`check`] refuses DWARF call graphs.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) const REGS_MASK: u64 = 0;

/// Whether an allocation's samples carry user registers and stacks.
pub(crate) fn wants_stack(a: &Allocation) -> bool {
    a.mode.is_sampling()
        && a.flags.contains(pmc_core::Flags::CALLCHAIN)
        && a.call_graph.stack_size().is_some()
}

/// Whether this build can unwind while recording: the `dwarf` feature, on an architecture
/// pmc-unwind knows.
#[cfg(feature = "dwarf")]
const UNWINDS: bool = pmc_unwind::SUPPORTED;
#[cfg(not(feature = "dwarf"))]
const UNWINDS: bool = false;

/// Refuses DWARF call graphs this backend cannot give.
pub(crate) fn check(a: &Allocation) -> Result<()> {
    let Some(stack_size) = a.call_graph.stack_size() else {
        return Ok(());
    };
    if !a.mode.is_sampling() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            "a DWARF call graph needs a sampling PMC: counting PMCs take no callchains",
        )
        .with_help("use Allocation::sampling, or leave call_graph at CallGraph::FramePointers"));
    }
    if stack_size == 0 || stack_size % 8 != 0 || stack_size > CallGraph::MAX_STACK_SIZE {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            Op::Allocate,
            format!(
                "DWARF stack size {stack_size} is not a multiple of 8 in 8..={}",
                CallGraph::MAX_STACK_SIZE
            ),
        )
        .with_help("use CallGraph::dwarf() (8192 bytes) or CallGraph::parse(\"dwarf,SIZE\")"));
    }
    if REGS_MASK == 0 {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            format!(
                "DWARF unwinding is not available on {}",
                std::env::consts::ARCH
            ),
        )
        .with_help("use CallGraph::FramePointers"));
    }
    if !UNWINDS && matches!(a.call_graph, CallGraph::Dwarf { .. }) {
        return Err(Error::new(
            ErrorKind::NotSupported,
            Op::Allocate,
            "this build of pmc-linux cannot unwind while recording: it was built without \
             its `dwarf` feature",
        )
        .with_help(
            "build pmc (or pmc-linux) with the `dwarf` feature, or record with \
             CallGraph::DwarfRaw and unwind the log afterwards (pmc_unwind::log::unwind_log)",
        ));
    }
    Ok(())
}

/// The user registers an unwind starts from (AArch64 has a link register; x86-64's `lr` is 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Regs {
    pub(crate) pc: u64,
    pub(crate) sp: u64,
    pub(crate) fp: u64,
    pub(crate) lr: u64,
}

#[cfg(feature = "dwarf")]
impl From<Regs> for pmc_unwind::UserRegs {
    fn from(r: Regs) -> Self {
        pmc_unwind::UserRegs {
            pc: r.pc,
            sp: r.sp,
            fp: r.fp,
            lr: r.lr,
        }
    }
}

/// A sample's user registers and stack: a view of the ring's record as it is drained, then
/// of the copy the reorder buffer keeps until the sample is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserStack<'a> {
    pub(crate) regs: Regs,
    pub(crate) stack: &'a [u8],
}

impl<'a> UserStack<'a> {
    /// The registers and stack of `s`, if it has a user context.
    pub(crate) fn of(s: &SampleFields<'a>) -> Option<UserStack<'a>> {
        let r = s.regs_user.filter(|r| r.abi != 0)?;
        let stack = s.stack_user?;
        #[cfg(target_arch = "x86_64")]
        let regs = Regs {
            fp: r.get(0)?,
            sp: r.get(1)?,
            pc: r.get(2)?,
            lr: 0,
        };
        #[cfg(target_arch = "aarch64")]
        let regs = Regs {
            fp: r.get(0)?,
            lr: r.get(1)?,
            sp: r.get(2)?,
            pc: r.get(3)?,
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let regs = {
            let _ = r;
            return None;
        };
        Some(UserStack { regs, stack })
    }

    /// The log record that keeps these registers and this stack after sample `s`
    /// (`CallGraph::DwarfRaw`).
    pub(crate) fn to_record(self, s: &log::Sample<'_>) -> log::UserStack<'static> {
        log::UserStack {
            time: s.time,
            pmc_id: s.pmc_id,
            pid: s.pid,
            tid: s.tid,
            arch: log::ARCH_NATIVE,
            pc: self.regs.pc,
            sp: self.regs.sp,
            fp: self.regs.fp,
            lr: self.regs.lr,
            stack: log::Bytes::from(self.stack.to_vec()),
        }
    }
}

/// The drain's unwinding stage (see the module documentation): pmc-unwind's log unwinder,
/// the same code that unwinds a log recorded with its stacks when it is read.
#[cfg(feature = "dwarf")]
#[derive(Debug, Default)]
pub(crate) struct Stage {
    unwinder: pmc_unwind::log::LogUnwinder,
}

#[cfg(feature = "dwarf")]
impl Stage {
    /// Follows the processes' mappings through the records the log takes.
    pub(crate) fn observe(&mut self, rec: &log::Record<'_>) {
        self.unwinder.observe(rec);
    }

    /// Replaces the user part of `s`'s callchain with the frames unwound from `u` (see
    /// [`pmc_unwind::log::LogUnwinder::complete`]).
    pub(crate) fn complete(&mut self, s: &mut log::Sample<'_>, u: &UserStack<'_>) {
        self.unwinder.complete(s, &u.regs.into(), u.stack);
    }

    /// Puts the unwinder's counts, and the objects it could not use, into `summary`.
    pub(crate) fn tally(&mut self, summary: &mut crate::log::SamplingDetails) {
        let u = self.unwinder.unwinder();
        let st = u.stats();
        summary.unwound = st.unwinds;
        summary.unwind_truncated = st.truncated;
        for r in u.take_refusals() {
            if summary.unwind_refused.len() < 64 {
                summary.unwind_refused.push(r);
            }
        }
    }
}

/// Without the `dwarf` feature: no unwinder. [`check`] refuses `CallGraph::Dwarf`, so no
/// sample asks to be completed; records pass through.
#[cfg(not(feature = "dwarf"))]
#[derive(Debug, Default)]
pub(crate) struct Stage {
    _unwinder: (),
}

#[cfg(not(feature = "dwarf"))]
impl Stage {
    /// Nothing to follow.
    pub(crate) fn observe(&mut self, _rec: &log::Record<'_>) {}

    /// Leaves `s` as the kernel gave it (unreachable: `check` refuses DWARF unwinding).
    pub(crate) fn complete(&mut self, _s: &mut log::Sample<'_>, _u: &UserStack<'_>) {}

    /// No counts.
    pub(crate) fn tally(&mut self, _summary: &mut crate::log::SamplingDetails) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_core::Rate;

    #[test]
    fn check_refuses_what_cannot_be_given() {
        // Without an unwinder, DWARF unwinding is refused and raw capture is not.
        let s = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(99));
        let raw = s
            .clone()
            .call_graph(CallGraph::DwarfRaw { stack_size: 8192 });
        assert!(check(&raw).is_ok() || REGS_MASK == 0);
        if !UNWINDS && REGS_MASK != 0 {
            let e = check(&s.call_graph(CallGraph::dwarf())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.to_string().contains("`dwarf` feature"), "{e}");
        }
        let sampling = Allocation::sampling("cpu-clock".parse().unwrap(), Rate::Frequency(99));
        assert!(check(&sampling.clone().call_graph(CallGraph::dwarf())).is_ok() || !UNWINDS);
        let odd = sampling
            .clone()
            .call_graph(CallGraph::Dwarf { stack_size: 12 });
        assert_eq!(check(&odd).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let huge = sampling.call_graph(CallGraph::Dwarf { stack_size: 65536 });
        assert_eq!(check(&huge).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let counting =
            Allocation::counting("cpu-clock".parse().unwrap()).call_graph(CallGraph::dwarf());
        let e = check(&counting).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(!wants_stack(&counting));
    }

    /// Kernel frames stay first; the user part is replaced by the unwind, which for a
    /// process with no known mappings is the PC alone, marked truncated.
    #[cfg(feature = "dwarf")]
    #[test]
    fn complete_keeps_kernel_frames_and_marks_truncation() {
        let mut stage = Stage::default();
        let mut s = log::Sample {
            time: 1,
            pmc_id: 1,
            pid: 99,
            tid: 99,
            cpu: None,
            period: 1,
            callchain: log::Callchain::from_vec(vec![0xffff_ffff_8100_0000, 0xffff_ffff_8100_0100]),
            kernel_frames: 2,
            raw: log::Bytes::default(),
        };
        let u = UserStack {
            regs: Regs {
                pc: 0x40_1000,
                sp: 0x7ff0_0000,
                fp: 0,
                lr: 0,
            },
            stack: &[0; 64],
        };
        stage.complete(&mut s, &u);
        assert_eq!(
            s.callchain.to_vec(),
            [
                0xffff_ffff_8100_0000,
                0xffff_ffff_8100_0100,
                0x40_1000,
                log::TRUNCATED_FRAME
            ]
        );
        assert_eq!(s.kernel_frames, 2);
        let mut summary = crate::log::SamplingDetails::default();
        stage.tally(&mut summary);
        assert_eq!((summary.unwound, summary.unwind_truncated), (1, 1));
    }
}
