//! Time passing: what PMCs count for a slice of work, and the samples
//! sampling PMCs take.

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
        let t = ticks(self.now_ns, nanos);
        let per_tick = 1_000_000_000 / HZ;
        // A hardclock tick in this slice processes what the rings hold
        // (pmc_hook_handler PMC_FN_DO_SAMPLES -> pmc_process_samples), after
        // the returns to user mode due before it.
        if t > 0 {
            let first_tick = (self.now_ns / per_tick + 1) * per_tick;
            self.capture_user_callchains(first_tick);
            self.process_samples(first_tick / per_tick);
        }
        let last_tick_ns = self.now_ns.saturating_add(nanos) / per_tick * per_tick;
        let tsc_delta = (u128::from(nanos) * u128::from(self.cfg.tsc_freq) / 1_000_000_000) as u64;
        let keys: Vec<(i32, u32)> = self.pmcs.keys().copied().collect();
        let mut samples: Vec<(i32, LogRecord)> = Vec::new();
        for k in keys {
            let Some(p) = self.pmcs.get(&k) else { continue };
            if p.state != PState::Running {
                continue;
            }
            let n = if p.is_system() {
                if !self.online.get(p.cpu as usize).copied().unwrap_or(false) {
                    continue;
                }
                match p.class {
                    PMC_CLASS_TSC => tsc_delta,
                    PMC_CLASS_SOFT => {
                        let on_cpu = work.filter(|w| w.cpu == p.cpu);
                        Self::soft_events(p, t, on_cpu.as_ref())
                    }
                    _ => work
                        .filter(|w| w.cpu == p.cpu)
                        .map_or(0, |w| self.hw_events(p, &w)),
                }
            } else {
                // hwpmc switches a process PMC in and out only for a process
                // with P_HWPMC (State::uses_hwpmc): without it the PMC counts
                // nothing there.
                match work {
                    Some(w) if p.targets.contains_key(&w.pid) && self.uses_hwpmc(w.pid) => {
                        match p.class {
                            PMC_CLASS_SOFT => Self::soft_events(p, t, Some(&w)),
                            _ => self.hw_events(p, &w),
                        }
                    }
                    _ => 0,
                }
            };
            if n == 0 {
                continue;
            }
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
                .map(|d| self.now_ns.saturating_add(nanos).saturating_add(d));
            let Some(p) = self.pmcs.get_mut(&k) else {
                continue;
            };
            // A process sampling PMC's pm_savedvalue is not touched by
            // sampling (pmc_process_csw_out saves a TS countdown per thread).
            if !p.is_sampling() || p.is_system() {
                p.value = p.value.wrapping_add(n);
            }
            if let Some(v) = p.targets.get_mut(&pid) {
                *v = v.wrapping_add(n);
                // hwpmc_mod.c@009268db pmc_process_csw_out() logs PROCCSW only for a
                // PMC_MODE_TC PMC with PMC_F_LOG_PROCCSW.
                if p.flags & PMC_F_LOG_PROCCSW != 0 && p.mode == PMC_MODE_TC {
                    // The time slice ends with a context switch out.
                    samples.push((
                        k.0,
                        LogRecord::ProcCsw {
                            value: n,
                            pmcid: p.id,
                            pid,
                            tid,
                        },
                    ));
                }
            }
            // Samples of a PMC attached to its owner go to profil(2), not
            // to the log.
            let logs_samples = p.flags & PMC_F_ATTACHED_TO_OWNER == 0;
            if p.is_sampling() {
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
                        .get(&(pid, tid))
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
                    let at = self.now_ns.saturating_add(
                        (u128::from(nanos) * u128::from(n - left) / u128::from(n)) as u64,
                    );
                    let processed = t > 0 && at <= last_tick_ns;
                    countdown = p.reload.max(1);
                    let depth = if p.flags & PMC_F_CALLCHAIN != 0 { 3 } else { 1 };
                    let pc = if in_kernel.is_some() {
                        KERNEL_PC
                    } else {
                        SAMPLE_PC
                    };
                    let pcs: Vec<u64> = (0..depth).map(|i| pc + 0x100 * i).collect();
                    let sample_pid = if pid < 0 { 11 } else { pid };
                    if !logs_samples {
                        continue;
                    }
                    let rec = LogRecord::Callchain {
                        pid: sample_pid,
                        tid: if tid < 0 {
                            sample_pid.wrapping_mul(100)
                        } else {
                            tid
                        },
                        pmcid: p.id,
                        cpu,
                        flags: if in_kernel.is_some() {
                            0
                        } else {
                            PMC_CC_F_USERSPACE
                        },
                        pcs,
                    };
                    if processed && ast_at.is_none() {
                        samples.push((k.0, rec));
                    } else if self.ring.len() < 100_000 {
                        self.ring.push(RingEntry {
                            key: k,
                            rec,
                            tick: at / per_tick,
                            pending_until: ast_at,
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
                    p.thread_left.insert((pid, tid), countdown);
                }
                self.stats.pm_intr_processed = self.stats.pm_intr_processed.wrapping_add(1);
            }
        }
        self.now_ns = self.now_ns.saturating_add(nanos);
        for (owner, rec) in samples {
            self.emit(owner, rec);
        }
        self.capture_user_callchains(self.now_ns);
    }

    // ----- the ops -----
}
