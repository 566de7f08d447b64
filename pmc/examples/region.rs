//! Count a region of this program, including a thread it starts.
//!
//! `cargo run -p pmc --example region`
use std::time::{Duration, Instant};

fn spin(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    x
}

fn main() -> pmc::Result<()> {
    let region = pmc::Region::start(&["task-clock", "page-faults", "context-switches"])?;
    let worker = std::thread::spawn(|| spin(Duration::from_millis(100)));
    let here = spin(Duration::from_millis(50));
    let there = worker.join().expect("worker");
    let buf = vec![1u8; 8 << 20];
    for c in region.stop()? {
        match c.reading.scaled() {
            Some(v) => println!("{v:>14} {}", c.event),
            None => println!("{:>14} {}", "<not counted>", c.event),
        }
    }
    println!("(work: {here:x} {there:x}, {} bytes)", buf.len());
    Ok(())
}
