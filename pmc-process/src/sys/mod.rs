//! The only part of pmc-process that may use `unsafe`: launching a command
//! paused before `exec`, which needs `fork(2)` (Linux and FreeBSD, the
//! systems with a backend; `unsupported.rs` elsewhere: the same API, nothing
//! launched), and listing and probing processes (`process.rs`).
#![allow(unsafe_code)]

#[cfg(all(
    feature = "launch",
    any(target_os = "linux", target_os = "android", target_os = "freebsd")
))]
mod child;
#[cfg(all(
    feature = "launch",
    unix,
    not(any(target_os = "linux", target_os = "android", target_os = "freebsd"))
))]
#[path = "unsupported.rs"]
mod child;
#[cfg(all(feature = "launch", unix))]
mod session;
#[cfg(all(feature = "launch", unix))]
mod stdio;
#[cfg(all(feature = "launch", unix))]
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

    //!
    //! On a Unix without a backend (macOS) the same API builds, and launching
    //! answers `ErrorKind::Unsupported`.

    pub use super::child::{Command, PausedChild};
    pub use super::session::{Progress, Session};
    pub use super::stdio::Stdio;
}

/// What the crate root re-exports from here, where this system has it
/// (`pmc_process::launch` on every Unix, with the feature `launch`): the OS choice stays in
/// `sys/`.
pub(crate) mod exported {
    #[cfg(all(feature = "launch", unix))]
    pub use super::launch;
}
pub(crate) mod process;
