//! Count every CPU for half a second, per CPU (needs CAP_PERFMON or root,
//! or perf_event_paranoid <= 0; the error says so otherwise).
//!
//! `cargo run -p pmc --example system_wide`
use pmc::{Allocation, Backend, Cpus, Instance, Pmc};

fn main() -> pmc::Result<()> {
    let backend = pmc::Native::open()?;
    let mut clock =
        backend.allocate(&Allocation::counting("cpu-clock".parse()?).system(Cpus::All))?;
    clock.start()?;
    std::thread::sleep(std::time::Duration::from_millis(500));
    clock.stop()?;
    for i in clock.read_instances()? {
        if let Instance::Cpu(cpu) = i.instance {
            println!("CPU {cpu}: {:.1} ms", i.reading.value as f64 / 1e6);
        }
    }
    println!("all: {:.1} ms", clock.read()?.value as f64 / 1e6);
    Ok(())
}
