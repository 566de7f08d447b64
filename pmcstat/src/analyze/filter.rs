//! `-i TID`: the thread filter, on a log in memory or as a stream is read.

use crate::error::Failure;

use super::fail;

/// `-i TID`: what the thread filter kept.
#[derive(Debug, Default)]
pub struct ThreadFilter {
    /// The thread.
    pub tid: i32,
    /// Samples in the log.
    pub samples: u64,
    /// Samples of the thread.
    pub kept: u64,
    /// The threads with the most samples: (tid, samples).
    others: std::collections::HashMap<i32, u64>,
}

impl ThreadFilter {
    pub fn new(tid: u32) -> ThreadFilter {
        ThreadFilter {
            tid: i32::try_from(tid).unwrap_or(i32::MAX),
            ..Default::default()
        }
    }

    /// Whether `-i` keeps the record: every record but the samples and the per-thread
    /// (context-switch) counts of other threads.
    pub fn keep(&mut self, r: &pmc_log::record::Record<'_>) -> bool {
        use pmc_log::record::{CounterKind, Record};
        match r {
            Record::Sample(s) => {
                self.samples += 1;
                if s.tid == self.tid {
                    self.kept += 1;
                    true
                } else {
                    if self.others.len() < 100_000 {
                        *self.others.entry(s.tid).or_default() += 1;
                    }
                    false
                }
            }
            Record::Counter(c) if c.kind == CounterKind::ContextSwitch => c.tid == self.tid,
            _ => true,
        }
    }

    /// Says how many samples were kept: a note, or, when none were, a warning naming the
    /// threads that have samples.
    pub fn report(&self) {
        let tid = self.tid;
        if self.kept > 0 || self.samples == 0 {
            note!(
                "pmcstat: -i {tid}: {} of {} samples are from thread {tid}",
                self.kept,
                self.samples
            );
            return;
        }
        let mut top: Vec<(i32, u64)> = self.others.iter().map(|(t, n)| (*t, *n)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let shown: Vec<String> = top
            .iter()
            .take(8)
            .map(|(t, n)| format!("{t} ({n})"))
            .collect();
        diag!(
            "pmcstat: warning: -i {tid}: none of the {} samples is from thread {tid}; the \
             threads with samples are {}",
            self.samples,
            shown.join(", ")
        );
    }
}

/// `-i TID` on a log in memory: the log rewritten without the other threads' samples.
pub fn filter_thread(log: &[u8], filter: &mut ThreadFilter) -> Result<Vec<u8>, Failure> {
    use pmc_log::record::Record;
    let reader = pmc_log::Reader::new(log).map_err(|e| fail(format!("-i: {e}")))?;
    let header = reader.header().unwrap_or_default();
    let write = |e: pmc_log::WriteError| fail(format!("-i: cannot filter the log: {e}"));
    // Out of memory for the rewrite is an error with a message, not an abort.
    let mut w = pmc_log::Writer::new(pmc_log::TryVec::new(), &header).map_err(write)?;
    let mut it = reader.records();
    let mut closed = None;
    for r in it.by_ref() {
        match &r {
            Record::Header(_) => {}
            Record::Close(c) => closed = Some(c.time),
            _ if filter.keep(&r) => w.write(&r).map_err(write)?,
            _ => {}
        }
    }
    let report = it.into_report();
    if !report.is_clean() {
        diag!("pmcstat: warning: the log: {report}");
    }
    match closed {
        Some(t) => w.finish_at(t),
        None => w.into_inner_unclosed(),
    }
    .map(pmc_log::TryVec::into_inner)
    .map_err(write)
}
