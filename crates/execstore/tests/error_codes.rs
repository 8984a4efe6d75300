//! The error codes outside Rust follow the core's one list, `StoreError::CODES`: the wasm
//! package's JS errors (`crates/execstore-wasm/src/errors.rs`, one arm of fields per kind) and
//! their TypeScript declarations (`types.d.ts`, re-exported by the npm package's
//! `index.d.ts`) and documentation (its README's errors table), and the WIT interface's
//! `store-error` variant (`wit/store.wit`). The monitor API (`execstore-monitor-api`) and
//! `GroupCommit` check theirs in their own unit tests.
//!
//! These files are read as text from the workspace: the wasm crate builds for wasm32 only and
//! the WIT is compiled into the component, so a test here is where all of them meet.

use std::path::PathBuf;

use execstore::StoreError;

fn workspace_file(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The text between `start` and the first `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let len = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("no {end:?} after {start:?}"));
    &text[from..from + len]
}

/// The double-quoted strings of `text`, in order.
fn quoted(text: &str) -> Vec<&str> {
    text.split('"').skip(1).step_by(2).collect()
}

/// `ALREADY_EXISTS` -> `AlreadyExists` (the variant's name).
fn variant_name(code: &str) -> String {
    code.split('_')
        .map(|word| word[..1].to_owned() + &word[1..].to_ascii_lowercase())
        .collect()
}

#[test]
fn typescript_declares_every_code_with_its_error_interface() {
    let dts = workspace_file("crates/execstore-wasm/src/types.d.ts");
    let declared = quoted(between(&dts, "export type StoreErrorCode =", ";"));
    let mut expected: Vec<&str> = StoreError::CODES.to_vec();
    expected.push("LOCKED"); // the package's own: an OPFS store open elsewhere
    assert_eq!(declared, expected, "types.d.ts's StoreErrorCode");

    let union = between(&dts, "export type StoreError =", ";");
    let index = workspace_file("crates/execstore-wasm/npm/index.d.ts");
    let exported = between(&index, "export type {", "}");
    for code in &expected {
        let interface = format!("{}Error", variant_name(code));
        let body = between(
            &dts,
            &format!("export interface {interface} extends StoreErrorBase {{"),
            "}",
        );
        assert!(
            body.contains(&format!("code: \"{code}\";")),
            "{interface} has code {code}"
        );
        assert!(
            union.contains(&interface),
            "{interface} is in the StoreError union"
        );
        assert!(
            exported.split([',', ' ', '\n']).any(|name| name == interface),
            "the npm package's index.d.ts exports {interface}"
        );
    }
}

#[test]
fn the_npm_package_documents_every_code() {
    let readme = workspace_file("crates/execstore-wasm/npm/README.md");
    let errors = &readme[readme.find("## Errors").expect("an Errors section")..];
    let table = errors[2..].split("\n## ").next().unwrap_or(errors);
    for code in StoreError::CODES.iter().chain(&["LOCKED"]) {
        assert!(
            table.contains(&format!("| `{code}` |")),
            "the npm README's errors table has {code}"
        );
    }
}

#[test]
fn the_wasm_package_sets_the_fields_of_every_kind() {
    let errors = workspace_file("crates/execstore-wasm/src/errors.rs");
    let to_js = between(&errors, "pub fn to_js(&self) -> JsValue {", "\n    }\n");
    for code in StoreError::CODES {
        let arm = format!("StoreError::{} {{", variant_name(code));
        assert!(
            to_js.contains(&arm),
            "errors.rs's to_js has an arm `{arm} ..` for {code}"
        );
    }
}

#[test]
fn the_wit_store_error_has_one_case_per_code_in_order() {
    let wit = workspace_file("wit/store.wit");
    let cases: Vec<String> = between(&wit, "variant store-error {", "}")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .map(|line| line.split('(').next().unwrap_or(line).to_owned())
        .collect();
    let expected: Vec<String> = StoreError::CODES
        .iter()
        .map(|c| c.to_ascii_lowercase().replace('_', "-"))
        .collect();
    assert_eq!(cases, expected, "wit/store.wit's store-error cases");
}
