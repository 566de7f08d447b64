//! The exporter judged by Prometheus' own tools: `promtool check metrics` on the
//! exposition, and a real Prometheus server (Debian's `prometheus`, installed by
//! ci/setup.sh) scraping it every second and queried through its HTTP API.
//! Without them the tests skip visibly.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pmc::ErrorKind;
use pmc_exporter::PmcCollector;
use prometheus_client::registry::Registry;

/// The tests that count this process must not run at the same time.
static SERIAL: Mutex<()> = Mutex::new(());

/// An HTTP/1.0 GET: (status line and headers, body).
fn get(addr: &str, target: &str, accept: Option<&str>) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.to_string(), body.to_string()))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// The exporter, served from a thread of this process until dropped.
struct Served {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Served {
    fn start(registry: Registry) -> Served {
        let addr = format!("127.0.0.1:{}", free_port());
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (addr.clone(), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            pmc_exporter::serve(&registry, &a, &|| s.load(Ordering::Relaxed)).expect("serve");
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&addr).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Served {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The collectors, or None after a visible skip when this machine refuses them.
fn collector(make: impl FnOnce() -> pmc::Result<PmcCollector>, what: &str) -> Option<PmcCollector> {
    match make() {
        Ok(c) => Some(c),
        Err(e) if matches!(e.kind(), ErrorKind::Permission | ErrorKind::NotSupported) => {
            pmc_testkit::skip!("{what}: {e}");
            None
        }
        Err(e) => panic!("{what}: {e}"),
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn promtool_accepts_the_exposition_in_both_formats() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !pmc_testkit::cli::works("promtool", &["--version"]) {
        pmc_testkit::skip!(
            "promtool (Debian's prometheus package) is not installed: ci/setup.sh installs it"
        );
        return;
    }
    let Some(system) = collector(
        || PmcCollector::system(&["cpu-clock", "page-faults", "cycles", "instructions"]),
        "system-wide counters",
    ) else {
        return;
    };
    let Some(me) = collector(
        || {
            PmcCollector::this_process(&[
                "task-clock",
                "page-faults",
                "context-switches",
                "instructions",
                "cycles",
                "branches",
                "branch-misses",
            ])
        },
        "this process's counters",
    ) else {
        return;
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(system));
    registry.register_collector(Box::new(me));
    registry.register_collector(Box::new(pmc_exporter::SelfCollector::default()));
    let served = Served::start(registry);

    let (head, text) = get(&served.addr, "/metrics", Some("text/plain")).expect("GET /metrics");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    for series in [
        "pmc_cpu_clock_elapsed_seconds_total{cpu=\"0\"} ",
        "pmc_page_faults_total{cpu=\"0\"} ",
        "pmc_time_enabled_seconds_total{cpu=\"0\",event=\"cpu-clock\"} ",
        "pmc_process_task_clock_seconds_total ",
        "pmc_process_page_faults_total ",
        "pmc_process_time_running_seconds_total{event=\"page-faults\"} ",
        "# TYPE pmc_process_page_faults_total counter",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "pmc_exporter_build_info{version=",
        "pmc_exporter_http_connections_accepted_total ",
    ] {
        assert!(text.contains(series), "`{series}` missing");
    }
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    if let Some(mut stdin) = promtool.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("to promtool");
    }
    let out = promtool.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    pmc_testkit::row!("JUDGE promtool check metrics: {} {said}", out.status);
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );

    let (head, om) = get(
        &served.addr,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    )
    .expect("GET /metrics");
    assert_eq!(
        header(&head, "Content-Type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(
        om.contains("# UNIT pmc_cpu_clock_elapsed_seconds seconds\n"),
        "{om}"
    );
    let (head, _) = get(&served.addr, "/nothing", None).expect("GET /nothing");
    assert!(head.contains(" 404"), "{head}");
}

/// `GET /api/v1/query`: each result's labels, timestamp and value.
fn query(prom: &str, expr: &str) -> Vec<(BTreeMap<String, String>, f64, f64)> {
    let mut enc = String::new();
    for b in expr.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            enc.push(char::from(b));
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    let Ok((_, body)) = get(prom, &format!("/api/v1/query?query={enc}"), None) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else {
        return Vec::new();
    };
    let Some(list) = v["data"]["result"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|r| {
            let labels = r["metric"]
                .as_object()?
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect();
            let ts = r["value"][0].as_f64()?;
            let value = r["value"][1].as_str()?.parse().ok()?;
            Some((labels, ts, value))
        })
        .collect()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Polls `expr` until `ok` holds for its result, for at most `secs`.
fn wait_for(
    prom: &str,
    expr: &str,
    secs: u64,
    ok: impl Fn(&[(BTreeMap<String, String>, f64, f64)]) -> bool,
) -> Vec<(BTreeMap<String, String>, f64, f64)> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let r = query(prom, expr);
        if ok(&r) || Instant::now() >= deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn start_prometheus(
    dir: &Path,
    target: &str,
    extra_targets: &[(&str, String)],
) -> (Killed, String) {
    let prom = format!("127.0.0.1:{}", free_port());
    let mut config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: pmc\n    static_configs:\n      - targets: ['{target}']\n"
    );
    for (job, t) in extra_targets {
        config.push_str(&format!(
            "  - job_name: {job}\n    static_configs:\n      - targets: ['{t}']\n"
        ));
    }
    std::fs::write(dir.join("prometheus.yml"), config).expect("write prometheus.yml");
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("prometheus.log");
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    (Killed(child), prom)
}

/// This process's CPU time (getrusage), in seconds.
fn own_cpu_secs() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(f64::NAN)
}

/// A process's CPU time from /proc/PID/stat (utime + stime, 10 ms ticks), in seconds.
fn pid_cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(i) = stat.rfind(')') else {
        return f64::NAN;
    };
    let f: Vec<f64> = stat[i + 1..]
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

/// Each CPU's (busy, total) jiffies in /proc/stat (busy: all but idle and iowait).
fn proc_stat_busy() -> Vec<(f64, f64)> {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .skip(1)
                .take(8)
                .filter_map(|x| x.parse().ok())
                .collect();
            let total: f64 = v.iter().sum();
            let idle = v.get(3).unwrap_or(&0.0) + v.get(4).unwrap_or(&0.0);
            (total - idle, total)
        })
        .collect()
}

/// Writes one byte into each of `n` fresh pages of a zeroed heap block (mapped,
/// not touched, by the allocator; transparent huge pages off for this process):
/// one page fault each.
fn touch_fresh_pages(n: usize) {
    let page = 4096;
    let mut v = vec![0u8; n * page];
    for i in 0..n {
        v[i * page] = 1;
    }
    std::hint::black_box(&v);
}

#[test]
fn a_real_prometheus_server_judges_the_counts() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !pmc_testkit::cli::works("prometheus", &["--version"]) {
        pmc_testkit::skip!(
            "prometheus (Debian's prometheus package) is not installed: ci/setup.sh installs it"
        );
        return;
    }
    let _ = nix::sys::prctl::set_thp_disable(true);
    let dir = pmc_testkit::workdir("pmc-exporter-prometheus");
    let _ = std::fs::remove_dir_all(dir.join("data"));
    let exporter = format!("127.0.0.1:{}", free_port());
    // Started before this process's counters, which count the children started after them.
    let (_server, prom) = start_prometheus(&dir, &exporter, &[]);

