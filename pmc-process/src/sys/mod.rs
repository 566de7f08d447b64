//! The only part of pmc-process that may use `unsafe`: launching a command
//! paused before `exec`, which needs `fork(2)` (Linux and FreeBSD, the
//! systems with a backend), and listing and probing processes
//! (`process.rs`).
#![allow(unsafe_code)]

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub mod launch;
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod session;

/// What the crate root re-exports from here, where this system has it
/// (`pmc_process::launch` on Linux and FreeBSD): the OS choice stays in `sys/`.
pub(crate) mod exported {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    pub use super::launch;
}
pub(crate) mod process;
