//! The calibrated workloads: each does a known amount of one thing and says
//! how much it did.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use crate::sys;

/// Whether [`insns`] retires exactly `2n` instructions and `n` branches
/// here (x86_64, aarch64); elsewhere the loop's counts are unknown.
pub(crate) const EXACT: bool = sys::EXACT_LOOP;

/// Runs the loop of `2n` user instructions and `n` branches (plus a
/// constant few of each, which a run with `n = 0` measures).
pub(crate) fn insns(n: u64) {
    sys::insn_loop(n);
}

/// Spins on the loop until the calling thread has used `ns` nanoseconds of
/// CPU (at most 20 times as long in wall-clock time, on a loaded machine),
/// calling `each` between chunks. Returns the CPU nanoseconds used.
pub(crate) fn spin_cpu(ns: u64, mut each: impl FnMut()) -> u64 {
    let Some(start) = sys::thread_cpu_ns() else {
        // No thread clock: spin by wall-clock time instead.
        let t = std::time::Instant::now();
        while t.elapsed().as_nanos() < u128::from(ns) {
            sys::insn_loop(100_000);
            each();
        }
        return ns;
    };
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_nanos(ns.saturating_mul(20));
    loop {
        sys::insn_loop(100_000);
        each();
        let used = sys::thread_cpu_ns().unwrap_or(start).saturating_sub(start);
        if used >= ns || std::time::Instant::now() >= deadline {
            return used;
        }
    }
}

/// The calling thread's CPU time, nanoseconds.
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    sys::thread_cpu_ns()
}

/// Writes one byte into each of `pages` freshly mapped pages (no huge
/// pages, so one page fault each).
pub(crate) fn touch_pages(pages: usize) -> std::io::Result<sys::Touched> {
    sys::touch_fresh_pages(pages)
}

/// `rounds` round trips of one byte between this thread and a second one
/// over a socket pair: each side blocks in `read` until the other writes,
/// so each round trip is at least two context switches. Returns the round
/// trips completed.
pub(crate) fn ping_pong(rounds: u64) -> std::io::Result<u64> {
    let (mut here, mut there) = UnixStream::pair()?;
    let peer = std::thread::Builder::new()
        .name("pmc-selftest-pong".into())
        .spawn(move || -> std::io::Result<()> {
            let mut b = [0u8; 1];
            loop {
                if there.read(&mut b)? == 0 {
                    return Ok(()); // the other side closed: done
                }
                there.write_all(&b)?;
            }
        })?;
    let mut done = 0;
    let mut b = [7u8; 1];
    let result = (|| -> std::io::Result<()> {
        for _ in 0..rounds {
            here.write_all(&b)?;
            here.read_exact(&mut b)?;
            done += 1;
        }
        Ok(())
    })();
    drop(here);
    let joined = peer
        .join()
        .map_err(|_| std::io::Error::other("the ping-pong thread panicked"))?;
    result.and(joined).map(|()| done)
}

/// Moves the calling thread between the CPUs it may use, `moves` times,
/// each move to a CPU other than the last; restores its affinity after.
/// Returns the moves made, or why none can be (one CPU, no affinity call).
pub(crate) fn migrate(moves: u64) -> Result<u64, String> {
    let Some(cpus) = sys::allowed_cpus() else {
        return Err("this OS gives the self-test no way to set CPU affinity".into());
    };
    if cpus.len() < 2 {
        return Err(format!(
            "the process may run on {} CPU only: there is nowhere to migrate to",
            cpus.len()
        ));
    }
    let mut made = 0;
    let mut err = None;
    for i in 0..moves {
        let cpu = cpus[(i as usize) % cpus.len()];
        match sys::set_affinity(&[cpu]) {
            Ok(()) => {
                made += 1;
                // Run a little there, so the move is not undone unobserved.
                sys::insn_loop(10_000);
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let restored = sys::set_affinity(&cpus);
    match (err, restored) {
        (Some(e), _) => Err(format!("sched_setaffinity failed after {made} moves: {e}")),
        (None, Err(e)) => Err(format!("could not restore the CPU affinity: {e}")),
        (None, Ok(())) => Ok(made),
    }
}
