//! log-procexit: per-process counts at exit ([`ProcExit`]), for counting PMCs
//! ([`ExitReads`]) and sampling PMCs ([`PeriodSums`]).

use super::convert::to_i32;
use super::post::{Flow, HubEvent, PostProcessor};
use super::source::{RingMeta, RingPurpose};
use crate::log::unwind::UserStack;
use crate::record::{self, Record};
use pmc_log::record as log;
use std::collections::{BTreeMap, HashSet};

/// (pmc id, target pid): one target of a counting PMC with log-procexit.
type TargetKey = (u32, i32);

/// log-procexit for counting PMCs: the kernel's own per-task counts at exit.
///
/// A counting PMC with log-procexit is opened as `perf record -s` opens its events: one
/// event per CPU on each target (`inherit`, so that a ring can be mapped), with
/// `inherit_stat` and `task`. When a task that inherited the events exits, the kernel writes a
/// `PERF_RECORD_READ` (`sync_child_event`) to each CPU event's ring with that task's count
/// on that CPU; summed over the CPUs and the process's threads, that is the process's count at
/// its exit. (Checked on Linux 6.18: a process forking three children that touch 1000, 2000
/// and 3000 pages got `READ`s of 1018, 2018 and 3018 page faults, after each child's `EXIT`,
/// as `perf record -s`'s perf.data shows them.)
///
/// One task's exit has no `READ`: the task that holds the original (not inherited) context
/// when it exits. That is the target itself, unless the scheduler swapped the contexts of the
/// target and a child (`perf_event_context_sched_out`: equivalent contexts are swapped rather
/// than switched, and `inherit_stat` swaps their counts too, so each task keeps its own), in
/// which case it is that child and the target gets a `READ`. Its count is the target's total
/// (its events' counts, which take in every exited task's) less every `READ` of the target's
/// tasks, known once the target and every task that inherited its events are gone: the
/// kernel then hangs up each of the target's events (`POLLHUP`), stopped or not, and the hub
/// reads them ([`HubEvent::TargetGone`]). Each target is finished on its own, as hwpmc's
/// `pmc_process_exit()` logs each process: a target still running does not hold back another's.
/// A stop ([`HubEvent::Stopped`]) logs the processes whose `READ`s came (a target that stays,
/// such as the PMC's owner, has no hang-up); a detach ([`HubEvent::TargetClosed`]) logs
/// those of the target and forgets it (hwpmc logs no exit of a process detached).
///
/// Records are told apart by target ([`TargetKey`]) through their event id (`PERF_SAMPLE_IDENTIFIER`: an
/// inherited event's records carry its parent's id, the target's event's).
#[derive(Default)]
pub(super) struct ExitReads {
    /// (pmc id, target, pid) -> the sums of its `READ`s: value, time enabled, time running.
    sums: BTreeMap<(u32, i32, i32), (u64, u64, u64)>,
    /// (pmc id, target, tid) of every `READ`.
    read_tids: HashSet<(u32, i32, i32)>,
    /// Exits, in order: ((pmc id, target), time, pid, tid, cpu). Each ring has its own.
    exits: Vec<(TargetKey, u64, i32, i32, Option<u32>)>,
    /// (pmc id, target, tid) of the tasks seen forking: those without an exit are still
    /// running. (Not removed at their exit: a fork and its exit come through different CPUs'
    /// rings, and a pass can drain the exit first.)
    forks: HashSet<(u32, i32, i32)>,
    /// (pmc id, target, pid) of the processes logged already (at a stop, before their
    /// target was gone).
    logged: HashSet<(u32, i32, i32)>,
}

impl ExitReads {
    fn read(&mut self, rd: &record::ReadRecord<'_>, meta: &RingMeta) {
        let (pid, tid) = (to_i32(rd.pid), to_i32(rd.tid));
        let target = meta.target_of(rd.sample_id.identifier.or(rd.sample_id.id));
        let mut add = |pmc: u32, value: u64, enabled: u64, running: u64| {
            let e = self.sums.entry((pmc, target, pid)).or_default();
            e.0 = e.0.saturating_add(value);
            e.1 = e.1.saturating_add(enabled);
            e.2 = e.2.saturating_add(running);
            self.read_tids.insert((pmc, target, tid));
        };
        match rd.values {
            record::ReadValues::Single(v) => add(
                meta.pmc_of(v.id),
                v.value,
                v.time_enabled.unwrap_or(0),
                v.time_running.unwrap_or(0),
            ),
            record::ReadValues::Group(g) => {
                for e in g.iter() {
                    add(
                        meta.pmc_of(e.id),
                        e.value,
                        g.time_enabled.unwrap_or(0),
                        g.time_running.unwrap_or(0),
                    );
                }
            }
        }
    }

