//! The backlog: drain passes kept as their rings' raw records while sampling goes on, and
//! decoded into the log later, as `perf record` copies its rings to its file during a
//! recording and reads them back (its build-id pass) after.
//!
//! # Why
//!
//! Without `CONFIG_IRQ_TIME_ACCOUNTING` (most distribution kernels), the time of an
//! interrupt is billed to the task it interrupts. System-wide sampling interrupts every CPU
//! thousands of times a second (on a virtual machine each interrupt costs tens of
//! microseconds), and whatever the drain thread does while sampling goes on is billed for the
//! interrupts that land meanwhile: decoding, converting and encoding a sample then costs
//! several times what it costs once sampling has stopped (BENCHMARKS.md, "the `-S` gap").
//! A deferred pass only walks its rings' record headers (counting the samples) and writes the
//! records, as they lie in the ring, to an unnamed temporary file ([`Spill`]); the decoding
//! waits until the backlog reaches its bound or sampling stops.
//!
//! # What is deferred, and what is not
//!
//! A pass is deferred only when every ring is a system-wide PMC's per-CPU sample ring (per
//! process, the sampling interrupts only the target's threads: deferring would only add the
//! copy)
//! whose samples have a fixed-word layout (no user stacks, no raw data) and no post-processor looks at records as
//! they are drained (log-procexit, log-proccsw), so that decoding later gives the log the
//! records decoding then would have: a deferred pass is replayed by the same code, in the
//! same order, ending with the same ordered write ([`HubState::finish_pass`]).
//!
//! Samples are counted as they are copied, so the summary stays current; other records,
//! losses and decoding errors are counted at the replay. Every call that could change what a
//! replay sees first replays the whole backlog: a drain of one PMC's rings (at stop, at
//! `set_count`, before its rings go away), a record written directly (user data, counters,
//! synthesized processes), the kernel's lost counts at stop, `flush_log` and `close_log`.
//! When the file cannot be created or written, the pass is drained as usual (nothing is
//! consumed from a ring before its records are in the file).

use super::HubState;
use crate::log::now;
use crate::log::source::{copy_ring, Copied, RingPurpose};
use std::collections::VecDeque;
use std::time::Duration;

/// How much a log's backlog may hold before its oldest passes are decoded (see
/// `Backend::set_log_backlog`). No backlog when `bytes` is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BacklogBound {
    /// The most raw record bytes kept.
    pub(crate) bytes: usize,
    /// How long a pass is kept: one this old is decoded at the next pass (at most
    /// [`DRAIN_PERIOD`](crate::log::DRAIN_PERIOD) later; at once with a zero age).
    pub(crate) age: Duration,
}

/// The backlog's files: unnamed temporary files (`O_TMPFILE`, mode 0600, in the temporary
/// directory) that the rings' records are written to as they are copied, and read back when
/// decoded. Writing into the page cache costs a copy per byte and no page fault; keeping the
/// records in fresh anonymous memory cost more than decoding them (each new page is a fault
/// and a zeroing, billed to the drain while sampling goes on). Having no name, a file is
/// never a planted link or another user's file, and it is gone when the log is.
///
/// Two files take turns, so that a backlog that never empties (a long recording, always at
/// its bound) still gives its disk back: new records go to the current file until it holds
/// half the bound, then to the other one as soon as that one is empty; a file is emptied
/// (truncated) once none of its records is waiting.
struct Spill {
    files: [Option<SpillFile>; 2],
    /// The file new records go to.
    current: usize,
    /// Where the current file switches: half the backlog's bound.
    switch_at: u64,
}

/// One of [`Spill`]'s files.
struct SpillFile {
    file: std::fs::File,
    /// The bytes written (the next record goes here).
    len: u64,
    /// Its segments not decoded yet.
    waiting: usize,
}

impl SpillFile {
    fn create() -> std::io::Result<SpillFile> {
        Ok(SpillFile {
            file: unnamed_file()?,
            len: 0,
            waiting: 0,
        })
    }
}

/// An unnamed temporary file in the temporary directory (`O_TMPFILE`, mode 0600).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn unnamed_file() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(std::env::temp_dir())
}

/// Elsewhere (the crate builds everywhere for its fake kernel) there is no `O_TMPFILE`:
/// nothing is deferred.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn unnamed_file() -> std::io::Result<std::fs::File> {
    Err(std::io::ErrorKind::Unsupported.into())
}

impl Spill {
    /// The first file now (so that a temporary directory that refuses it turns the backlog
    /// off before any ring is copied); the second when it is first needed.
    fn create(bound: usize) -> std::io::Result<Spill> {
        Ok(Spill {
            files: [Some(SpillFile::create()?), None],
            current: 0,
            switch_at: (bound as u64 / 2).max(1 << 20),
        })
    }

