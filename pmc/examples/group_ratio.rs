//! Two events scheduled together, and a ratio between them: instructions
//! per cycle where the machine has a PMU, page faults per millisecond of
//! CPU time where it does not.
//!
//! `cargo run -p pmc --example group_ratio`
use pmc::{Allocation, Backend, Group, Target};

fn work() -> u64 {
    let v: Vec<u64> = (0..2_000_000).collect();
    v.iter().sum()
}

fn main() -> pmc::Result<()> {
    let backend = pmc::Native::open()?;
    let hw = ["cycles", "instructions"];
    let sw = ["task-clock", "page-faults"];
    let alloc = |names: &[&str]| -> pmc::Result<Vec<Allocation>> {
        names
            .iter()
            .map(|n| Ok(Allocation::counting(n.parse()?)))
            .collect()
    };
    let (names, mut group) = match backend.allocate_group(&alloc(&hw)?) {
        Ok(g) => (hw, g),
        Err(e) => {
            eprintln!(
                "no hardware counters here ({}); using software events",
                e.message()
            );
            (sw, backend.allocate_group(&alloc(&sw)?)?)
        }
    };
    group.attach(Target::Current)?;
    group.start()?;
    let sum = work();
    group.stop()?;
    let r = group.read()?;
    let (a, b) = (r[0].scaled().unwrap_or(0), r[1].scaled().unwrap_or(0));
    println!("{a:>14} {}\n{b:>14} {}", names[0], names[1]);
    if names == hw {
        println!("{:>14.2} insn per cycle", b as f64 / a.max(1) as f64);
    } else {
        println!(
            "{:>14.2} page faults per ms",
            b as f64 / (a.max(1) as f64 / 1e6)
        );
    }
    println!("(sum {sum})");
    Ok(())
}
