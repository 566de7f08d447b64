//! cargo fuzz run perf_ring
#![no_main]

#[path = "../harness_pmc.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::perf_ring(data));
