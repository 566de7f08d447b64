//! Record conversion: perf records to pmc-log records (see the module's record mapping).

use super::now;
use super::reorder::SampleHead;
use super::source::RingMeta;
use crate::record::{self, FileId, Record};
use crate::sys::Sys;
use pmc_log::record as log;

pub(super) fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(-1)
}

/// Converts one perf record into a pmc-log record (None for records the log does not carry).
/// `sys` is the clock of records the kernel sent without a time.
pub(super) fn to_log<'a>(
    sys: &dyn Sys,
    r: &Record<'a>,
    meta: &RingMeta,
    pmc_of: impl Fn(Option<u64>) -> u32,
) -> Option<log::Record<'a>> {
    Some(match r {
        Record::Sample(s) => log::Record::Sample(sample_to_log(s, meta, &pmc_of)),
        Record::Mmap2(m) => {
            if m.prot & libc::PROT_EXEC as u32 == 0 {
                return None;
            }
            log::Record::Map(log::Map {
                time: m.sample_id.time.unwrap_or(0),
                pid: to_i32(m.pid),
                start: m.addr,
                len: m.len,
                pgoff: m.pgoff,
                build_id: match m.file_id {
                    FileId::BuildId(b) => log::Bytes::borrowed(b),
                    FileId::Inode { .. } => log::Bytes::default(),
                },
                path: log::Bytes::borrowed(m.filename),
            })
        }
        Record::Mmap(m) => log::Record::Map(log::Map {
            time: m.sample_id.time.unwrap_or(0),
            pid: to_i32(m.pid),
            start: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            build_id: log::Bytes::default(),
            path: log::Bytes::borrowed(m.filename),
        }),
        Record::Comm(c) => log::Record::Comm(log::Comm {
            time: c.sample_id.time.unwrap_or(0),
            pid: to_i32(c.pid),
            tid: to_i32(c.tid),
            exec: c.is_exec(),
            comm: log::Bytes::borrowed(c.comm),
        }),
        Record::Fork(t) if t.pid == t.ppid => log::Record::ThreadCreate(log::ThreadCreate {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
            flags: 0,
            name: log::Bytes::default(),
        }),
        Record::Fork(t) => log::Record::Fork(log::Fork {
            time: t.time,
            parent_pid: to_i32(t.ppid),
            parent_tid: to_i32(t.ptid),
            child_pid: to_i32(t.pid),
            child_tid: to_i32(t.tid),
        }),
        Record::Exit(t) if t.pid != t.tid => log::Record::ThreadExit(log::ThreadExit {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
        }),
        Record::Exit(t) => log::Record::Exit(log::Exit {
            time: t.time,
            pid: to_i32(t.pid),
            tid: to_i32(t.tid),
        }),
        Record::Lost(l) => log::Record::Lost(log::Lost {
            time: l.sample_id.time.unwrap_or_else(|| now(sys)),
            pmc_id: Some(pmc_of(Some(l.id))),
            cpu: l.sample_id.cpu.or(meta.cpu),
            count: l.lost,
        }),
        Record::LostSamples(l) => log::Record::Lost(log::Lost {
            time: l.sample_id.time.unwrap_or_else(|| now(sys)),
            pmc_id: Some(pmc_of(l.sample_id.identifier.or(l.sample_id.id))),
            cpu: l.sample_id.cpu.or(meta.cpu),
            count: l.lost,
        }),
        Record::Throttle(t) => log::Record::Lost(log::Lost {
            time: t.time,
            pmc_id: Some(pmc_of(Some(t.id))),
            cpu: t.sample_id.cpu.or(meta.cpu),
            count: 0,
        }),
        _ => return None,
    })
}

/// A perf sample as a log sample: its callchain leaf first, with the count of its leading
/// kernel frames (the IP alone without a callchain).
fn sample_to_log<'a>(
    s: &record::Sample<'a>,
    meta: &RingMeta,
    pmc_of: &impl Fn(Option<u64>) -> u32,
) -> log::Sample<'a> {
    let mut frames = Vec::new();
    let fields = record::SampleFields::of(s);
    let kernel_frames = sample_frames(&fields, &mut frames);
    log::Sample {
        callchain: log::Callchain::from_vec(frames),
        raw: log::Bytes::borrowed(s.raw.unwrap_or_default()),
        ..sample_head(&fields, meta, pmc_of, kernel_frames).sample(&[])
    }
}

/// Appends the frames of `s` to `out` (its callchain without the context markers, leaf
/// first; the IP alone without a callchain) and returns how many of them lead in kernel
/// context.
pub(super) fn sample_frames(s: &record::SampleFields<'_>, out: &mut Vec<u64>) -> u32 {
    let from = out.len();
    let mut kernel_frames = 0u32;
    if let Some(chain) = &s.callchain {
        out.reserve(chain.raw_len());
        let mut leading_kernel = true;
        for f in chain.frames() {
            if leading_kernel && f.context.is_kernel() {
                kernel_frames += 1;
            } else {
                leading_kernel = false;
            }
            out.push(f.addr);
        }
    }
    if out.len() == from {
        if let Some(ip) = s.ip {
            out.push(ip);
            kernel_frames = u32::from(s.cpu_mode() == record::CpuMode::Kernel);
        }
    }
    kernel_frames
}

