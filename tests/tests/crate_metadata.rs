//! The crates as crates.io takes them: every workspace crate is either published, with the
//! metadata a crates.io page shows (description, license, repository, homepage, its own
//! README, keywords, categories, rust-version) and both license files in its package, or
//! marked `publish = false`. A published crate depends on the others by version as well as
//! path, and includes nothing from outside its folder (`cargo package` would leave it out:
//! the CLI's monitor UI once was). `scripts/lib/package.sh` then packs and builds them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The crates meant for crates.io; every other member says `publish = false`.
const PUBLISHED: &[&str] = &[
    "execstore",
    "execstore-any",
    "execstore-cli",
    "execstore-monitor-api",
    "execstore-postgres",
    "execstore-sqlite",
    "execstore-tokio",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `cargo metadata --no-deps` of the workspace: the manifests as cargo reads them, with
/// the workspace's inherited values filled in.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn text(p: &Value, key: &str) -> String {
    p[key].as_str().unwrap_or_default().to_owned()
}

/// What is wrong with one package's metadata, if anything.
fn problems(p: &Value, members: &[String]) -> Vec<String> {
    let name = text(p, "name");
    let dir = Path::new(p["manifest_path"].as_str().expect("a manifest path"))
        .parent()
        .expect("a folder")
        .to_path_buf();
    let published = p["publish"].is_null();
    let mut out = Vec::new();
    let mut bad = |what: String| out.push(format!("{name}: {what}"));
    if PUBLISHED.contains(&name.as_str()) != published {
        bad(if published {
            "is published but not in PUBLISHED: add it there, or `publish = false`".into()
        } else {
            "is in PUBLISHED but says `publish = false`".into()
        });
    }
    if !published {
        return out;
    }
    if text(p, "description").len() < 20 {
        bad("no description".into());
    }
    if text(p, "license") != "MIT OR Apache-2.0" {
        bad(format!("license {:?}, not MIT OR Apache-2.0", p["license"]));
    }
    for key in ["repository", "homepage"] {
        let url = text(p, key);
        if !url.starts_with("https://") || url.contains(".invalid") || url.contains("example") {
            bad(format!("{key} {url:?} is not a real https address"));
        }
    }
    if text(p, "rust_version").is_empty() {
        bad("no rust-version".into());
    }
    match p["readme"].as_str() {
        Some(readme) if dir.join(readme).is_file() && dir.join(readme).starts_with(&dir) => {}
        other => bad(format!("readme {other:?} is not a file in its folder")),
    }
    let keywords = p["keywords"].as_array().cloned().unwrap_or_default();
    if keywords.is_empty() || keywords.len() > 5 {
        bad(format!("{} keywords (crates.io takes 1 to 5)", keywords.len()));
    }
    for k in &keywords {
        let k = k.as_str().unwrap_or_default();
        let ok = k.len() <= 20
            && k.starts_with(|c: char| c.is_ascii_alphabetic())
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            bad(format!("keyword {k:?} is not one crates.io takes"));
        }
    }
    if p["categories"].as_array().is_none_or(|c| c.is_empty()) {
        bad("no categories".into());
    }
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let ours = fs::read(dir.join(license)).ok();
        let root_copy = fs::read(root().join(license)).ok();
        if root_copy.is_none() || ours != root_copy {
            bad(format!("{license} is missing or differs from the root's"));
        }
    }
    for dep in p["dependencies"].as_array().into_iter().flatten() {
        let dep_name = text(dep, "name");
        let dev = dep["kind"].as_str() == Some("dev");
        if dev || !members.contains(&dep_name) {
            continue;
        }
        if text(dep, "req") == "*" {
            bad(format!(
                "depends on {dep_name} by path only (crates.io needs a version)"
            ));
        }
        if !PUBLISHED.contains(&dep_name.as_str()) {
            bad(format!("depends on {dep_name}, which is not published"));
        }
    }
    for escape in escaping_includes(&dir) {
        bad(escape);
    }
    out
}

/// Every `include_str!`, `include_bytes!` or `#[path]` of a crate's `src/` or `build.rs`
/// that names a file outside the crate's folder (left out of its package).
fn escaping_includes(dir: &Path) -> Vec<String> {
    let mut files = vec![dir.join("build.rs")];
    collect_rs(&dir.join("src"), &mut files);
    let mut out = Vec::new();
    for file in files {
        let Ok(source) = fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in source.lines().enumerate() {
            for marker in ["include_str!(\"", "include_bytes!(\"", "#[path = \""] {
                let Some(start) = line.find(marker) else { continue };
                let rest = &line[start + marker.len()..];
                let Some(end) = rest.find('"') else { continue };
                let target = file.parent().expect("a folder").join(&rest[..end]);
                if !normalize(&target).starts_with(dir) {
                    out.push(format!(
                        "{}:{} includes {:?}, outside the crate's package",
                        file.strip_prefix(root()).unwrap_or(&file).display(),
                        n + 1,
                        &rest[..end]
                    ));
                }
            }
        }
    }
    out
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_crate_is_ready_for_crates_io_or_marked_unpublished() {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let members: Vec<String> = packages.iter().map(|p| text(p, "name")).collect();
    for name in PUBLISHED {
        assert!(
            members.contains(&name.to_string()),
            "{name} is not a workspace member"
        );
    }
    let all: Vec<String> = packages.iter().flat_map(|p| problems(p, &members)).collect();
    assert!(all.is_empty(), "not ready for crates.io:\n{}", all.join("\n"));
}

#[test]
fn the_check_sees_what_it_checks() {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let members: Vec<String> = packages.iter().map(|p| text(p, "name")).collect();
    let cli = packages
        .iter()
        .find(|p| p["name"] == "execstore-cli")
        .expect("the CLI");
    // The CLI with the workspace's placeholder repository, no keywords, a path-only
    // dependency and publish = false would each be found.
    let mut broken = cli.clone();
    broken["repository"] = "https://example.invalid/execstore".into();
    broken["keywords"] = serde_json::json!([]);
    broken["dependencies"] = serde_json::json!([{"name": "execstore", "req": "*", "kind": null}]);
    let found = problems(&broken, &members).join("\n");
    for want in ["repository", "keywords", "by path only"] {
        assert!(found.contains(want), "missed {want}: {found}");
    }
    let mut hidden = cli.clone();
    hidden["publish"] = serde_json::json!([]);
    assert!(problems(&hidden, &members).join("\n").contains("publish = false"));
    // An include reaching out of the crate is seen.
    let dir = tempfile::tempdir().expect("a temp dir");
    fs::create_dir_all(dir.path().join("src")).expect("src/");
    fs::write(
        dir.path().join("src/lib.rs"),
        "const A: &str = include_str!(\"../../web/a.js\");\n",
    )
    .expect("lib.rs");
    let found = escaping_includes(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
}
