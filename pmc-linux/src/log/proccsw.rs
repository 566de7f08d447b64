//! log-proccsw: a switch group's samples become per-slice `ContextSwitch` counter records.

use super::convert::to_i32;
use super::post::{Flow, HubEvent, PostProcessor};
use super::source::{RingMeta, RingPurpose};
use crate::record::{self, Record};
use pmc_log::record as log;
use std::collections::{BTreeMap, HashSet};

/// log-proccsw: the previous cumulative reading of each counter, so each context switch logs
/// the counts of the time slice that just ended. Entries go when the thread exits.
///
/// A counter is a (PMC, thread, switch event) triple: with descendants the switch group is
/// opened once per CPU, and each CPU's copy counts only the thread's time on that CPU, so a
/// thread that migrates has one cumulative count per CPU. The switch event's id (the
/// sample's identifier; an inherited event reports its parent's) tells them apart.
///
/// Rings are drained one after another, not in time order, so a thread's `EXIT` (in the ring
/// of the CPU it exited on) can be read before its last switch on another CPU. Its entries
/// are therefore dropped only after the next complete pass over every ring, which reads past
/// everything written before the `EXIT` was seen.
#[derive(Default)]
pub(super) struct ProcCsw {
    /// (pmc id, tid, switch event id) -> (value, time_enabled, time_running) at the previous
    /// switch.
    last: BTreeMap<(u32, i32, u64), (u64, u64, u64)>,
    /// Threads seen exiting, with the pass they were seen in.
    exited: Vec<(i32, u64)>,
    /// Complete passes over every ring so far.
    pass: u64,
    /// The counters of the switch being logged.
    scratch: Vec<log::Counter>,
}

/// Takes the samples of switch-group rings (each becomes the counter records of the slice
/// that ended), follows those rings' thread exits, forgets exited threads one complete pass
/// later and a PMC's counters when its rings go.
impl PostProcessor for ProcCsw {
    /// A switch group's samples.
    fn wants(&self, purpose: RingPurpose) -> bool {
        purpose == RingPurpose::SwitchCounts
    }

    /// It takes its samples as they are drained.
    fn orders_samples(&self) -> bool {
        false
    }

    fn drained(
        &mut self,
        meta: &RingMeta,
        rec: &Record<'_>,
        out: &mut Vec<log::Record<'static>>,
    ) -> Flow {
        match rec {
            Record::Sample(s) => {
                let mut csw = std::mem::take(&mut self.scratch);
                self.counters(s, meta, &mut csw);
                out.extend(csw.drain(..).map(log::Record::Counter));
                self.scratch = csw;
                Flow::Consumed
            }
            Record::Exit(x) => {
                self.exited(to_i32(x.tid));
                Flow::Pass
            }
            _ => Flow::Pass,
        }
    }

    fn end_pass(&mut self) {
        ProcCsw::end_pass(self);
    }

    fn event(&mut self, ev: &HubEvent<'_>, _out: &mut Vec<log::Record<'static>>) {
        if let HubEvent::Unregistering(rings) = ev {
            let pmcs: HashSet<u32> = rings
                .iter()
                .filter(|r| r.purpose == RingPurpose::SwitchCounts)
                .flat_map(|r| r.ids.iter().map(|(_, p)| *p))
                .collect();
            if !pmcs.is_empty() {
                self.forget(&pmcs);
            }
        }
    }
}

impl ProcCsw {
    /// The counter records for one switch sample of a switch group: one per member (the
    /// group's leader, the switch event itself, is left out), each the difference from the
    /// thread's previous switch.
    fn counters(&mut self, s: &record::Sample<'_>, meta: &RingMeta, out: &mut Vec<log::Counter>) {
        let Some(record::ReadValues::Group(g)) = &s.read else {
            return;
        };
        let pid = s.pid.map_or(-1, to_i32);
        let tid = s.tid.map_or(-1, to_i32);
        let event = s.identifier.or(s.id).unwrap_or(0);
        let (en, run) = (g.time_enabled.unwrap_or(0), g.time_running.unwrap_or(0));
        for e in g.iter() {
            let pmc = meta.pmc_of(e.id);
            if pmc == meta.default_pmc {
                continue; // the context-switch event
            }
            let prev = self.last.insert((pmc, tid, event), (e.value, en, run));
            let (v0, e0, r0) = prev.unwrap_or((0, 0, 0));
            out.push(log::Counter {
                time: s.time.unwrap_or(0),
                pmc_id: pmc,
                pid,
                tid,
                cpu: s.cpu.or(meta.cpu),
                kind: log::CounterKind::ContextSwitch,
                value: e.value.saturating_sub(v0),
                time_enabled: en.saturating_sub(e0),
                time_running: run.saturating_sub(r0),
            });
        }
    }

    /// Notes a thread that exited: forgotten after the next complete pass.
    fn exited(&mut self, tid: i32) {
        if !self.last.is_empty() {
            self.exited.push((tid, self.pass));
        }
    }

