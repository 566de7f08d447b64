//! Event listing (`pmcstat -L`) and diagnostics (`pmcstat --diagnose`) for
//! Linux: every event is probed by opening it (disabled, on the calling
//! thread) and closing it again, so "available" means "opened here".

use crate::env::Tracefs;
use crate::errno_map::{self, Facts, OpenContext};
use crate::events::{self, Resolved};
use crate::sys::facts::{self as machine, read_trimmed};
use crate::sys::{Rlimit, Sys};
use perf_event_open_sys::bindings as b;
use perf_event_open_sys::bindings::perf_event_attr;
use pmc_core::info::{Availability, Check, EventInfo, EventSource};
use pmc_core::{EventSpec, PortableEvent};
use std::path::Path;

/// At most this many tracepoints are probed (one per subsystem, or each
/// event of a subsystem whose first one fails); the rest are listed as not
/// probed.
pub(crate) const MAX_TRACEPOINT_PROBES: usize = 1024;

fn probe_resolved(sys: &dyn Sys, name: &str, r: &Resolved, facts: &Facts) -> Availability {
    let kernel = facts.privileged || facts.paranoid.is_none_or(|p| p < 2);
    let mut attr = perf_event_attr {
        type_: r.type_,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: r.config,
        ..Default::default()
    };
    attr.__bindgen_anon_3.config1 = r.config1;
    attr.__bindgen_anon_4.config2 = r.config2;
    attr.set_disabled(1);
    attr.set_exclude_kernel(u64::from(!kernel));
    attr.set_exclude_hv(u64::from(!kernel));
    match sys.perf_event_open(&mut attr, 0, -1, None, 0) {
        Ok(fd) => {
            drop(fd);
            Availability::Available
        }
        Err(errno) => {
            let ctx = OpenContext {
                event: name,
                resolved: r,
                pid: 0,
                cpu: -1,
                counts_kernel: kernel,
                sample_freq: None,
            };
            let e = errno_map::open_error(errno, &ctx, facts);
            if e.kind() == pmc_core::ErrorKind::NoPmu {
                return Availability::Unavailable("no hardware PMU".to_owned());
            }
            Availability::Unavailable(e.message().to_owned())
        }
    }
}

fn probe(sys: &dyn Sys, name: &str, facts: &Facts) -> Availability {
    match name
        .parse::<EventSpec>()
        .map_err(|e| e.to_string())
        .and_then(|s| events::resolve(sys, &s).map_err(|e| e.message().to_owned()))
    {
        Ok(r) => probe_resolved(sys, name, &r, facts),
        Err(why) => Availability::Unavailable(why),
    }
}

fn info(
    sys: &dyn Sys,
    name: &str,
    source: EventSource,
    description: &str,
    facts: &Facts,
) -> EventInfo {
    EventInfo {
        name: name.to_owned(),
        source,
        description: description.to_owned(),
        availability: probe(sys, name, facts),
    }
}

/// Every event this machine names, grouped by source, each probed.
/// Tracepoints are included when `tracepoints` is true (there can be
/// thousands).
pub(crate) fn list_events(sys: &dyn Sys, tracepoints: bool) -> Vec<EventInfo> {
    let facts = sys.facts();
    let mut out = Vec::new();
    for p in PortableEvent::ALL {
        let desc = if p.is_hardware() {
            "portable (hardware)"
        } else {
            "portable (software)"
        };
        out.push(info(sys, p.name(), EventSource::Portable, desc, &facts));
    }
    for (n, d) in [
        ("bus-cycles", "bus cycles"),
        (
            "ref-cycles",
            "reference cycles, unaffected by frequency scaling",
        ),
        ("stalled-cycles-frontend", "cycles stalled in the front end"),
        ("stalled-cycles-backend", "cycles stalled in the back end"),
    ] {
        out.push(info(sys, n, EventSource::Hardware, d, &facts));
    }
    for (n, d) in [
        ("minor-faults", "page faults served without I/O"),
        ("major-faults", "page faults that needed I/O"),
        ("alignment-faults", "alignment fix-ups"),
        ("emulation-faults", "instruction emulations"),
        ("dummy", "placeholder for side-band records"),
        ("bpf-output", "BPF output"),
        ("cgroup-switches", "cgroup switches"),
    ] {
        out.push(info(sys, n, EventSource::Software, d, &facts));
    }
    for cache in pmc_core::event::LINUX_CACHE_NAMES {
        for (access, miss) in pmc_core::event::LINUX_CACHE_OPS {
            for op in [access, miss] {
                let n = format!("{cache}-{op}");
                out.push(info(
                    sys,
                    &n,
                    EventSource::Cache,
                    "generic cache event",
                    &facts,
                ));
            }
        }
    }
    out.extend(pmu_events(sys, Path::new(events::PMU_DIR), &facts));
    out.extend(table_events(sys, events::host_cpu(sys), &facts));
    if tracepoints {
        out.extend(tracepoint_events(sys, &facts));
    }
    out
}

