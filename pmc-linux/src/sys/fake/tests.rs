//! The model's own rules, each as the kernel behaves (checked on Linux 6.18).

use super::{FakeKernel, FMT_ENABLED, FMT_GROUP, FMT_ID, FMT_RUNNING};
use crate::errno;
use crate::sys::{Errno, Ioctl, Sys};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

fn attr(read_format: u64) -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: u64::from(b::PERF_COUNT_SW_TASK_CLOCK),
        read_format,
        ..Default::default()
    };
    a.set_disabled(1);
    a
}

fn words(k: &FakeKernel, fd: &OwnedFd, n: usize) -> Result<Vec<u64>, Errno> {
    let mut buf = vec![0u8; n * 8];
    let got = k.read(fd.as_fd(), &mut buf)?;
    Ok(buf[..got]
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

#[test]
fn read_layouts_follow_read_format() {
    let k = FakeKernel::new();
    let all = FMT_ENABLED | FMT_RUNNING | FMT_ID;
    let solo = k
        .perf_event_open(&mut attr(all), 0, -1, None, 0)
        .expect("open");
    k.add_count(solo.as_raw_fd(), 5);
    let id = k.event_id(solo.as_fd()).expect("id");
    assert_eq!(words(&k, &solo, 4), Ok(vec![5, 0, 0, id]));
    assert_eq!(
        words(&k, &solo, 3),
        Err(Errno(errno::ENOSPC)),
        "core.c __perf_read"
    );
    let lead = k
        .perf_event_open(&mut attr(all | FMT_GROUP), 0, -1, None, 0)
        .expect("leader");
    let g = Some(lead.as_fd());
    let m = k
        .perf_event_open(&mut attr(all | FMT_GROUP), 0, -1, g, 0)
        .expect("member");
    k.add_count(m.as_raw_fd(), 9);
    let (lid, mid) = (k.event_id(lead.as_fd()), k.event_id(m.as_fd()));
    let expect = vec![2, 0, 0, 0, lid.expect("id"), 9, mid.expect("id")];
    assert_eq!(words(&k, &lead, 7).as_ref(), Ok(&expect));
    assert_eq!(
        words(&k, &m, 7),
        Ok(expect),
        "a member's read is its group's"
    );
}

#[test]
fn open_refuses_what_the_kernel_refuses() {
    let k = FakeKernel::new();
    let open = |a: &mut perf_event_attr, pid, cpu, g: Option<&OwnedFd>| {
        k.perf_event_open(a, pid, cpu, g.map(|f| f.as_fd()), 0)
            .map(|_| ())
    };
    assert_eq!(open(&mut attr(0), -1, -1, None), Err(Errno(errno::EINVAL)));
    assert_eq!(open(&mut attr(0), 4242, -1, None), Err(Errno(errno::ESRCH)));
    assert_eq!(open(&mut attr(0), 0, 7, None), Err(Errno(errno::EINVAL)));
    let mut it = attr(0);
    it.set_inherit_thread(1);
    assert_eq!(
        open(&mut it, 0, -1, None),
        Err(Errno(errno::EINVAL)),
        "inherit_thread alone"
    );
    let lead = k
        .perf_event_open(&mut attr(0), 0, 0, None, 0)
        .expect("leader");
    assert_eq!(
        open(&mut attr(0), 0, 1, Some(&lead)),
        Err(Errno(errno::EINVAL)),
        "other CPU"
    );
    let m = k
        .perf_event_open(&mut attr(0), 0, 0, Some(lead.as_fd()), 0)
        .expect("member");
    assert_eq!(
        open(&mut attr(0), 0, 0, Some(&m)),
        Err(Errno(errno::EINVAL)),
        "member of a member"
    );
    let mut inh = attr(0);
    inh.set_inherit(1);
    assert_eq!(
        open(&mut inh, 0, 0, Some(&lead)),
        Err(Errno(errno::EINVAL)),
        "inherit mismatch"
    );
    assert_eq!(
        k.ioctl(lead.as_fd(), Ioctl::Period(10)),
        Err(Errno(errno::EINVAL)),
        "counting"
    );
}

#[test]
#[cfg(feature = "sampling")]
fn rings_follow_perf_mmap_and_set_output() {
    let k = FakeKernel::new();
    let mut inh = attr(0);
    inh.set_inherit(1);
    let per_task = k.perf_event_open(&mut inh, 0, -1, None, 0).expect("open");
    let e = k
        .map_ring(per_task.as_fd(), 4)
        .expect_err("inherited per-task");
    assert_eq!(e.raw_os_error(), Some(errno::EINVAL));
    let a = k
        .perf_event_open(&mut attr(0), 0, 0, None, 0)
        .expect("cpu 0");
    let c1 = k
        .perf_event_open(&mut attr(0), 0, 1, None, 0)
        .expect("cpu 1");
    let c0 = k
        .perf_event_open(&mut attr(0), 0, 0, None, 0)
        .expect("cpu 0 again");
    assert!(k.map_ring(a.as_fd(), 3).is_err(), "not a power of two");
    let ring = k.map_ring(a.as_fd(), 1).expect("map");
    let out = Ioctl::SetOutput(a.as_raw_fd());
    assert_eq!(
        k.ioctl(c1.as_fd(), out),
        Err(Errno(errno::EINVAL)),
        "another CPU"
    );
    assert_eq!(k.ioctl(c0.as_fd(), out), Ok(()));
    let mut rec = b::PERF_RECORD_LOST.to_ne_bytes().to_vec();
    rec.extend_from_slice(&0u16.to_ne_bytes());
    rec.extend_from_slice(&16u16.to_ne_bytes());
    rec.extend_from_slice(&7u64.to_ne_bytes());
    assert!(k.write_record(c0.as_raw_fd(), &rec), "into a's ring");
    let mut reader = crate::ring::RingReader::new(ring).expect("reader");
    let mut batch = reader.batch();
    let got = batch.next_record().expect("one").expect("valid");
    assert_eq!(got.bytes, &rec[..]);
}

#[test]
fn closed_fds_leave_the_model() {
    let k = FakeKernel::new();
    let fd = k
        .perf_event_open(&mut attr(0), 0, -1, None, 0)
        .expect("open");
    assert_eq!(k.events().len(), 1);
    drop(fd);
    assert!(k.events().is_empty());
}
