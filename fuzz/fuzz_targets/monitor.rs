#![no_main]
// The body is execstore_fuzz_targets::monitor (crates/execstore-fuzz-targets/src/monitor.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| execstore_fuzz_targets::monitor(data));