/// The CPU's own events from the pmc-events table (the one perf's
/// `mapfile.csv` picks for this CPU), each resolved and probed; the source
/// names the table.
fn table_events(sys: &dyn Sys, cpu: Option<pmc_events::CpuId>, facts: &Facts) -> Vec<EventInfo> {
    let Some(table) = cpu.as_ref().and_then(pmc_events::Table::for_cpu) else {
        return Vec::new();
    };
    table
        .events()
        .map(|e| {
            let enc = match e.kind {
                pmc_events::Kind::ArmV8 => format!("event={:#x}", e.code),
                _ => format!("config={:#x}", e.config()),
            };
            let extra = if e.config1() != 0 {
                format!(",config1={:#x}", e.config1())
            } else {
                String::new()
            };
            let description = if e.desc.is_empty() {
                format!("[{enc}{extra}]")
            } else {
                format!("{} [{enc}{extra}]", e.desc)
            };
            EventInfo {
                name: e.name.to_ascii_lowercase(),
                source: EventSource::Pmu(format!("cpu (pmu-events {})", table.name())),
                availability: probe(sys, e.name, facts),
                description,
            }
        })
        .collect()
}

fn pmu_events(sys: &dyn Sys, dir: &Path, facts: &Facts) -> Vec<EventInfo> {
    let mut out = Vec::new();
    let Ok(mut pmus) = sys.read_dir(dir) else {
        return out;
    };
    pmus.sort();
    for pmu in pmus {
        // The generic types are listed above under their own names.
        if matches!(pmu.as_str(), "software" | "tracepoint" | "breakpoint") {
            continue;
        }
        let events = dir.join(&pmu).join("events");
        let mut aliases: Vec<String> = sys
            .read_dir(&events)
            .map(|names| {
                names
                    .into_iter()
                    .filter(|n| !n.contains('.')) // .scale / .unit companions
                    .collect()
            })
            .unwrap_or_default();
        aliases.sort();
        if aliases.is_empty() {
            out.push(EventInfo {
                name: format!("{pmu}/.../"),
                source: EventSource::Pmu(pmu.clone()),
                description: "takes terms from its sysfs format/ directory".into(),
                availability: Availability::NotProbed("no named events; give terms".into()),
            });
        }
        for a in aliases {
            let name = format!("{pmu}/{a}/");
            let desc = read_trimmed(sys, events.join(&a)).unwrap_or_default();
            out.push(EventInfo {
                availability: probe(sys, &name, facts),
                name,
                source: EventSource::Pmu(pmu.clone()),
                description: desc,
            });
        }
    }
    out
}

