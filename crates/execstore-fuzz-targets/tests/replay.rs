//! The stable smoke run of every fuzz target: the committed seed corpus
//! (`fuzz/corpus/NAME/*`) and every finding (`fuzz/regressions/NAME/*`) replayed through
//! the very functions the libFuzzer targets call. A failing file is named.

use std::path::{Path, PathBuf};

use execstore_fuzz_targets::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted (none if it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `target` on each file; the names of the files it failed on.
fn replay(target: fn(&[u8]), files: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for file in files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if std::panic::catch_unwind(|| target(&data)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    failed
}

#[test]
fn every_target_has_a_seed_corpus_and_passes_it() {
    let mut failed = Vec::new();
    for (name, target) in TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(seeds.len() >= 5, "fuzz/corpus/{name} holds {} seeds", seeds.len());
        failed.extend(replay(*target, &seeds));
        println!("{name}: {} seeds replayed", seeds.len());
    }
    assert!(failed.is_empty(), "seeds failing: {failed:#?}");
}

#[test]
fn every_finding_stays_fixed() {
    let mut failed = Vec::new();
    let mut count = 0;
    for (name, target) in TARGETS {
        let found = files(&fuzz_dir().join("regressions").join(name));
        count += found.len();
        failed.extend(replay(*target, &found));
    }
    println!("{count} findings replayed");
    assert!(failed.is_empty(), "findings failing again: {failed:#?}");
}

#[test]
fn every_fuzz_target_calls_its_function() {
    // fuzz/fuzz_targets/NAME.rs exists for each target, calls it, and is a [[bin]] of fuzz/.
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        let path = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            source.contains(&format!("execstore_fuzz_targets::{name}(")),
            "{} calls execstore_fuzz_targets::{name}",
            path.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml lists {name}"
        );
    }
}
