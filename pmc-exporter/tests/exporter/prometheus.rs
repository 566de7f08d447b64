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
        "pmc_cpu_clock_seconds_total{cpu=\"0\"} ",
        "pmc_page_faults_total{cpu=\"0\"} ",
        "pmc_time_enabled_seconds_total{cpu=\"0\",event=\"cpu-clock\"} ",
        "pmc_process_task_clock_seconds_total ",
        "pmc_process_page_faults_total ",
        "pmc_process_time_running_seconds_total{event=\"page-faults\"} ",
        "# TYPE pmc_process_page_faults_total counter",
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
        om.contains("# UNIT pmc_cpu_clock_seconds seconds\n"),
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

    // cpu-clock per CPU: one CPU-second per second, busy or idle (the idle task's
    // time counts), judged on a busy one.
    let busy_stop = Arc::new(AtomicBool::new(false));
    let b = Arc::clone(&busy_stop);
    let busy = std::thread::spawn(move || {
        let mut x = 0u64;
        while !b.load(Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    });
    std::thread::sleep(Duration::from_secs(12));
    let rates = query(&prom, "rate(pmc_cpu_clock_seconds_total[10s])");
    busy_stop.store(true, Ordering::Relaxed);
    let _ = busy.join();
    pmc_testkit::row!(
        "JUDGE rate(pmc_cpu_clock_seconds_total[10s]), one CPU spinning (bound 1 +- 0.15):"
    );
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
    // A steady page-fault load of our own (1 MiB blocks: fresh mappings each time),
    // so both see mostly the same events during the window.
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let load = std::thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            touch_fresh_pages(256);
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    std::thread::sleep(Duration::from_secs(20));
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
    stop.store(true, Ordering::Relaxed);
    let _ = load.join();
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
    for (what, a, b, tol) in results {
        let ratio = a / b;
        assert!(
            (1.0 - tol..=1.0 + tol).contains(&ratio),
            "{what}: pmc {a} against node_exporter {b}"
        );
    }
}