fn tracepoint_events(sys: &dyn Sys, facts: &Facts) -> Vec<EventInfo> {
    let is_dir = |p: &Path| sys.metadata(p).is_ok_and(|m| m.is_dir);
    let Some(root) = events::TRACEFS_DIRS
        .iter()
        .map(Path::new)
        .find(|d| is_dir(&d.join("events")))
    else {
        return vec![EventInfo {
            name: "<subsystem>:<name>".into(),
            source: EventSource::Tracepoint,
            description: "tracepoints".into(),
            availability: Availability::Unavailable(
                Tracefs::probe_on(sys, &events::TRACEFS_DIRS.map(std::path::PathBuf::from))
                    .problem()
                    .map_or_else(String::new, |(why, fix)| format!("{why}: {fix}")),
            ),
        }];
    };
    let mut names = Vec::new();
    let events_dir = root.join("events");
    if let Ok(subs) = sys.read_dir(&events_dir) {
        for s in subs.into_iter().filter(|s| is_dir(&events_dir.join(s))) {
            let sub = events_dir.join(&s);
            if let Ok(evs) = sys.read_dir(&sub) {
                for ev in evs
                    .into_iter()
                    .filter(|e| sys.metadata(&sub.join(e).join("id")).is_ok())
                {
                    names.push(format!("{s}:{ev}"));
                }
            }
        }
    }
    names.sort();
    // Opening a tracepoint costs ~40 ms (the kernel registers a probe and
    // waits for RCU), so probing all of them took 85 s for 2,300. Whether
    // one opens depends on the same rules within a subsystem (tracefs
    // access, perf_event_paranoid, capabilities), so one probe per
    // subsystem that opens decides for all of its events: about 100 probes.
    // Where the first one fails (ftrace:function needs more than
    // ftrace:print), every event of that subsystem is probed.
    let mut probed: Option<(String, Availability)> = None;
    let mut probes = 0usize;
    names
        .into_iter()
        .map(|n| {
            let subsystem = n.split(':').next().unwrap_or_default().to_owned();
            let availability = match &probed {
                Some((s, a @ Availability::Available)) if *s == subsystem => a.clone(),
                _ if probes >= MAX_TRACEPOINT_PROBES => Availability::NotProbed(format!(
                    "only {MAX_TRACEPOINT_PROBES} tracepoints are probed"
                )),
                _ => {
                    probes += 1;
                    let a = probe(sys, &n, facts);
                    probed = Some((subsystem, a.clone()));
                    a
                }
            };
            EventInfo {
                name: n,
                source: EventSource::Tracepoint,
                description: String::new(),
                availability,
            }
        })
        .collect()
}

fn is_vm(sys: &dyn Sys) -> Option<String> {
    let cpuinfo = sys.cpuinfo();
    if cpuinfo.is_empty() {
        return None;
    }
    let hyper = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    if !hyper {
        return None;
    }
    // CPUID's signature names the hypervisor (as the kernel's "Hypervisor detected: KVM");
    // the DMI product name is the machine the hypervisor presents (`Standard PC (Q35 +
    // ICH9, 2009)`), a fallback where there is no CPUID (arm64).
    let printable = |b: &[u8]| -> String {
        b.iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect()
    };
    let product =
        read_trimmed(sys, "/sys/class/dmi/id/product_name").map(|p| printable(p.as_bytes()));
    let named = match sys.hypervisor_signature() {
        Some(sig) => match pmc_events::hypervisor_name(&sig) {
            Some(name) => name.to_owned(),
            None => format!("hypervisor signature `{}`", printable(&sig)),
        },
        None => return Some(product.unwrap_or_else(|| "unknown hypervisor".into())),
    };
    Some(match product {
        Some(p) => format!("{named}, {p}"),
        None => named,
    })
}

fn uid(sys: &dyn Sys) -> Option<u32> {
    let s = sys.read_file(Path::new("/proc/self/status")).ok()?;
    let s = String::from_utf8_lossy(&s);
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok() // effective uid
}

