//! What the log learns from `/proc` rather than from the rings: the header's host facts, and
//! the command names and executable mappings of processes already running at start.

use super::convert::to_i32;
use super::now;
use crate::sys::facts::read_trimmed;
use crate::sys::{Clock, Sys};
use pmc_log::record as log;
use std::borrow::Cow;
use std::path::Path;

/// The log header for this host.
pub(crate) fn host_header(sys: &dyn Sys) -> log::Header<'static> {
    let cpuinfo = sys.cpuinfo();
    let field = |name: &str| -> String {
        cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_owned())
            })
            .unwrap_or_default()
    };
    let model = field("model name");
    let cpuid = {
        let (vendor, family, model_no, stepping) = (
            field("vendor_id"),
            field("cpu family"),
            field("model"),
            field("stepping"),
        );
        if vendor.is_empty() {
            String::new()
        } else {
            let model_no = model_no
                .parse::<u32>()
                .map_or(model_no.clone(), |m| format!("{m:X}"));
            format!("{vendor}-{family}-{model_no}-{stepping}")
                .replace("--", "-")
                .trim_end_matches('-')
                .to_owned()
        }
    };
    let wall = sys.clock_ns(Clock::Realtime);
    let mono = now(sys);
    log::Header {
        os: Cow::Borrowed("Linux"),
        kernel_release: Cow::Owned(
            read_trimmed(sys, "/proc/sys/kernel/osrelease").unwrap_or_default(),
        ),
        arch: Cow::Borrowed(std::env::consts::ARCH),
        cpu_model: Cow::Owned(model),
        cpuid: Cow::Owned(cpuid),
        cpu_count: sys.online_cpus().len() as u32,
        page_size: sys.page_size() as u32,
        clock: log::Clock::Monotonic,
        ticks_per_second: 1_000_000_000,
        start_wall_ns: i64::try_from(wall).unwrap_or(i64::MAX),
        start_time: mono,
        backend: Cow::Borrowed("linux-perf"),
    }
}

/// The executable mappings of `pid` from `/proc/<pid>/maps`, and its command name, as log
/// records stamped `time`.
pub(super) fn synthesize(sys: &dyn Sys, pid: u32, time: u64, out: &mut Vec<log::Record<'static>>) {
    let Ok(comm) = sys.read_file(Path::new(&format!("/proc/{pid}/comm"))) else {
        return; // gone
    };
    let comm: Vec<u8> = comm.strip_suffix(b"\n").unwrap_or(&comm).to_vec();
    let p = to_i32(pid);
    out.push(log::Record::Comm(log::Comm {
        time,
        pid: p,
        tid: p,
        exec: false,
        comm: log::Bytes::from(comm),
    }));
    let Ok(maps) = sys.read_file(Path::new(&format!("/proc/{pid}/maps"))) else {
        return;
    };
    for line in maps.split(|b| *b == b'\n') {
        if let Some(m) = parse_maps_line(line, p, time) {
            out.push(log::Record::Map(m));
        }
    }
}

/// The path of `pid`'s executable, as hwpmc's PMCATTACH names it: the first executable
/// file mapping of `/proc/<pid>/maps` (the program's text; empty when unreadable).
pub(crate) fn exe_path(sys: &dyn Sys, pid: i32) -> Vec<u8> {
    let Ok(maps) = sys.read_file(Path::new(&format!("/proc/{pid}/maps"))) else {
        return Vec::new();
    };
    maps.split(|&b| b == b'\n')
        .find_map(|l| parse_maps_line(l, pid, 0))
        .map(|m| m.path.0.into_owned())
        .unwrap_or_default()
}

/// One line of `/proc/<pid>/maps`: `start-end perms offset dev inode   path`; executable
/// mappings only.
pub(super) fn parse_maps_line(line: &[u8], pid: i32, time: u64) -> Option<log::Map<'static>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut it = text.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?;
    let offset = it.next()?;
    let _dev = it.next()?;
    let _inode = it.next()?;
    let path = it.next().unwrap_or("").trim_start();
    if !perms.contains('x') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let start = u64::from_str_radix(a, 16).ok()?;
    let end = u64::from_str_radix(b, 16).ok()?;
    let pgoff = u64::from_str_radix(offset, 16).ok()?;
    Some(log::Map {
        time,
        pid,
        start,
        len: end.checked_sub(start)?,
        pgoff,
        build_id: log::Bytes::default(),
        path: log::Bytes::from(path.to_owned()),
    })
}

/// The kernel as a mapping of pid -1 (`[kernel.kallsyms]`), as perf synthesizes it: from
/// `_stext` (an early line of `/proc/kallsyms`, so the 100k-line file is not read to its end)
/// to the top of the address space, which also covers the modules (symbolize kernel addresses
/// with `/proc/kallsyms`). `None` when the addresses are hidden (`kernel.kptr_restrict`) or
/// unreadable.
pub(super) fn kernel_map(sys: &dyn Sys, time: u64) -> Option<log::Map<'static>> {
    let start = sys.kernel_stext().filter(|a| *a != 0)?;
    Some(log::Map {
        time,
        pid: -1,
        start,
        len: 0u64.wrapping_sub(start),
        pgoff: start,
        build_id: log::Bytes::default(),
        path: log::Bytes::from("[kernel.kallsyms]"),
    })
}

/// What to synthesize when a PMC registers.
#[derive(Debug, Clone)]
pub(crate) enum Synth {
    /// Nothing (a command launched with the PMC: the kernel reports its exec and mappings).
    Nothing,
    /// These processes.
    Pids(Vec<u32>),
    /// Every process (system scope).
    All,
}

pub(super) fn all_pids(sys: &dyn Sys) -> Vec<u32> {
    let Ok(names) = sys.read_dir(Path::new("/proc")) else {
        return Vec::new();
    };
    let mut v: Vec<u32> = names.iter().filter_map(|s| s.parse().ok()).collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let l = b"55d0c8a00000-55d0c8a21000 r-xp 00002000 08:01 1234   /usr/bin/foo bar";
        let m = parse_maps_line(l, 7, 5).expect("exec mapping");
        assert_eq!(m.start, 0x55d0c8a00000);
        assert_eq!(m.len, 0x21000);
        assert_eq!(m.pgoff, 0x2000);
        assert_eq!(m.path.as_bytes(), b"/usr/bin/foo bar");
        assert!(parse_maps_line(b"7f00-7f10 rw-p 0 00:00 0", 7, 5).is_none());
        assert!(parse_maps_line(b"garbage", 7, 5).is_none());
        let v = parse_maps_line(
            b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
            1,
            0,
        )
        .expect("vsyscall");
        assert_eq!(v.path.as_bytes(), b"[vsyscall]");
    }

    #[test]
    fn header_has_host_facts() {
        let h = host_header(&crate::sys::RealSys);
        assert_eq!(h.backend, "linux-perf");
        assert_eq!(h.clock, log::Clock::Monotonic);
        assert!(h.page_size >= 4096);
        if crate::sys::HAVE_PERF_EVENT {
            assert!(h.cpu_count >= 1);
            assert!(!h.kernel_release.is_empty());
            assert!(h.start_time > 0 && h.start_wall_ns > 0);
        }
    }
}