    /// A complete pass over every ring ended: forgets the threads that exited before it began.
    fn end_pass(&mut self) {
        let pass = self.pass;
        self.pass += 1;
        if !self.exited.iter().any(|(_, p)| *p < pass) {
            return;
        }
        let gone: HashSet<i32> = self
            .exited
            .iter()
            .filter(|(_, p)| *p < pass)
            .map(|(t, _)| *t)
            .collect();
        self.exited.retain(|(_, p)| *p >= pass);
        self.last.retain(|(_, t, _), _| !gone.contains(t));
    }

    /// Forgets the counters of PMCs that went away.
    fn forget(&mut self, pmcs: &HashSet<u32>) {
        self.last.retain(|(p, _, _), _| !pmcs.contains(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::post::PostChain;
    use crate::log::testutil::{meta, pid_tid, record};
    use crate::record::{record_type, sample_type as st, ParseConfig};

    /// log-proccsw: each switch sample of a switch group (leader: the context-switch event,
    /// id 77 = PMC 3; member id 78 = PMC 4) becomes one counter record per member with the
    /// slice's counts: the difference from the same counter's previous switch. With
    /// descendants there is one switch group per CPU (here also 87/88), each with its own
    /// cumulative count for the thread.
    #[test]
    fn switch_samples_become_slice_counters() {
        use crate::record::read_format as rf;
        let cfg = ParseConfig::new(
            st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::READ,
            rf::GROUP | rf::ID | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING,
            true,
        );
        let m = RingMeta {
            ids: vec![(77, 3), (78, 4), (87, 3), (88, 4)],
            purpose: RingPurpose::SwitchCounts,
            ..meta()
        };
        // (switch event, tid, time, cpu, value, time enabled)
        let sample = |lead: u64, tid: u32, time: u64, cpu: u64, value: u64, en: u64| {
            let body = [
                lead,
                pid_tid(10, tid),
                time,
                cpu,
                2,
                en,
                en,
                1,
                lead,
                value,
                lead + 1,
            ];
            record(record_type::SAMPLE, 1, &body)
        };
        let mut csw = ProcCsw::default();
        let mut out = Vec::new();
        for bytes in [
            sample(77, 11, 100, 1, 1_000, 5_000),
            sample(77, 12, 150, 1, 700, 800),
            sample(87, 11, 170, 0, 300, 400),
            sample(77, 11, 200, 1, 1_600, 9_000),
        ] {
            let Ok(Record::Sample(s)) = cfg.parse(&bytes) else {
                panic!("a sample")
            };
            csw.counters(&s, &m, &mut out);
        }
        let got: Vec<_> = out
            .iter()
            .map(|c| (c.pmc_id, c.tid, c.time, c.cpu, c.value, c.time_enabled))
            .collect();
        assert_eq!(
            got,
            [
                (4, 11, 100, Some(1), 1_000, 5_000),
                (4, 12, 150, Some(1), 700, 800),
                (4, 11, 170, Some(0), 300, 400),
                (4, 11, 200, Some(1), 600, 4_000),
            ]
        );
        assert!(out
            .iter()
            .all(|c| c.pid == 10 && c.kind == log::CounterKind::ContextSwitch));
        // An exited thread is forgotten only after a complete pass that began after its exit
        // was seen (another CPU's ring may still hold its last switch).
        csw.exited(11);
        csw.end_pass();
        assert_eq!(csw.last.len(), 3, "thread 11 kept for one more pass");
        csw.end_pass();
        assert_eq!(csw.last.len(), 1, "thread 11 forgotten");
        csw.forget(&HashSet::from([4]));
        assert!(csw.last.is_empty());
        // Not a group read: nothing to log.
        let bytes = record(record_type::SAMPLE, 1, &[77, pid_tid(10, 11), 1]);
        let no_read = ParseConfig::new(st::IDENTIFIER | st::TID | st::TIME, 0, true);
        let Ok(Record::Sample(s)) = no_read.parse(&bytes) else {
            panic!("a sample")
        };
        let before = out.len();
        csw.counters(&s, &m, &mut out);
        assert_eq!(out.len(), before);
    }

    /// A switch group ring as the drain sees it: leader 77/87 (the context-switch events of
    /// CPUs 1 and 0, PMC 3), members 78/88 (PMC 4) and 79/89 (PMC 5).
    fn switch_ring() -> (ParseConfig, RingMeta) {
        use crate::record::read_format as rf;
        let cfg = ParseConfig::new(
            st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::READ,
            rf::GROUP | rf::ID | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING,
            true,
        );
        let m = RingMeta {
            ids: vec![(77, 3), (78, 4), (79, 5), (87, 3), (88, 4), (89, 5)],
            purpose: RingPurpose::SwitchCounts,
            ..meta()
        };
        (cfg, m)
    }

    /// A switch sample: (switch event, tid, time, time enabled, member values).
    fn switch(lead: u64, tid: u32, time: u64, en: u64, v: [u64; 2]) -> Vec<u8> {
        let cpu = u64::from(lead == 77);
        let body = [
            lead,
            pid_tid(10, tid),
            time,
            cpu,
            3,
            en,
            en,
            1,
            lead,
            v[0],
            lead + 1,
            v[1],
            lead + 2,
        ];
        record(record_type::SAMPLE, 1, &body)
    }

    /// Runs `bytes` through the processor as drained from `m`'s ring: (flow, counters out as
    /// (pmc, tid, cpu, value, time enabled)).
    #[allow(clippy::type_complexity)]
    fn drained(
        csw: &mut ProcCsw,
        cfg: &ParseConfig,
        m: &RingMeta,
        bytes: &[u8],
    ) -> (Flow, Vec<(u32, i32, Option<u32>, u64, u64)>) {
        let r = cfg.parse(bytes).expect("parses");
        let mut out = Vec::new();
        let flow = PostProcessor::drained(csw, m, &r, &mut out);
        let got = out
            .iter()
            .map(|r| match r {
                log::Record::Counter(c) => {
                    assert_eq!((c.pid, c.kind), (10, log::CounterKind::ContextSwitch));
                    (c.pmc_id, c.tid, c.cpu, c.value, c.time_enabled)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        (flow, got)
    }

    /// Through the post-processor interface: a switch ring's samples are taken (not logged as
    /// samples) and give one counter per member, each the difference from the previous switch
    /// of the same (PMC, thread, switch event); another ring's samples pass.
    #[test]
    fn proccsw_diffs_per_pmc_thread_and_switch_event() {
        let (cfg, m) = switch_ring();
        let mut csw = ProcCsw::default();
        let mut run = |bytes: Vec<u8>| drained(&mut csw, &cfg, &m, &bytes);
        assert_eq!(
            run(switch(77, 11, 100, 50, [1_000, 10])),
            (
                Flow::Consumed,
                vec![(4, 11, Some(1), 1_000, 50), (5, 11, Some(1), 10, 50)]
            )
        );
        // Thread 12 on the same CPU: its own counts.
        assert_eq!(
            run(switch(77, 12, 110, 70, [300, 3])).1,
            [(4, 12, Some(1), 300, 70), (5, 12, Some(1), 3, 70)]
        );
        // Thread 11 on CPU 0: CPU 0's copy of the group counts from its own zero.
        assert_eq!(
            run(switch(87, 11, 120, 20, [400, 4])).1,
            [(4, 11, Some(0), 400, 20), (5, 11, Some(0), 4, 20)]
        );
        // Thread 11 back on CPU 1: the slice since its previous switch there.
        assert_eq!(
            run(switch(77, 11, 130, 90, [1_600, 17])).1,
            [(4, 11, Some(1), 600, 40), (5, 11, Some(1), 7, 40)]
        );
        // Not a switch ring: the chain does not hand its records to log-proccsw, so the
        // sample passes through it and nothing is emitted.
        let plain = RingMeta {
            ids: m.ids.clone(),
            ..meta()
        };
        assert!(!csw.wants(plain.purpose));
        let mut chain = PostChain(vec![Box::new(ProcCsw::default())]);
        let bytes = switch(77, 11, 140, 99, [9, 9]);
        let rec = cfg.parse(&bytes).expect("parses");
        let mut out = Vec::new();
        let flow = chain.drained(&plain, &rec, &mut |r| out.push(r));
        assert_eq!((flow, out.len()), (Flow::Pass, 0));
    }

    /// A thread's `EXIT` passes on to the log, and the thread's counters are forgotten only
    /// after the next complete pass: its last switch, still in another CPU's ring, diffs
    /// against its previous one; after that pass a thread of the same id starts from zero.
    #[test]
    fn proccsw_forgets_an_exited_thread_one_pass_later() {
        let (cfg, m) = switch_ring();
        let mut csw = ProcCsw::default();
        drained(&mut csw, &cfg, &m, &switch(77, 11, 100, 50, [1_000, 10]));
        let mut exit = vec![pid_tid(10, 10), pid_tid(11, 11), 150];
        exit.extend([pid_tid(10, 11), 150, 1, 77]);
        let exit = record(record_type::EXIT, 0, &exit);
        let (flow, out) = drained(&mut csw, &cfg, &m, &exit);
        assert_eq!(
            (flow, out.len()),
            (Flow::Pass, 0),
            "EXIT goes on to the log"
        );
        PostProcessor::end_pass(&mut csw);
        // Drained in the next pass: the switch before the exit, from CPU 1's ring.
        assert_eq!(
            drained(&mut csw, &cfg, &m, &switch(77, 11, 140, 80, [1_500, 15])).1,
            [(4, 11, Some(1), 500, 30), (5, 11, Some(1), 5, 30)],
            "kept until a complete pass after its exit"
        );
        PostProcessor::end_pass(&mut csw);
        assert_eq!(
            drained(&mut csw, &cfg, &m, &switch(77, 11, 900, 60, [200, 2])).1,
            [(4, 11, Some(1), 200, 60), (5, 11, Some(1), 2, 60)],
            "forgotten after it"
        );
    }
}
