//! The core's behaviour suite over a SQLite database in the browser's OPFS, in a dedicated
//! worker (`cargo test --target wasm32-unknown-unknown --test conformance_opfs`, wasm-bindgen's
//! runner driving Chromium through chromedriver), and the OPFS store's ownership rules: a second opener gets `LOCKED`, a closed store can be opened again
//! and holds what was committed. And the workspace log's portable checks in the same worker,
//! on the core's in-memory workspace storage (Chromium's wasm engine rather than Node's).
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use execstore::conformance::executions::Harness;
use execstore::{
    executions::{Event, Status},
    Effects, Execution, ExecutionStore,
};
use execstore_wasm::opfs::{OpfsOptions, OpfsStore};
use execstore_wasm::WasmError;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// The OPFS store `conformance`; `reopen` closes the connection and opens the files again.
struct OpfsHarness(OpfsStore);

impl Harness for OpfsHarness {
    fn store(&self) -> &dyn ExecutionStore {
        self.0.store().expect("the OPFS store is open")
    }
    fn reopen(&mut self) -> bool {
        self.0.reopen().expect("reopen the OPFS database");
        true
    }
}

async fn open(name: &str, wait_ms: f64) -> Result<OpfsStore, WasmError> {
    OpfsStore::open(
        name,
        OpfsOptions {
            wait_ms,
            ..OpfsOptions::default()
        },
    )
    .await
}

async fn conformance_store() -> OpfsHarness {
    OpfsHarness(open("conformance", 0.0).await.expect("open the OPFS store"))
}

execstore::conformance_tests!(wasm durable: conformance_store());

fn locked(result: Result<OpfsStore, WasmError>) -> String {
    match result {
        Err(WasmError::Locked { name, .. }) => name,
        Err(other) => panic!("expected LOCKED, got {other}"),
        Ok(_) => panic!("expected LOCKED, the store opened twice"),
    }
}

#[wasm_bindgen_test]
async fn a_held_store_is_locked_and_released_on_drop() {
    let first = open("ownership", 0.0).await.expect("first open");
    let mut exe = Execution::new("owned-1", "def");
    exe.status = Status::Running;
    let effects = Effects::new()
        .emit(None, Event::new("owned-e1", "E"))
        .processed("owned-in");
    first
        .store()
        .expect("open")
        .commit(&mut exe, &effects)
        .expect("commit");

    // At once, and after a bounded wait: never a second owner, never a hang.
    assert_eq!(locked(open("ownership", 0.0).await), "ownership");
    assert_eq!(locked(open("ownership", 150.0).await), "ownership");
    // Another store is independent.
    let other = open("ownership-other", 0.0).await.expect("another store opens");
    drop(other);

    drop(first);
    let again = open("ownership", 0.0).await.expect("open after the owner let go");
    let store = again.store().expect("open");
    let loaded = store.load("owned-1").expect("load").expect("stored");
    assert_eq!(loaded, exe, "the reopened store holds the committed execution");
    assert!(store.is_processed("owned-1", "owned-in").expect("read"));
    assert_eq!(store.pending_outbox(None, 10).expect("read").len(), 1);
}

#[wasm_bindgen_test]
async fn a_waiting_opener_gets_the_store_once_it_is_closed() {
    let first = open("handover", 0.0).await.expect("first open");
    let waiter = open("handover", 10_000.0);
    // The owner closes while the second open waits for the Web Lock.
    let close_soon = async move {
        sleep(100.0).await;
        drop(first);
    };
    let (second, ()) = futures_util::future::join(waiter, close_soon).await;
    second.expect("the waiting open gets the store when the owner closes it");
}

#[wasm_bindgen_test]
async fn bad_names_are_invalid_input() {
    for name in ["", ".hidden", "a/b", "x".repeat(65).as_str()] {
        match open(name, 0.0).await {
            Err(WasmError::Store(e)) => assert_eq!(e.code(), "INVALID_INPUT", "{name:?}"),
            other => panic!("{name:?}: expected INVALID_INPUT, got {:?}", other.map(|_| ())),
        }
    }
}

/// A new OPFS database gets 4 KiB pages (the wasm build of SQLite would make them 8 KiB, and
/// every commit would write twice the bytes).
#[wasm_bindgen_test]
async fn new_databases_have_4_kib_pages() {
    let store = open("page-size", 0.0).await.expect("open the OPFS store");
    assert_eq!(store.store().expect("open").page_size().expect("page size"), 4096);
}

/// Resolves after `ms` (setTimeout).
async fn sleep(ms: f64) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout: js_sys::Function = js_sys::Reflect::get(&global, &"setTimeout".into())
            .expect("setTimeout")
            .into();
        set_timeout
            .call2(&wasm_bindgen::JsValue::UNDEFINED, &resolve, &ms.into())
            .expect("setTimeout");
    });
    js_sys::futures::JsFuture::from(promise).await.expect("timer");
}

/// The workspace log's portable checks (those that need neither threads nor the system's
/// clock; see `workspace_conformance_tests!`), in Chromium's dedicated worker.
mod workspace_memory {
    fn harness(
    ) -> execstore::conformance::workspace::SimpleHarness<execstore::workspace::MemoryWorkspaceStorage> {
        execstore::conformance::workspace::SimpleHarness::new(|clock| {
            execstore::workspace::MemoryWorkspaceStorage::new(std::sync::Arc::new(clock))
        })
    }

    execstore::workspace_conformance_tests!(wasm ephemeral: async { harness() });
}

/// The operator records' suite (the monitor's audit log and saved views) on the OPFS store's
/// own database, as a `Store.openOpfs` store's monitor keeps them: each check on a fresh
/// store of its own; the reopen check closes the database and opens its files again.
mod operator_opfs {
    use execstore::operator::OperatorStore;
    use execstore_sqlite::SqliteOperatorStore;
    use execstore_wasm::opfs::OpfsStore;

    struct OpfsOperator {
        operator: Option<SqliteOperatorStore>,
        store: OpfsStore,
    }

    impl OpfsOperator {
        fn attach(&mut self) {
            let db = self.store.store().expect("the OPFS store is open").db();
            self.operator = Some(SqliteOperatorStore::on(db).expect("operator tables"));
        }
    }

    impl execstore::conformance::operator::OperatorHarness for OpfsOperator {
        fn store(&self) -> &dyn OperatorStore {
            self.operator.as_ref().expect("attached")
        }
        fn reopen(&mut self) -> bool {
            // The operator store holds the database's handle: let it go first.
            self.operator = None;
            self.store.reopen().expect("reopen the OPFS database");
            self.attach();
            true
        }
    }

    async fn fresh() -> OpfsOperator {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("operator-{}-{n}", js_sys::Date::now());
        let store = super::open(&name, 0.0).await.expect("open a fresh OPFS store");
        let mut h = OpfsOperator {
            operator: None,
            store,
        };
        h.attach();
        h
    }

    execstore::operator_conformance_tests!(wasm durable: fresh());
}
