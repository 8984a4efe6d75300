#![no_main]
// The body is execstore_fuzz_targets::ingest (crates/execstore-fuzz-targets/src/ingest.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| execstore_fuzz_targets::ingest(data));
