//! The only part of pmc-core that may use `unsafe`: launching a command
//! paused before `exec`, which needs `fork(2)` (Linux and FreeBSD, the
//! systems with a backend).
#![allow(unsafe_code)]

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub mod launch;
pub mod process;
