//! The C ABI: everything `<pmc.h>`, `<pmclog.h>`, `<sys/pmc.h>` and
//! `<sys/pmclog.h>` declare, generated into [`generated`] from the one table
//! the headers are generated from (`libpmc/abi/headers.toml`; C enums are
//! `u32` constants there), and the `*Arg` wrappers C passes enums as (a
//! transparent `u32`, so a value outside the enum never becomes an invalid
//! Rust enum; cbindgen names each `enum pmc_mode` and so on, which
//! `tests/header.rs` checks against the headers' prototypes).

#![allow(non_camel_case_types)]

#[rustfmt::skip]
pub mod generated;
pub use generated::*;

/// Extension: events this library names that have no fixed code (Linux's
/// tracepoints, raw and PMU-specific events) get codes from here on, one per
/// distinct name as they are met; `pmc_name_of_event` names them.
pub const PMC_EV_LINUX_FIRST: u32 = 0x30000;

/// A `enum pmc_mode` as C passes it (any 32-bit value).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModeArg(pub u32);
/// A `enum pmc_class` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassArg(pub u32);
/// A `enum pmc_state` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateArg(pub u32);
/// A `enum pmc_disp` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispArg(pub u32);
/// A `enum pmc_event` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventArg(pub u32);
/// A `enum pmc_cputype` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTypeArg(pub u32);
/// A `enum pmc_caps` as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapsArg(pub u32);

/// Whether `mode` is a sampling mode (`PMC_IS_SAMPLING_MODE`).
pub const fn is_sampling_mode(mode: u32) -> bool {
    mode == PMC_MODE_SS || mode == PMC_MODE_TS
}

/// Whether `mode` is a system mode (`PMC_IS_SYSTEM_MODE`).
pub const fn is_system_mode(mode: u32) -> bool {
    mode == PMC_MODE_SS || mode == PMC_MODE_SC
}
