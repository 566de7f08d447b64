//! Time passing: what PMCs count for a slice of work, and the samples
//! sampling PMCs take.
//!
//! The rules here (each cited where it is applied):
//! * Each [`SimDriver::run`](super::SimDriver::run) is one time slice: TC PMCs
//!   with `PMC_F_LOG_PROCCSW` log one PROCCSW record at its end (PROCCSW only
//!   for TC PMCs).
//! * Hardware events are counted in user mode only; a PMC restricted to the
//!   kernel (`os` only) counts nothing.
//! * Samples wait in a ring until the next hardclock tick (every `1e9 / HZ`
//!   ns of simulated time; a sample's time is its share of the slice's
//!   events) or `PMC_OP_FLUSHLOG`, which process them into the log only if
//!   their PMC is still running: stopping (or releasing) a sampling PMC
//!   before a flush loses the samples of its last tick.
//! * A sampling PMC attached to its owner feeds profil(2): its samples are
//!   never logged.
//! * A process sampling PMC counts down per target thread (`pt_pmcval`;
//!   [`Work::tid`] picks the thread), a system one per CPU.
//! * A [`Work`] inside a system call (`returns_to_user_after`) takes
//!   kernel-mode samples; those of `PMC_F_USERCALLCHAIN` PMCs wait for the
//!   return to user mode, whose AST completes them only while the PMC runs;
//!   the sweep keeps a pending sample at most a tick.

use super::log::LogRecord;
use super::{ticks, PState, RingEntry, SimPmc, State, Work, HZ, SAMPLE_PC, SOFT_EVENTS};
use crate::sys::abi::*;

/// The PC the simulator samples at in the kernel (a system call).
const KERNEL_PC: u64 = 0xFFFF_FFFF_8080_1000;

