//! The HTTP server against clients nobody controls, on 127.0.0.1 only, bounded in count and
//! time: thousands of idle connections, slowloris headers, half-closed clients, clients that pipeline requests
//! and never reads, other methods, pipelining, a request body, keep-alive, and the process out
//! of file descriptors. Throughout, a well-behaved client scrapes; its latency, the
//! process's threads and its memory (`/proc/self/status`) are the judges.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// `Threads` and `VmRSS` (KiB) of /proc/self/status.
fn status() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

/// A probe scrape: the phase it ran in, its latency or why it failed.
type Probe = (String, Result<Scrape, String>);

/// A probe scrape's latency: to the connection (the kernel's handshake, which waits on the
/// listen queue, not on the server), and in all.
#[derive(Debug, Clone, Copy)]
struct Scrape {
    connect: Duration,
    total: Duration,
}

/// CPU time of this process so far, in seconds (getrusage).
fn cpu_secs() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

/// One response read from `s`: (status code, headers, body).
fn read_response(s: &mut TcpStream) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok((code, head, body))
}

fn request(path: &str, method: &str, extra: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n")
}

/// A well-behaved scrape on a new connection: its latency, or the reason it failed.
fn scrape(addr: &str) -> Result<Scrape, String> {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let connect = t.elapsed();
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    s.write_all(request("/metrics", "GET", "").as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let (code, _, body) = read_response(&mut s).map_err(|e| format!("read: {e}"))?;
    if code != 200
        || !body.ends_with(b"# EOF\n") && !String::from_utf8_lossy(&body).contains("jobs_total")
    {
        return Err(format!("status {code}, {} bytes", body.len()));
    }
    Ok(Scrape {
        connect,
        total: t.elapsed(),
    })
}

/// The value of an unlabelled series in a text exposition.
fn value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

fn metrics(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).ok();
    s.write_all(request("/metrics", "GET", "").as_bytes())
        .expect("write");
    let (_, _, body) = read_response(&mut s).expect("read");
    String::from_utf8_lossy(&body).into_owned()
}

