#![no_main]
// The body is execstore_fuzz_targets::cursor (crates/execstore-fuzz-targets/src/cursor.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| execstore_fuzz_targets::cursor(data));
