//! Finding (building) the component, and a behaviour-suite harness over it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use execstore::ExecutionStore;
use execstore_component_host::{Backend, ComponentRuntime, ComponentStore};

/// Where the component is built: a target dir of its own, so this build never waits on
/// (or deadlocks with) the lock of the cargo running the tests.
fn component_target_dir() -> PathBuf {
    workspace_root().join("target").join("component")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// The component's cargo features, as `scripts/lib/component.sh` builds it:
/// `EXECSTORE_COMPONENT_FEATURES` (e.g. `sqlite`), empty by default.
fn component_features() -> String {
    std::env::var("EXECSTORE_COMPONENT_FEATURES").unwrap_or_default()
}

/// How SQLite's C compiles for wasm32-wasip2 with Debian's clang 14 and `wasi-libc`
/// (clang 14 does not know the `wasip2` triple and would use the host's headers; the C
/// ABI of wasi-libc is the same for both WASI versions). The same default as
/// scripts/lib/component.sh; a caller's own setting wins.
const SQLITE_CFLAGS: (&str, &str) = ("CFLAGS_wasm32_wasip2", "--target=wasm32-wasi");

/// Whether the component under test has the SQLite backend.
pub fn has_sqlite() -> bool {
    component_features().split([',', ' ']).any(|f| f == "sqlite")
}

/// Builds the component (a no-op when it is up to date) and returns its path; or the
/// component named by `EXECSTORE_COMPONENT_WASM`, as given.
fn component_path() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("EXECSTORE_COMPONENT_WASM") {
        return Ok(PathBuf::from(path));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let target_dir = component_target_dir();
    let mut build = Command::new(cargo);
    build
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("CARGO_BUILD_TARGET")
        .args(["rustc", "--locked", "--quiet", "-p", "execstore-component"])
        .args([
            "--target",
            "wasm32-wasip2",
            "--profile",
            "component",
            "--crate-type",
            "cdylib",
        ]);
    let features = component_features();
    if !features.is_empty() {
        build.args(["--features", &features]);
    }
    if has_sqlite() && std::env::var_os(SQLITE_CFLAGS.0).is_none() {
        build.env(SQLITE_CFLAGS.0, SQLITE_CFLAGS.1);
    }
    let output = build.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{build:?}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(target_dir.join("wasm32-wasip2/component/execstore_component.wasm"))
}

/// The compiled component, shared by every test of this binary (compiling it is the slow
/// part). A component that cannot be built or loaded fails every test that needs it.
pub fn runtime() -> &'static ComponentRuntime {
    static RUNTIME: OnceLock<Result<ComponentRuntime, String>> = OnceLock::new();
    let loaded = RUNTIME.get_or_init(|| {
        let path = component_path()?;
        ComponentRuntime::from_file(&path).map_err(|e| e.to_string())
    });
    match loaded {
        Ok(runtime) => runtime,
        Err(why) => panic!(
            "the execstore component is not available: {why}\n\
             Build it with `scripts/lib/component.sh` (component_install_tools, component_build): it \
             needs `rustup target add wasm32-wasip2`. Or set EXECSTORE_COMPONENT_WASM to a built \
             component, or EXECSTORE_SKIP_COMPONENT=<reason> to skip these tests."
        ),
    }
}

/// A fresh store in a fresh component instance.
pub fn open(backend: Backend) -> ComponentStore {
    runtime()
        .open(backend, Some(execstore::executions::DEFAULT_TRACE_MAX))
        .expect("open a store inside the component")
}

/// The behaviour suite's harness: a store inside the component (which cannot be reopened:
/// its backends are in memory).
pub struct Harness(pub ComponentStore);

impl Harness {
    /// A fresh store on `backend`.
    pub fn new(backend: Backend) -> Self {
        Harness(open(backend))
    }
}

impl execstore::conformance::executions::Harness for Harness {
    fn store(&self) -> &dyn ExecutionStore {
        &self.0
    }

    fn reopen(&mut self) -> bool {
        false
    }
}