    fn exited(&mut self, x: &record::TaskEvent, meta: &RingMeta) {
        let key = (
            meta.default_pmc,
            meta.target_of(x.sample_id.identifier.or(x.sample_id.id)),
        );
        let tid = to_i32(x.tid);
        if !self.exits.iter().any(|e| e.0 == key && e.3 == tid) {
            let cpu = x.sample_id.cpu.or(meta.cpu);
            self.exits.push((key, x.time, to_i32(x.pid), tid, cpu));
        }
    }

    /// A new task: followed (until its exit) when the events are inherited by it: a thread,
    /// or with `inherit` (descendants) a process. (A process's fork is reported to its events
    /// whether or not its child inherits them.)
    fn forked(&mut self, f: &record::TaskEvent, meta: &RingMeta) {
        if f.pid == f.ppid || meta.inherit {
            let target = meta.target_of(f.sample_id.identifier.or(f.sample_id.id));
            self.forks.insert((meta.default_pmc, target, to_i32(f.tid)));
        }
    }

    /// The `ProcessExit` counters of PMC `pmc`'s target `target` not logged yet, one per
    /// process that exited, in the order they exited. `gone`: the target and every task
    /// that inherited its events are gone, at `.1`, and `.0` is the target's total (its
    /// events' counts; `None` if they could not be read): the task without a `READ` gets the
    /// rest, and the target is forgotten. Without it, only the processes whose `READ`s came
    /// are logged (and remembered as logged).
    fn finish(
        &mut self,
        pmc: u32,
        target: i32,
        gone: Option<(Option<u64>, u64)>,
    ) -> Vec<log::Counter> {
        let key = (pmc, target);
        if let Some((_, time)) = gone {
            // The target's own exit comes with no record when the PMC was stopped (the
            // kernel writes side-band records of enabled events only): it is gone by now.
            if target > 0 && !self.exits.iter().any(|e| e.0 == key && e.3 == target) {
                self.exits.push((key, time, target, target, None));
            }
        }
        // The exited tasks without a READ: at most one held the original context.
        let exits: Vec<(u64, i32, i32, Option<u32>)> = self
            .exits
            .iter()
            .filter(|e| e.0 == key)
            .map(|e| (e.1, e.2, e.3, e.4))
            .collect();
        let unread: Vec<&(u64, i32, i32, Option<u32>)> = exits
            .iter()
            .filter(|e| !self.read_tids.contains(&(pmc, target, e.2)))
            .collect();
        let running = self
            .forks
            .iter()
            .any(|&(p, t, tid)| (p, t) == key && !exits.iter().any(|e| e.2 == tid));
        let range = (pmc, target, i32::MIN)..=(pmc, target, i32::MAX);
        let read_sum = self
            .sums
            .range(range.clone())
            .fold(0u64, |a, (_, v)| a.saturating_add(v.0));
        let rest = match (unread.as_slice(), gone) {
            // Its times are not known apart from the others' (0: unknown).
            ([one], Some((Some(total), _))) if !running => {
                Some((one.1, total.saturating_sub(read_sum), 0u64, 0u64))
            }
            _ => None,
        };
        let mut out = Vec::new();
        // A process's line at the exit of its last task: its main thread, normally.
        let mut last_exit: BTreeMap<i32, (u64, i32, Option<u32>)> = BTreeMap::new();
        for &(time, pid, tid, cpu) in &exits {
            let e = last_exit.entry(pid).or_insert((time, tid, cpu));
            if tid == pid || time >= e.0 {
                *e = (time, tid, cpu);
            }
        }
        let mut order: Vec<(u64, i32)> = last_exit.iter().map(|(p, e)| (e.0, *p)).collect();
        order.sort_unstable();
        for (_, pid) in order {
            if self.logged.contains(&(pmc, target, pid)) {
                continue;
            }
            let mut v = self.sums.get(&(pmc, target, pid)).copied();
            if let Some((_, value, en, run)) = rest.filter(|r| r.0 == pid) {
                let have = v.unwrap_or_default();
                v = Some((
                    have.0.saturating_add(value),
                    have.1.max(en),
                    have.2.max(run),
                ));
            } else if unread.iter().any(|e| e.1 == pid) {
                // Part of this process's count is in the unattributed rest: not logged.
                continue;
            }
            let Some((value, time_enabled, time_running)) = v else {
                continue;
            };
            let (time, tid, cpu) = last_exit[&pid];
            self.logged.insert((pmc, target, pid));
            out.push(log::Counter {
                time,
                pmc_id: pmc,
                pid,
                tid,
                cpu,
                kind: log::CounterKind::ProcessExit,
                value,
                time_enabled,
                time_running,
            });
        }
        if gone.is_some() {
            self.forget(|k| k == key);
        }
        out
    }