impl State {
    /// What a hardware PMC counts in a slice of [`Work`]. SIM-ONLY: no
    /// kernel rule decides this, the hardware does; the simulator counts
    /// user-mode events only (a PMC restricted to the kernel counts
    /// nothing) and knows a handful of event selects (cycles, reference
    /// cycles, instructions, branches, mispredicted branches).
    pub(super) fn hw_events(&self, p: &SimPmc, w: &Work) -> u64 {
        let cycles = w.nanos.saturating_mul(self.cfg.cycles_per_ns);
        let ref_cycles =
            (u128::from(w.nanos) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64;
        match p.class {
            PMC_CLASS_IAF => {
                let cfg = p.md.as_iap().pm_iap_config;
                if cfg & IAP_USR == 0 && cfg & (IAP_OS) != 0 {
                    return 0;
                }
                // A fixed counter counts its own event, whatever event
                // select the allocation carried (hwpmc_core.c@2d614aa2
                // iaf_allocate_pmc(): "pm->pm_md.pm_iaf.pm_iaf_ctrl = (flags << (ri *
                // 4));", only
                // IAF_CTRL's enable bits for the row).
                let first = self
                    .class(PMC_CLASS_IAF)
                    .map_or(p.row, |ci| self.classes[ci].first_row);
                match p.row - first {
                    0 => w.instructions,
                    1 => cycles,
                    2 => ref_cycles,
                    // TOPDOWN.SLOTS: four issue slots a cycle.
                    _ => cycles.saturating_mul(4),
                }
            }
            PMC_CLASS_IAP => {
                let cfg = p.md.as_iap().pm_iap_config;
                if cfg & IAP_USR == 0 && cfg & (IAP_OS) != 0 {
                    return 0;
                }
                match (cfg & IAP_EVSEL_MASK, (cfg & IAP_UMASK_MASK) >> 8) {
                    (0xC0, _) => w.instructions,
                    (0x3C, 1) => ref_cycles,
                    (0x3C, _) => cycles,
                    (0x00, 3) => ref_cycles,
                    (0xC4, _) => w.branches,
                    (0xC5, _) => w.branch_misses,
                    _ => 0,
                }
            }
            PMC_CLASS_K8 => {
                let cfg = p.md.as_amd().pm_amd_config;
                if cfg & AMD_PMC_USR == 0 && cfg & AMD_PMC_OS != 0 {
                    return 0;
                }
                match (cfg & 0xFF) | ((cfg >> 24) & 0xF00) {
                    0x76 => cycles,
                    0xC0 => w.instructions,
                    0xC2 => w.branches,
                    0xC3 => w.branch_misses,
                    _ => 0,
                }
            }
            _ => 0,
        }
    }

    pub(super) fn soft_events(p: &SimPmc, ticks: u64, w: Option<&Work>) -> u64 {
        let idx = p.event.wrapping_sub(PMC_EV_SOFT_FIRST) as usize;
        match SOFT_EVENTS.get(idx).copied() {
            Some("CLOCK.HARD" | "CLOCK.STAT" | "CLOCK.PROF") => ticks,
            Some("PAGE_FAULT.ALL") => w.map_or(0, |w| {
                w.page_faults_read.saturating_add(w.page_faults_write)
            }),
            Some("PAGE_FAULT.READ") => w.map_or(0, |w| w.page_faults_read),
            Some("PAGE_FAULT.WRITE") => w.map_or(0, |w| w.page_faults_write),
            _ => 0,
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_process_samples()`, run by hardclock
    /// (PMC_FN_DO_SAMPLES) at tick `at_tick` and by FLUSHLOG: the ring's
    /// samples go to the log only if their PMC still runs ("/* skip
    /// non-running samples */ if (pm->pm_state != PMC_STATE_RUNNING) goto
    /// entrydone;"), so a PMC stopped or released before the next tick
    /// loses them. A sample still waiting for its user callchain stops the
    /// sweep ("if (ps->ps_nsamples == PMC_USER_CALLCHAIN_PENDING) { ... /*
    /// Need a rescan at a later time. */ DPCPU_SET(pmc_sampled, 1);
    /// break; }") unless it has waited more than a tick, then it is dropped
    /// ("if (ticks - ps->ps_ticks > 1) { ... goto entrydone; }").
    pub(super) fn process_samples(&mut self, at_tick: u64) {
        let mut keep = Vec::new();
        let mut stalled = false;
        for e in std::mem::take(&mut self.ring) {
            if stalled {
                keep.push(e);
                continue;
            }
            let running = self
                .pmcs
                .get(&e.key)
                .is_some_and(|p| p.state == PState::Running);
            if !running {
                continue;
            }
            if e.pending_until.is_some() {
                if at_tick.saturating_sub(e.tick) > 1 {
                    continue;
                }
                stalled = true;
                keep.push(e);
                continue;
            }
            self.emit(e.key.0, e.rec);
        }
        self.ring = keep;
    }

    /// The AST a thread runs on its way back to user mode
    /// (`hwpmc_mod.c`@009268db `pmc_capture_user_callchain()`), for every
    /// pending sample whose return is due by `upto_ns`: it completes only
    /// the samples of PMCs still running ("if (ps->ps_td != td ||
    /// ps->ps_nsamples != PMC_USER_CALLCHAIN_PENDING ||
    /// ps->ps_pmc->pm_state != PMC_STATE_RUNNING) continue;"), appending
    /// the user frames; a stopped PMC's sample stays pending, and the next
    /// sweep drops it as not running.
    pub(super) fn capture_user_callchains(&mut self, upto_ns: u64) {
        let State { ring, pmcs, .. } = self;
        for e in ring.iter_mut() {
            let Some(due) = e.pending_until else { continue };
            if due > upto_ns || pmcs.get(&e.key).is_none_or(|p| p.state != PState::Running) {
                continue;
            }
            if let LogRecord::Callchain { pcs, .. } = &mut e.rec {
                pcs.extend([SAMPLE_PC, SAMPLE_PC + 0x100]);
            }
            e.pending_until = None;
        }
    }

    /// One time slice. SIM-ONLY in its time model (work spread evenly over
    /// the slice, one context switch at its end); the kernel rules it
    /// applies are cited inline: the hardclock sweep is
    /// `pmc_process_samples()` ("/* skip non-running samples */ if
    /// (pm->pm_state != PMC_STATE_RUNNING) goto entrydone;", `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db),
    /// PROCCSW for TC only (`pmc_process_csw_out()`), samples of a PMC
    /// attached to its owner to profil(2) ("if (pm->pm_flags &
    /// PMC_F_ATTACHED_TO_OWNER) { ... addupc_intr(...) } else
    /// pmclog_process_callchain(pm, ps);").
    pub(super) fn step(&mut self, work: Option<Work>, nanos: u64) {
        let slice = self.begin_slice(nanos);
        let tsc_delta = (u128::from(nanos) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64;
        let keys: Vec<(i32, u32)> = self.pmcs.keys().copied().collect();
        let mut samples: Vec<(i32, LogRecord)> = Vec::new();
        for k in keys {
            let Some(p) = self.pmcs.get(&k) else { continue };
            let n = self.events_in_slice(p, work, slice.ticks, tsc_delta);
            if n == 0 {
                continue;
            }
            let at = Where::of(p, work, &slice);
            let Some(p) = self.pmcs.get_mut(&k) else {
                continue;
            };
            count_slice(p, k.0, n, &at, &mut samples);
            if p.is_sampling() {
                take_samples(p, k, n, &slice, &at, &mut self.ring, &mut samples);
                self.stats.pm_intr_processed = self.stats.pm_intr_processed.wrapping_add(1);
            }
        }
        self.now_ns = self.now_ns.saturating_add(nanos);
        for (owner, rec) in samples {
            self.emit(owner, rec);
        }
        self.capture_user_callchains(self.now_ns);
    }

    /// The slice's clock: a hardclock tick in this slice processes what the
    /// rings hold (pmc_hook_handler PMC_FN_DO_SAMPLES -> pmc_process_samples),
    /// after the returns to user mode due before it.
    fn begin_slice(&mut self, nanos: u64) -> Slice {
        let t = ticks(self.now_ns, nanos);
        let per_tick = 1_000_000_000 / HZ;
        if t > 0 {
            let first_tick = (self.now_ns / per_tick + 1) * per_tick;
            self.capture_user_callchains(first_tick);
            self.process_samples(first_tick / per_tick);
        }
        Slice {
            now_ns: self.now_ns,
            nanos,
            ticks: t,
            per_tick,
            last_tick_ns: self.now_ns.saturating_add(nanos) / per_tick * per_tick,
        }
    }

    /// What running PMC `p` counts in the slice (0 when stopped, on an
    /// offline CPU, or not where the work ran).
    fn events_in_slice(&self, p: &SimPmc, work: Option<Work>, t: u64, tsc_delta: u64) -> u64 {
        if p.state != PState::Running {
            return 0;
        }
        if p.is_system() {
            if !self.online.get(p.cpu as usize).copied().unwrap_or(false) {
                return 0;
            }
            return match p.class {
                PMC_CLASS_TSC => tsc_delta,
                PMC_CLASS_SOFT => {
                    let on_cpu = work.filter(|w| w.cpu == p.cpu);
                    Self::soft_events(p, t, on_cpu.as_ref())
                }
                _ => work
                    .filter(|w| w.cpu == p.cpu)
                    .map_or(0, |w| self.hw_events(p, &w)),
            };
        }
        // hwpmc switches a process PMC in and out only for a process
        // with P_HWPMC (State::uses_hwpmc): without it the PMC counts
        // nothing there.
        match work {
            Some(w) if p.targets.contains_key(&w.pid) && self.uses_hwpmc(w.pid) => match p.class {
                PMC_CLASS_SOFT => Self::soft_events(p, t, Some(&w)),
                _ => self.hw_events(p, &w),
            },
            _ => 0,
        }
    }
}

/// A slice's time: its start and length, its hardclock ticks.
struct Slice {
    now_ns: u64,
    nanos: u64,
    /// Hardclock ticks in the slice.
    ticks: u64,
    per_tick: u64,
    /// The slice's last hardclock tick.
    last_tick_ns: u64,
}

/// Where the slice's work ran, for one PMC: the thread (-1 without work),
/// and whether its samples are taken in the kernel.
struct Where {
    pid: i32,
    tid: i32,
    cpu: u32,
    /// Work in the kernel: the time until it returns to user mode.
    in_kernel: Option<u64>,
    /// When the sample's user callchain is captured (its AST), for a
    /// sample pending one.
    ast_at: Option<u64>,
}

impl Where {
    fn of(p: &SimPmc, work: Option<Work>, slice: &Slice) -> Where {
        let (pid, tid, cpu) = work.map_or((-1, -1, p.cpu), |w| (w.pid, w.tid, w.cpu));
        // A sample in the kernel of a PMC_F_USERCALLCHAIN PMC goes to
        // the user-callchain ring, pending its AST
        // (`pmc_process_interrupt()`: "if ((pm->pm_flags &
        // PMC_F_USERCALLCHAIN) && (td->td_proc->p_flag & P_KPROC) == 0 &&
        // !TRAPF_USERMODE(tf)) { atomic_add_int(&td->td_pmcpend, 1);
        // return (pmc_add_sample(PMC_UR, pm, tf)); }").
        let in_kernel = work.and_then(|w| w.returns_to_user_after);
        let ast_at = in_kernel
            .filter(|_| p.flags & PMC_F_USERCALLCHAIN != 0)
            .map(|d| slice.now_ns.saturating_add(slice.nanos).saturating_add(d));
        Where {
            pid,
            tid,
            cpu,
            in_kernel,
            ast_at,
        }
    }
}

/// The slice's `n` events into the PMC's value and its target's, and the
/// PROCCSW record of a TC PMC with `PMC_F_LOG_PROCCSW`.
fn count_slice(
    p: &mut SimPmc,
    owner: i32,
    n: u64,
    at: &Where,
    samples: &mut Vec<(i32, LogRecord)>,
) {
    // A process sampling PMC's pm_savedvalue is not touched by
    // sampling (pmc_process_csw_out saves a TS countdown per thread).
    if !p.is_sampling() || p.is_system() {
        p.value = p.value.wrapping_add(n);
    }
    if let Some(v) = p.targets.get_mut(&at.pid) {
        *v = v.wrapping_add(n);
        // hwpmc_mod.c@009268db pmc_process_csw_out() logs PROCCSW only for a
        // PMC_MODE_TC PMC with PMC_F_LOG_PROCCSW.
        if p.flags & PMC_F_LOG_PROCCSW != 0 && p.mode == PMC_MODE_TC {
            // The time slice ends with a context switch out.
            samples.push((
                owner,
                LogRecord::ProcCsw {
                    value: n,
                    pmcid: p.id,
                    pid: at.pid,
                    tid: at.tid,
                },
            ));
        }
    }
}

/// The samples `n` events take of sampling PMC `p`: processed at the
/// slice's last tick into `samples`, or left in the ring for the next tick
/// (or pending their AST).
fn take_samples(
    p: &mut SimPmc,
    k: (i32, u32),
    n: u64,
    slice: &Slice,
    at: &Where,
    ring: &mut Vec<RingEntry>,
    samples: &mut Vec<(i32, LogRecord)>,
) {
    // Samples of a PMC attached to its owner go to profil(2), not
    // to the log.
    let logs_samples = p.flags & PMC_F_ATTACHED_TO_OWNER == 0;
    // The countdown: a system PMC's counter on its CPU; a
    // process PMC's, per thread. hwpmc_mod.c@009268db
    // pmc_process_csw_in(): "if (pt->pt_pmcs[ri].pt_pmcval > 0)
    // newvalue = pt->pt_pmcs[ri].pt_pmcval; else newvalue =
    // pm->pm_sc.pm_reloadcount;", and pmc_process_csw_out()
    // saves what is left: "pt->pt_pmcs[ri].pt_pmcval =
    // newvalue;". Threads and (with DESCENDANTS) processes
    // below one period each take no sample.
    let system = p.is_system();
    let mut countdown = if system {
        p.left
    } else {
        p.thread_left
            .get(&(at.pid, at.tid))
            .copied()
            .filter(|v| *v > 0)
            .unwrap_or(p.reload)
            .max(1)
    };
    let mut left = n;
    while left >= countdown {
        left -= countdown;
        // When in the slice the sample was taken (events spread
        // evenly over it): before the slice's last hardclock
        // tick it was processed at that tick; after it, it waits
        // in the ring for the next tick (or FLUSHLOG).
        let taken = slice.now_ns.saturating_add(
            (u128::from(slice.nanos) * u128::from(n - left) / u128::from(n)) as u64,
        );
        let processed = slice.ticks > 0 && taken <= slice.last_tick_ns;
        countdown = p.reload.max(1);
        if !logs_samples {
            continue;
        }
        let rec = sample_record(p, at);
        if processed && at.ast_at.is_none() {
            samples.push((k.0, rec));
        } else if ring.len() < 100_000 {
            ring.push(RingEntry {
                key: k,
                rec,
                tick: taken / slice.per_tick,
                pending_until: at.ast_at,
            });
        }
        if samples.len() > 100_000 {
            break;
        }
    }
    countdown -= left.min(countdown);
    if system {
        p.left = countdown;
    } else {
        p.thread_left.insert((at.pid, at.tid), countdown);
    }
}

/// One sample's CALLCHAIN record: at the kernel's PC or the user's, three
/// frames with `PMC_F_CALLCHAIN`; an idle slice's sample is pid 11's
/// (FreeBSD's idle process).
fn sample_record(p: &SimPmc, at: &Where) -> LogRecord {
    let depth = if p.flags & PMC_F_CALLCHAIN != 0 { 3 } else { 1 };
    let pc = if at.in_kernel.is_some() {
        KERNEL_PC
    } else {
        SAMPLE_PC
    };
    let pid = if at.pid < 0 { 11 } else { at.pid };
    LogRecord::Callchain {
        pid,
        tid: if at.tid < 0 {
            pid.wrapping_mul(100)
        } else {
            at.tid
        },
        pmcid: p.id,
        cpu: at.cpu,
        flags: if at.in_kernel.is_some() {
            0
        } else {
            PMC_CC_F_USERSPACE
        },
        pcs: (0..depth).map(|i| pc + 0x100 * i).collect(),
    }
}
