//! pmcstat's integration tests, one test binary (`cargo test -p pmcstat --test cli`): each
//! module is a former test file of its own and runs `pmcstat` as a user would
//! (`common::pmcstat`). One binary links once; the modules' tests spawn pmcstat and never
//! count the test process itself, so sharing a process does not change what they measure.
//! A new file here is a `mod` line below.

mod common;

mod cli_analyze;
mod cli_attach;
mod cli_columns;
mod cli_dwarf;
mod cli_info;
mod cli_metrics;
mod cli_modes_names;
mod cli_options;
mod cli_pprof;
mod cli_sampling;
mod cli_stat_output;
mod cli_symbols;
mod cli_systemwide;
mod cli_usercallchain;
mod cli_write_calls;
