#![no_main]
// The body is execstore_fuzz_targets::pyjson (crates/execstore-fuzz-targets/src/pyjson.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| execstore_fuzz_targets::pyjson(data));
