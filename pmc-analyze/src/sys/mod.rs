//! The crate's only `unsafe`: mapping object files read-only (see [`map`]).

pub(crate) mod map;
