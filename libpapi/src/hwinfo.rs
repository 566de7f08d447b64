//! What `PAPI_get_hardware_info`, `PAPI_get_dmem_info` and
//! `PAPI_get_executable_info` report, read from the system: Linux's
//! `/proc/cpuinfo`, `/sys/devices/system/{cpu,node}` (topology, caches,
//! frequencies), `/proc/self/{status,maps,exe}`; CPUID for the hypervisor
//! (x86). Where a file is missing (FreeBSD, a container without `/sys`), a
//! field is 0 or empty rather than guessed. Every file read is bounded.

use std::ffi::c_int;
use std::path::Path;

use crate::abi::*;

/// The longest file this module reads (`/proc/cpuinfo` of a large machine
/// is ~1 MB; the rest are one line).
const MAX_FILE: u64 = 4 << 20;

fn read(path: impl AsRef<Path>) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    f.take(MAX_FILE).read_to_string(&mut s).ok()?;
    Some(s)
}

fn read_num(path: impl AsRef<Path>) -> Option<i64> {
    read(path)?.trim().parse().ok()
}

/// CPUs configured (online or not): the highest CPU number + 1.
pub(crate) fn cpus_configured() -> u32 {
    crate::sys::os::cpus_configured().max(1)
}

/// A `/sys` cpu list (`0-3,8`): how many CPUs it names.
fn list_len(s: &str) -> usize {
    s.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(p.parse::<usize>().is_ok()),
        })
        .sum()
}

/// The facts `PAPI_get_hardware_info` reports, before they become C.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HwFacts {
    pub totalcpus: i32,
    pub threads: i32,
    pub cores: i32,
    pub sockets: i32,
    pub nnodes: i32,
    pub vendor: i32,
    pub vendor_string: String,
    pub model: i32,
    pub model_string: String,
    pub family: i32,
    pub stepping: i32,
    pub max_mhz: i32,
    pub min_mhz: i32,
    pub virtualized: bool,
    pub virtual_vendor: String,
    /// Caches: (level 1-4, PAPI_MH_TYPE_*, size, line, sets... as PAPI's).
    pub caches: Vec<(usize, PAPI_mh_cache_info_t)>,
}

impl std::fmt::Debug for PAPI_mh_cache_info_t {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cache(type {:#x}, {} B, line {}, {} lines, {}-way)",
            self.type_, self.size, self.line_size, self.num_lines, self.associativity
        )
    }
}

impl PartialEq for PAPI_mh_cache_info_t {
    fn eq(&self, o: &Self) -> bool {
        (
            self.type_,
            self.size,
            self.line_size,
            self.num_lines,
            self.associativity,
        ) == (o.type_, o.size, o.line_size, o.num_lines, o.associativity)
    }
}

