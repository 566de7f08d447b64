//! Scrape cost: `pmcstat --metrics` against node_exporter's perf collector
//! (Debian's `prometheus-node-exporter --collector.perf`), the same software
//! events on every CPU, scraped alternately by this process.

use super::{have, row, vs, Opts};
use pmc_bench::{median, skipped, Row};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const S: &str = "metrics";
/// node_exporter's default software profilers, which pmc counts under the same names.
const EVENTS: [&str; 5] = [
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
];

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Option<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .ok()
}

/// One `GET /metrics`: the body's length, or None.
fn scrape(addr: &str) -> Option<usize> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).ok()?;
    body.starts_with(b"HTTP/1.").then_some(body.len())
}

/// User + system CPU of a process and its threads, dead ones included, in ms.
fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // In clock ticks of USER_HZ, which is 100 on every Linux architecture pmc runs on.
    Some(ticks * 10.0)
}

fn wait_up(addr: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if scrape(addr).is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// `n` scrapes: (median wall ms per scrape, exporter CPU ms per scrape).
fn round(addr: &str, pid: u32, n: usize) -> Option<(f64, f64)> {
    let cpu0 = cpu_ms(pid)?;
    let mut wall = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        scrape(addr)?;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let cpu = (cpu_ms(pid)? - cpu0) / n as f64;
    Some((median(&mut wall), cpu))
}

pub(crate) fn bench_metrics(o: &Opts, rows: &mut Vec<Row>) {
    let Some(pmcstat) = o.pmcstat.clone().filter(|p| p.exists()) else {
        rows.push(skipped(
            S,
            "scrape cost",
            "no pmcstat binary: cargo build --release -p pmcstat",
        ));
        return;
    };
    let node = "prometheus-node-exporter";
    if !have(node, &["--version"]) {
        rows.push(skipped(
            S,
            "scrape cost",
            "no prometheus-node-exporter (ci/setup.sh installs it)",
        ));
        return;
    }
    let (Some(p1), Some(p2)) = (free_port(), free_port()) else {
        rows.push(skipped(S, "scrape cost", "no free local port"));
        return;
    };
    let (ours, theirs) = (format!("127.0.0.1:{p1}"), format!("127.0.0.1:{p2}"));
    let mut cmd = Command::new(&pmcstat);
    cmd.args(["--metrics", &ours]);
    for e in EVENTS {
        cmd.args(["-s", e]);
    }
    let spawn = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
            .map(Killed)
    };
    let Some(a) = spawn(&mut cmd) else {
        rows.push(skipped(S, "scrape cost", "pmcstat --metrics did not start"));
        return;
    };
    let Some(b) = spawn(
        Command::new(node)
            .args(["--collector.disable-defaults", "--collector.perf"])
            .arg(format!("--web.listen-address={theirs}")),
    ) else {
        rows.push(skipped(S, "scrape cost", "node_exporter did not start"));
        return;
    };
    if !wait_up(&ours) || !wait_up(&theirs) {
        rows.push(skipped(S, "scrape cost", "an exporter never answered"));
        return;
    }
    let (n, rounds) = if o.quick { (100, 3) } else { (400, 7) };
    let (mut wa, mut wb, mut ca, mut cb, mut lat_r, mut cpu_r) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let (Some((w1, c1)), Some((w2, c2))) =
            (round(&ours, a.0.id(), n), round(&theirs, b.0.id(), n))
        else {
            rows.push(skipped(S, "scrape cost", "a scrape failed"));
            return;
        };
        wa.push(w1);
        wb.push(w2);
        ca.push(c1 * 1e3);
        cb.push(c2 * 1e3);
        lat_r.push(w1 / w2.max(1e-9));
        cpu_r.push(c1 / c2.max(1e-9));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counters = (EVENTS.len() * cpus) as f64;
    let label = format!("{} events x {cpus} CPUs", EVENTS.len());
    let mut r = vs(
        row(
            S,
            &format!("scrape latency, pmcstat --metrics ({label})"),
            &wa,
            "ms",
        ),
        "node_exporter --collector.perf",
        &wa,
        &wb,
    );
    r.vs = Some(("node_exporter --collector.perf".into(), median(&mut lat_r)));
    r.note = format!("node_exporter {:.3} ms", median(&mut wb));
    rows.push(r);
    let mut r = row(S, &format!("exporter CPU per scrape ({label})"), &ca, "us");
    r.vs = Some(("node_exporter --collector.perf".into(), median(&mut cpu_r)));
    r.note = format!(
        "node_exporter {:.0} us; pmc {:.2} us per counter ({counters} counters)",
        median(&mut cb),
        median(&mut ca) / counters
    );
    rows.push(r);
    sweep(o, &pmcstat, &spawn, rows);
}

