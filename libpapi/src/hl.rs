//! PAPI's high-level API: `PAPI_hl_region_begin`, `PAPI_hl_read`,
//! `PAPI_hl_region_end`, `PAPI_hl_stop`, and the JSON report PAPI 7 writes
//! at exit.
//!
//! As PAPI 7.0's `papi_hl.c`: the first call initializes the library with
//! thread support; the events are `PAPI_EVENTS` (a comma-separated list)
//! or, unset, `PAPI_TOT_CYC` (PAPI 7.0's default), and where cycles cannot
//! be counted here, `perf::TASK-CLOCK`; events that do not exist are
//! dropped. Each thread counts its own event set, started at its first
//! region and kept running. Each `PAPI_hl_region_begin` opens a region of
//! its own (numbered by the thread's begins, its parent the region open
//! around it), which keeps, per event and for `cycles` and
//! `real_time_nsec`, end - begin and the `PAPI_hl_read` values; the report
//! lists a thread's regions in the order they began (so a region run four
//! times is four entries, which `papi_hl_output_writer` counts). At exit the
//! report goes to `$PAPI_OUTPUT_DIRECTORY/papi_hl_output/rank_NNNNNN.json`
//! (the current directory without the variable; an older `papi_hl_output`
//! is renamed `papi_hl_output-YYYYMMDD-HHMMSS` first, when it is older than
//! this second; `NNNNNN` is the MPI rank from
//! `OMPI_COMM_WORLD_RANK`, `ALPS_APP_PE`, `PMI_RANK` or `SLURM_PROCID`, else
//! the process id), in PAPI's format, which `papi_hl_output_writer` reads;
//! with `PAPI_REPORT` set it is printed too. Files are created through
//! `pmc_analyze::output`. `PAPI_HL_VERBOSE` prints what happens on stdout.

use std::collections::BTreeMap;
use std::ffi::{c_int, OsStr};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::abi::*;
use crate::error::{fail, R};
use crate::state;

/// Most nested regions per thread, as PAPI's `PAPIHL_MAX_STACK_SIZE`.
const MAX_DEPTH: usize = 10;

#[derive(Debug, Default, Clone)]
struct Value {
    begin: i64,
    region_value: i64,
    reads: Vec<i64>,
}

#[derive(Debug, Clone)]
struct Region {
    id: u32,
    name: String,
    parent: i64,
    /// `cycles`, `real_time_nsec`, then the events.
    values: Vec<Value>,
}

#[derive(Debug, Default)]
struct Thread {
    set: Option<c_int>,
    regions: Vec<Region>,
    stack: Vec<usize>,
    begins: u32,
    stopped: bool,
}

#[derive(Debug, Default)]
struct Hl {
    initialized: bool,
    /// Events counted (names as given).
    events: Vec<String>,
    codes: Vec<u32>,
    /// Where the report goes; `None`: no report (setup failed).
    dir: Option<PathBuf>,
    threads: BTreeMap<u64, Thread>,
    begins: usize,
    ends: usize,
    written: bool,
    verbose: bool,
}

static HL: Mutex<Option<Hl>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Hl>> {
    HL.lock().unwrap_or_else(|p| p.into_inner())
}

macro_rules! verbose {
    ($hl:expr, $($arg:tt)*) => {
        if $hl.verbose {
            println!($($arg)*);
        }
    };
}

