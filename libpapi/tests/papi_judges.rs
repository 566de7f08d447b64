//! The judges of pmc's libpapi, all PAPI's own or the kernel's: one test
//! binary (each binary costs a link).
//!
//! - `header`: `include/papi.h` against Debian's papi.h (values, layouts,
//!   prototypes);
//! - `ctests`: PAPI's ctests and validation tests (Debian's papi-examples),
//!   built by `ci/papi-ctests.sh` against pmc's header and library and
//!   against Debian's real libpapi, side by side, and the programs built
//!   against Debian's header run on pmc's library by `LD_LIBRARY_PATH`;
//! - `tools`: Debian's papi-tools binaries, unmodified, on pmc's library;
//! - `counts`: C programs written as PAPI users write them (`tests/c/`),
//!   their counts against getrusage and fresh pages;
//! - `robust`: bad input at every entry point, in this process.
//!
//! Each needs a C compiler and Debian's PAPI packages (`ci/setup.sh`
//! installs libpapi-dev, papi-tools, papi-examples) and skips visibly
//! without them.
#![cfg(target_os = "linux")]

#[path = "judges/common.rs"]
mod common;
#[path = "judges/counts.rs"]
mod counts;
#[path = "judges/ctests.rs"]
mod ctests;
#[path = "judges/header.rs"]
mod header;
#[path = "judges/robust.rs"]
mod robust;
#[path = "judges/tools.rs"]
mod tools;