/// The software events of the per-counter sweep, the first `k` of them per exporter.
const SWEEP_EVENTS: [&str; 8] = [
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "cpu-clock",
    "alignment-faults",
    "emulation-faults",
];
const SWEEP: [usize; 4] = [1, 2, 4, 8];

/// The scrape cost per counter: one `pmcstat --metrics` per size (1, 2, 4 and 8
/// events on every CPU), all running at once and scraped in interleaved rounds
/// (so drift on a loaded machine falls on every size alike). Prints the exporter
/// CPU per scrape of each size against the 1-event one, and the least-squares line
/// through them: the cost of one more counter and the fixed cost of a scrape.
fn sweep(
    o: &Opts,
    pmcstat: &std::path::Path,
    spawn: &dyn Fn(&mut Command) -> Option<Killed>,
    rows: &mut Vec<Row>,
) {
    let mut exporters = Vec::new();
    for k in SWEEP {
        let Some(port) = free_port() else {
            rows.push(skipped(S, "scrape cost per counter", "no free local port"));
            return;
        };
        let addr = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(pmcstat);
        cmd.args(["--metrics", &addr]);
        for e in &SWEEP_EVENTS[..k] {
            cmd.args(["-s", e]);
        }
        let Some(child) = spawn(&mut cmd) else {
            rows.push(skipped(
                S,
                "scrape cost per counter",
                "pmcstat --metrics did not start",
            ));
            return;
        };
        if !wait_up(&addr) {
            rows.push(skipped(
                S,
                "scrape cost per counter",
                "an exporter never answered",
            ));
            return;
        }
        exporters.push((k, addr, child));
    }
    // CPU time comes in 10 ms ticks: n scrapes resolve 10 ms / n per scrape (10 us quick, 2.5 us full).
    let (n, rounds) = if o.quick { (1000, 3) } else { (4000, 5) };
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); SWEEP.len()];
    for r in 0..rounds {
        for j in 0..exporters.len() {
            let i = (r + j) % exporters.len();
            let (_, addr, child) = &exporters[i];
            let Some((_, c)) = round(addr, child.0.id(), n) else {
                rows.push(skipped(S, "scrape cost per counter", "a scrape failed"));
                return;
            };
            cpu[i].push(c * 1e3);
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let points: Vec<(f64, f64)> = exporters
        .iter()
        .zip(&cpu)
        .map(|((k, _, _), c)| ((k * cpus) as f64, median(&mut c.clone())))
        .collect();
    for ((k, _, _), c) in exporters.iter().zip(&cpu) {
        let r = vs(
            row(
                S,
                &format!("exporter CPU per scrape, {k} events x {cpus} CPUs"),
                c,
                "us",
            ),
            "1 event",
            c,
            &cpu[0],
        );
        rows.push(r);
    }
    let (slope, intercept) = least_squares(&points);
    let mut r = row(
        S,
        "scrape cost per counter (fit over 1-8 events)",
        &[slope],
        "us",
    );
    r.note = format!(
        "fixed cost {intercept:.0} us per scrape; points (counters, us): {}",
        points
            .iter()
            .map(|(x, y)| format!("({x:.0}, {y:.0})"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    rows.push(r);
}

/// The line `y = slope * x + intercept` nearest to `points` (least squares).
fn least_squares(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.len() < 2 {
        return (0.0, points.first().map_or(0.0, |p| p.1));
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, my - slope * mx)
}

#[cfg(test)]
mod tests {
    #[test]
    fn least_squares_finds_the_line() {
        let (m, b) = super::least_squares(&[(2.0, 25.0), (4.0, 35.0), (8.0, 55.0), (16.0, 95.0)]);
        assert!((m - 5.0).abs() < 1e-9 && (b - 15.0).abs() < 1e-9, "{m} {b}");
        assert_eq!(super::least_squares(&[(1.0, 7.0)]), (0.0, 7.0));
        assert_eq!(super::least_squares(&[]), (0.0, 0.0));
    }
}