/// The events `PAPI_EVENTS` names, or the defaults; only those that exist here.
fn choose_events(hl: &Hl) -> (Vec<String>, Vec<u32>) {
    let requested = std::env::var("PAPI_EVENTS")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let names: Vec<String> = match &requested {
        Some(list) => list
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => vec!["PAPI_TOT_CYC".to_owned()],
    };
    let usable = |names: &[String]| -> (Vec<String>, Vec<u32>) {
        let mut out = (Vec::new(), Vec::new());
        for n in names {
            // PAPI's instantaneous-value suffix (`=instant`) is not supported: dropped.
            let name = n.split('=').next().unwrap_or(n).to_owned();
            let code = state::with_lib(|lib| {
                let c = lib.name_to_code(&name)?;
                lib.entry(c)?;
                Ok(c)
            });
            match code {
                Ok(c) if !out.1.contains(&c) => {
                    out.0.push(name);
                    out.1.push(c);
                }
                Ok(_) => {}
                Err(_) => verbose!(
                    hl,
                    "PAPI-HL Warning: \"{name}\" does not exist or is not supported on this machine."
                ),
            }
        }
        out
    };
    let got = usable(&names);
    if !got.0.is_empty() {
        return got;
    }
    if requested.is_some() {
        verbose!(
            hl,
            "PAPI-HL Warning: All requested events do not work, using default."
        );
    }
    let got = usable(&["PAPI_TOT_CYC".to_owned()]);
    if !got.0.is_empty() {
        return got;
    }
    usable(&["perf::TASK-CLOCK".to_owned()])
}

/// The report's directory: `$PAPI_OUTPUT_DIRECTORY/papi_hl_output`, an
/// older one renamed out of the way with its time, as PAPI does.
fn output_dir() -> Option<PathBuf> {
    let base = std::env::var_os("PAPI_OUTPUT_DIRECTORY")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let dir = base.join("papi_hl_output");
    if let Ok(meta) = std::fs::symlink_metadata(&dir) {
        let now = std::time::SystemTime::now();
        let older = meta.modified().is_ok_and(|m| {
            let secs = |t: std::time::SystemTime| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs())
            };
            secs(m) < secs(now)
        });
        if older {
            let stamp = crate::sys::os::local_timestamp();
            let _ = std::fs::rename(&dir, base.join(format!("papi_hl_output-{stamp}")));
        }
    }
    Some(dir)
}

fn init(hl: &mut Hl) -> R<()> {
    if hl.initialized {
        return if hl.codes.is_empty() {
            fail(
                PAPI_EINVAL,
                "the high-level API has no event it can count here",
            )
        } else {
            Ok(())
        };
    }
    hl.initialized = true;
    hl.verbose = std::env::var_os("PAPI_HL_VERBOSE").is_some();
    crate::sys::library_init()?;
    state::add_init_level(PAPI_HIGH_LEVEL_INITED | PAPI_THREAD_LEVEL_INITED);
    let (names, codes) = choose_events(hl);
    hl.events = names;
    hl.codes = codes;
    if hl.codes.is_empty() {
        return fail(
            PAPI_EINVAL,
            "the high-level API has no event it can count here",
        );
    }
    verbose!(
        hl,
        "PAPI-HL Info: Using the following events:\n{}",
        hl.events.join("\n")
    );
    hl.dir = output_dir();
    if hl.dir.is_some() {
        crate::sys::at_exit(write_at_exit);
    } else {
        verbose!(hl, "PAPI-HL Info: Output generation is deactivated!");
    }
    Ok(())
}

/// The calling thread's counts now: cycles, real ns, then the events.
fn now(hl: &Hl, t: &mut Thread) -> R<Vec<i64>> {
    let set = match t.set {
        Some(s) => s,
        None => {
            let s = state::create_eventset()?;
            for &c in &hl.codes {
                state::add_event(s, c)?;
            }
            state::start_internal(s)?;
            t.set = Some(s);
            s
        }
    };
    let mut v = vec![
        crate::sys::PAPI_get_real_cyc(),
        crate::sys::PAPI_get_real_nsec(),
    ];
    v.extend(state::read(set)?);
    Ok(v)
}

fn thread_id() -> u64 {
    crate::sys::os::thread_id()
}