    let Some(system) = collector(
        || PmcCollector::system(&["cpu-clock"]),
        "system-wide cpu-clock",
    ) else {
        return;
    };
    let Some(me) = collector(
        || PmcCollector::this_process(&["page-faults", "task-clock"]),
        "this process's page-faults",
    ) else {
        return;
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(system));
    registry.register_collector(Box::new(me));
    let stop = Arc::new(AtomicBool::new(false));
    let (a, s) = (exporter.clone(), Arc::clone(&stop));
    let serving = std::thread::spawn(move || {
        pmc_exporter::serve(&registry, &a, &|| s.load(Ordering::Relaxed)).expect("serve");
    });

    let up = wait_for(&prom, "up{job=\"pmc\"}", 90, |r| {
        r.iter().any(|x| x.2 == 1.0)
    });
    assert!(
        up.iter().any(|x| x.2 == 1.0),
        "Prometheus never scraped the exporter: {up:?} (see {})",
        dir.join("prometheus.log").display()
    );

    // Page faults: N fresh pages between two stored samples.
    const N: f64 = 8192.0;
    let t0 = now();
    let before = wait_for(&prom, "timestamp(pmc_process_page_faults_total)", 30, |r| {
        r.iter().any(|x| x.2 > t0)
    });
    assert!(
        before.iter().any(|x| x.2 > t0),
        "no fresh sample: {before:?}"
    );
    let v0 = query(&prom, "pmc_process_page_faults_total");
    touch_fresh_pages(N as usize);
    let t1 = now();
    let after = wait_for(&prom, "timestamp(pmc_process_page_faults_total)", 30, |r| {
        r.iter().any(|x| x.2 > t1 + 0.05)
    });
    let v1 = query(&prom, "pmc_process_page_faults_total");
    assert!(after.iter().any(|x| x.2 > t1), "no sample after: {after:?}");
    let (Some(v0), Some(v1)) = (v0.first(), v1.first()) else {
        panic!("no page-fault series: {v0:?} {v1:?}");
    };
    let grew = v1.2 - v0.2;
    pmc_testkit::row!(
        "JUDGE page faults of {N} fresh pages, stored by Prometheus: {} -> {} (+{grew})",
        v0.2,
        v1.2
    );
    // At least N; at most 5% + 200 more (the exporter's own allocations while scraped).
    assert!(
        (N..=N * 1.05 + 200.0).contains(&grew),
        "page faults grew by {grew}, expected {N} (+5% +200)"
    );