    /// Appends `a` then `b` as one segment; returns where it is (file, offset), `None` if
    /// it could not be written.
    fn append(&mut self, a: &[u8], b: &[u8]) -> Option<(usize, u64)> {
        use std::os::unix::fs::FileExt;
        let other = 1 - self.current;
        let full = self.files[self.current]
            .as_ref()
            .is_some_and(|f| f.len >= self.switch_at);
        if full && self.files[other].as_ref().is_none_or(|f| f.waiting == 0) {
            if self.files[other].is_none() {
                self.files[other] = SpillFile::create().ok();
            }
            if self.files[other].is_some() {
                self.current = other;
            }
        }
        let f = self.files[self.current].as_mut()?;
        let at = f.len;
        let mid = at.checked_add(a.len() as u64)?;
        f.file.write_all_at(a, at).ok()?;
        f.file.write_all_at(b, mid).ok()?;
        f.len = mid.checked_add(b.len() as u64)?;
        f.waiting += 1;
        Some((self.current, at))
    }

    /// The records of `seg`, read back into `buf`; `false` if they could not be.
    fn read(&self, seg: &Seg, buf: &mut Vec<u8>) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(f) = self.files.get(seg.file).and_then(Option::as_ref) else {
            return false;
        };
        buf.clear();
        buf.resize(seg.copied.len, 0);
        f.file.read_exact_at(buf, seg.at).is_ok()
    }

    /// `seg` was decoded: its file is emptied if nothing else in it waits.
    fn done(&mut self, seg: &Seg) {
        if let Some(f) = self.files.get_mut(seg.file).and_then(Option::as_mut) {
            f.waiting = f.waiting.saturating_sub(1);
            if f.waiting == 0 && f.len > 0 && f.file.set_len(0).is_ok() {
                f.len = 0;
            }
        }
    }
}

/// What a deferred pass copied of one ring: where it is, and what [`copy_ring`] said.
struct Seg {
    ring: usize,
    /// Which of the backlog's files holds its records, and where.
    file: usize,
    at: u64,
    copied: Copied,
}

/// One deferred drain pass: when it began, and what it copied of each ring.
struct Pass {
    start: u64,
    segs: Vec<Seg>,
}

/// The deferred passes of a log, oldest first, and the file holding their records.
#[derive(Default)]
pub(super) struct Backlog {
    pub(super) bound: BacklogBound,
    passes: VecDeque<Pass>,
    /// The files, once a pass was deferred; `Err` if they could not be created (nothing is
    /// deferred then).
    spill: Option<Result<Spill, ()>>,
    /// The record bytes held.
    bytes: usize,
    /// A segment read back (kept for its capacity).
    buf: Vec<u8>,
}

impl Backlog {
    /// Whether passes may be deferred at all.
    fn on(&self) -> bool {
        self.bound.bytes > 0 && !matches!(self.spill, Some(Err(())))
    }

    /// Whether the backlog is over its bound at time `now`.
    fn over(&self, now: u64) -> bool {
        let age = u64::try_from(self.bound.age.as_nanos()).unwrap_or(u64::MAX);
        self.bytes > self.bound.bytes
            || self
                .passes
                .front()
                .is_some_and(|p| now.saturating_sub(p.start) >= age)
    }

    /// Whether nothing is held.
    pub(super) fn is_empty(&self) -> bool {
        self.passes.is_empty()
    }

    /// The files, created at the first deferred pass; `None` if they cannot be.
    fn spill(&mut self) -> Option<&mut Spill> {
        let bound = self.bound.bytes;
        self.spill
            .get_or_insert_with(|| Spill::create(bound).map_err(|_| ()))
            .as_mut()
            .ok()
    }
}

impl HubState {
    /// The drain thread's pass: deferred into the backlog when it can be, else the backlog
    /// replayed and the rings drained as usual.
    pub(super) fn periodic_pass(&mut self) {
        if !self.defer_pass() {
            self.drain(None);
        }
    }

    /// Whether a pass over the rings may be deferred (see the module documentation).
    fn deferrable(&self) -> bool {
        self.backlog.on()
            && self.writer.is_some()
            && self.error.is_none()
            && !self.post.drains_samples(RingPurpose::Samples)
            && self.rings.iter().all(|r| {
                r.purpose == RingPurpose::Samples
                    && r.cpu.is_some()
                    && r.system_wide
                    && r.exit_fds.is_empty()
                    && !r.raw_stacks
                    && r.cfg.sample_layout().is_some()
            })
    }