/// Parses `/proc/cpuinfo` (the first CPU's block) into the vendor, model
/// and frequency fields.
pub(crate) fn parse_cpuinfo(text: &str, f: &mut HwFacts) {
    let mut mhz: Option<f64> = None;
    for line in text.lines() {
        if line.trim().is_empty() && !f.vendor_string.is_empty() {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let num = || {
            v.parse::<i32>()
                .ok()
                .or_else(|| i32::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        };
        match k.trim() {
            "vendor_id" => f.vendor_string = v.to_owned(),
            "model name" => f.model_string = v.to_owned(),
            "cpu family" => f.family = num().unwrap_or(0),
            "model" => f.model = num().unwrap_or(0),
            "stepping" => f.stepping = num().unwrap_or(0),
            "cpu MHz" => mhz = v.parse().ok(),
            "flags" => f.virtualized |= v.split_whitespace().any(|w| w == "hypervisor"),
            // arm64
            "CPU implementer" => {
                f.vendor = num().unwrap_or(0);
                f.vendor_string = match f.vendor {
                    0x41 => "ARM".into(),
                    0x42 => "Broadcom".into(),
                    0x43 => "Cavium".into(),
                    0x46 => "Fujitsu".into(),
                    0x48 => "HiSilicon".into(),
                    0x50 => "APM".into(),
                    0x51 => "Qualcomm".into(),
                    n => format!("{n:#x}"),
                };
            }
            "CPU part" => {
                f.model = num().unwrap_or(0);
                if f.model_string.is_empty() {
                    f.model_string = format!("part {v}");
                }
            }
            "CPU variant" => f.family = num().unwrap_or(0),
            "CPU revision" => f.stepping = num().unwrap_or(0),
            _ => {}
        }
    }
    f.vendor = match f.vendor_string.as_str() {
        "GenuineIntel" => PAPI_VENDOR_INTEL,
        "AuthenticAMD" | "HygonGenuine" => PAPI_VENDOR_AMD,
        _ => f.vendor,
    };
    if let Some(m) = mhz {
        let m = m.round() as i32;
        f.max_mhz = f.max_mhz.max(m);
        if f.min_mhz == 0 {
            f.min_mhz = m;
        }
    }
}

/// One cache of `/sys/devices/system/cpu/cpu0/cache/indexN`.
fn sys_cache(dir: &Path) -> Option<(usize, PAPI_mh_cache_info_t)> {
    let level = read_num(dir.join("level"))? as usize;
    let type_ = match read(dir.join("type"))?.trim() {
        "Data" => PAPI_MH_TYPE_DATA,
        "Instruction" => PAPI_MH_TYPE_INST,
        "Unified" => PAPI_MH_TYPE_UNIFIED,
        _ => return None,
    };
    let size_s = read(dir.join("size"))?;
    let size_s = size_s.trim();
    let size = match size_s.strip_suffix('K') {
        Some(k) => k.parse::<i64>().ok()? * 1024,
        None => match size_s.strip_suffix('M') {
            Some(m) => m.parse::<i64>().ok()? << 20,
            None => size_s.parse().ok()?,
        },
    };
    let line = read_num(dir.join("coherency_line_size")).unwrap_or(0);
    let ways = read_num(dir.join("ways_of_associativity")).unwrap_or(0);
    let write_back =
        read(dir.join("write_policy")).is_some_and(|w| w.trim().eq_ignore_ascii_case("WriteBack"));
    let c = PAPI_mh_cache_info_t {
        type_: type_ | if write_back { PAPI_MH_TYPE_WB } else { 0 },
        size: i32::try_from(size).unwrap_or(i32::MAX),
        line_size: i32::try_from(line).unwrap_or(0),
        num_lines: if line > 0 {
            i32::try_from(size / line).unwrap_or(i32::MAX)
        } else {
            0
        },
        // 0 ways in sysfs: fully associative, which PAPI writes SHRT_MAX.
        associativity: if ways == 0 {
            i16::MAX as i32
        } else {
            ways as i32
        },
    };
    (1..=PAPI_MAX_MEM_HIERARCHY_LEVELS)
        .contains(&level)
        .then_some((level, c))
}

/// Reads the machine's facts.
pub(crate) fn facts() -> HwFacts {
    let mut f = HwFacts {
        totalcpus: cpus_configured() as i32,
        ..HwFacts::default()
    };
    if let Some(t) = read("/proc/cpuinfo") {
        parse_cpuinfo(&t, &mut f);
    }
    let cpu0 = Path::new("/sys/devices/system/cpu/cpu0");
    let khz = |n: &str| read_num(cpu0.join("cpufreq").join(n)).map(|k| (k / 1000) as i32);
    if let Some(m) = khz("cpuinfo_max_freq") {
        f.max_mhz = m;
    }
    if let Some(m) = khz("cpuinfo_min_freq") {
        f.min_mhz = m;
    }
    let topo = cpu0.join("topology");
    f.threads = read(topo.join("thread_siblings_list"))
        .or_else(|| read(topo.join("core_cpus_list")))
        .map_or(1, |s| list_len(&s).max(1)) as i32;
    let package = read(topo.join("core_siblings_list"))
        .or_else(|| read(topo.join("package_cpus_list")))
        .map_or(f.totalcpus as usize, |s| list_len(&s).max(1)) as i32;
    f.cores = (package / f.threads).max(1);
    f.sockets = (f.totalcpus / package.max(1)).max(1);
    f.nnodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix("node")
                        .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                })
                .count() as i32
        })
        .unwrap_or(0)
        .max(1);
    for i in 0..16 {
        let d = cpu0.join("cache").join(format!("index{i}"));
        if !d.exists() {
            break;
        }
        if let Some(c) = sys_cache(&d) {
            f.caches.push(c);
        }
    }
    if let Some(v) = crate::sys::os::hypervisor_vendor() {
        f.virtualized = true;
        f.virtual_vendor = v;
    }
    f
}