    // cpu-clock per CPU: one CPU-second per second, busy or idle (the idle task's time
    // counts): elapsed time, as its name says, whatever /proc/stat says the CPU was busy.
    let busy0 = proc_stat_busy();
    std::thread::sleep(Duration::from_secs(7));
    let rates = query(&prom, "rate(pmc_cpu_clock_elapsed_seconds_total[6s])");
    let busy1 = proc_stat_busy();
    pmc_testkit::row!(
        "JUDGE rate(pmc_cpu_clock_elapsed_seconds_total[6s]) (bound 1 +- 0.15); /proc/stat busy share over 7 s beside it:"
    );
    for (cpu, (b0, t0)) in busy0.iter().enumerate() {
        if let Some((b1, t1)) = busy1.get(cpu) {
            pmc_testkit::row!(
                "JUDGE   /proc/stat cpu{cpu} busy {:.3}",
                (b1 - b0) / (t1 - t0)
            );
        }
    }
    for (labels, _, v) in &rates {
        pmc_testkit::row!("JUDGE   cpu {:?}: {v:.4}", labels.get("cpu"));
    }
    assert!(!rates.is_empty(), "no cpu-clock rate");
    for (labels, _, v) in &rates {
        assert!(
            (0.85..=1.15).contains(v),
            "cpu {:?}: cpu-clock rate {v}, expected 1 +- 15%",
            labels.get("cpu")
        );
    }
    stop.store(true, Ordering::Relaxed);
    let _ = serving.join();
}

