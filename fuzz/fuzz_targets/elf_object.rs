//! cargo fuzz run elf_object
#![no_main]

#[path = "../harness_pmc.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::elf_object(data));