/// x86's (and other non-arm64) switch for user-space reads.
fn rdpmc_check(sys: &dyn Sys, v: &mut Vec<Check>) {
    match read_trimmed(sys, "/sys/bus/event_source/devices/cpu/rdpmc") {
        Some(s) if s != "0" => v.push(Check::yes(
            "rdpmc (user-space counter reads)",
            format!("/sys/bus/event_source/devices/cpu/rdpmc = {s}"),
        )),
        Some(s) => v.push(Check::no(
            "rdpmc (user-space counter reads)",
            format!("disabled: /sys/bus/event_source/devices/cpu/rdpmc = {s}"),
            "echo 1 > /sys/bus/event_source/devices/cpu/rdpmc",
        )),
        None => v.push(Check::no(
            "rdpmc (user-space counter reads)",
            "unavailable: no hardware PMU; reads use read(2)",
            "needs a hardware PMU (see above)",
        )),
    }
}

/// The core PMUs in sysfs: (name, type, CPUs): `cpu`, `cpu_core`/`cpu_atom`,
/// `armv8_*`.
fn core_pmus(sys: &dyn Sys) -> Vec<(String, String, String)> {
    let dir = Path::new(events::PMU_DIR);
    let Ok(names) = sys.read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<_> = names
        .into_iter()
        .filter(|n| {
            matches!(n.as_str(), "cpu" | "cpu_core" | "cpu_atom")
                || n.starts_with("armv8")
                || n.starts_with("armv7")
        })
        .map(|n| {
            let t = read_trimmed(sys, dir.join(&n).join("type")).unwrap_or_else(|| "?".into());
            let cpus = read_trimmed(sys, dir.join(&n).join("cpus"))
                .or_else(|| read_trimmed(sys, "/sys/devices/system/cpu/online"))
                .unwrap_or_else(|| "?".into());
            (n, t, cpus)
        })
        .collect();
    v.sort();
    v
}

/// How many counters one event group can use: the largest group of
/// `cycles` events (all enabled: the kernel skips disabled events when
/// validating a group) that opens on this thread, as the armv8 and x86 drivers
/// validate a group against their counters at open. `None` if none opens.
fn group_capacity(sys: &dyn Sys, kernel: bool) -> Option<usize> {
    let attr = || {
        let mut a = perf_event_attr {
            type_: b::PERF_TYPE_HARDWARE,
            size: std::mem::size_of::<perf_event_attr>() as u32,
            config: u64::from(b::PERF_COUNT_HW_CPU_CYCLES),
            ..Default::default()
        };
        a.set_exclude_kernel(u64::from(!kernel));
        a.set_exclude_hv(1);
        a
    };
    let leader = sys.perf_event_open(&mut attr(), 0, -1, None, 0).ok()?;
    use std::os::fd::AsFd;
    let mut members = Vec::new();
    // 64: more than any PMU's counters, a bound on the probe's fds.
    // Members enabled too: the drivers skip disabled events when validating.
    while members.len() < 64 {
        match sys.perf_event_open(&mut attr(), 0, -1, Some(leader.as_fd()), 0) {
            Ok(fd) => members.push(fd),
            Err(_) => break,
        }
    }
    Some(members.len() + 1)
}