/// `PAPI_hl_region_begin`.
pub(crate) fn region_begin(name: &str) -> R<()> {
    let mut g = lock();
    let hl = g.get_or_insert_with(Hl::default);
    init(hl)?;
    let tid = thread_id();
    let mut t = hl.threads.remove(&tid).unwrap_or_default();
    let r = (|| {
        if t.stopped {
            return fail(PAPI_EINVAL, "PAPI_hl_stop was called in this thread");
        }
        if t.stack.len() >= MAX_DEPTH {
            return fail(PAPI_ECOUNT, format!("more than {MAX_DEPTH} nested regions"));
        }
        let values = now(hl, &mut t)?;
        let parent = t.stack.last().map_or(-1, |&i| i64::from(t.regions[i].id));
        t.regions.push(Region {
            id: t.begins,
            name: name.to_owned(),
            parent,
            values: values
                .iter()
                .map(|&v| Value {
                    begin: v,
                    ..Value::default()
                })
                .collect(),
        });
        t.begins = t.begins.wrapping_add(1);
        t.stack.push(t.regions.len() - 1);
        Ok(())
    })();
    if r.is_ok() {
        hl.begins += 1;
    }
    hl.threads.insert(tid, t);
    r
}

fn innermost<'a>(t: &'a mut Thread, name: &str, call: &str) -> R<&'a mut Region> {
    match t.stack.last() {
        Some(&i) if t.regions[i].name == name => Ok(&mut t.regions[i]),
        _ => fail(
            PAPI_EINVAL,
            format!("{call}({name:?}): no such region is open in this thread"),
        ),
    }
}

/// `PAPI_hl_read`: records the counts since the region began.
pub(crate) fn read(name: &str) -> R<()> {
    let mut g = lock();
    let Some(hl) = g.as_mut().filter(|h| h.initialized) else {
        return fail(PAPI_ENOINIT, "PAPI_hl_read before PAPI_hl_region_begin");
    };
    let tid = thread_id();
    let mut t = hl.threads.remove(&tid).unwrap_or_default();
    let r = (|| {
        if innermost(&mut t, name, "PAPI_hl_read").is_err() {
            // As PAPI: a read of a region that is not open is ignored.
            verbose!(
                hl,
                "PAPI-HL Warning: Cannot find matching region for PAPI_hl_read(\"{name}\")."
            );
            return Ok(());
        }
        let values = now(hl, &mut t)?;
        let reg = innermost(&mut t, name, "PAPI_hl_read")?;
        for (v, now) in reg.values.iter_mut().zip(&values) {
            v.reads.push(now.wrapping_sub(v.begin));
        }
        Ok(())
    })();
    hl.threads.insert(tid, t);
    r
}

/// `PAPI_hl_region_end`.
pub(crate) fn region_end(name: &str) -> R<()> {
    let mut g = lock();
    let Some(hl) = g.as_mut().filter(|h| h.initialized) else {
        return fail(
            PAPI_ENOINIT,
            "PAPI_hl_region_end before PAPI_hl_region_begin",
        );
    };
    let tid = thread_id();
    let mut t = hl.threads.remove(&tid).unwrap_or_default();
    let r = (|| {
        innermost(&mut t, name, "PAPI_hl_region_end")?;
        let values = now(hl, &mut t)?;
        let reg = innermost(&mut t, name, "PAPI_hl_region_end")?;
        for (v, now) in reg.values.iter_mut().zip(&values) {
            v.region_value = now.wrapping_sub(v.begin);
        }
        t.stack.pop();
        Ok(())
    })();
    if r.is_ok() {
        hl.ends += 1;
    }
    hl.threads.insert(tid, t);
    r
}

/// `PAPI_hl_stop`: stops the calling thread's counting; its regions stay
/// in the report.
pub(crate) fn stop() -> R<()> {
    let mut g = lock();
    let Some(hl) = g.as_mut().filter(|h| h.initialized) else {
        return fail(PAPI_ENOINIT, "the high-level API was not used");
    };
    let t = hl.threads.entry(thread_id()).or_default();
    if let Some(s) = t.set.take() {
        let _ = state::stop(s);
        let _ = state::cleanup_eventset(s);
        let _ = state::destroy_eventset(s);
    }
    t.stopped = true;
    Ok(())
}

