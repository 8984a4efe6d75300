//! The error codes outside Rust follow the core's one list, `StoreError::CODES`: the wasm
//! package's JS errors (`crates/execstore-wasm/src/errors.rs`, one arm of fields per kind) and
//! their TypeScript declarations (`types.d.ts`, re-exported by the npm package's
//! `index.d.ts`) and documentation (its README's errors table), and the WIT interface's
//! `store-error` variant (`wit/store.wit`), and the Python package's exception classes (made
//! from `StoreError::CODES` in `crates/execstore-python/src/errors.rs`, exported by
//! `execstore/__init__.py`, declared in `_core.pyi`, documented in README.md or docs/). The
//! monitor API (`execstore-monitor-api`) and `GroupCommit` check theirs in their own unit
//! tests; `tests/python/reflexr/test_errors.py` checks the Python classes at run time.
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

/// `NOT_FOUND` -> `NotFoundError`: the Python class of a code.
fn python_class(code: &str) -> String {
    variant_name(code) + "Error"
}

#[test]
fn the_python_classes_are_made_from_codes_with_no_fallback_kind() {
    let errors = workspace_file("crates/execstore-python/src/errors.rs");
    assert!(
        errors.contains("Error::CODES"),
        "errors.rs makes its classes from StoreError::CODES"
    );
    for code in StoreError::CODES {
        let class = python_class(code);
        assert!(
            !errors.contains(&format!("{class}::new_err")),
            "errors.rs raises {class} from the CODES table, not by a hand-written arm"
        );
    }
    assert!(
        !errors.contains("_ => BackendError"),
        "no kind falls back to BackendError"
    );
}

#[test]
fn the_python_package_exports_and_declares_every_class() {
    let init = workspace_file("crates/execstore-python/python/execstore/__init__.py");
    let imported = between(&init, "from execstore._core import (", ")");
    let all = quoted(between(&init, "__all__ = [", "]"));
    let stubs = workspace_file("crates/execstore-python/python/execstore/_core.pyi");
    for code in StoreError::CODES {
        let class = python_class(code);
        assert!(
            imported.split([',', ' ', '\n']).any(|name| name == class),
            "execstore/__init__.py imports {class} for {code}"
        );
        assert!(all.contains(&class.as_str()), "execstore.__all__ has {class}");
        assert!(
            stubs.contains(&format!("class {class}(StoreError)")),
            "_core.pyi declares {class}(StoreError) for {code}"
        );
    }
}

/// README.md, or any docs/*.md once README is split into docs/.
fn user_docs() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut text = workspace_file("README.md");
    if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
        for entry in dir.flatten() {
            if entry.path().extension().is_some_and(|e| e == "md") {
                text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
            }
        }
    }
    text
}

#[test]
fn the_docs_name_every_code_and_its_python_class() {
    let docs = user_docs();
    for code in StoreError::CODES {
        let class = python_class(code);
        assert!(
            docs.contains(&format!("`{code}`")),
            "README.md or docs/*.md names the code {code}"
        );
        assert!(
            docs.contains(&format!("`execstore.{class}`")),
            "README.md or docs/*.md names the Python class execstore.{class} of {code}"
        );
    }
}
