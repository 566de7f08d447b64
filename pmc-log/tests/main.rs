//! pmc-log integration tests: one test binary.

mod util;

mod damage;
mod export;
mod fuzz_corpus;
mod hwpmc;
mod hwpmc_stream;
mod open_any;
mod perf_data;
mod roundtrip;
