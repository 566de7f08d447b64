//! The simulated log: records emitted per owner, the writer, and
//! PMC_OP_CONFIGURELOG / FLUSHLOG / CLOSELOG / WRITELOG.
//!
//! The rules here (each cited where it is applied):
//! * `PMC_OP_CLOSELOG` and `PMC_OP_CONFIGURELOG(-1)` run `pmclog_close()`,
//!   which sets `PMC_PO_SHUTDOWN` on the owner for as long as the owner
//!   descriptor lives (until its last PMC is released with no log): a
//!   later CONFIGURELOG fails with `ENOMEM`, WRITELOG after CLOSELOG too.
//! * The bulk records: a sampling attach logs the target's mappings, the
//!   owner's first sampling start the kernel objects (pid -1) and, for
//!   system sampling, every process and thread (PROC_CREATE, THR_CREATE)
//!   and every process's mappings; system-sampling owners get PROCFORK
//!   with PROC_CREATE, THR_CREATE and SYSEXIT as processes come and go.

use super::host;
use super::log::LogRecord;
use super::{LogState, PState, Proc, SimPmc, SimTree, State, KERNEL_OBJECTS};
use crate::errno::Errno;
use crate::sys::abi::*;

impl State {
    /// MAP_IN / MAP_OUT: every running-SS owner, then the owner of each
    /// sampling PMC targeting `pid` (once per PMC, as the kernel's loop).
    pub(super) fn log_mapping(&mut self, pid: i32, rec: &LogRecord) {
        for o in self.ss_owners() {
            self.emit(o, rec.clone());
        }
        for (owner, id) in self.pmcs_targeting(pid) {
            if self.pmcs.get(&(owner, id)).is_some_and(SimPmc::is_sampling) {
                self.emit(owner, rec.clone());
            }
        }
    }

    /// PROC_CREATE for `p` (`pmclog_process_proccreate()`: its pid,
    /// `p_flag` and `p_comm`).
    pub(super) fn proc_create(&self, pid: i32, p: &Proc) -> LogRecord {
        LogRecord::ProcCreate {
            pid,
            flags: if p.hwpmc { P_HWPMC_FLAG } else { 0 },
            comm: p.comm(),
        }
    }