/// `PAPI_hw_info_t` from the facts.
pub(crate) fn fill_hw_info(f: &HwFacts, h: &mut PAPI_hw_info_t) {
    h.totalcpus = f.totalcpus;
    h.threads = f.threads;
    h.cores = f.cores;
    h.sockets = f.sockets;
    h.nnodes = f.nnodes;
    h.ncpu = (f.totalcpus / f.nnodes.max(1)).max(1);
    h.vendor = f.vendor;
    set_str(&mut h.vendor_string, &f.vendor_string);
    h.model = f.model;
    set_str(&mut h.model_string, &f.model_string);
    h.revision = f.stepping as f32;
    h.cpuid_family = f.family;
    h.cpuid_model = f.model;
    h.cpuid_stepping = f.stepping;
    h.cpu_max_mhz = f.max_mhz;
    h.cpu_min_mhz = f.min_mhz;
    h.mhz = f.max_mhz as f32;
    h.clock_mhz = f.max_mhz;
    h.virtualized = c_int::from(f.virtualized);
    set_str(&mut h.virtual_vendor_string, &f.virtual_vendor);
    let mut levels = 0;
    for (level, c) in &f.caches {
        let l = &mut h.mem_hierarchy.level[level - 1];
        if let Some(slot) = l.cache.iter_mut().find(|s| s.type_ == 0) {
            *slot = *c;
        }
        levels = levels.max(*level);
    }
    h.mem_hierarchy.levels = levels as c_int;
}

/// `PAPI_get_dmem_info` from `/proc/self/status` (KB) and the page size.
pub(crate) fn parse_status(text: &str, page_size: i64) -> PAPI_dmem_info_t {
    let mut d = PAPI_dmem_info_t {
        pagesize: page_size,
        ..PAPI_dmem_info_t::default()
    };
    let mut rss_file = 0;
    let mut rss_shmem = 0;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let kb = v
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(0);
        match k {
            "VmPeak" => d.peak = kb,
            "VmSize" => d.size = kb,
            "VmRSS" => d.resident = kb,
            "VmHWM" => d.high_water_mark = kb,
            "RssFile" => rss_file = kb,
            "RssShmem" => rss_shmem = kb,
            "VmExe" => d.text = kb,
            "VmLib" => d.library = kb,
            "VmData" => d.heap = kb,
            "VmLck" => d.locked = kb,
            "VmStk" => d.stack = kb,
            "VmPTE" => d.pte = kb,
            _ => {}
        }
    }
    d.shared = rss_file + rss_shmem;
    d
}

/// The process's memory now.
pub(crate) fn dmem_info() -> Option<PAPI_dmem_info_t> {
    let text = read("/proc/self/status")?;
    Some(parse_status(&text, crate::sys::os::page_size()))
}

/// One mapped object: its path and the ranges of its text, data and bss
/// (as PAPI reports them: text = the executable mapping, data = the
/// writable file mapping, bss = the anonymous writable mapping after it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ObjectMap {
    pub path: String,
    pub text: (u64, u64),
    pub data: (u64, u64),
    pub bss: (u64, u64),
}

/// Groups `/proc/self/maps` by object, in address order.
pub(crate) fn parse_maps(text: &str) -> Vec<ObjectMap> {
    let mut out: Vec<ObjectMap> = Vec::new();
    let mut last: Option<usize> = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        let path = it.nth(3).unwrap_or("");
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if path.is_empty() {
            // Anonymous, writable, right after an object's data: its bss.
            if let Some(i) = last {
                let o = &mut out[i];
                if perms.starts_with("rw") && o.data.1 == a && o.bss == (0, 0) {
                    o.bss = (a, b);
                }
            }
            last = None;
            continue;
        }
        if !path.starts_with('/') {
            last = None;
            continue;
        }
        let i = match out.iter().position(|o| o.path == path) {
            Some(i) => i,
            None => {
                out.push(ObjectMap {
                    path: path.to_owned(),
                    ..ObjectMap::default()
                });
                out.len() - 1
            }
        };
        let o = &mut out[i];
        if perms.contains('x') && o.text == (0, 0) {
            o.text = (a, b);
        } else if perms.starts_with("rw") {
            if o.data == (0, 0) {
                o.data = (a, b);
            } else if o.data.1 == a {
                o.data.1 = b;
            }
        }
        last = Some(i);
    }
    out
}