#[test]
fn node_exporter_perf_collector_side_by_side() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let node = "prometheus-node-exporter";
    if !pmc_testkit::cli::works("prometheus", &["--version"])
        || !pmc_testkit::cli::works(node, &["--version"])
    {
        pmc_testkit::skip!("prometheus / prometheus-node-exporter (Debian) are not installed: ci/setup.sh installs them");
        return;
    }
    let dir = pmc_testkit::workdir("pmc-exporter-node-exporter");
    let _ = std::fs::remove_dir_all(dir.join("data"));
    let node_addr = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join("node-exporter.log")).expect("log");
    let _node = Killed(
        Command::new(node)
            .args(["--collector.disable-defaults", "--collector.perf"])
            .arg(format!("--web.listen-address={node_addr}"))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start node_exporter"),
    );
    let Some(system) = collector(
        || PmcCollector::system(&["page-faults", "context-switches", "cpu-migrations"]),
        "system-wide counters",
    ) else {
        return;
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(system));
    let served = Served::start(registry);
    let (_server, prom) = start_prometheus(&dir, &served.addr, &[("node", node_addr.clone())]);
    let up = wait_for(&prom, "up", 90, |r| {
        r.iter().filter(|x| x.2 == 1.0).count() == 2
    });
    assert_eq!(
        up.iter().filter(|x| x.2 == 1.0).count(),
        2,
        "both exporters should be up: {up:?}"
    );
    // A steady load in a child process (short-lived processes: page faults, context
    // switches), so both see mostly the same events during the window and this process's
    // CPU time is the exporter's.
    let load = Killed(
        Command::new("sh")
            .args(["-c", "while :; do /bin/true; sleep 0.02; done"])
            .spawn()
            .expect("sh"),
    );
    std::thread::sleep(Duration::from_secs(5));
    let node_pid = _node.0.id();
    let cpu0 = (own_cpu_secs(), pid_cpu_secs(node_pid));
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(15));
    let window = t0.elapsed().as_secs_f64();
    let cpu1 = (own_cpu_secs(), pid_cpu_secs(node_pid));
    let rate = |expr: &str| query(&prom, expr).first().map(|x| x.2).unwrap_or(f64::NAN);
    let rows = [
        (
            "page faults",
            "pmc_page_faults_total",
            "node_perf_page_faults_total",
            0.2,
        ),
        (
            "context switches",
            "pmc_context_switches_total",
            "node_perf_context_switches_total",
            0.3,
        ),
    ];
    let mut results = Vec::new();
    for (what, ours, theirs, tol) in rows {
        let a = rate(&format!("sum(rate({ours}[15s]))"));
        let b = rate(&format!("sum(rate({theirs}[15s]))"));
        results.push((what, a, b, tol));
    }
    let cost = |job: &str| {
        rate(&format!(
            "avg_over_time(scrape_duration_seconds{{job=\"{job}\"}}[15s])"
        ))
    };
    let (ours, theirs) = (cost("pmc"), cost("node"));
    let scrapes = |job: &str| {
        rate(&format!(
            "count_over_time(scrape_duration_seconds{{job=\"{job}\"}}[{}s])",
            window.round()
        ))
    };
    let (n_ours, n_theirs) = (scrapes("pmc"), scrapes("node"));
    drop(load);
    for (what, a, b, tol) in &results {
        pmc_testkit::row!(
            "JUDGE {what}/s, all CPUs, rate over 15s: pmc {a:.0}, node_exporter --collector.perf {b:.0} (ratio {:.3}, bound 1 +- {tol})",
            a / b
        );
    }
    pmc_testkit::row!(
        "JUDGE scrape duration (Prometheus' scrape_duration_seconds, 15 s mean): pmc {:.3} ms, node_exporter perf {:.3} ms",
        ours * 1e3,
        theirs * 1e3
    );
    pmc_testkit::row!(
        "JUDGE CPU per scrape over {window:.1} s (getrusage of this process / /proc/PID/stat of node_exporter, 10 ms ticks): pmc {:.3} ms ({n_ours} scrapes), node_exporter perf {:.3} ms ({n_theirs} scrapes)",
        (cpu1.0 - cpu0.0) * 1e3 / n_ours,
        (cpu1.1 - cpu0.1) * 1e3 / n_theirs
    );
    for (what, a, b, tol) in results {
        let ratio = a / b;
        assert!(
            (1.0 - tol..=1.0 + tol).contains(&ratio),
            "{what}: pmc {a} against node_exporter {b}"
        );
    }
}

/// Command names no exposition may break on: quotes, backslashes, newlines, a `} 7` that
/// would end a label set and give a value, a line that would be a series of its own (at most
/// 15 bytes: the kernel keeps no more of an executable's name).
const HOSTILE_COMMS: [&str; 3] = ["qq\"x\\y", "a\"} 7\nfake 9", "\\\"\n# EOF"];
/// Cgroup names as hostile (any byte but `/`, NUL and newline, which cgroup_mkdir refuses).
const HOSTILE_CGROUPS: [&str; 2] = ["au3q\"} 7\\x", "b\\\"} 9 # x{"];

/// The cgroup2 mount (`/sys/fs/cgroup/unified` here, `/sys/fs/cgroup` on a unified host).
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split(' ').next()? == "cgroup2").then(|| left.split(' ').nth(4).map(Into::into))?
    })
}

