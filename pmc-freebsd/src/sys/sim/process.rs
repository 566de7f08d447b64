//! The test's process events on [`SimDriver`](super::SimDriver): spawn, exec,
//! map, unmap, new threads and exit, each applied as hwpmc's hooks do.

use super::config::{Signal, SAMPLE_PC};
use super::log::LogRecord;
use super::state::{Proc, EXEC_BASE};
use super::SimDriver;
use crate::sys::abi::*;

impl SimDriver {
    /// Creates a process. `debuggable`: whether the caller may debug it
    /// (p_candebug) without privilege. If its parent is the target of a
    /// PMC with `PMC_F_DESCENDANTS`, the child is attached too.
    /// Source: `freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_process_fork()`, quoted at each step below.
    pub fn spawn(&self, pid: i32, parent: i32, debuggable: bool, path: &str) {
        let mut st = self.lock();
        let child = Proc::new(pid, parent, debuggable, path);
        let create = st.proc_create(pid, &child);
        st.procs.insert(pid, child);
        let fork = LogRecord::ProcFork {
            oldpid: parent,
            newpid: pid,
        };
        // hwpmc_mod.c@009268db pmc_process_fork: first every owner of a
        // running system sampling PMC ("CK_LIST_FOREACH(po, &pmc_ss_owners,
        // po_ssnext) { if (po->po_flags & PMC_PO_OWNS_LOGFILE) {
        // pmclog_process_procfork(po, p1->p_pid, newproc->p_pid);
        // pmclog_process_proccreate(po, newproc, 1); } }") ...
        let ss_owners = st.ss_owners();
        for o in &ss_owners {
            st.emit(*o, fork.clone());
            st.emit(*o, create.clone());
        }
        // ... then nothing more unless the parent has P_HWPMC:
        // "is_using_hwpmcs = (p1->p_flag & P_HWPMC) != 0; ... if
        // (!is_using_hwpmcs) return;". A refused PMCATTACH clears the flag
        // (attach.rs), and the parent's forks are no longer followed.
        if !st.uses_hwpmc(parent) {
            return;
        }
        let keys: Vec<(i32, u32)> = st
            .pmcs
            .iter()
            .filter(|(_, p)| p.flags & PMC_F_DESCENDANTS != 0 && p.targets.contains_key(&parent))
            .map(|(k, _)| *k)
            .collect();
        // "newproc->p_flag |= P_HWPMC;" once a DESCENDANTS PMC targets the
        // parent, then, in the loop over those PMCs, one PROCFORK per PMC,
        // not per owner: "pmc_link_target_process(pm, ppnew); po =
        // pm->pm_owner; if (po->po_sscount == 0 && (po->po_flags &
        // PMC_PO_OWNS_LOGFILE) != 0) pmclog_process_procfork(po, p1->p_pid,
        // newproc->p_pid);".
        if !keys.is_empty() {
            if let Some(p) = st.procs.get_mut(&pid) {
                p.hwpmc = true;
            }
        }
        for k in keys {
            if let Some(p) = st.pmcs.get_mut(&k) {
                p.targets.insert(pid, 0);
            }
            if !ss_owners.contains(&k.0) {
                st.emit(k.0, fork.clone());
            }
        }
    }

    /// `pid` execs `path` (`hwpmc_mod.c`@009268db `pmc_process_exec`): a
    /// PROCEXEC record with `PMC_ID_INVALID` to each owner of a running
    /// system sampling PMC ("CK_LIST_FOREACH(po, &pmc_ss_owners, ...)
    /// pmclog_process_procexec(po, PMC_ID_INVALID, ...)"), then one per
    /// PMC targeting `pid` whose owner has no such PMC ("if
    /// (po->po_sscount == 0 && (po->po_flags & PMC_PO_OWNS_LOGFILE) != 0)
    /// pmclog_process_procexec(po, pm->pm_id, ...)"), the latter only for a
    /// process with P_HWPMC ("is_using_hwpmcs = (p->p_flag & P_HWPMC) != 0;
    /// ... if (!is_using_hwpmcs) { ... return; }"). Not modelled: the
    /// release of PMCs `pid` owns, the credential-change detach.
    pub fn exec(&self, pid: i32, path: &str) {
        let mut st = self.lock();
        if let Some(p) = st.procs.get_mut(&pid) {
            p.path = path.to_owned();
            p.maps = vec![(EXEC_BASE, path.to_owned())];
        }
        let rec = |pmcid| LogRecord::ProcExec {
            pid,
            pmcid,
            base: SAMPLE_PC & !0xFFFF,
            dyn_base: 0,
            path: path.to_owned(),
        };
        let ss_owners = st.ss_owners();
        for o in &ss_owners {
            st.emit(*o, rec(PMC_ID_INVALID));
        }
        if !st.uses_hwpmc(pid) {
            return;
        }
        for (owner, id) in st.pmcs_targeting(pid) {
            if !ss_owners.contains(&owner) {
                st.emit(owner, rec(id));
            }
        }
    }