#[test]
fn hostile_clients_cannot_stop_a_well_behaved_scrape() {
    let started = Instant::now();
    let cpu0 = cpu_secs();
    // A registry of 1,000 series, about 45 KB of text a scrape.
    let mut registry = Registry::default();
    let jobs = Family::<Vec<(String, String)>, Counter>::default();
    for i in 0..1000 {
        jobs.get_or_create(&vec![("worker".to_string(), format!("w{i:05}"))])
            .inc_by(i);
    }
    registry.register("jobs", "Jobs done", jobs);
    let limits = pmc_exporter::Limits {
        max_connections: 256,
        header_timeout: Duration::from_secs(1),
        io_timeout: Duration::from_secs(1),
        max_pending: 256,
    };
    let listener = pmc_exporter::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1")
        .limits(limits);
    let addr = listener.address();
    let (threads0, rss0) = status();
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let server = std::thread::spawn(move || {
        listener.serve(&registry, &|| s.load(Ordering::Relaxed));
    });

    // The well-behaved client: a scrape every 20 ms until told to stop, on its own thread.
    let lat: Arc<Mutex<Vec<Probe>>> = Arc::default();
    let phase = Arc::new(Mutex::new(String::from("baseline")));
    let probe_stop = Arc::new(AtomicBool::new(false));
    let probe = {
        let (lat, phase, stop, addr) = (
            Arc::clone(&lat),
            Arc::clone(&phase),
            Arc::clone(&probe_stop),
            addr.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let r = scrape(&addr);
                let p = phase.lock().map(|p| p.clone()).unwrap_or_default();
                if let Ok(mut l) = lat.lock() {
                    l.push((p, r));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let set_phase = |p: &str| {
        if let Ok(mut g) = phase.lock() {
            *g = p.to_string();
        }
    };
    let mut peak = (0, 0);
    let mut sample = || {
        let (t, r) = status();
        peak = (peak.0.max(t), peak.1.max(r));
    };
    std::thread::sleep(Duration::from_millis(300));

    // 2,000 idle connections (nothing sent), held.
    set_phase("2000 idle connections");
    let mut idle = Vec::new();
    for _ in 0..2000 {
        if let Ok(s) = TcpStream::connect(&addr) {
            idle.push(s);
        }
    }
    sample();
    std::thread::sleep(Duration::from_millis(300));
    sample();

    // 300 slowloris clients: a request head never finished, one byte at a time.
    set_phase("300 slowloris + idle");
    let mut slow: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    for s in &mut slow {
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ");
    }
    for _ in 0..6 {
        for s in &mut slow {
            let _ = s.write_all(b"a");
        }
        std::thread::sleep(Duration::from_millis(250));
        sample();
    }

    // 300 half-closed clients: a request sent, their side shut, nothing ever read.
    set_phase("300 half-closed + slowloris + idle");
    let mut half = Vec::new();
    for _ in 0..300 {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let _ = s.write_all(request("/metrics", "GET", "").as_bytes());
            let _ = s.shutdown(std::net::Shutdown::Write);
            half.push(s);
        }
    }
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(250));
        sample();
    }

    // 20 clients that pipeline 200 scrapes each and never read (about 180 MB of responses
    // asked for).
    set_phase("20 clients pipelining, never reading");
    let mut deaf = Vec::new();
    for _ in 0..20 {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let many = request("/metrics", "GET", "").repeat(200);
            let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = s.write_all(many.as_bytes());
            deaf.push(s);
        }
    }
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(250));
        sample();
    }
    drop(idle);
    drop(slow);
    drop(half);
    set_phase("after");
    std::thread::sleep(Duration::from_millis(300));

    // Other methods: 405 with Allow; a body: 413.
    for m in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"] {
        let mut s = TcpStream::connect(&addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).ok();
        s.write_all(request("/metrics", m, "").as_bytes())
            .expect("write");
        let (code, head, _) = read_response(&mut s).expect("a response");
        assert_eq!(code, 405, "{m}: {head}");
        assert!(
            head.to_ascii_lowercase().contains("allow: get, head"),
            "{m}: {head}"
        );
    }
    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).ok();
    s.write_all(request("/metrics", "GET", "Content-Length: 100000000\r\n").as_bytes())
        .expect("write");
    let (code, _, _) = read_response(&mut s).expect("a response");
    assert_eq!(code, 413);
    // HEAD: the headers of a scrape, no body.
    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).ok();
    s.write_all(request("/metrics", "HEAD", "Connection: close\r\n").as_bytes())
        .expect("write");
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    assert!(
        all.starts_with(b"HTTP/1.1 200") && all.ends_with(b"\r\n\r\n"),
        "HEAD"
    );

    // Pipelining: three requests in one write, three answers in order.
    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).ok();
    let three = [
        request("/metrics", "GET", ""),
        request("/", "GET", ""),
        request("/nothing", "GET", ""),
    ]
    .concat();
    s.write_all(three.as_bytes()).expect("write");
    let codes: Vec<u16> = (0..3)
        .map(|_| read_response(&mut s).map(|r| r.0).unwrap_or(0))
        .collect();
    assert_eq!(codes, [200, 200, 404]);

    // Keep-alive: 20 scrapes back to back on one connection (no Nagle wait between them).
    let mut keep = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        s.write_all(request("/metrics", "GET", "").as_bytes())
            .expect("write");
        let (code, _, _) = read_response(&mut s).expect("keep-alive answer");
        assert_eq!(code, 200);
        keep.push(t.elapsed());
    }
    keep.sort();

    // gzip when accepted.
    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).ok();
    s.write_all(request("/metrics", "GET", "Accept-Encoding: gzip\r\n").as_bytes())
        .expect("write");
    let (_, head, body) = read_response(&mut s).expect("gzip answer");
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .expect("gunzip");
    assert!(text.contains("jobs_total{worker=\"w00999\"} 999"));
    let gz_ratio = body.len() as f64 / text.len() as f64;

    // Out of file descriptors: the soft limit lowered under what the connections need; the
    // listener survives its EMFILE and serves once descriptors are free again.
    set_phase("EMFILE");
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0) as u64;
    let (soft, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .expect("getrlimit");
    nix::sys::resource::setrlimit(
        nix::sys::resource::Resource::RLIMIT_NOFILE,
        open_fds + 150,
        hard,
    )
    .expect("setrlimit");
    let mut squeeze = Vec::new();
    for _ in 0..140 {
        match TcpStream::connect(&addr) {
            Ok(s) => squeeze.push(s),
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(squeeze);
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft, hard)
        .expect("setrlimit back");
    std::thread::sleep(Duration::from_millis(300));
    set_phase("after EMFILE");
    std::thread::sleep(Duration::from_millis(300));
    drop(deaf);

    probe_stop.store(true, Ordering::Relaxed);
    let _ = probe.join();
    let own = metrics(&addr);
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    let cpu = cpu_secs() - cpu0;

    let lat = lat.lock().map(|l| l.clone()).unwrap_or_default();
    let mut phases: Vec<String> = Vec::new();
    for (p, _) in &lat {
        if !phases.contains(p) {
            phases.push(p.clone());
        }
    }
    let mut all_ms = Vec::new();
    // The longest wait for an answer once connected, and for a connection (ms).
    let (mut answer_max, mut connect_max) = (0.0f64, 0.0f64);
    for p in &phases {
        let ok: Vec<Scrape> = lat
            .iter()
            .filter(|(q, _)| q == p)
            .filter_map(|(_, r)| r.as_ref().ok().copied())
            .collect();
        let mut ms: Vec<f64> = ok.iter().map(|d| d.total.as_secs_f64() * 1e3).collect();
        let connect_ms = ok
            .iter()
            .map(|d| d.connect.as_secs_f64() * 1e3)
            .fold(0.0, f64::max);
        let failed = lat.iter().filter(|(q, r)| q == p && r.is_err()).count();
        ms.sort_by(f64::total_cmp);
        let pct = |q: f64| {
            ms.get(((ms.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        pmc_testkit::row!(
            "JUDGE scrape latency during {p}: {} scrapes, {failed} failed, median {:.2} ms, p95 {:.2} ms, max {:.2} ms; longest connect {connect_ms:.2} ms",
            ms.len(),
            pct(0.5),
            pct(0.95),
            pct(1.0)
        );
        // Out of descriptors the probe's own connect waits too: reported, not judged.
        if !p.contains("EMFILE") || p.starts_with("after") {
            all_ms.extend(ms);
            connect_max = connect_max.max(connect_ms);
            answer_max = ok
                .iter()
                .map(|d| d.total.saturating_sub(d.connect).as_secs_f64() * 1e3)
                .fold(answer_max, f64::max);
        }
    }
    let (threads1, _) = status();
    let server_counts: Vec<String> = [
        "pmc_exporter_http_connections_accepted_total",
        "pmc_exporter_http_connections_evicted_total",
        "pmc_exporter_http_connections_refused_total",
        "pmc_exporter_http_accept_errors_total",
        "pmc_exporter_http_connections_open",
    ]
    .iter()
    .map(|n| {
        format!(
            "{} {}",
            n.trim_start_matches("pmc_exporter_http_"),
            value(&own, n).unwrap_or(-1.0)
        )
    })
    .collect();
    pmc_testkit::row!(
        "JUDGE server: {}; threads {threads0} before, peak {}, {threads1} after; VmRSS {} KiB before, peak {} KiB",
        server_counts.join(", "),
        peak.0,
        rss0,
        peak.1
    );
    pmc_testkit::row!(
        "JUDGE keep-alive: 20 scrapes on one connection, median {:.2} ms, max {:.2} ms; gzip {:.1}% of {} bytes; suite {:.1} s wall, {:.2} s CPU",
        keep[10].as_secs_f64() * 1e3,
        keep[19].as_secs_f64() * 1e3,
        gz_ratio * 100.0,
        text.len(),
        started.elapsed().as_secs_f64(),
        cpu
    );

    // While the soft limit is lowered, the probe shares this process's descriptors: its own
    // connect may fail with EMFILE (client side, not the server's doing).
    let failures: Vec<_> = lat
        .iter()
        .filter(|(p, r)| {
            r.as_ref()
                .is_err_and(|e| !(p == "EMFILE" && e.starts_with("connect:")))
        })
        .collect();
    assert!(failures.is_empty(), "failed scrapes: {failures:?}");
    all_ms.sort_by(f64::total_cmp);
    assert!(all_ms.len() >= 50, "{} scrapes", all_ms.len());
    let median = all_ms[all_ms.len() / 2];
    let over = all_ms.iter().filter(|&&m| m >= 100.0).count();
    // The bound is 100 ms; a loaded shared machine may stall any thread now and then, so a
    // few outliers are allowed, but not a blocked server (seconds: the 1-s timeouts).
    assert!(median < 100.0, "median scrape latency {median} ms");
    assert!(
        over * 20 <= all_ms.len(),
        "{over} of {} scrapes took 100 ms or more",
        all_ms.len()
    );
    // Blocked: an answer that waited for seconds (the 1-s timeouts) once connected. The
    // connection itself is the kernel's: while the test's own floods (2,000 connections at
    // once) fill the listen queue faster than the server drains it, a SYN is dropped and the
    // client's kernel sends it again 1 s later (then 2 s): seen once as a 1,060 ms scrape,
    // the server not in it. A connect is allowed two such retries; it counts in the
    // latencies above all the same.
    assert!(
        answer_max < 900.0,
        "a scrape waited {answer_max} ms for its answer: blocked"
    );
    assert!(
        connect_max < 3500.0,
        "a scrape waited {connect_max} ms to connect: the listen queue stayed full"
    );
    assert!(
        keep[10] < Duration::from_millis(40),
        "keep-alive scrapes wait: {keep:?}"
    );
    // Threads: the server's (its runtime, which encodes too; bcrypt's blocking one), and the
    // test's probe, whatever the load.
    assert!(
        peak.0 <= threads0 + 3,
        "threads {threads0} -> peak {}",
        peak.0
    );
    assert!(
        peak.1 <= rss0 + 64 * 1024,
        "VmRSS {rss0} -> peak {} KiB",
        peak.1
    );
    assert!(value(&own, "pmc_exporter_http_connections_open").unwrap_or(1e9) <= 256.0);
    assert!(value(&own, "pmc_exporter_http_connections_evicted_total").unwrap_or(0.0) > 0.0);
    assert!(
        value(&own, "pmc_exporter_http_accept_errors_total").unwrap_or(0.0) > 0.0,
        "{own}"
    );
}
