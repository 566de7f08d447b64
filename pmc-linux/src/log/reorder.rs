//! The reorder buffer: records of several rings in time order.

use pmc_log::record as log;

/// How far behind a drain pass's start a record's time must be before it is written. A
/// record is stamped before the kernel commits it to its ring; the slack covers that gap.
pub(super) const REORDER_SLACK_NS: u64 = 10_000_000;

/// Puts the records of several rings into time order before they reach the log, as perf's
/// `ordered_events` does for `perf report`.
///
/// Rings are drained one after another, so without it a record of one CPU can reach the
/// log before an older record of another: a sample of a process just exec'd on CPU 1
/// before its `MMAP2` from CPU 0, which then resolves to no mapping. A pass drains every
/// ring, then writes, in time order, every record stamped before the pass began (less
/// [`REORDER_SLACK_NS`]): each of those was in its ring when the pass read it. Later ones
/// wait for the next pass (or flush_log/close_log, or a record written directly, such as
/// user data, which follows everything drained before it). Memory stays bounded by what the
/// rings hold plus that slack's worth of records.
///
/// A sample with a captured user stack ([`crate::log::unwind`]) waits here with its stack, and is
/// unwound as it is written: by then every earlier record, its process's maps among them,
/// has passed through the unwinding stage.
#[derive(Default)]
pub(super) struct Reorder {
    /// (time, arrival order, record, the sample's user stack).
    pending: Vec<Pending>,
    seq: u64,
}

type Pending = (
    u64,
    u64,
    log::Record<'static>,
    Option<Box<crate::log::unwind::UserStack>>,
);

impl Reorder {
    pub(super) fn push(&mut self, rec: log::Record<'_>) {
        self.push_with(rec, None);
    }

    pub(super) fn push_with(
        &mut self,
        rec: log::Record<'_>,
        stack: Option<Box<crate::log::unwind::UserStack>>,
    ) {
        self.seq += 1;
        self.pending
            .push((rec.time(), self.seq, rec.into_owned(), stack));
    }

    /// Hands `emit`, in time order, the records stamped at or before `upto` (all with
    /// `u64::MAX`), each with its sample's user stack; the hub writes each through its
    /// post-processors (the unwinding stage among them).
    pub(super) fn flush(
        &mut self,
        upto: u64,
        emit: &mut dyn FnMut(log::Record<'static>, Option<Box<crate::log::unwind::UserStack>>),
    ) {
        if self.pending.is_empty() {
            return;
        }
        self.pending
            .sort_unstable_by_key(|&(t, seq, _, _)| (t, seq));
        let n = self.pending.partition_point(|&(t, _, _, _)| t <= upto);
        for (_, _, rec, stack) in self.pending.drain(..n) {
            emit(rec, stack);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::hub::write_log;
    use crate::log::synth::host_header;
    use crate::log::testutil::Buf;
    use pmc_core::LogSink;

    #[test]
    fn records_of_several_rings_reach_the_log_in_time_order() {
        let buf = Buf::default();
        let sink: LogSink = Box::new(buf.clone());
        let mut writer =
            Some(pmc_log::Writer::new(sink, &host_header(&crate::sys::RealSys)).unwrap());
        let mut error = None;
        let lost = |time: u64, cpu: u32| {
            log::Record::Lost(log::Lost {
                time,
                pmc_id: Some(1),
                cpu: Some(cpu),
                count: 1,
            })
        };
        let mut r = Reorder::default();
        // One pass: CPU 0's ring, then CPU 1's, each in its own order.
        for (t, cpu) in [(10, 0), (40, 0), (70, 0), (20, 1), (30, 1), (80, 1)] {
            r.push(lost(t, cpu));
        }
        // The pass began at 60: 70 and 80 may still have older company in the rings.
        r.flush(60, &mut |rec, _| write_log(&mut writer, &mut error, &rec));
        assert_eq!(r.pending.len(), 2);
        // The next pass brings 65 from CPU 1; close flushes everything.
        r.push(lost(65, 1));
        r.flush(u64::MAX, &mut |rec, _| {
            write_log(&mut writer, &mut error, &rec)
        });
        assert!(r.pending.is_empty() && error.is_none());
        writer.take().unwrap().finish().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        let reader = pmc_log::Reader::new(&bytes[..]).unwrap();
        let times: Vec<u64> = reader
            .records()
            .filter_map(|r| match r {
                log::Record::Lost(l) => Some(l.time),
                _ => None,
            })
            .collect();
        assert_eq!(times, [10, 20, 30, 40, 65, 70, 80]);
    }
}
