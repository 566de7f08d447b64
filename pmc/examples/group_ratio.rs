//! Two events scheduled together, and a ratio between them: instructions
//! per cycle where the machine has a PMU, page faults per millisecond of
//! CPU time where it does not.
//!
//! `cargo run -p pmc --example group_ratio`
use pmc::{Allocation, Backend, Group, GroupSpec, Member, Target};

fn work() -> u64 {
    let v: Vec<u64> = (0..2_000_000).collect();
    v.iter().sum()
}

fn main() -> pmc::Result<()> {
    let backend = pmc::Native::open()?;
    let hw = ["cycles", "instructions"];
    let sw = ["task-clock", "page-faults"];
    // Each member gets a typed handle; readings are looked up by it.
    let spec = |names: &[&str]| -> pmc::Result<(GroupSpec, Member, Member)> {
        let mut spec = GroupSpec::new();
        let a = spec.add(Allocation::counting(names[0].parse()?));
        let b = spec.add(Allocation::counting(names[1].parse()?));
        Ok((spec, a, b))
    };
    let (hw_spec, cycles, insns) = spec(&hw)?;
    let (names, mut group, a, b) = match backend.allocate_group(&hw_spec) {
        Ok(g) => (hw, g, cycles, insns),
        Err(e) => {
            eprintln!(
                "no hardware counters here ({}); using software events",
                e.message()
            );
            let (sw_spec, clock, faults) = spec(&sw)?;
            (sw, backend.allocate_group(&sw_spec)?, clock, faults)
        }
    };
    group.attach(Target::Current)?;
    group.start()?;
    let sum = work();
    group.stop()?;
    let r = group.read_members()?;
    for (m, name) in [(a, names[0]), (b, names[1])] {
        println!("{:>14} {name}", r[m].scaled().unwrap_or(0));
    }
    let ratio = r.ratio(b, a).unwrap_or(0.0);
    if names == hw {
        println!("{ratio:>14.2} insn per cycle");
    } else {
        println!("{:>14.2} page faults per ms", ratio * 1e6);
    }
    println!("(sum {sum})");
    Ok(())
}
