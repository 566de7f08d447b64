use pmc::{Allocation, Backend, Pmc};

fn main() -> pmc::Result<()> {
    let backend = pmc::Native::open()?;
    let mut faults = backend.allocate(&Allocation::counting("page-faults".parse()?))?;
    faults.start()?; // an unattached process PMC attaches to this process, all its threads
    let buf = vec![7u8; 1 << 22];
    faults.stop()?;
    let r = faults.read()?;
    println!("{} page faults for {} bytes (ran {:?} of the time)", r.value, buf.len(), r.running_ratio());
    Ok(())
}
