//! Count a child process from its exec, with the processes it starts.
//!
//! `cargo run -p pmc --example child_process -- ls -R /usr/share/doc`
use pmc::{Allocation, Backend, Pmc, Target};
use std::ffi::OsString;

fn main() -> pmc::Result<()> {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        args = vec![
            "sh".into(),
            "-c".into(),
            "ls -R /usr/share/doc > /dev/null".into(),
        ];
    }
    let backend = pmc::Native::open()?;
    let mut clock = backend.allocate(&Allocation::counting("task-clock".parse()?).descendants())?;
    // The child waits before exec until it is resumed, so nothing it runs
    // is missed; counting starts at its exec.
    let mut child = pmc::launch::PausedChild::spawn(&args[0], &args[1..])?;
    clock.attach(Target::Exec(child.pid()))?;
    clock.start()?;
    child.resume()?;
    let status = child.wait()?;
    clock.stop()?;
    let ns = clock.read()?.scaled().unwrap_or(0);
    println!(
        "{:.3} ms of CPU in {:?} and its children ({status})",
        ns as f64 / 1e6,
        args
    );
    Ok(())
}