/// The mapped objects of this process now.
pub(crate) fn maps() -> Vec<ObjectMap> {
    read("/proc/self/maps")
        .map(|t| parse_maps(&t))
        .unwrap_or_default()
}

/// This process's executable's path.
pub(crate) fn exe_path() -> String {
    std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Fills an address map.
pub(crate) fn fill_map(o: &ObjectMap, short_name: bool, m: &mut PAPI_address_map_t) {
    let name = if short_name {
        o.path.rsplit('/').next().unwrap_or(&o.path)
    } else {
        o.path.as_str()
    };
    set_str(&mut m.name, name);
    let p = |v: u64| v as usize as *mut std::ffi::c_void;
    m.text_start = p(o.text.0);
    m.text_end = p(o.text.1);
    m.data_start = p(o.data.0);
    m.data_end = p(o.data.1);
    m.bss_start = p(o.bss.0);
    m.bss_end = p(o.bss.1);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str =
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
model name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.128\nflags\t\t: fpu hypervisor lm\n\n\
processor\t: 1\nvendor_id\t: AuthenticAMD\n";

    #[test]
    fn cpuinfo_gives_vendor_model_and_frequency() {
        let mut f = HwFacts::default();
        parse_cpuinfo(CPUINFO, &mut f);
        assert_eq!(f.vendor, PAPI_VENDOR_AMD);
        assert_eq!(f.vendor_string, "AuthenticAMD");
        assert_eq!((f.family, f.model, f.stepping), (25, 17, 1));
        assert_eq!(f.model_string, "AMD EPYC");
        assert_eq!((f.max_mhz, f.min_mhz), (2596, 2596));
        assert!(f.virtualized);
        let mut a = HwFacts::default();
        parse_cpuinfo(
            "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n\
             CPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n",
            &mut a,
        );
        assert_eq!((a.vendor, a.model, a.stepping), (0x41, 0xd08, 3));
        assert_eq!(a.vendor_string, "ARM");
    }

    #[test]
    fn cpu_lists_count() {
        assert_eq!(list_len("0-3,8\n"), 5);
        assert_eq!(list_len("1"), 1);
        assert_eq!(list_len(""), 0);
        assert_eq!(list_len("5-2"), 0);
    }

    #[test]
    fn status_gives_memory_in_kb() {
        let d = parse_status(
            "Name:\tx\nVmPeak:\t  5908 kB\nVmSize:\t5900 kB\nVmHWM:\t 4528 kB\nVmRSS:\t 4500 kB\n\
             RssFile:\t1000 kB\nRssShmem:\t 24 kB\nVmData:\t 908 kB\nVmStk:\t 132 kB\nVmExe:\t 4 kB\n\
             VmLib:\t1784 kB\nVmPTE:\t 48 kB\nVmLck:\t0 kB\n",
            4096,
        );
        assert_eq!(
            (d.peak, d.size, d.resident, d.high_water_mark),
            (5908, 5900, 4500, 4528)
        );
        assert_eq!(
            (d.shared, d.text, d.library, d.heap, d.stack, d.pte),
            (1024, 4, 1784, 908, 132, 48)
        );
        assert_eq!(d.pagesize, 4096);
    }

    #[test]
    fn maps_group_text_data_and_bss_by_object() {
        let m = parse_maps(
            "55d0-55d1 r--p 00000000 08:01 1 /usr/bin/prog\n\
             55d1-55d2 r-xp 00001000 08:01 1 /usr/bin/prog\n\
             55d4-55d5 rw-p 00003000 08:01 1 /usr/bin/prog\n\
             55d5-55d6 rw-p 00000000 00:00 0 \n\
             7f00-7f10 r-xp 00000000 08:01 2 /lib/libc.so.6\n\
             7f20-7f21 rw-p 00020000 08:01 2 /lib/libc.so.6\n\
             7ffc-7ffd rw-p 00000000 00:00 0 [stack]\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, "/usr/bin/prog");
        assert_eq!(m[0].text, (0x55d1, 0x55d2));
        assert_eq!(m[0].data, (0x55d4, 0x55d5));
        assert_eq!(m[0].bss, (0x55d5, 0x55d6));
        assert_eq!(m[1].text, (0x7f00, 0x7f10));
        assert_eq!(m[1].bss, (0, 0));
    }
}