/// The fields of the log sample of `s` but its callchain, whose leading kernel frames
/// number `kernel_frames`.
pub(super) fn sample_head(
    s: &record::SampleFields<'_>,
    meta: &RingMeta,
    pmc_of: &impl Fn(Option<u64>) -> u32,
    kernel_frames: u32,
) -> SampleHead {
    SampleHead {
        time: s.time.unwrap_or(0),
        pmc_id: pmc_of(s.identifier.or(s.id)),
        pid: s.pid.map_or(-1, to_i32),
        tid: s.tid.map_or(-1, to_i32),
        cpu: s.cpu.or(meta.cpu),
        period: s.period.unwrap_or(0),
        kernel_frames,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::summary::tally;
    use crate::log::testutil::{cfg, meta, pid_tid, record, trailer};
    use crate::log::SamplingDetails;
    use crate::record::{context, record_type};

    fn convert(bytes: &[u8]) -> Option<log::Record<'static>> {
        let m = meta();
        let r = cfg().parse(bytes).expect("parses");
        to_log(&crate::sys::RealSys, &r, &m, |id| m.pmc_of(id)).map(|r| r.into_owned())
    }

    #[test]
    fn sample_with_kernel_and_user_frames() {
        let body = [
            78,               // identifier
            0xffff_8000_1234, // ip
            pid_tid(10, 11),  // pid, tid
            500,              // time
            1,                // cpu, res
            4000,             // period
            6,                // callchain nr
            context::KERNEL,
            0xffff_8000_1234,
            0xffff_8000_5678,
            context::USER,
            0x40_1000,
            0x40_2000,
        ];
        let Some(log::Record::Sample(s)) = convert(&record(record_type::SAMPLE, 1, &body)) else {
            panic!("a sample")
        };
        assert_eq!(s.pmc_id, 4, "identifier 78 is PMC 4");
        assert_eq!(
            (s.pid, s.tid, s.cpu, s.time, s.period),
            (10, 11, Some(1), 500, 4000)
        );
        assert_eq!(
            s.callchain.to_vec(),
            [0xffff_8000_1234, 0xffff_8000_5678, 0x40_1000, 0x40_2000]
        );
        assert_eq!(s.kernel_frames, 2);

        // No callchain frames: the IP alone, kernel by the header's CPU mode.
        let body = [99, 0x40_1234, pid_tid(10, 10), 1, 0, 1, 0];
        let Some(log::Record::Sample(s)) = convert(&record(record_type::SAMPLE, 2, &body)) else {
            panic!("a sample")
        };
        assert_eq!(s.pmc_id, 3, "unknown identifier: the ring's PMC");
        assert_eq!(s.callchain.to_vec(), [0x40_1234]);
        assert_eq!(s.kernel_frames, 0);
    }

    #[test]
    fn task_records() {
        // FORK of a new process, FORK of a thread, EXIT of a thread and of a process.
        let fork = |pid: u32, ppid: u32, tid: u32, ptid: u32| {
            let mut b = vec![pid_tid(pid, ppid), pid_tid(tid, ptid), 9];
            b.extend(trailer(pid, tid, 9, 0, 77));
            b
        };
        match convert(&record(record_type::FORK, 0, &fork(20, 10, 20, 10))) {
            Some(log::Record::Fork(f)) => {
                assert_eq!((f.parent_pid, f.child_pid, f.child_tid), (10, 20, 20))
            }
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::FORK, 0, &fork(20, 20, 21, 20))) {
            Some(log::Record::ThreadCreate(t)) => assert_eq!((t.pid, t.tid), (20, 21)),
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::EXIT, 0, &fork(20, 20, 21, 20))) {
            Some(log::Record::ThreadExit(t)) => assert_eq!((t.pid, t.tid), (20, 21)),
            other => panic!("{other:?}"),
        }
        match convert(&record(record_type::EXIT, 0, &fork(20, 10, 20, 10))) {
            Some(log::Record::Exit(e)) => assert_eq!((e.pid, e.tid, e.time), (20, 20, 9)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn losses_become_lost_records() {
        let mut lost = vec![78, 123];
        lost.extend(trailer(0, 0, 7, 1, 78));
        match convert(&record(record_type::LOST, 0, &lost)) {
            Some(log::Record::Lost(l)) => {
                assert_eq!(
                    (l.pmc_id, l.cpu, l.count, l.time),
                    (Some(4), Some(1), 123, 7)
                )
            }
            other => panic!("{other:?}"),
        }
        let mut throttle = vec![8, 77, 0];
        throttle.extend(trailer(0, 0, 8, 0, 77));
        match convert(&record(record_type::THROTTLE, 0, &throttle)) {
            Some(log::Record::Lost(l)) => assert_eq!((l.pmc_id, l.count), (Some(3), 0)),
            other => panic!("{other:?}"),
        }
        let mut summary = SamplingDetails::default();
        let bytes = record(record_type::LOST, 0, &lost);
        let r = cfg().parse(&bytes).expect("parses");
        tally(&mut summary, &r, Some(1));
        assert_eq!(summary.lost, 123);
        assert_eq!(summary.by_cpu[&1].lost, 123);
    }

    #[test]
    fn only_executable_mappings_are_logged() {
        let mmap2 = |prot: u64| {
            let mut b = vec![
                pid_tid(5, 5),
                0x1000,
                0x2000,
                0,
                (8u64 << 32) | 1, // maj, min
                42,               // ino
                0,                // ino generation
                prot | (2 << 32), // prot, flags
            ];
            // "/bin/x\0" padded to 8 bytes
            b.push(u64::from_ne_bytes(*b"/bin/x\0\0"));
            b.extend(trailer(5, 5, 3, 0, 77));
            b
        };
        match convert(&record(record_type::MMAP2, 2, &mmap2(5))) {
            Some(log::Record::Map(m)) => {
                assert_eq!((m.pid, m.start, m.len), (5, 0x1000, 0x2000));
                assert_eq!(m.path.as_bytes(), b"/bin/x");
            }
            other => panic!("{other:?}"),
        }
        assert!(convert(&record(record_type::MMAP2, 2, &mmap2(3))).is_none());
    }
}
