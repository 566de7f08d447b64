//! What a sampling PMC, or one with a log flag, adds to [`Counters`]: the log it needs at
//! start, its rings (to the log or the owner), the targets and counts it logs, the kernel's
//! lost counts, and the last drain when it is dropped.

use crate::counter::read::reads_lost;
use crate::counter::rings::{Delivery, Rings};
use crate::counter::Counters;
use crate::log::RingPurpose;
use crate::sys::Sys;
use pmc_core::lifecycle::Lifecycle;
use pmc_core::lifecycle::LogNeed;
use pmc_core::{Error, ErrorKind, Instance, Op, Reading, Result, State, Target};

impl<S: Sys> Counters<S> {
    /// Hands the hub the kernel's lost counts of this PMC's events (after a drain), so that
    /// records lost while the drain was held up, which no `PERF_RECORD_LOST` reported, are
    /// counted and logged. A failed read leaves the count as the records reported it.
    pub(super) fn report_kernel_lost(&self) {
        let counts = self.fds.kernel_lost(&self.members).unwrap_or_default();
        let complete = reads_lost(&self.members);
        self._shared
            .hub
            .kernel_lost(self.token(), &counts, complete);
    }

    pub(super) fn is_sampling(&self) -> bool {
        self.members[0].alloc.mode.is_sampling()
    }

    /// The log id of this PMC's first member: its rings' token at the hub.
    pub(super) fn token(&self) -> u32 {
        self.members[0].pmc_id
    }

    /// The log a start needs: log-proccsw's and log-procexit's, and a sampling PMC's unless it
    /// is read in process.
    pub(super) fn check_log_for_start(&self) -> Result<()> {
        let switch_counts = self.purpose() == Some(RingPurpose::SwitchCounts);
        let need = if self.csw.is_some() || switch_counts {
            Some(LogNeed::LogProcCsw)
        } else if self.exit_reads() {
            Some(LogNeed::LogProcExit)
        } else {
            None
        };
        Lifecycle::check_log(need, self._shared.hub.has_log())?;
        if self.is_sampling() && !self.local_wanted() && !self._shared.hub.has_log() {
            return Err(Error::new(
                ErrorKind::LogRequired,
                Op::Start,
                "a sampling PMC needs a log to write its samples to (hwpmc's EDOOFUS)",
            )
            .with_help(
                "call `Backend::configure_log` first, or read the samples in-process \
                 with Pmc::sample_in_process before starting",
            ));
        }
        Ok(())
    }

    /// What this PMC's rings carry (`None`: a counting PMC without rings).
    pub(super) fn purpose(&self) -> Option<RingPurpose> {
        self.rings.as_ref().map(|r| r.purpose)
    }

    /// A counting PMC with log-procexit.
    pub(super) fn exit_reads(&self) -> bool {
        self.purpose() == Some(RingPurpose::ExitReads)
    }

    /// In-process sampling: the owner reads the rings ([`Pmc::samples`](pmc_core::Pmc::samples)).
    pub(super) fn local_wanted(&self) -> bool {
        matches!(
            self.rings,
            Some(Rings {
                delivery: Delivery::Local(_),
                ..
            })
        )
    }