/// A cgroup2 directory made for a test and removed (its children first) when dropped,
/// after the processes put in it are gone.
struct TestCgroup {
    dir: std::path::PathBuf,
}

impl TestCgroup {
    /// `MOUNT/NAME-PID`, or None when cgroup2 is absent or not writable here.
    fn new(name: &str) -> Option<TestCgroup> {
        let dir = cgroup2_mount()?.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).ok()?;
        Some(TestCgroup { dir })
    }
    /// Its path below the mount, as `Allocation::cgroup` takes it.
    fn rel(&self, child: &str) -> String {
        let base = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        format!("{}/{child}", base.unwrap_or_default())
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        if let Ok(list) = std::fs::read_dir(&self.dir) {
            for e in list.flatten() {
                if e.path().is_dir() {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A copy of sleep(1) named `name`, sleeping, optionally moved into the cgroup directory `cg`.
fn hostile_sleeper(dir: &Path, name: &str, cg: Option<&Path>) -> Killed {
    let sleep = ["/usr/bin/sleep", "/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep(1)");
    let exe = dir.join(name);
    let _ = std::fs::remove_file(&exe);
    std::fs::copy(sleep, &exe).expect("copy sleep(1)");
    let child = Killed(
        Command::new(&exe)
            .arg("120")
            .spawn()
            .expect("start the sleeper"),
    );
    if let Some(cg) = cg {
        std::fs::write(cg.join("cgroup.procs"), child.0.id().to_string()).expect("cgroup.procs");
    }
    child
}

fn promtool_check(text: &str) -> (bool, String) {
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    if let Some(mut stdin) = promtool.stdin.take() {
        stdin.write_all(text.as_bytes()).expect("to promtool");
    }
    let out = promtool.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && said.trim().is_empty(), said)
}

/// Processes and cgroups named to break the exposition: promtool reads it without an error,
/// a real Prometheus keeps the target up and stores exactly the names (escaped on the way,
/// unescaped by its parser), and no series appears that the exporter did not make.
#[test]
fn hostile_process_and_cgroup_names_cannot_break_the_exposition() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !pmc_testkit::cli::works("prometheus", &["--version"])
        || !pmc_testkit::cli::works("promtool", &["--version"])
    {
        pmc_testkit::skip!(
            "prometheus/promtool (Debian) are not installed: ci/setup.sh installs them"
        );
        return;
    }
    let Some(cg) = TestCgroup::new("pmc-hostile") else {
        pmc_testkit::skip!("no writable cgroup2 mount here");
        return;
    };
    let dir = pmc_testkit::workdir("pmc-exporter-hostile");
    let mut sleepers = Vec::new();
    for (i, name) in HOSTILE_CGROUPS.iter().enumerate() {
        let d = cg.dir.join(name);
        std::fs::create_dir(&d).expect("mkdir a hostile cgroup");
        sleepers.push(hostile_sleeper(&dir, HOSTILE_COMMS[i], Some(&d)));
    }
    sleepers.push(hostile_sleeper(&dir, HOSTILE_COMMS[2], None));
    let Some(procs) = collector(
        || {
            PmcCollector::processes(
                &["page-faults", "task-clock"],
                pmc_exporter::Selector::Comm(Box::new(|c| HOSTILE_COMMS.contains(&c))),
            )
        },
        "per-process counters",
    ) else {
        return;
    };
    let Some(cgroup) = collector(
        || PmcCollector::cgroups(&["cpu-clock"], &cg.dir.to_string_lossy()),
        "the cgroups' counters",
    ) else {
        return;
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(procs));
    registry.register_collector(Box::new(cgroup));
    let served = Served::start(registry);

    let (_, text) = get(&served.addr, "/metrics", Some("text/plain")).expect("GET /metrics");
    let (_, om) = get(
        &served.addr,
        "/metrics",
        Some("application/openmetrics-text"),
    )
    .expect("GET");
    for comm in HOSTILE_COMMS {
        let escaped = comm
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let label = format!(",comm=\"{escaped}\"}}");
        assert!(
            text.contains(&label) && om.contains(&label),
            "{label} missing:\n{text}"
        );
    }
    for series in [&text, &om] {
        assert!(
            !series
                .lines()
                .any(|l| l.starts_with("fake") || l.starts_with(" 7")),
            "an injected line:\n{series}"
        );
    }
    let (ok, said) = promtool_check(&text);
    pmc_testkit::row!("JUDGE promtool check metrics, hostile names: ok={ok} {said}");
    assert!(ok, "promtool: {said}\n{text}");

    let pdir = pmc_testkit::workdir("pmc-exporter-hostile-prom");
    let _ = std::fs::remove_dir_all(pdir.join("data"));
    let (_server, prom) = start_prometheus(&pdir, &served.addr, &[]);
    let expr = "count by (comm) (pmc_process_page_faults_total)";
    let comms = wait_for(&prom, expr, 90, |r| r.len() == HOSTILE_COMMS.len());
    let mut seen: Vec<String> = comms
        .iter()
        .filter_map(|x| x.0.get("comm").cloned())
        .collect();
    seen.sort();
    let mut want: Vec<String> = HOSTILE_COMMS.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(seen, want, "the names Prometheus stored");
    let cgs = query(&prom, "pmc_cgroup_cpu_clock_seconds_total");
    let mut stored: Vec<String> = cgs
        .iter()
        .filter_map(|x| x.0.get("cgroup").cloned())
        .collect();
    stored.sort();
    let mut made: Vec<String> = HOSTILE_CGROUPS
        .iter()
        .map(|c| format!("/{}", cg.rel(c)))
        .collect();
    made.push(format!("/{}", cg.rel("")).trim_end_matches('/').to_string());
    made.sort();
    assert_eq!(stored, made, "the cgroups Prometheus stored");
    // Five scrapes later: the target is still up, and every series it stored is one of ours.
    std::thread::sleep(Duration::from_secs(5));
    let up = query(&prom, "min_over_time(up{job=\"pmc\"}[5s])");
    assert!(
        up.iter().all(|x| x.2 == 1.0) && !up.is_empty(),
        "up: {up:?}"
    );
    let names = query(&prom, "count by (__name__) ({job=\"pmc\"})");
    let foreign: Vec<_> = names
        .iter()
        .filter_map(|x| x.0.get("__name__"))
        .filter(|n| !(n.starts_with("pmc_") || n.starts_with("scrape_") || *n == "up"))
        .collect();
    pmc_testkit::row!(
        "JUDGE Prometheus, hostile names: up=1 over 5 s, {} series names, comms stored {seen:?}, foreign {foreign:?}",
        names.len()
    );
    assert!(
        foreign.is_empty(),
        "series the exporter did not make: {foreign:?}"
    );
    drop(sleepers);
}

/// Runs `n` short-lived processes one after the other in the cgroup directory `dir`, each
/// spinning a shell loop (some 10-20 ms of CPU). Each is moved in while it waits on its
/// stdin, before it works: a task moved while running has the runtime since its last
/// accounting charged to the new cgroup's `cpu.stat` (up to a tick of its start-up), which
/// no cgroup event saw.
fn churn(dir: &Path, n: usize) {
    for _ in 0..n {
        let mut child = Command::new("sh")
            .args([
                "-c",
                "read go; i=0; while [ $i -lt 12000 ]; do i=$((i+1)); done",
            ])
            .stdin(Stdio::piped())
            .spawn()
            .expect("sh");
        std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).expect("cgroup.procs");
        if let Some(mut go) = child.stdin.take() {
            let _ = go.write_all(b"go\n");
        }
        let st = child.wait().expect("wait");
        assert!(st.success(), "the worker in {} failed", dir.display());
    }
}

fn usage_secs(dir: &Path) -> f64 {
    std::fs::read_to_string(dir.join("cpu.stat"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|us| us / 1e6)
        .unwrap_or(f64::NAN)
}

fn series(text: &str, name: &str, cgroup: &str) -> Option<f64> {
    let prefix = format!("{name}{{cgroup=\"{cgroup}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Cgroups discovered under a root through churn: short-lived processes in each, a cgroup
/// created after the first scrape, one removed and created again under the same path, one
/// removed, more than the cap. Each cgroup's exported CPU time agrees with the kernel's own
/// `cpu.stat` `usage_usec` within 5%.
#[test]
fn discovered_cgroups_agree_with_cpu_stat_through_churn() {
    let Some(cg) = TestCgroup::new("pmc-churn") else {
        pmc_testkit::skip!("no writable cgroup2 mount here");
        return;
    };
    for d in ["a", "b", "c"] {
        std::fs::create_dir(cg.dir.join(d)).expect("mkdir");
    }
    let Some(c) = collector(
        || PmcCollector::cgroups(&["cpu-clock", "page-faults"], &cg.dir.to_string_lossy()),
        "the cgroups' counters",
    ) else {
        return;
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(c.max_targets(5)));
    let render =
        || pmc_exporter::render(&registry, pmc_exporter::Format::PrometheusText).expect("render");
    let label = |d: &str| format!("/{}", cg.rel(d)).trim_end_matches('/').to_string();
    let cpu = "pmc_cgroup_cpu_clock_seconds_total";
    let first = render();
    for d in ["", "a", "b", "c"] {
        assert!(series(&first, cpu, &label(d)).is_some(), "{d}: {first}");
    }
    churn(&cg.dir.join("a"), 8);
    churn(&cg.dir.join("b"), 8);
    // Created after the first scrape: found by the next one, before its work.
    std::fs::create_dir(cg.dir.join("d")).expect("mkdir d");
    // Removed: its series goes.
    std::fs::remove_dir(cg.dir.join("c")).expect("rmdir c");
    let second = render();
    assert!(series(&second, cpu, &label("d")).is_some(), "{second}");
    assert!(series(&second, cpu, &label("c")).is_none(), "{second}");
    let old_b = series(&second, cpu, &label("b")).unwrap_or(-1.0);
    let old_b_usage = usage_secs(&cg.dir.join("b"));
    churn(&cg.dir.join("d"), 8);
    // Removed and created again (another inode): reopened, its series from 0.
    std::fs::remove_dir(cg.dir.join("b")).expect("rmdir b");
    std::fs::create_dir(cg.dir.join("b")).expect("mkdir b again");
    // Over the cap (5: the root, a, b, d, e): f and g refused, counted.
    for d in ["e", "f", "g"] {
        std::fs::create_dir(cg.dir.join(d)).expect("mkdir");
    }
    let third = render();
    assert!(
        series(&third, cpu, &label("b")).unwrap_or(1.0) < 0.005,
        "the recreated b continues the old one: {third}"
    );
    churn(&cg.dir.join("b"), 8);
    let last = render();
    let mut rows = Vec::new();
    for d in ["", "a", "b", "d"] {
        let exported = series(&last, cpu, &label(d)).unwrap_or(f64::NAN);
        let kernel = usage_secs(&cg.dir.join(d));
        rows.push((label(d), exported, kernel));
    }
    rows.push((
        format!("{} (before removal)", label("b")),
        old_b,
        old_b_usage,
    ));
    let refused = last
        .lines()
        .find_map(|l| l.strip_prefix("pmc_cgroup_exporter_cgroups_refused_total "))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(-1.0);
    let reopened = last
        .lines()
        .find_map(|l| l.strip_prefix("pmc_cgroup_exporter_cgroups_reopened_total "))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(-1.0);
    for (l, e, k) in &rows {
        pmc_testkit::row!(
            "JUDGE cgroup {l}: exported cpu-clock {e:.4} s, cpu.stat usage_usec {k:.4} s, ratio {:.4}",
            e / k
        );
    }
    pmc_testkit::row!(
        "JUDGE cgroups over the cap refused: {refused} (f, g at two scrapes); reopened: {reopened}"
    );
    for (l, e, k) in rows {
        assert!(k > 0.05, "{l}: too little work to judge ({k} s)");
        assert!(
            (e / k - 1.0).abs() <= 0.05,
            "{l}: exported {e} s, cpu.stat {k} s"
        );
    }
    assert_eq!(refused, 4.0, "{last}");
    assert_eq!(reopened, 1.0, "{last}");
    assert_eq!(last.matches(&format!("{cpu}{{")).count(), 5, "{last}");
    drop(registry);
}
