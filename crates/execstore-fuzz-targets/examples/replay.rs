//! Runs one fuzz target on the given files, as the libFuzzer target would, on stable:
//! `cargo run -p execstore-fuzz-targets --example replay -- NAME FILE...`
//! (`EXECSTORE_FUZZ_VERBOSE=1` prints the differential target's calls).

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().expect("usage: replay NAME FILE...");
    let (_, target) = execstore_fuzz_targets::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no target {name}"));
    for file in args {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        target(&data);
        println!("{file}: ok");
    }
}
