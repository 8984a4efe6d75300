//! Records the compiler's version (`$RUSTC --version`) for `execstore bench`'s `runtime` key,
//! and lists the monitor's views (`web/views/*.js`) for the server to embed
//! (`$OUT_DIR/web_views.rs`, included by `src/monitor/assets.rs`): a new view is served
//! without a line here or there.

use std::path::Path;
use std::process::Command;

fn main() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "rustc (unknown version)".to_owned());
    println!("cargo:rustc-env=EXECSTORE_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    web_views();
}

/// Writes `[(url path, include_str!(file)), ...]` of every `web/views/*.js`, sorted.
fn web_views() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("web/views");
    // A directory: cargo reruns this when any file in it changes, is added or removed.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("web/views/ is in the crate")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".js"))
        .collect();
    names.sort();
    let mut out = String::from("&[\n");
    for name in names {
        let path = dir.join(&name).canonicalize().expect("a view file");
        out.push_str(&format!(
            "    (\"/views/{name}\", include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    let target = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("web_views.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