    /// Copies every ring into a new pass of the backlog, then replays its oldest passes
    /// while it is over its bound. `false` if the pass could not be deferred (the rings not
    /// copied are then for [`HubState::drain`]).
    fn defer_pass(&mut self) -> bool {
        if !self.deferrable() {
            return false;
        }
        let start = now(&*self.sys.0);
        let mut segs = Vec::new();
        let mut whole = true;
        for (i, ring) in self.rings.iter_mut().enumerate() {
            let Some(spill) = self.backlog.spill() else {
                whole = false;
                break;
            };
            let mut at = None;
            let copied = copy_ring(ring, &mut self.summary, &mut |a, b| {
                if a.is_empty() && b.is_empty() {
                    return true;
                }
                at = spill.append(a, b);
                at.is_some()
            });
            let Some(copied) = copied else {
                whole = false;
                break;
            };
            if copied.len > 0 || copied.bad > 0 || copied.may_have_lost {
                // An empty copy is in no file (its place is unused).
                let (file, at) = at.unwrap_or((0, 0));
                self.backlog.bytes = self.backlog.bytes.saturating_add(copied.len);
                segs.push(Seg {
                    ring: i,
                    file,
                    at,
                    copied,
                });
            }
        }
        if !segs.is_empty() {
            self.backlog.passes.push_back(Pass { start, segs });
        }
        while self.backlog.over(start) {
            self.replay_oldest();
        }
        whole
    }

    /// Decodes every deferred pass into the log, oldest first.
    pub(super) fn replay_backlog(&mut self) {
        while !self.backlog.is_empty() {
            self.replay_oldest();
        }
    }

    /// Decodes the oldest deferred pass into the log as its pass would have: each ring's
    /// records, then the ordered write up to the pass's start. Records that cannot be read
    /// back (an I/O error on the backlog's file) are unreadable records, and their samples,
    /// counted at the copy, lost.
    fn replay_oldest(&mut self) {
        let Some(pass) = self.backlog.passes.pop_front() else {
            return;
        };
        let mut buf = std::mem::take(&mut self.backlog.buf);
        for seg in &pass.segs {
            let mut copied = seg.copied;
            self.backlog.bytes = self.backlog.bytes.saturating_sub(copied.len);
            let read = match self.backlog.spill.as_mut() {
                _ if copied.len == 0 => {
                    buf.clear();
                    true
                }
                Some(Ok(spill)) => {
                    let read = spill.read(seg, &mut buf);
                    spill.done(seg);
                    read
                }
                _ => false,
            };
            if !read {
                buf.clear();
                copied.bad += 1;
                let cpu = self.rings.get(seg.ring).and_then(|r| r.cpu);
                self.summary.unread(cpu, copied.samples);
            }
            self.replay_one(seg.ring, &buf, &copied);
        }
        self.backlog.buf = buf;
        self.finish_pass(pass.start, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(file: usize, at: u64, len: usize) -> Seg {
        Seg {
            ring: 0,
            file,
            at,
            copied: Copied {
                len,
                bad: 0,
                may_have_lost: false,
                samples: 0,
            },
        }
    }

    /// A backlog always at its bound (a long recording) gives its disk back: the two files
    /// take turns, each is truncated once nothing in it waits, and together they never hold
    /// much more than the bound; every segment reads back as written.
    #[test]
    #[cfg_attr(miri, ignore)] // O_TMPFILE files: native only.
    fn the_files_take_turns_and_give_their_disk_back() {
        const BOUND: usize = 4 << 20;
        const SEG: usize = 256 << 10;
        let mut spill = Spill::create(BOUND).expect("O_TMPFILE in the temporary directory");
        let mut waiting: VecDeque<(Seg, u8)> = VecDeque::new();
        let (mut held, mut most_on_disk, mut truncations) = (0usize, 0u64, 0);
        let mut buf = Vec::new();
        for n in 0..100u8 {
            let data = vec![n; SEG];
            let (file, at) = spill.append(&data[..100], &data[100..]).expect("append");
            waiting.push_back((seg(file, at, SEG), n));
            held += SEG;
            while held > BOUND {
                let (s, m) = waiting.pop_front().expect("a segment");
                assert!(spill.read(&s, &mut buf), "read back");
                assert!(
                    buf.len() == SEG && buf.iter().all(|b| *b == m),
                    "segment {m}"
                );
                let before = spill.files[s.file].as_ref().map_or(0, |f| f.len);
                spill.done(&s);
                truncations +=
                    usize::from(spill.files[s.file].as_ref().map_or(0, |f| f.len) < before);
                held -= SEG;
            }
            let on_disk: u64 = spill.files.iter().flatten().map(|f| f.len).sum();
            most_on_disk = most_on_disk.max(on_disk);
        }
        // 100 segments through a bound of 16: a file empties about once per bound's worth of
        // segments (each file holds up to a bound before the other's turn comes back).
        assert!(
            truncations >= 4,
            "the files were emptied {truncations} times"
        );
        assert!(
            most_on_disk <= 2 * BOUND as u64 + SEG as u64,
            "{most_on_disk} bytes on disk for a {BOUND}-byte bound"
        );
    }
}
