//! cargo fuzz run pmclog_c
#![no_main]

#[path = "../harness_capi.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::pmclog_c(data);
});
