//! Sample this process into a pmc-log file, then read the log back and
//! print the hottest functions, symbolized.
//!
//! `cargo run -p pmc --example sample_and_read` (the reading half is pmc-analyze, as
//! `pmc::analyze` with pmc's feature `analyze`)
use pmc::analyze::top::{TopOptions, TopReport};
use pmc::analyze::{AnalyzeOptions, Profile};
use pmc::{Allocation, Backend, Pmc, Rate};

#[inline(never)]
fn hot(n: u64) -> u64 {
    (0..n).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("pmc-example-{}.pmclog", std::process::id()));
    let backend = pmc::Native::open()?;
    backend.configure_log(Box::new(std::io::BufWriter::new(std::fs::File::create(
        &path,
    )?)))?;
    let mut pmc = backend.allocate(&Allocation::sampling(
        "cpu-clock".parse()?,
        Rate::Frequency(2000),
    ))?;
    pmc.start()?; // an unattached process PMC samples this process
    let x = hot(300_000_000);
    pmc.stop()?;
    drop(pmc);
    backend.close_log()?;

    let profile = Profile::from_log(&std::fs::read(&path)?, AnalyzeOptions::default())?;
    let top = TopReport::build(
        &profile,
        &TopOptions {
            limit: 5,
            ..Default::default()
        },
    );
    top.write_text(&mut std::io::stdout())?;
    println!("(result {x}, log {})", path.display());
    std::fs::remove_file(&path)?;
    Ok(())
}