/// `PAPI_shutdown` forgets the event sets (the library's are gone); the
/// regions stay for the report.
pub(crate) fn shutdown() {
    if let Some(hl) = lock().as_mut() {
        for t in hl.threads.values_mut() {
            t.set = None;
        }
    }
}

extern "C" fn write_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let mut g = lock();
        if let Some(hl) = g.as_mut() {
            write_report(hl);
        }
    });
}

/// The MPI rank the environment gives, else the process id.
fn rank() -> u32 {
    [
        "OMPI_COMM_WORLD_RANK",
        "ALPS_APP_PE",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse::<u32>().ok())
    .unwrap_or_else(std::process::id)
        % 1_000_000
}

fn write_report(hl: &mut Hl) {
    if hl.written {
        return;
    }
    hl.written = true;
    if hl.threads.values().all(|t| t.regions.is_empty()) {
        verbose!(hl, "PAPI-HL Info: No events were recorded.");
        return;
    }
    if hl.begins != hl.ends {
        verbose!(
            hl,
            "PAPI-HL Warning: Cannot generate output due to not matching regions."
        );
        return;
    }
    let Some(dir) = hl.dir.clone() else { return };
    let json = report_json(hl, &crate::sys::hw_info_facts());
    match write_file(&dir, &json) {
        Ok(path) => {
            verbose!(hl, "PAPI-HL Info: Print results...");
            if std::env::var_os("PAPI_REPORT").is_some() {
                println!("\n\nPAPI-HL Output:\n{json}");
                let _ = path;
            }
        }
        Err(e) => {
            verbose!(hl, "PAPI-HL Error: Cannot create output file: {e}");
        }
    }
}

fn write_file(dir: &Path, json: &str) -> std::io::Result<PathBuf> {
    use pmc_analyze::output::{Dir, Options};
    let d = Dir::open(dir)?;
    let mut r = rank();
    for _ in 0..1000 {
        let name = format!("rank_{r:06}.json");
        if std::fs::symlink_metadata(dir.join(&name)).is_err() {
            let mut out = d.create(OsStr::new(&name), &Options::default())?;
            out.write_all(json.as_bytes())?;
            out.commit()?;
            return Ok(dir.join(name));
        }
        r = (r + 1) % 1_000_000;
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free rank_NNNNNN.json name",
    ))
}

/// What the report says about the machine: (model, max MHz, min MHz).
pub(crate) type HwSummary = (String, c_int, c_int);

/// The `component` of the report's event definitions: the kernel interface
/// that counts the events. On Linux that is `perf_event`, the name PAPI's
/// own reports give these events (its perf_event component counts them),
/// and the one PAPI's report reader, `papi_hl_output_writer`, sums a
/// region's runs for; `PAPI_get_component_info` still names the component
/// `pmc`.
fn report_component() -> &'static str {
    if cfg!(target_os = "linux") {
        "perf_event"
    } else {
        state::COMPONENT_NAME
    }
}