/// The diagnostics report: what works here and, for each "no", the fix.
pub(crate) fn diagnose(sys: &dyn Sys) -> Vec<Check> {
    let facts = sys.facts();
    let mut v = Vec::new();
    v.push(Check::info(
        "kernel",
        read_trimmed(sys, "/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
    ));
    pmu_checks(sys, &mut v, &facts);
    identity_checks(sys, &mut v, &facts);
    access_checks(sys, &mut v, &facts);
    user_read_check(sys, &mut v);
    buffer_checks(sys, &mut v, &facts);
    nmi_watchdog_check(sys, &mut v);
    tracepoint_check(sys, &mut v);
    v
}

/// The hardware PMU: its core PMUs and how many counters a group gets, or why
/// there is none and the fix.
fn pmu_checks(sys: &dyn Sys, v: &mut Vec<Check>, facts: &Facts) {
    if machine::has_hardware_pmu(sys) {
        let pmus = core_pmus(sys);
        let names = if pmus.is_empty() {
            "present".to_owned()
        } else {
            pmus.iter()
                .map(|(n, t, cpus)| format!("{n} (type {t}, CPUs {cpus})"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        v.push(Check::yes("hardware PMU", names));
        let kernel = facts.privileged || facts.paranoid.is_none_or(|p| p < 2);
        v.push(Check::info(
            "PMU counters",
            match group_capacity(sys, kernel) {
                Some(n) => format!("{n} counters for one event group (the most cycles events that open together on this thread; the NMI watchdog or other users may hold some)"),
                None => "unknown: no cycles group opens on this thread".to_owned(),
            },
        ));
    } else {
        let vm = is_vm(sys);
        let detail = match &vm {
            Some(p) => format!("none: this is a virtual machine ({p}) without a virtual PMU, so cycles, instructions, branches and cache events are not supported"),
            None => "none: no /sys/bus/event_source/devices/cpu (kernel built without the CPU's PMU driver?)".to_owned(),
        };
        let fix = if vm.is_some() {
            "enable a virtual PMU in the hypervisor (e.g. QEMU/KVM `-cpu host,pmu=on`), or use software events (task-clock, cpu-clock, page-faults)"
        } else {
            "use software events (task-clock, cpu-clock, page-faults), or a kernel with the PMU driver"
        };
        v.push(Check::no("hardware PMU", detail, fix));
    }
}

/// Identity and privileges: uid, capabilities, `perf_event_paranoid`.
fn identity_checks(sys: &dyn Sys, v: &mut Vec<Check>, facts: &Facts) {
    let uid = uid(sys);
    v.push(Check::info(
        "user",
        match uid {
            Some(0) => "running as root (uid 0)".to_owned(),
            Some(u) => format!("running as uid {u} (not root)"),
            None => "unknown uid".to_owned(),
        },
    ));
    let caps = machine::effective_caps(sys).unwrap_or(0);
    let perfmon = caps & (1 << machine::CAP_PERFMON) != 0;
    let sysadmin = caps & (1 << machine::CAP_SYS_ADMIN) != 0;
    v.push(Check::info(
        "capabilities",
        format!(
            "CAP_PERFMON: {}, CAP_SYS_ADMIN: {}",
            if perfmon { "yes" } else { "no" },
            if sysadmin { "yes" } else { "no" }
        ),
    ));
    let lvl = facts.paranoid;
    let lvl_s = lvl.map_or_else(|| "unknown".to_owned(), |l| l.to_string());
    v.push(Check::info(
        "perf_event_paranoid",
        format!(
            "kernel.perf_event_paranoid = {lvl_s}: {}",
            match lvl {
                Some(l) if l <= -1 => "no restrictions",
                Some(0) => "unprivileged users may count system-wide (no raw tracepoints)",
                Some(1) => "unprivileged users may count their own processes, user and kernel",
                Some(2) => "unprivileged users may count their own processes in user mode only",
                Some(_) => "unprivileged users may not use perf events at all",
                None => "unreadable",
            }
        ),
    ));
}

/// What this process can do, by trying: counting its own processes,
/// system-wide, kernel mode.
fn access_checks(sys: &dyn Sys, v: &mut Vec<Check>, facts: &Facts) {
    let lvl = facts.paranoid;
    let lvl_s = lvl.map_or_else(|| "unknown".to_owned(), |l| l.to_string());
    let privileged = facts.privileged;
    let sw = crate::events::portable(PortableEvent::TaskClock);
    match probe_resolved(sys, "task-clock", &sw, facts) {
        Availability::Available => v.push(Check::yes(
            "counting own processes",
            "task-clock opens on this thread",
        )),
        Availability::Unavailable(why) | Availability::NotProbed(why) => v.push(Check::no(
            "counting own processes",
            why,
            "sysctl -w kernel.perf_event_paranoid=2 (or lower), or grant CAP_PERFMON",
        )),
    }
    let mut attr = perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: u64::from(b::PERF_COUNT_SW_CPU_CLOCK),
        ..Default::default()
    };
    attr.set_disabled(1);
    match sys.perf_event_open(&mut attr, -1, 0, None, 0) {
        Ok(_) => v.push(Check::yes("system-wide counting", "cpu-clock opens on CPU 0 for every process")),
        Err(_) if !privileged => v.push(Check::no(
            "system-wide counting",
            format!("not allowed: kernel.perf_event_paranoid = {lvl_s} (needs <= 0) and no CAP_PERFMON"),
            "run as root, setcap cap_perfmon+ep <binary>, or sysctl -w kernel.perf_event_paranoid=0",
        )),
        Err(e) => v.push(Check::no("system-wide counting", format!("perf_event_open failed with errno {e}"), "check dmesg and the kernel's CONFIG_PERF_EVENTS")),
    }
    let kernel_ok = privileged || lvl.is_some_and(|l| l <= 1);
    if kernel_ok {
        v.push(Check::yes(
            "kernel-mode counting",
            "events may include kernel mode",
        ));
    } else {
        v.push(Check::no(
            "kernel-mode counting",
            format!("user mode only: kernel.perf_event_paranoid = {lvl_s} (needs <= 1) and no CAP_PERFMON"),
            "sysctl -w kernel.perf_event_paranoid=1, or grant CAP_PERFMON",
        ));
    }
}

/// User-space counter reads: aarch64's sysctl, else x86's sysfs switch.
fn user_read_check(sys: &dyn Sys, v: &mut Vec<Check>) {
    let user_access = read_trimmed(sys, "/proc/sys/kernel/perf_user_access");
    match (std::env::consts::ARCH == "aarch64", user_access) {
        (true, Some(s)) if s == "0" => v.push(Check::no(
            "user-space counter reads",
            "disabled: kernel.perf_user_access = 0; FastReader uses read(2)",
            "sysctl -w kernel.perf_user_access=1",
        )),
        (true, Some(s)) => v.push(Check::yes(
            "user-space counter reads",
            format!("kernel.perf_user_access = {s}: this thread's counting events are read with mrs (pmc sets the PMU's rdpmc format bit)"),
        )),
        _ => rdpmc_check(sys, v),
    }
}

/// Sampling buffers: the mlock budget and the maximum sample rate.
fn buffer_checks(sys: &dyn Sys, v: &mut Vec<Check>, facts: &Facts) {
    let mlock = machine::mlock_kb(sys).map_or_else(|| "unknown".to_owned(), |k| format!("{k} KiB"));
    let rlim = sys
        .rlimit_soft(Rlimit::MemLock)
        .map_or_else(|| "unlimited".to_owned(), |b| format!("{} KiB", b / 1024));
    v.push(Check::info(
        "sample buffer limits",
        format!("kernel.perf_event_mlock_kb = {mlock} per user (beyond it RLIMIT_MEMLOCK = {rlim} applies; root and CAP_IPC_LOCK are exempt)"),
    ));
    if let Some(r) = facts.max_sample_rate {
        v.push(Check::info(
            "max sample rate",
            format!("kernel.perf_event_max_sample_rate = {r} Hz"),
        ));
    }
}

/// The NMI watchdog, which holds a hardware counter.
fn nmi_watchdog_check(sys: &dyn Sys, v: &mut Vec<Check>) {
    match read_trimmed(sys, "/proc/sys/kernel/nmi_watchdog").as_deref() {
        Some("1") if machine::has_hardware_pmu(sys) => v.push(Check::no(
            "NMI watchdog",
            "enabled: it holds one hardware counter, leaving one fewer for you",
            "sysctl -w kernel.nmi_watchdog=0",
        )),
        Some(s) => v.push(Check::info(
            "NMI watchdog",
            format!("kernel.nmi_watchdog = {s}"),
        )),
        None => {}
    }
}

/// Tracepoints: whether tracefs is mounted, else the fix.
fn tracepoint_check(sys: &dyn Sys, v: &mut Vec<Check>) {
    match Tracefs::probe_on(sys, &events::TRACEFS_DIRS.map(std::path::PathBuf::from)).problem() {
        None => v.push(Check::yes("tracepoints", "tracefs is mounted")),
        Some((why, fix)) => v.push(Check::no("tracepoints", why, fix)),
    }
}
