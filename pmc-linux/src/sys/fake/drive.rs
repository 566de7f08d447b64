//! Driving and inspecting [`FakeKernel`]: injected faults, the events it holds, time
//! ([`FakeKernel::tick`]), counts, and the records and samples written into rings
//! ([`SampleSpec`]).

use crate::sys::Ioctl;
use perf_event_open_sys::bindings as b;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{live, FakeEvent, FakeKernel, Fault};

impl FakeKernel {
    /// Queues an injected error.
    pub fn inject(&self, fault: Fault) {
        self.st().faults.push(fault);
    }

    /// How many `perf_event_open` calls were made (failed ones included).
    pub fn opens(&self) -> u64 {
        self.st().opens
    }

    /// Every ioctl made, in order, as `(fd, op)`.
    pub fn ioctls(&self) -> Vec<(i32, Ioctl)> {
        self.st().ioctl_log.clone()
    }

    /// The open events (their fds not closed), in open order.
    pub fn events(&self) -> Vec<FakeEvent> {
        let st = self.st();
        let mut v: Vec<(u64, FakeEvent)> = st
            .events
            .iter()
            .filter(|(fd, ev)| live(**fd, &ev.link))
            .map(|(_, ev)| (ev.seq, ev.view.clone()))
            .collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, e)| e).collect()
    }

    /// The open event behind `fd`.
    pub fn event(&self, fd: i32) -> Option<FakeEvent> {
        self.events().into_iter().find(|e| e.fd == fd)
    }

    /// Thread `tid` runs `ns` nanoseconds on `cpu`. Every event counting it that is active
    /// (enabled, and its leader enabled: a group is scheduled as a unit, perf_event_open(2)
    /// "group_fd") accrues enabled time; those on `cpu` or on any CPU also run (for their
    /// multiplexing share of the time) and count `ns` times that share. A CPU-wide event on
    /// `cpu` counts whatever runs there.
    pub fn tick(&self, tid: i32, cpu: u32, ns: u64) {
        let mut st = self.st();
        let cpu = i32::try_from(cpu).unwrap_or(-1);
        let enabled: BTreeMap<i32, bool> = st
            .events
            .iter()
            .map(|(fd, e)| (*fd, e.view.enabled))
            .collect();
        for ev in st.events.values_mut() {
            let v = &mut ev.view;
            let active = v.enabled && enabled.get(&v.leader).copied().unwrap_or(false);
            let task = v.pid != -1 && v.tids.contains(&tid);
            let cpu_wide = v.pid == -1 && v.cpu == cpu;
            if !active || !(task || cpu_wide) {
                continue;
            }
            v.time_enabled = v.time_enabled.saturating_add(ns);
            if v.cpu == -1 || v.cpu == cpu {
                let run = ns.saturating_mul(ev.share) / 100;
                v.time_running = v.time_running.saturating_add(run);
                v.count = v.count.saturating_add(run);
            }
        }
    }

    /// Schedules the event behind `fd` for `percent` of its enabled time (the PMU multiplexes
    /// more events than it has counters: `time_running < time_enabled`).
    pub fn multiplex(&self, fd: i32, percent: u64) {
        if let Some(ev) = self.st().events.get_mut(&fd) {
            ev.share = percent.min(100);
        }
    }

    /// Adds `n` to the count of the event behind `fd`, whatever its state.
    pub fn add_count(&self, fd: i32, n: u64) {
        if let Some(ev) = self.st().events.get_mut(&fd) {
            ev.view.count = ev.view.count.wrapping_add(n);
        }
    }

    /// Writes `record` (a whole perf record, header included) into the ring that the event
    /// behind `fd` outputs to (its own, or the one `PERF_EVENT_IOC_SET_OUTPUT` named), as the
    /// kernel does (`perf_output_begin`/`perf_output_end`). `false` when there is no such ring
    /// or the record does not fit.
    pub fn write_record(&self, fd: i32, record: &[u8]) -> bool {
        let st = self.st();
        match st.ring_of(fd) {
            Some(ring) => ring.push(record),
            None => false,
        }
    }

    /// `data_head` of the ring the event behind `fd` outputs to: how far the kernel wrote.
    pub fn ring_head(&self, fd: i32) -> Option<u64> {
        self.st().ring_of(fd).map(|r| r.head())
    }

    /// `data_tail` of the ring the event behind `fd` outputs to: how far the reader got.
    pub fn ring_tail(&self, fd: i32) -> Option<u64> {
        self.st().ring_of(fd).map(|r| r.tail())
    }

    /// A `PERF_RECORD_SAMPLE` of the event behind `fd` (thread `tid` of process `pid`, on
    /// `cpu`), laid out for its `sample_type` as perf_event_open(2) lists the fields
    /// (IDENTIFIER, IP, TID, TIME, CPU, PERIOD, CALLCHAIN supported; `None` for other bits),
    /// written into its ring. Returns whether it was written.
    ///
    /// As core.c `__perf_output_begin`: a record that does not fit is lost, counted in the
    /// ring (`local_inc(&rb->lost)`) and in the event (`atomic64_inc(&event->lost_samples)`,
    /// the parent's for an inherited event: the model's inherited events are one); the next
    /// record that fits is preceded by a `PERF_RECORD_LOST` of the ring's count (`lost_event`,
    /// with the event's id and its `sample_id` trailer), which then starts again from 0.
    pub fn sample(&self, fd: i32, s: SampleSpec) -> Option<bool> {
        let (st_type, id, period, id_all) = {
            let st = self.st();
            let ev = st.events.get(&fd)?;
            let (period, _, _) = crate::sys::attr_unions(&ev.view.attr);
            let id_all = ev.view.attr.sample_id_all() == 1;
            (ev.view.attr.sample_type, ev.view.id, period, id_all)
        };
        let known = u64::from(
            b::PERF_SAMPLE_IDENTIFIER
                | b::PERF_SAMPLE_IP
                | b::PERF_SAMPLE_TID
                | b::PERF_SAMPLE_TIME
                | b::PERF_SAMPLE_CPU
                | b::PERF_SAMPLE_PERIOD
                | b::PERF_SAMPLE_CALLCHAIN,
        );
        if st_type & !known != 0 {
            return None;
        }
        let has = |bit: u32| st_type & u64::from(bit) != 0;
        let mut body: Vec<u64> = Vec::new();
        if has(b::PERF_SAMPLE_IDENTIFIER) {
            body.push(id);
        }
        if has(b::PERF_SAMPLE_IP) {
            body.push(s.ip);
        }
        if has(b::PERF_SAMPLE_TID) {
            body.push(u64::from(s.pid as u32) | (u64::from(s.tid as u32) << 32));
        }
        if has(b::PERF_SAMPLE_TIME) {
            body.push(s.time);
        }
        if has(b::PERF_SAMPLE_CPU) {
            body.push(u64::from(s.cpu));
        }
        if has(b::PERF_SAMPLE_PERIOD) {
            body.push(period);
        }
        if has(b::PERF_SAMPLE_CALLCHAIN) {
            body.push(0);
        }
        let size = 8 + body.len() * 8;
        let mut rec = Vec::with_capacity(size);
        rec.extend_from_slice(&b::PERF_RECORD_SAMPLE.to_ne_bytes());
        rec.extend_from_slice(&(b::PERF_RECORD_MISC_USER as u16).to_ne_bytes());
        rec.extend_from_slice(&u16::try_from(size).ok()?.to_ne_bytes());
        for w in body {
            rec.extend_from_slice(&w.to_ne_bytes());
        }
        let mut st = self.st();
        let ring = st.ring_of(fd)?;
        let key = Arc::as_ptr(&ring) as usize;
        let pending = st.ring_lost.get(&key).copied().unwrap_or(0);
        let mut out = Vec::new();
        if pending > 0 {
            // perf_event_header, u64 id, u64 lost, then the sample_id trailer (TID, TIME,
            // ID, STREAM_ID, CPU, IDENTIFIER, each if asked for).
            let mut trailer: Vec<u64> = Vec::new();
            if id_all {
                if has(b::PERF_SAMPLE_TID) {
                    trailer.push(u64::from(s.pid as u32) | (u64::from(s.tid as u32) << 32));
                }
                if has(b::PERF_SAMPLE_TIME) {
                    trailer.push(s.time);
                }
                if has(b::PERF_SAMPLE_ID) {
                    trailer.push(id);
                }
                if has(b::PERF_SAMPLE_STREAM_ID) {
                    trailer.push(id);
                }
                if has(b::PERF_SAMPLE_CPU) {
                    trailer.push(u64::from(s.cpu));
                }
                if has(b::PERF_SAMPLE_IDENTIFIER) {
                    trailer.push(id);
                }
            }
            let size = 8 + 16 + trailer.len() * 8;
            out.extend_from_slice(&b::PERF_RECORD_LOST.to_ne_bytes());
            out.extend_from_slice(&0u16.to_ne_bytes());
            out.extend_from_slice(&u16::try_from(size).ok()?.to_ne_bytes());
            for w in [id, pending].into_iter().chain(trailer) {
                out.extend_from_slice(&w.to_ne_bytes());
            }
        }
        out.extend_from_slice(&rec);
        if ring.push(&out) {
            st.ring_lost.remove(&key);
            return Some(true);
        }
        *st.ring_lost.entry(key).or_default() += 1;
        if let Some(ev) = st.events.get_mut(&fd) {
            ev.view.lost += 1;
        }
        Some(false)
    }
}

/// One sample for [`FakeKernel::sample`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleSpec {
    /// The instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Time, ns.
    pub time: u64,
    /// The CPU.
    pub cpu: u32,
}
