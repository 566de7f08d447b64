//! Test support shared by the log side's unit tests: hand-made perf records.

use super::source::{RingMeta, RingPurpose};
use crate::record::{sample_type as st, ParseConfig};
use std::sync::{Arc, Mutex};

pub(super) const CFG_TYPE: u64 =
    st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::CALLCHAIN;

pub(super) fn cfg() -> ParseConfig {
    ParseConfig::new(CFG_TYPE, 0, true)
}

pub(super) fn record(kind: u32, misc: u16, body: &[u64]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(&misc.to_ne_bytes());
    v.extend_from_slice(&((8 + body.len() * 8) as u16).to_ne_bytes());
    for w in body {
        v.extend_from_slice(&w.to_ne_bytes());
    }
    v
}

pub(super) fn pid_tid(pid: u32, tid: u32) -> u64 {
    u64::from(pid) | (u64::from(tid) << 32)
}

/// sample_id trailer for CFG_TYPE: tid, time, cpu, identifier.
pub(super) fn trailer(pid: u32, tid: u32, time: u64, cpu: u32, id: u64) -> [u64; 4] {
    [pid_tid(pid, tid), time, u64::from(cpu), id]
}

pub(super) fn meta() -> RingMeta {
    RingMeta {
        ids: vec![(77, 3), (78, 4)],
        default_pmc: 3,
        cpu: Some(1),
        purpose: RingPurpose::Samples,
        raw_stacks: false,
        inherit: false,
        user_in_kernel: true,
        targets: Vec::new(),
    }
}

/// A shared in-memory sink.
#[derive(Clone, Default)]
pub(super) struct Buf(pub(super) Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
