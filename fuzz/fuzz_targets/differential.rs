#![no_main]
// The body is execstore_fuzz_targets::differential (crates/execstore-fuzz-targets/src/differential.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| execstore_fuzz_targets::differential(data));
