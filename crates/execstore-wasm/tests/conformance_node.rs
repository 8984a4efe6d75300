//! The core's behaviour suite in wasm32, under Node (`cargo test --target
//! wasm32-unknown-unknown --test conformance_node`, wasm-bindgen's runner): the memory store and the SQLite adapter with SQLite compiled to wasm,
//! in memory and (`node_file`, what `Store.openFile` opens) in a file through Node's `fs`;
//! and the workspace log's suite (`workspace_conformance`) on the core's in-memory workspace
//! storage, on the suite's `ManualClock` (what `WorkspaceStore.memory()` runs on).
//! (The checks that need threads or a clock do not run in wasm32; see `conformance_tests!`.)
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use execstore::conformance::executions::Harness;
use execstore::ExecutionStore;
use execstore_sqlite::{SqliteOptions, SqliteStore};

/// A private in-memory SQLite database (nothing to reopen).
struct SqliteMemory(SqliteStore);

impl Harness for SqliteMemory {
    fn store(&self) -> &dyn ExecutionStore {
        &self.0
    }
    fn reopen(&mut self) -> bool {
        false
    }
}

fn sqlite_memory(options: SqliteOptions) -> SqliteMemory {
    SqliteMemory(SqliteStore::open_in_memory(options).expect("open an in-memory SQLite database"))
}

/// New databases get 4 KiB pages, as natively: the wasm build of SQLite would make them 8 KiB,
/// which doubles what each commit writes.
#[wasm_bindgen_test::wasm_bindgen_test]
fn new_databases_have_4_kib_pages() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).expect("open");
    assert_eq!(store.page_size().expect("page size"), 4096);
}

/// The package's `memcmp` (what SQLite compares keys with) agrees with a byte-by-byte
/// comparison: the sign of the difference of the first differing bytes, as unsigned (C
/// promises only the sign), for every length around its 8-byte steps and a difference at
/// every position.
#[wasm_bindgen_test::wasm_bindgen_test]
fn memcmp_orders_as_bytes_do() {
    fn reference(a: &[u8], b: &[u8]) -> i32 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return i32::from(*x) - i32::from(*y);
            }
        }
        0
    }
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut cases = 0;
    for n in 0..40usize {
        let a: Vec<u8> = (0..n).map(|_| next() as u8).collect();
        for at in 0..=n {
            for delta in [1u8, 0x7f, 0x80, 0xff] {
                let mut b = a.clone();
                if at < n {
                    b[at] = b[at].wrapping_add(delta);
                }
                // SAFETY: both buffers hold n bytes.
                let got = unsafe { execstore_wasm::memcmp::memcmp(a.as_ptr(), b.as_ptr(), n) };
                let want = reference(&a, &b);
                assert_eq!(
                    got.signum(),
                    want.signum(),
                    "n {n}, differing at {at} by {delta}: {a:?} {b:?}"
                );
                cases += 1;
            }
        }
    }
    assert!(cases > 3000);
}

mod memory {
    execstore::conformance_tests!(wasm ephemeral: async { execstore::MemoryStore::new() });
}

mod sqlite_memory {
    execstore::conformance_tests!(wasm ephemeral: async {
        super::sqlite_memory(execstore_sqlite::SqliteOptions::new())
    });
}

mod sqlite_memory_harel_prefix {
    execstore::conformance_tests!(wasm ephemeral: async {
        super::sqlite_memory(execstore_sqlite::SqliteOptions::new().prefix("harel"))
    });
}

/// The workspace log's portable checks (those that need neither threads nor the system's
/// clock; see `workspace_conformance_tests!`).
mod workspace_memory {
    fn harness(
    ) -> execstore::conformance::workspace::SimpleHarness<execstore::workspace::MemoryWorkspaceStorage> {
        execstore::conformance::workspace::SimpleHarness::new(|clock| {
            execstore::workspace::MemoryWorkspaceStorage::new(std::sync::Arc::new(clock))
        })
    }

    execstore::workspace_conformance_tests!(wasm ephemeral: async { harness() });
}

/// The suite over a SQLite file on the local file system through the package's Node VFS
/// (`Store.openFile`): a fresh file per check in the system's temporary directory, removed
/// afterwards; `reopen` closes the connection and opens the file again (still owning it).
mod node_file {
    use execstore::conformance::executions::Harness;
    use execstore::ExecutionStore;
    use execstore_sqlite::SqliteOptions;
    use execstore_wasm::node_file::{install_node_file_system, FileOptions, NodeFileStore};
    use js_sys::{Function, Object, Reflect};
    use wasm_bindgen::{JsCast, JsValue};

    /// Node's module `name` (`process.getBuiltinModule`, Node >= 20.16).
    fn builtin(name: &str) -> JsValue {
        let process = Reflect::get(&js_sys::global(), &"process".into()).expect("process");
        let get: Function = Reflect::get(&process, &"getBuiltinModule".into())
            .expect("process.getBuiltinModule")
            .dyn_into()
            .expect("process.getBuiltinModule is a function (Node >= 20.16)");
        get.call1(&process, &name.into()).expect("a Node module")
    }

    pub(super) struct FileHarness {
        store: Option<NodeFileStore>,
        path: String,
    }

    impl Harness for FileHarness {
        fn store(&self) -> &dyn ExecutionStore {
            self.store
                .as_ref()
                .expect("open")
                .store()
                .expect("the store file is open")
        }
        fn reopen(&mut self) -> bool {
            self.store
                .as_mut()
                .expect("open")
                .reopen()
                .expect("reopen the store file");
            true
        }
    }

    impl Drop for FileHarness {
        fn drop(&mut self) {
            self.store = None;
            let fs = builtin("node:fs");
            let rm: Function = Reflect::get(&fs, &"rmSync".into())
                .expect("rmSync")
                .unchecked_into();
            let force = Object::new();
            let _ = Reflect::set(&force, &"force".into(), &JsValue::TRUE);
            for suffix in ["", "-wal", "-journal", "-lock"] {
                let _ = rm.call2(&fs, &format!("{}{suffix}", self.path).into(), &force);
            }
        }
    }

    pub(super) async fn open(prefix: Option<&str>) -> FileHarness {
        let host = Object::new();
        for (key, module) in [
            ("fs", "node:fs"),
            ("path", "node:path"),
            ("process", "node:process"),
        ] {
            Reflect::set(&host, &key.into(), &builtin(module)).expect("set");
        }
        install_node_file_system(host.into()).expect("install Node's file system");
        let os = builtin("node:os");
        let tmpdir: Function = Reflect::get(&os, &"tmpdir".into())
            .expect("tmpdir")
            .unchecked_into();
        let dir = tmpdir.call0(&os).expect("tmpdir").as_string().expect("a path");
        let unique = format!("{}{}", js_sys::Date::now(), (js_sys::Math::random() * 1e9) as u64);
        let path = format!("{dir}/execstore-wasm-conformance-{unique}.db");
        let mut options = SqliteOptions::new();
        if let Some(prefix) = prefix {
            options = options.prefix(prefix);
        }
        let store = NodeFileStore::open(&path, options, FileOptions::default())
            .await
            .expect("open a store file");
        FileHarness {
            store: Some(store),
            path,
        }
    }

    execstore::conformance_tests!(wasm durable: open(None));

    mod harel_prefix {
        execstore::conformance_tests!(wasm durable: super::open(Some("harel")));
    }
}
