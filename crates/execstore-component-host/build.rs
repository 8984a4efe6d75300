//! Compile-time switches of the component tests, from the environment that also tells
//! them how to build the component (see scripts/lib/component.sh):
//! - `EXECSTORE_SKIP_COMPONENT=<reason>` compiles them out: they report as ignored, with
//!   the reason, on a machine that cannot build the wasm32-wasip2 guest;
//! - `EXECSTORE_COMPONENT_FEATURES` naming `sqlite` adds the behaviour suite over the
//!   component's SQLite backend.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(execstore_skip_component)");
    println!("cargo::rustc-check-cfg=cfg(execstore_component_sqlite)");
    println!("cargo::rerun-if-env-changed=EXECSTORE_SKIP_COMPONENT");
    println!("cargo::rerun-if-env-changed=EXECSTORE_COMPONENT_FEATURES");
    if std::env::var_os("EXECSTORE_SKIP_COMPONENT").is_some_and(|reason| !reason.is_empty()) {
        println!("cargo::rustc-cfg=execstore_skip_component");
    }
    let features = std::env::var("EXECSTORE_COMPONENT_FEATURES").unwrap_or_default();
    if features.split([',', ' ']).any(|f| f == "sqlite") {
        println!("cargo::rustc-cfg=execstore_component_sqlite");
    }
}