    /// `pid` maps `path` at `start` (`hwpmc_mod.c`@009268db
    /// `pmc_process_mmap`): MAP_IN to each owner of a running system
    /// sampling PMC, then to the owner of each sampling PMC targeting
    /// `pid` (`if ((pm = pp->pp_pmcs[ri].pp_pmc) != NULL &&`
    /// `PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))) pmclog_process_map_in(...)`).
    pub fn map(&self, pid: i32, start: u64, path: &str) {
        let rec = LogRecord::MapIn {
            pid,
            start,
            path: path.to_owned(),
        };
        let mut st = self.lock();
        if let Some(p) = st.procs.get_mut(&pid) {
            p.maps.push((start, path.to_owned()));
        }
        st.log_mapping(pid, &rec);
    }

    /// `pid` unmaps `[start, end)` (`hwpmc_mod.c`@009268db
    /// `pmc_process_munmap`): MAP_OUT to the same owners as
    /// [`map`](Self::map).
    pub fn unmap(&self, pid: i32, start: u64, end: u64) {
        let rec = LogRecord::MapOut { pid, start, end };
        let mut st = self.lock();
        if let Some(p) = st.procs.get_mut(&pid) {
            p.maps.retain(|(s, _)| *s < start || *s >= end);
        }
        st.log_mapping(pid, &rec);
    }

    /// Process `pid` creates thread `tid`: THR_CREATE to each owner of a
    /// running system sampling PMC (`hwpmc_mod.c`@009268db
    /// `pmc_process_threadcreate()`: "CK_LIST_FOREACH(po, &pmc_ss_owners,
    /// po_ssnext) { if ((po->po_flags & PMC_PO_OWNS_LOGFILE) != 0)
    /// pmclog_process_threadcreate(po, td, 1); }"). Run it with
    /// [`Work::tid`](super::Work::tid).
    pub fn spawn_thread(&self, pid: i32, tid: i32) {
        let mut st = self.lock();
        let Some(p) = st.procs.get_mut(&pid) else {
            return;
        };
        p.tids.push(tid);
        let rec = st.thr_create(pid, tid);
        for o in st.ss_owners() {
            st.emit(o, rec.clone());
        }
    }

    /// Ends a process: SYSEXIT to the system-sampling owners; PMCs
    /// attached to it are detached (PROCEXIT records
    /// for `PMC_F_LOG_PROCEXIT`, SIGIO to owners whose PMC lost its last
    /// target), only if it has P_HWPMC (`hwpmc_mod.c`@009268db
    /// `pmc_process_exit()`: "is_using_hwpmcs = (p->p_flag & P_HWPMC) !=
    /// 0; ... if (!is_using_hwpmcs) goto out;"): the PMCs of a process whose
    /// flag a refused attach cleared keep it as a target, log nothing and
    /// signal nothing.
    pub fn exit(&self, pid: i32) {
        let mut st = self.lock();
        // pmc_process_exit: "Log a sysexit event to all SS PMC owners.
        // ... pmclog_process_sysexit(po, p->p_pid);", before anything else.
        for o in st.ss_owners() {
            st.emit(o, LogRecord::SysExit { pid });
        }
        let uses_hwpmc = st.uses_hwpmc(pid);
        st.procs.remove(&pid);
        if !uses_hwpmc {
            return;
        }
        let keys: Vec<(i32, u32)> = st
            .pmcs
            .iter()
            .filter(|(_, p)| p.targets.contains_key(&pid))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            let Some(p) = st.pmcs.get_mut(&k) else {
                continue;
            };
            let v = p.targets.remove(&pid).unwrap_or(0);
            p.thread_left.retain(|(tp, _), _| *tp != pid);
            if pid == p.owner {
                p.flags &= !PMC_F_ATTACHED_TO_OWNER;
            }
            let (flags, id, empty) = (p.flags, p.id, p.targets.is_empty());
            let counting = p.mode == PMC_MODE_TC || p.mode == PMC_MODE_SC;
            // hwpmc_mod.c@009268db pmc_process_exit(): "if (pm->pm_flags &
            // PMC_F_NEEDS_LOGFILE && PMC_IS_COUNTING_MODE(PMC_TO_MODE(pm)))
            // pmclog_process_procexit(pm, pp)": so also for LOG_PROCCSW-only
            // PMCs, never for sampling ones.
            if flags & PMC_F_NEEDS_LOGFILE != 0 && counting {
                st.emit(
                    k.0,
                    LogRecord::ProcExit {
                        pmcid: id,
                        pid,
                        value: v,
                    },
                );
            }
            if empty {
                st.signals.push((k.0, Signal::Io));
            }
        }
    }
}
