//! Count a child process from its exec, with the processes it starts; its
//! output goes to /dev/null, and the count is printed every second while it
//! runs.
//!
//! `cargo run -p pmc --example child_process -- ls -R /usr/share/doc`
use pmc::launch::{Command, Progress, Session, Stdio};
use pmc::{Allocation, Backend, Pmc};
use std::ffi::OsString;
use std::time::Duration;

fn main() -> pmc::Result<()> {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        args = vec!["ls".into(), "-R".into(), "/usr/share/doc".into()];
    }
    let backend = pmc::Native::open()?;
    let mut clock = backend.allocate(&Allocation::counting("task-clock".parse()?).descendants())?;
    // The child waits before exec until it is resumed, so nothing it runs
    // is missed; counting starts at its exec.
    let mut session = Session::launch(
        Command::new(&args[0])
            .args(&args[1..])
            .stdout(Stdio::null()),
    )?;
    session.attach(&mut clock)?;
    clock.start()?;
    session.resume()?;
    let status = loop {
        match session.wait(Duration::from_secs(1))? {
            Progress::Exited(status) => break status.to_string(),
            // Only a session on running processes ends this way.
            Progress::Gone => break "gone".to_owned(),
            Progress::Running => {
                let so_far = clock.read()?.scaled().unwrap_or(0);
                println!("... {:.3} ms", so_far as f64 / 1e6);
            }
        }
    };
    clock.stop()?;
    let ns = clock.read()?.scaled().unwrap_or(0);
    println!(
        "{:.3} ms of CPU in {:?} and its children ({status})",
        ns as f64 / 1e6,
        args
    );
    Ok(())
}