/// A JSON string literal (the names come from the program: escaped).
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// The report, in PAPI 7.0's layout: version, CPU, event definitions, then
/// per thread (numbered in thread-id order) its regions, each with
/// `cycles`, `real_time_nsec` and the events, as strings; an event read
/// with `PAPI_hl_read` is an object of `region_value` and `read_N`.
fn report_json(hl: &Hl, hw: &HwSummary) -> String {
    let mut s = String::new();
    let model = hw.0.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = write!(
        s,
        "{{\n  \"papi_version\":\"{}.{}.{}.{}\",\n  \"cpu_info\":{},\n  \"max_cpu_rate_mhz\":\"{}\",\n  \"min_cpu_rate_mhz\":\"{}\",\n",
        (PAPI_VERSION >> 24) & 0xff,
        (PAPI_VERSION >> 16) & 0xff,
        (PAPI_VERSION >> 8) & 0xff,
        PAPI_VERSION & 0xff,
        quote(&model),
        hw.1,
        hw.2
    );
    s.push_str("  \"event_definitions\":{");
    for (i, e) in hl.events.iter().enumerate() {
        let _ = write!(
            s,
            "{}\n    {}:{{\n      \"component\":{},\n      \"type\":\"delta\"\n    }}",
            if i > 0 { "," } else { "" },
            quote(e),
            quote(report_component())
        );
    }
    s.push_str("\n  },\n  \"threads\":{");
    let mut names = vec!["cycles".to_owned(), "real_time_nsec".to_owned()];
    names.extend(hl.events.iter().cloned());
    let threads: Vec<&Thread> = hl
        .threads
        .values()
        .filter(|t| !t.regions.is_empty())
        .collect();
    for (ti, t) in threads.iter().enumerate() {
        let _ = write!(
            s,
            "{}\n    \"{ti}\":{{\n      \"regions\":{{",
            if ti > 0 { "," } else { "" }
        );
        for (ri, r) in t.regions.iter().enumerate() {
            let _ = write!(
                s,
                "{}\n        \"{}\":{{\n          \"name\":{},\n          \"parent_region_id\":\"{}\"",
                if ri > 0 { "," } else { "" },
                r.id,
                quote(&r.name),
                r.parent
            );
            for (n, v) in names.iter().zip(&r.values) {
                if v.reads.is_empty() {
                    let _ = write!(s, ",\n          {}:\"{}\"", quote(n), v.region_value);
                } else {
                    let _ = write!(
                        s,
                        ",\n          {}:{{\n            \"region_value\":\"{}\"",
                        quote(n),
                        v.region_value
                    );
                    for (k, rd) in v.reads.iter().enumerate() {
                        let _ = write!(s, ",\n            \"read_{}\":\"{}\"", k + 1, rd);
                    }
                    s.push_str("\n          }");
                }
            }
            s.push_str("\n        }");
        }
        s.push_str("\n      }\n    }");
    }
    s.push_str("\n  }\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_json_in_papis_layout() {
        let mut hl = Hl {
            events: vec!["perf::TASK-CLOCK".into(), "odd\"name".into()],
            ..Hl::default()
        };
        let v = |x: i64, reads: &[i64]| Value {
            begin: 0,
            region_value: x,
            reads: reads.to_vec(),
        };
        hl.threads.insert(
            7,
            Thread {
                regions: vec![
                    Region {
                        id: 0,
                        name: "outer".into(),
                        parent: -1,
                        values: vec![v(10, &[]), v(20, &[]), v(30, &[]), v(1, &[])],
                    },
                    Region {
                        id: 1,
                        name: "in\ner".into(),
                        parent: 0,
                        values: vec![v(1, &[]), v(2, &[]), v(3, &[1, 2]), v(0, &[])],
                    },
                ],
                ..Thread::default()
            },
        );
        hl.threads.insert(3, Thread::default());
        let j: serde_json::Value =
            serde_json::from_str(&report_json(&hl, &("AMD  EPYC".into(), 2596, 1000))).unwrap();
        assert_eq!(j["papi_version"], "7.0.0.0");
        assert_eq!(j["cpu_info"], "AMD EPYC");
        assert_eq!(j["max_cpu_rate_mhz"], "2596");
        assert_eq!(j["event_definitions"]["perf::TASK-CLOCK"]["type"], "delta");
        let regions = &j["threads"]["0"]["regions"];
        assert_eq!(regions["0"]["name"], "outer");
        assert_eq!(regions["0"]["parent_region_id"], "-1");
        assert_eq!(regions["0"]["cycles"], "10");
        assert_eq!(regions["0"]["real_time_nsec"], "20");
        assert_eq!(regions["0"]["perf::TASK-CLOCK"], "30");
        assert_eq!(regions["1"]["name"], "in\ner");
        assert_eq!(regions["1"]["perf::TASK-CLOCK"]["region_value"], "3");
        assert_eq!(regions["1"]["perf::TASK-CLOCK"]["read_2"], "2");
        assert_eq!(j["threads"].as_object().unwrap().len(), 1);
    }
}