    /// THR_CREATE for thread `tid` of `pid` (`pmclog_process_threadcreate()`:
    /// the thread id, its process, `p_flag`, `td_name`).
    pub(super) fn thr_create(&self, pid: i32, tid: i32) -> LogRecord {
        let p = self.procs.get(&pid);
        LogRecord::ThrCreate {
            tid,
            pid,
            flags: if p.is_some_and(|p| p.hwpmc) {
                P_HWPMC_FLAG
            } else {
                0
            },
            name: p.map(Proc::comm).unwrap_or_default(),
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_log_process_mappings()`: one MAP_IN per
    /// executable mapping of `pid` ("pmclog_process_map_in(po, p->p_pid,
    /// start_addr, fullpath);"), to `owner`'s log.
    pub(super) fn log_process_mappings(&mut self, owner: i32, pid: i32) {
        let maps = self
            .procs
            .get(&pid)
            .map(|p| p.maps.clone())
            .unwrap_or_default();
        for (start, path) in maps {
            self.emit(owner, LogRecord::MapIn { pid, start, path });
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_log_kernel_mappings()`, run by
    /// `pmc_start()` of every sampling PMC ("if
    /// (PMC_IS_SAMPLING_MODE(PMC_TO_MODE(pm))) pmc_log_kernel_mappings(pm);")
    /// once per owner: "if ((po->po_flags & PMC_PO_INITIAL_MAPPINGS_DONE) !=
    /// 0) return;", for system sampling first "if (PMC_TO_MODE(pm) ==
    /// PMC_MODE_SS) pmc_process_allproc(pm);" (with a log: PROC_CREATE for
    /// every process, "pmclog_process_proccreate(po, p, 0 /* sync */);", and
    /// THR_CREATE for each of its threads), then one MAP_IN per kernel
    /// object, pid -1 ("pmclog_process_map_in(po, (pid_t)-1,
    /// km->pm_address, km->pm_file);"), then "po->po_flags |=
    /// PMC_PO_INITIAL_MAPPINGS_DONE;" (log or not).
    pub(super) fn log_kernel_mappings(&mut self, owner: i32, system: bool) {
        if self
            .owners
            .get(&owner)
            .is_none_or(|o| o.initial_mappings_done)
        {
            return;
        }
        let has_log = self.owners.get(&owner).is_some_and(|o| o.log.is_some());
        if system && has_log {
            let pids: Vec<i32> = self.procs.keys().copied().collect();
            for pid in pids {
                let Some(p) = self.procs.get(&pid) else {
                    continue;
                };
                let create = self.proc_create(pid, p);
                let tids = p.tids.clone();
                self.emit(owner, create);
                for tid in tids {
                    let rec = self.thr_create(pid, tid);
                    self.emit(owner, rec);
                }
            }
        }
        for (path, start) in KERNEL_OBJECTS {
            self.emit(
                owner,
                LogRecord::MapIn {
                    pid: -1,
                    start: *start,
                    path: (*path).to_owned(),
                },
            );
        }
        if let Some(o) = self.owners.get_mut(&owner) {
            o.initial_mappings_done = true;
        }
    }

    /// `hwpmc_mod.c`@009268db `pmc_start()` of a system sampling PMC: "if
    /// (po->po_logprocmaps == 0) { pmc_log_all_process_mappings(po);
    /// po->po_logprocmaps = 1; }"; `pmc_log_all_process_mappings()` walks
    /// the tree from init ("if ((p = pfind(1)) == NULL) panic(...)"), each
    /// process's mappings in turn.
    pub(super) fn log_all_process_mappings(&mut self, owner: i32) {
        if self.owners.get(&owner).is_none_or(|o| o.logprocmaps) {
            return;
        }
        for pid in self.descendants(1) {
            self.log_process_mappings(owner, pid);
        }
        if let Some(o) = self.owners.get_mut(&owner) {
            o.logprocmaps = true;
        }
    }

    pub(super) fn emit(&mut self, owner: i32, rec: LogRecord) {
        let tsc = self.tsc();
        let State {
            owners, encoder, ..
        } = self;
        let Some(o) = owners.get_mut(&owner) else {
            return;
        };
        // hwpmc_logging.c@0224710b pmclog_reserve(): "No more data when shutdown in
        // progress."
        if o.shutdown {
            return;
        }
        let Some(log) = o.log.as_mut() else {
            return;
        };
        if log.error.is_some() {
            return;
        }
        encoder.encode(tsc, &rec, &mut log.buf);
        if log.buf.len() >= 4096 {
            Self::write_out(log);
        }
    }

    pub(super) fn write_out(log: &mut LogState) {
        if log.error.is_some() || log.buf.is_empty() {
            log.buf.clear();
            return;
        }
        if let Err(e) = host::write_all_fd(log.fd, &log.buf) {
            log.error = Some(e);
        }
        log.buf.clear();
    }

    /// `hwpmc_mod.c`@009268db `pmc_syscall_handler()` PMC_OP_CONFIGURELOG ("if
    /// (cl.pm_logfd >= 0) { error = pmclog_configure_log(md, po,
    /// cl.pm_logfd); ...} else if (po->po_flags & PMC_PO_OWNS_LOGFILE) {
    /// ... error = pmclog_close(po); ...} else { ... error = EINVAL; }") and
    /// `hwpmc_logging.c`@0224710b `pmclog_configure_log()` /
    /// `pmclog_deconfigure_log()`.
    pub(super) fn configure_log(&mut self, a: &mut pmc_op_configurelog) -> Result<(), Errno> {
        // 2023+ and 15-CURRENT: hwpmc_mod.c@009268db pmc_syscall_handler
        // PMC_OP_CONFIGURELOG, before the owner is looked up: "/* No flags
        // currently implemented */ if (cl.pm_flags != 0) { ... error =
        // EINVAL; break; }" (the same in fel1x-developer/freebsd-src
        // @2d614aa2, 15-CURRENT). The 2020 tree copies `pm_flags` in and
        // never looks at it (freebsd-audit-2 section 2; that tree was not
        // re-read here).
        if a.pm_flags != 0 && self.tree() != SimTree::Y2020 {
            return Err(Errno::EINVAL);
        }
        let me = self.current;
        // The owner descriptor is found or created first, whatever follows
        // (pmc_find_owner_descriptor / pmc_allocate_owner_descriptor).
        let owner = self.owners.entry(me).or_default();
        if a.pm_logfd < 0 {
            // "if 'fd' was less than zero and there was a log file
            // configured, flush its buffers and de-configure it", else EINVAL.
            if owner.log.is_none() {
                return Err(Errno::EINVAL);
            }
            // pmclog_close(): CLOSELOG record (unless already shut down),
            // then PMC_PO_SHUTDOWN.
            self.emit(me, LogRecord::CloseLog);
            if let Some(o) = self.owners.get_mut(&me) {
                o.shutdown = true;
            }
            // Running PMCs that need the log are stopped (pmc_stop).
            let ids: Vec<u32> = self
                .owners
                .get(&me)
                .map(|o| o.pmcs.iter().copied().collect())
                .unwrap_or_default();
            for id in ids {
                if let Some(p) = self.pmcs.get_mut(&(me, id)) {
                    if p.flags & PMC_F_NEEDS_LOGFILE != 0 && p.state == PState::Running {
                        p.state = PState::Stopped;
                    }
                }
            }
            // pmclog_deconfigure_log(): the kthread writes what was queued,
            // OWNS_LOGFILE is cleared, the file reference dropped. The owner
            // descriptor (with SHUTDOWN) stays: only pmc_maybe_remove_owner,
            // on PMC release, or process exit remove it.
            if let Some(owner) = self.owners.get_mut(&me) {
                if let Some(mut log) = owner.log.take() {
                    Self::write_out(&mut log);
                }
            }
            return Ok(());
        }
        // pmclog_configure_log: EBUSY if a log file was already present.
        if owner.log.is_some() {
            return Err(Errno::EBUSY);
        }
        // fget_write().
        if !host::fd_is_writable(a.pm_logfd) {
            return Err(Errno::EBADF);
        }
        // PMCLOG_RESERVE_WITH_ERROR(po, INITIALIZE, ...): pmclog_reserve()
        // returns NULL under PMC_PO_SHUTDOWN -> error = ENOMEM, the file is
        // dropped and OWNS_LOGFILE cleared again.
        if owner.shutdown {
            return Err(Errno::ENOMEM);
        }
        owner.log = Some(LogState {
            fd: a.pm_logfd,
            buf: Vec::new(),
            error: None,
        });
        let rec = LogRecord::Initialize {
            version: self.cfg.version,
            cputype: self.cfg.cpu.cputype(),
            tsc_freq: self.cfg.tsc_freq,
            ts_sec: 1_700_000_000 + (self.now_ns / 1_000_000_000) as i64,
            ts_nsec: (self.now_ns % 1_000_000_000) as i64,
            cpuid: self.cfg.cpu.cpuid(self.tree()),
        };
        self.emit(me, rec);
        Ok(())
    }

    pub(super) fn with_log(&mut self) -> Result<&mut LogState, Errno> {
        let me = self.current;
        self.owners
            .get_mut(&me)
            .and_then(|o| o.log.as_mut())
            .ok_or(Errno::EINVAL)
    }

    /// `hwpmc_logging.c`@2d614aa2 `pmclog_flush()`: "if (po->po_error) return
    /// (po->po_error);", then
    /// EINVAL without OWNS_LOGFILE (so it still works after CLOSELOG),
    /// then the sample rings are processed and the buffers written.
    pub(super) fn flush_log(&mut self) -> Result<(), Errno> {
        self.with_log()?;
        // hwpmc_logging.c@2d614aa2 (fel1x-developer/freebsd-src)
        // pmclog_flush() -> pmclog_schedule_all() ->
        // pmclog_schedule_one_cond() on each CPU: "if
        // (PMC_CPU_HAS_SAMPLES(cpu)) PMC_CALL_HOOK_UNLOCKED(curthread,
        // PMC_FN_DO_SAMPLES, NULL)" (2018+ trees): the rings are processed
        // first, while their PMCs still run.
        self.process_samples(self.now_ns / (1_000_000_000 / super::HZ));
        let log = self.with_log()?;
        if let Some(e) = log.error {
            return Err(e);
        }
        Self::write_out(log);
        match log.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// PMC_OP_CLOSELOG (`freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if ((po =
    /// pmc_find_owner_descriptor(td->td_proc)) == NULL) { error = EINVAL;
    /// break; } error = pmclog_close(po);"): EINVAL only
    /// without an owner descriptor; otherwise `pmclog_close()`, which
    /// writes CLOSELOG (when a log is there to take it), sets
    /// PMC_PO_SHUTDOWN and returns 0, even when no log is configured. The
    /// log stays configured (OWNS_LOGFILE) until CONFIGURELOG(-1).
    pub(super) fn close_log(&mut self) -> Result<(), Errno> {
        let me = self.current;
        if !self.owners.contains_key(&me) {
            return Err(Errno::EINVAL);
        }
        self.emit(me, LogRecord::CloseLog);
        if let Some(o) = self.owners.get_mut(&me) {
            o.shutdown = true;
            if let Some(log) = o.log.as_mut() {
                Self::write_out(log);
            }
        }
        Ok(())
    }

    /// PMC_OP_WRITELOG (`freebsd/freebsd-src` `sys/dev/hwpmc/hwpmc_mod.c`@009268db `pmc_syscall_handler()`: "if ((po =
    /// pmc_find_owner_descriptor(td->td_proc)) == NULL) { error = EINVAL;
    /// ...} if ((po->po_flags & PMC_PO_OWNS_LOGFILE) == 0) { error = EINVAL;
    /// ...} error = pmclog_process_userlog(po, &wl);"): EINVAL without an owner or OWNS_LOGFILE, else
    /// `hwpmc_logging.c`@0224710b `pmclog_process_userlog()`, whose
    /// PMCLOG_RESERVE_WITH_ERROR fails with ENOMEM under PMC_PO_SHUTDOWN.
    pub(super) fn write_log(&mut self, a: &mut pmc_op_writelog) -> Result<(), Errno> {
        self.with_log()?;
        let me = self.current;
        if self.owners.get(&me).is_some_and(|o| o.shutdown) {
            return Err(Errno::ENOMEM);
        }
        self.emit(
            me,
            LogRecord::UserData {
                userdata: a.pm_userdata,
            },
        );
        Ok(())
    }
}

/// `P_HWPMC` (0x00800000, the libc crate's FreeBSD `P_HWPMC`), as
/// PROC_CREATE and THR_CREATE carry `p_flag`.
const P_HWPMC_FLAG: u32 = 0x0080_0000;
