//! The only part of pmc-process that may use `unsafe`: launching a command
//! paused before `exec`, which needs `fork(2)` (Linux and FreeBSD, the
//! systems with a backend), and listing and probing processes
//! (`process.rs`).
#![allow(unsafe_code)]

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod child;
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod session;
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub mod launch {
    //! Launch a command paused before `exec`, so counters can be attached first.
    //!
    //! This is how `perf stat` and `pmcstat` count a command from its first
    //! instruction: fork, let the child wait on a pipe, attach the PMCs to the
    //! child's pid (on Linux with `enable_on_exec`), then let it `exec`.
    //!
    //! `std::process::Command` cannot do this: its `spawn` waits until the child
    //! has exec'd (to report exec errors), so a child blocked before exec would
    //! deadlock it. We fork ourselves, doing no allocation between `fork` and
    //! `exec`, and report exec failures through a close-on-exec pipe as std does.

    pub use super::child::{Command, PausedChild, Stdio};
    pub use super::session::{Progress, Session};
}

/// What the crate root re-exports from here, where this system has it
/// (`pmc_process::launch` on Linux and FreeBSD): the OS choice stays in `sys/`.
pub(crate) mod exported {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    pub use super::launch;
}
pub(crate) mod process;