    pub(super) fn set_local(&mut self) -> Result<()> {
        if !self.is_sampling() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "only sampling PMCs have samples to read",
            ));
        }
        if self.life.state() != State::Allocated && !self.local_wanted() {
            return Err(Error::new(
                ErrorKind::InvalidState,
                Op::Start,
                "this PMC already sends its samples to the log",
            )
            .with_help("call sample_in_process before the first start"));
        }
        if let Some(r) = self.rings.as_mut() {
            if !matches!(r.delivery, Delivery::Local(_)) {
                r.delivery = Delivery::Local(None);
            }
        }
        Ok(())
    }

    /// log-procexit of a counting PMC, once stopped: the hub logs each exited process's
    /// count from the kernel's `PERF_RECORD_READ`s; each target's own count comes when the
    /// kernel hangs up its events (see `log::procexit::ExitReads`).
    pub(super) fn finish_exit_reads(&self) {
        self._shared.hub.finish_exit_reads(self.token());
    }

    /// Maps the rings of every instance not mapped yet and hands them to the log's drain
    /// thread (or keeps them for the in-process reader).
    pub(super) fn map_unmapped(&mut self) -> Result<()> {
        let todo = self.fds.unmapped();
        if todo.is_empty() {
            return Ok(());
        }
        let rings = self
            .fds
            .build_rings(&self.members, self.rings.as_ref(), &todo)?;
        if let Some(Rings {
            delivery: Delivery::Local(local),
            ..
        }) = self.rings.as_mut()
        {
            local.get_or_insert_with(Box::default).rings.extend(rings);
        } else {
            let synth = self.fds.synth(&todo);
            let descriptors = self.descriptors();
            let kernel = self.members.iter().any(|m| m.attr.exclude_kernel() == 0);
            self._shared
                .hub
                .register(descriptors, rings, synth, kernel)?;
        }
        self.fds.mark_mapped(&todo);
        Ok(())
    }

    /// Logs an attach or detach of `target` (hwpmc's PMCATTACH and PMCDETACH), for a PMC that
    /// uses the log (sampling, or log-proccsw/log-procexit: hwpmc's `PMC_F_NEEDS_LOGFILE`)
    /// while one is configured. A failed write is the log's error, reported by the log's
    /// calls; the attach itself stands.
    pub(super) fn log_target(&self, target: Target, attached: bool) {
        use pmc_log::record as log;
        let flags = self.members[0].alloc.flags;
        let needs_log = self.is_sampling()
            || flags.contains(pmc_core::Flags::LOG_PROCCSW)
            || flags.contains(pmc_core::Flags::LOG_PROCEXIT);
        if !needs_log || !self._shared.hub.has_log() {
            return;
        }
        let sys: &dyn Sys = &self._shared.sys;
        let pid = match target {
            Target::Pid(p) => p,
            _ => sys.getpid(),
        };
        let time = crate::log::now(sys);
        let pid = i32::try_from(pid).unwrap_or(-1);
        let descriptors = self.descriptors();
        for m in self.members.iter().skip(usize::from(
            self.purpose() == Some(RingPurpose::SwitchCounts),
        )) {
            let rec = if attached {
                log::Record::Attach(log::Attach {
                    time,
                    pmc_id: m.pmc_id,
                    pid,
                    path: crate::log::exe_path(sys, pid).into(),
                })
            } else {
                log::Record::Detach(log::Detach {
                    time,
                    pmc_id: m.pmc_id,
                    pid,
                })
            };
            let _ = self._shared.hub.write_target(descriptors.clone(), &rec);
        }
    }

    /// The log descriptors of the members.
    pub(super) fn descriptors(&self) -> Vec<pmc_log::record::PmcDescriptor<'static>> {
        crate::counter::rings::descriptors(&self.members, self.purpose(), &self._shared.sys)
    }

    /// Writes the current counts to the log as interval `Counter` records: one per instance
    /// (CPU or target) for a single PMC, one total per member for a group.
    pub(super) fn log_counts(&self) -> Result<()> {
        use pmc_log::record as log;
        let time = crate::log::now(&self._shared.sys);
        let mut counters = Vec::new();
        let counter = |pmc_id, pid, cpu, r: &Reading| log::Counter {
            time,
            pmc_id,
            pid,
            tid: -1,
            cpu,
            kind: log::CounterKind::Interval,
            value: r.value,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
        };
        if self.members.len() == 1 {
            for ir in self.read_instances()? {
                let (pid, cpu) = match ir.instance {
                    Instance::Cpu(c) => (-1, Some(c)),
                    Instance::Target(t) => {
                        let pid = t.pid().unwrap_or_else(|| self._shared.sys.getpid());
                        (i32::try_from(pid).unwrap_or(-1), None)
                    }
                };
                counters.push(counter(self.members[0].pmc_id, pid, cpu, &ir.reading));
            }
        } else {
            let mut out = vec![Reading::default(); self.members.len()];
            self.read_into(&mut out)?;
            for (m, r) in self.members.iter().zip(&out) {
                counters.push(counter(m.pmc_id, -1, None, r));
            }
        }
        self._shared
            .hub
            .write_counters(self.descriptors(), &counters)
    }
}

impl<S: Sys> Drop for Counters<S> {
    fn drop(&mut self) {
        if self.is_sampling() && !self.local_wanted() {
            // Whatever the rings still hold goes to the log before the fds close, and so does
            // what the kernel counted as lost since the last stop.
            self.report_kernel_lost();
            self._shared.hub.unregister(self.token());
        }
    }
}