    /// Forgets the targets whose (pmc id, target) `which` is true for.
    fn forget(&mut self, which: impl Fn((u32, i32)) -> bool) {
        self.sums.retain(|&(p, t, _), _| !which((p, t)));
        self.read_tids.retain(|&(p, t, _)| !which((p, t)));
        self.exits.retain(|e| !which(e.0));
        self.forks.retain(|&(p, t, _)| !which((p, t)));
        self.logged.retain(|&(p, t, _)| !which((p, t)));
    }

    /// The targets of PMC `pmc` it knows of.
    fn targets(&self, pmc: u32) -> Vec<i32> {
        let mut t: Vec<i32> = self
            .exits
            .iter()
            .map(|e| e.0)
            .chain(self.sums.keys().map(|&(p, t, _)| (p, t)))
            .filter(|k| k.0 == pmc)
            .map(|k| k.1)
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// log-procexit of sampling PMCs: per-process counts at exit.
///
/// For sampling PMCs with the flag the kernel's own mechanism (`inherit_stat`, see
/// [`ExitReads`], which counting PMCs use) is not used, so that the sampling events stay as
/// perf record opens them. Instead the hub sums
/// the sample periods of each process, and when the process's `EXIT` arrives it logs that sum
/// as the process's count ([`CounterKind::ProcessExit`](log::CounterKind::ProcessExit);
/// `time_enabled`/`time_running` 0: not read from the kernel). The sum is the events counted
/// in the process up to its last sample: exact but for the last, incomplete period.
#[derive(Default)]
pub(super) struct PeriodSums {
    /// PMC ids with log-procexit.
    pmcs: HashSet<u32>,
    /// (pmc id, pid) -> sum of sample periods.
    sums: BTreeMap<(u32, i32), u64>,
}

impl PeriodSums {
    /// Follows the log in time order (the reorder buffer's output, so a sample read from
    /// another CPU's ring after its process's `EXIT` still counts before it): sums each
    /// process's sample periods, and at its `EXIT` returns the `ProcessExit` counter
    /// records to write after it.
    fn observe(&mut self, rec: &log::Record<'_>) -> Vec<log::Record<'static>> {
        if self.pmcs.is_empty() {
            return Vec::new();
        }
        match rec {
            log::Record::Sample(s) if self.pmcs.contains(&s.pmc_id) => {
                let e = self.sums.entry((s.pmc_id, s.pid)).or_default();
                *e = e.saturating_add(s.period);
                Vec::new()
            }
            log::Record::Exit(x) => {
                let mut pmcs: Vec<u32> = self.pmcs.iter().copied().collect();
                pmcs.sort_unstable();
                pmcs.into_iter()
                    .filter_map(|pmc| {
                        let sum = self.sums.remove(&(pmc, x.pid))?;
                        Some(log::Record::Counter(log::Counter {
                            time: x.time,
                            pmc_id: pmc,
                            pid: x.pid,
                            tid: x.tid,
                            cpu: None,
                            kind: log::CounterKind::ProcessExit,
                            value: sum,
                            time_enabled: 0,
                            time_running: 0,
                        }))
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// log-procexit, both halves: a counting PMC's `READ`s are taken as they are drained (they
/// are not log records) and its tasks' forks and exits followed there, its counters made
/// when it stops ([`HubEvent::Stopped`]); a sampling PMC's periods are summed in time order,
/// as records leave the reorder buffer, and its counter written after each `EXIT`.
#[derive(Default)]
pub(super) struct ProcExit {
    /// Counting PMCs.
    reads: ExitReads,
    /// Sampling PMCs.
    periods: PeriodSums,
}

impl PostProcessor for ProcExit {
    /// A counting PMC's exit `READ`s, and the exits of every ring (a followed process that
    /// exits without a sample still gets its row).
    fn wants(&self, purpose: RingPurpose) -> bool {
        matches!(
            purpose,
            RingPurpose::ExitReads | RingPurpose::Samples | RingPurpose::SwitchCounts
        )
    }

    /// Samples are summed in time order ([`PostProcessor::ordered`]), not as drained.
    fn drains_samples(&self, _purpose: RingPurpose) -> bool {
        false
    }

    /// The periods of the samples of sampling PMCs with log-procexit, if there are any.
    fn orders_samples(&self) -> bool {
        !self.periods.pmcs.is_empty()
    }

    fn drained(
        &mut self,
        meta: &RingMeta,
        rec: &Record<'_>,
        _out: &mut Vec<log::Record<'static>>,
    ) -> Flow {
        if meta.purpose == RingPurpose::ExitReads {
            match rec {
                Record::Read(rd) => {
                    self.reads.read(rd, meta);
                    return Flow::Consumed;
                }
                Record::Exit(x) => self.reads.exited(x, meta),
                Record::Fork(f) => self.reads.forked(f, meta),
                _ => {}
            }
        } else if let Record::Exit(x) = rec {
            // A followed process that exits without a sample still gets its row (0), as
            // hwpmc logs a PROCEXIT for every process of a LOG_PROCEXIT PMC
            // (pmc_process_exit() calls pmclog_process_procexit() for each of its PMCs,
            // whatever their count): the shell of `sh -c 'a; b'` runs under one period.
            if x.pid == x.tid {
                for &(_, pmc) in &meta.ids {
                    if self.periods.pmcs.contains(&pmc) {
                        if let Ok(pid) = i32::try_from(x.pid) {
                            self.periods.sums.entry((pmc, pid)).or_default();
                        }
                    }
                }
            }
        }
        Flow::Pass
    }

    fn ordered(
        &mut self,
        rec: &mut log::Record<'_>,
        _stack: Option<&UserStack<'_>>,
        after: &mut Vec<log::Record<'static>>,
    ) {
        after.extend(self.periods.observe(rec));
    }

    fn event(&mut self, ev: &HubEvent<'_>, out: &mut Vec<log::Record<'static>>) {
        match ev {
            HubEvent::Registered(d) if d.flags & log::FLAG_LOG_PROCEXIT != 0 => {
                self.periods.pmcs.insert(d.pmc_id);
            }
            HubEvent::Stopped { pmc } => {
                for target in self.reads.targets(*pmc) {
                    let counters = self.reads.finish(*pmc, target, None);
                    out.extend(counters.into_iter().map(log::Record::Counter));
                }
            }
            HubEvent::TargetGone {
                pmc,
                target,
                total,
                time,
            } => {
                let counters = self.reads.finish(*pmc, *target, Some((*total, *time)));
                out.extend(counters.into_iter().map(log::Record::Counter));
            }
            HubEvent::TargetClosed { pmc, target } => {
                let counters = self.reads.finish(*pmc, *target, None);
                out.extend(counters.into_iter().map(log::Record::Counter));
                let key = (*pmc, *target);
                self.reads.forget(|k| k == key);
            }
            HubEvent::Unregistering(rings) => {
                let gone: HashSet<u32> = rings.iter().map(|r| r.token).collect();
                self.reads.forget(|k| gone.contains(&k.0));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log-procexit of a counting PMC: the READs give each task's count; the one exited task
    /// without a READ (here a child, 12, that held the original context when it exited: the
    /// kernel swapped the contexts of 10 and 12) gets the target's total less the READs, once
    /// the target is gone; with a followed task still running, nothing is guessed.
    #[test]
    fn exit_reads_give_each_process_its_count() {
        let k = (3, 10);
        let mk = || {
            let mut x = ExitReads {
                // ((pmc, target), time, pid, tid, cpu)
                exits: vec![
                    (k, 100, 11, 11, Some(0)),
                    (k, 200, 12, 12, Some(1)),
                    (k, 250, 10, 13, Some(1)), // a thread of 10
                    (k, 300, 10, 10, Some(0)),
                ],
                ..ExitReads::default()
            };
            x.sums.insert((3, 10, 11), (1000, 5, 5));
            x.sums.insert((3, 10, 10), (500, 9, 9)); // 10 itself and its thread 13
            x.read_tids.extend([(3, 10, 11), (3, 10, 10), (3, 10, 13)]);
            x
        };
        let mut x = mk();
        let out = x.finish(3, 10, Some((Some(1000 + 500 + 2000), 400)));
        let got: Vec<(i32, i32, u64, u64)> = out
            .iter()
            .map(|c| (c.pid, c.tid, c.value, c.time))
            .collect();
        assert_eq!(
            got,
            [(11, 11, 1000, 100), (12, 12, 2000, 200), (10, 10, 500, 300)]
        );
        assert!(out.iter().all(|c| c.kind == log::CounterKind::ProcessExit));
        assert!(
            x.exits.is_empty() && x.sums.is_empty(),
            "forgotten once gone"
        );
        // A followed task still running: the rest is not 12's alone.
        let mut x = mk();
        x.forks.extend([(3, 10, 11), (3, 10, 12), (3, 10, 14)]);
        let got: Vec<i32> = x
            .finish(3, 10, Some((Some(4000), 400)))
            .iter()
            .map(|c| c.pid)
            .collect();
        assert_eq!(got, [11, 10]);
        // The target not gone (a stop): the processes with READs, once each.
        let mut x = mk();
        let got: Vec<i32> = x.finish(3, 10, None).iter().map(|c| c.pid).collect();
        assert_eq!(got, [11, 10]);
        assert!(x.finish(3, 10, None).is_empty(), "logged once");
        // ... and at its hang-up, the rest.
        let got: Vec<(i32, u64)> = x
            .finish(3, 10, Some((Some(3500), 400)))
            .iter()
            .map(|c| (c.pid, c.value))
            .collect();
        assert_eq!(got, [(12, 2000)]);
        // Another PMC's or target's records are left alone.
        let mut x = mk();
        assert!(x.finish(4, 10, None).is_empty());
        assert!(x
            .finish(3, 11, Some((Some(5), 400)))
            .iter()
            .all(|c| c.pid == 11 && c.value == 5));
        assert_eq!(x.exits.len(), 4);
    }

    /// Two targets of one PMC: the one gone is logged with its own count (its total, no
    /// READ: the original context) while the other still runs; the other's exit, after a
    /// stop, comes with no EXIT record and is logged at its hang-up.
    #[test]
    fn each_target_is_logged_at_its_own_exit() {
        let mut x = ExitReads::default();
        x.exits.push(((3, 20), 100, 20, 20, Some(0)));
        let got: Vec<(i32, u64, u64)> = x
            .finish(3, 20, Some((Some(2016), 150)))
            .iter()
            .map(|c| (c.pid, c.value, c.time))
            .collect();
        assert_eq!(got, [(20, 2016, 100)]);
        assert!(x.finish(3, 21, None).is_empty(), "21 runs on");
        let got: Vec<(i32, u64, u64)> = x
            .finish(3, 21, Some((Some(7), 900)))
            .iter()
            .map(|c| (c.pid, c.value, c.time))
            .collect();
        assert_eq!(got, [(21, 7, 900)], "its hang-up's time");
    }

    fn descriptor(pmc_id: u32, flags: u32) -> log::PmcDescriptor<'static> {
        log::PmcDescriptor {
            time: 0,
            pmc_id,
            event_spec: "cpu-clock".into(),
            canonical_name: "cpu-clock".into(),
            scope: log::Scope::Process,
            cpu: None,
            mode: log::Mode::SamplingPeriod(100),
            flags,
            native_config: "".into(),
        }
    }

    fn sample(time: u64, pmc_id: u32, pid: i32, period: u64) -> log::Record<'static> {
        log::Record::Sample(log::Sample {
            time,
            pmc_id,
            pid,
            tid: pid,
            cpu: Some(0),
            period,
            callchain: log::Callchain::from_vec(vec![0x40_1000]),
            kernel_frames: 0,
            raw: log::Bytes::default(),
        })
    }

    /// Runs `rec` through the processor as it leaves the reorder buffer: what it writes
    /// after it, as (pmc, pid, tid, time, value); `rec` itself is left as it was.
    fn ordered(p: &mut ProcExit, rec: log::Record<'static>) -> Vec<(u32, i32, i32, u64, u64)> {
        let (mut r, mut after) = (rec.clone(), Vec::new());
        p.ordered(&mut r, None, &mut after);
        assert_eq!(r, rec);
        after
            .iter()
            .map(|r| match r {
                log::Record::Counter(c) => {
                    assert_eq!(c.kind, log::CounterKind::ProcessExit);
                    assert_eq!((c.cpu, c.time_enabled, c.time_running), (None, 0, 0));
                    (c.pmc_id, c.pid, c.tid, c.time, c.value)
                }
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// log-procexit of sampling PMCs through the post-processor interface: the periods of
    /// each process's samples of each registered log-procexit PMC, summed as the records
    /// leave the reorder buffer, written after the process's `EXIT` (once), and nothing for
    /// PMCs without the flag, nor at a thread's exit.
    #[test]
    fn procexit_sums_sample_periods_until_the_exit() {
        let mut p = ProcExit::default();
        let mut out = Vec::new();
        p.event(
            &HubEvent::Registered(&descriptor(3, log::FLAG_LOG_PROCEXIT)),
            &mut out,
        );
        p.event(&HubEvent::Registered(&descriptor(4, 0)), &mut out);
        p.event(
            &HubEvent::Registered(&descriptor(5, log::FLAG_LOG_PROCEXIT)),
            &mut out,
        );
        assert!(out.is_empty());
        for rec in [
            sample(10, 3, 10, 100),
            sample(20, 4, 10, 50),
            sample(30, 3, 11, 7),
            sample(40, 5, 10, 1),
            sample(50, 3, 10, 200),
        ] {
            assert!(ordered(&mut p, rec).is_empty());
        }
        let thread_exit = log::Record::ThreadExit(log::ThreadExit {
            time: 60,
            pid: 10,
            tid: 12,
        });
        assert!(ordered(&mut p, thread_exit).is_empty());
        let exit = |time: u64, pid: i32| {
            log::Record::Exit(log::Exit {
                time,
                pid,
                tid: pid,
            })
        };
        assert_eq!(
            ordered(&mut p, exit(70, 10)),
            [(3, 10, 10, 70, 300), (5, 10, 10, 70, 1)]
        );
        assert!(ordered(&mut p, exit(80, 10)).is_empty(), "logged once");
        assert_eq!(ordered(&mut p, exit(90, 11)), [(3, 11, 11, 90, 7)]);
    }

    /// log-procexit of counting PMCs through the post-processor interface: a ring's `READ`s
    /// are taken (not passed on to conversion) when the PMC logs exit reads, and its `EXIT`s
    /// pass; at stop, each process that exited with a `READ` gets its count; at the target's
    /// hang-up, the one without a `READ` the target's total less the `READ`s. Records are
    /// the target's by their event id (77).
    #[test]
    fn procexit_takes_reads_and_counts_at_stop() {
        use crate::log::testutil::{cfg, meta, pid_tid, record, trailer};
        use crate::record::record_type;
        let m = RingMeta {
            purpose: RingPurpose::ExitReads,
            targets: vec![(77, 10)],
            ..meta()
        };
        let read = |pid: u32, tid: u32, value: u64, time: u64| {
            let mut b = vec![pid_tid(pid, tid), value];
            b.extend(trailer(pid, tid, time, 0, 77));
            record(record_type::READ, 0, &b)
        };
        let task = |kind: u32, pid: u32, ppid: u32, time: u64| {
            let mut b = vec![pid_tid(pid, ppid), pid_tid(pid, ppid), time];
            b.extend(trailer(pid, pid, time, 0, 77));
            record(kind, 0, &b)
        };
        let mut p = ProcExit::default();
        let mut drained = |bytes: Vec<u8>, m: &RingMeta| {
            let r = cfg().parse(&bytes).expect("parses");
            let mut out = Vec::new();
            let flow = p.drained(m, &r, &mut out);
            assert!(out.is_empty());
            flow
        };
        assert_eq!(drained(task(record_type::FORK, 11, 10, 5), &m), Flow::Pass);
        assert_eq!(drained(read(11, 11, 1_000, 99), &m), Flow::Consumed);
        assert_eq!(
            drained(task(record_type::EXIT, 11, 10, 100), &m),
            Flow::Pass
        );
        assert_eq!(drained(task(record_type::EXIT, 10, 1, 300), &m), Flow::Pass);
        // Another PMC's ring without exit reads: its READs are none of this.
        assert_eq!(drained(read(12, 12, 5, 99), &meta()), Flow::Pass);
        let mut out = Vec::new();
        p.event(&HubEvent::Stopped { pmc: 3 }, &mut out);
        let gone = HubEvent::TargetGone {
            pmc: 3,
            target: 10,
            total: Some(4_000),
            time: 400,
        };
        p.event(&gone, &mut out);
        let got: Vec<(i32, u64, u64)> = out
            .iter()
            .map(|r| match r {
                log::Record::Counter(c) => (c.pid, c.time, c.value),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, [(11, 100, 1_000), (10, 300, 3_000)]);
    }
}
