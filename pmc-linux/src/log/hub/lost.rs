//! What the kernel lost: the owner fd's `PERF_FORMAT_LOST` counts and the loss record.

use crate::log::source::RingSource;
use crate::sys::Sys;
use pmc_log::record as log;
use std::os::fd::{AsFd, BorrowedFd};

/// The kernel's count of lost records of the events one `read(2)` of `ring`'s owner fd
/// reports (perf_event_open(2), "Reading results": `value, [time_enabled], [time_running],
/// [id], lost`, or with `PERF_FORMAT_GROUP` `nr, [times], {value, [id], lost} * nr`), summed
/// over those writing into `ring`; `None` without `PERF_FORMAT_LOST` or when the read fails.
pub(super) fn owner_lost(sys: &dyn Sys, ring: &RingSource) -> Option<u64> {
    use crate::record::read_format as rf;
    let format = ring.cfg.read_format;
    if format & rf::LOST == 0 {
        return None;
    }
    // 64 words: a group of up to 20 members (a larger one is read at stop only).
    let mut buf = [0u8; 512];
    let n = sys.read(ring.poll_fd.as_fd(), &mut buf).ok()?;
    let words: Vec<u64> = buf
        .get(..n)?
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let times = usize::from(format & rf::TOTAL_TIME_ENABLED != 0)
        + usize::from(format & rf::TOTAL_TIME_RUNNING != 0);
    let has_id = format & rf::ID != 0;
    if format & rf::GROUP == 0 {
        return words.get(1 + times + usize::from(has_id)).copied();
    }
    let nr = usize::try_from(*words.first()?).ok()?;
    let stride = 2 + usize::from(has_id);
    let entries = words.get(1 + times..)?;
    let ours = |e: &[u64]| !has_id || ring.ids.iter().any(|(id, _)| *id == e[1]);
    Some(
        entries
            .chunks_exact(stride)
            .take(nr)
            .filter(|e| ours(e))
            .fold(0u64, |a, e| a.saturating_add(e[stride - 1])),
    )
}

/// The count of one event (not a group) read through `fd`, laid out as `read_format` says:
/// the value comes first. `None` if it cannot be read.
pub(super) fn event_value(sys: &dyn Sys, fd: BorrowedFd<'_>, read_format: u64) -> Option<u64> {
    if read_format & crate::record::read_format::GROUP != 0 {
        return None;
    }
    // value, time enabled, time running, id, lost.
    let mut buf = [0u8; 40];
    let n = sys.read(fd, &mut buf).ok()?;
    let word = buf.get(..n.min(8)).filter(|w| w.len() == 8)?;
    Some(u64::from_ne_bytes(word.try_into().ok()?))
}

/// Unreadable ring data: the record saying in the log that an unknown number of records
/// (count 0) of `ring` went missing here.
pub(super) fn loss_record(ring: &RingSource, time: u64) -> log::Record<'static> {
    log::Record::Lost(log::Lost {
        time,
        pmc_id: Some(ring.default_pmc),
        cpu: ring.cpu,
        count: 0,
    })
}
