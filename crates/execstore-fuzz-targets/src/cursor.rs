//! The listings' cursors: an execution listing's keyset cursor (`execstore::executions::decode_cursor`,
//! which `list_executions` and `execstore::executions::paging` follow on every backend), and the
//! monitor's timers and runs cursors.

use std::sync::OnceLock;

use execstore::workspace::MemoryWorkspaceStorage;
use execstore::{
    executions::{decode_cursor, encode_cursor, paging, DueTimer, ListQuery},
    ExecutionStore, MemoryStore,
};
use execstore_monitor_api::{cursors, ApiRequest, MonitorApi, Stores};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Map;

use crate::pools;

/// Any text as a cursor: a typed error, or a cursor that re-encodes to the same text and
/// resumes every listing exactly after the id it names.
pub fn cursor(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    execution_cursor(&text);
    timer_cursor(&text);
    runs_cursor(&text);
    monitor_listings(&text);
}

/// The stores the listings read: the same executions in memory and in SQLite.
fn stores() -> &'static (MemoryStore, SqliteStore) {
    static STORES: OnceLock<(MemoryStore, SqliteStore)> = OnceLock::new();
    STORES.get_or_init(|| {
        let memory = MemoryStore::new();
        let sqlite = SqliteStore::open_in_memory(SqliteOptions::new()).expect("SQLite in memory opens");
        for id in pools::IDS {
            for store in [&memory as &dyn ExecutionStore, &sqlite] {
                let mut exe = execstore::Execution::new(*id, "orders");
                store.save(&mut exe).expect("a pool id saves");
            }
        }
        (memory, sqlite)
    })
}

fn execution_cursor(text: &str) {
    let decoded = decode_cursor(text);
    match &decoded {
        Ok(id) => {
            assert!(!id.is_empty(), "{text:?} decoded to an empty id");
            assert_eq!(encode_cursor(id), text, "a decoded cursor re-encodes to itself");
        }
        Err(e) => {
            assert!(
                matches!(e, execstore::StoreError::InvalidInput { field, .. } if field == "cursor"),
                "a bad cursor is InvalidInput(cursor), not {e:?}"
            );
        }
    }
    if !text.is_empty() {
        let cursor = encode_cursor(text);
        assert_eq!(
            decode_cursor(&cursor).ok().as_deref(),
            Some(text),
            "{text:?} round trips"
        );
    }
    let (memory, sqlite) = stores();
    let mut all: Vec<&str> = pools::IDS.to_vec();
    all.sort_unstable();
    for (name, store) in [("memory", memory as &dyn ExecutionStore), ("sqlite", sqlite)] {
        let query = ListQuery::new().limit(2).cursor(Some(text.to_owned()));
        let pages: Result<Vec<_>, _> = paging::execution_pages(store, query).collect();
        match (&decoded, pages) {
            (Ok(after), Ok(pages)) => {
                let ids: Vec<String> = pages.into_iter().flat_map(|p| p.items).map(|s| s.id).collect();
                let want: Vec<&str> = all.iter().copied().filter(|id| *id > after.as_str()).collect();
                assert_eq!(ids, want, "{name}: the pages after {after:?}");
            }
            (Err(_), Err(e)) => assert_eq!(e.code(), "INVALID_INPUT", "{name}: {e}"),
            (Ok(after), Err(e)) => panic!("{name}: a cursor after {after:?} was refused: {e}"),
            (Err(e), Ok(_)) => panic!("{name}: a cursor that does not decode was listed ({e})"),
        }
    }
}

fn timer_cursor(text: &str) {
    if let Ok(timer) = cursors::decode_timer(text) {
        let again = cursors::encode_timer(&timer);
        let back = cursors::decode_timer(&again).expect("a re-encoded timer cursor decodes");
        assert_same_timer(&back, &timer);
        assert_eq!(cursors::encode_timer(&back), again, "re-encoding is stable");
    }
    if text.len() >= 2 {
        // A timer made of the text: it round trips through its cursor.
        let (id, path) = text.split_at(text.char_indices().nth(1).map_or(text.len(), |(i, _)| i));
        let fire_at = text.len() as f64 * 1234.5678;
        let timer = DueTimer {
            execution_id: id.to_owned(),
            path: path.to_owned(),
            fire_at,
        };
        let back = cursors::decode_timer(&cursors::encode_timer(&timer)).expect("a timer cursor decodes");
        assert_same_timer(&back, &timer);
    }
}

fn assert_same_timer(a: &DueTimer, b: &DueTimer) {
    assert_eq!(
        (&a.execution_id, &a.path, a.fire_at.to_bits()),
        (&b.execution_id, &b.path, b.fire_at.to_bits()),
        "the timer a cursor names"
    );
}

fn runs_cursor(text: &str) {
    if let Ok(offset) = cursors::decode_runs(text) {
        assert_eq!(cursors::decode_runs(&cursors::encode_runs(offset)), Ok(offset));
    }
    let offset = text.len().wrapping_mul(7919);
    assert_eq!(cursors::decode_runs(&cursors::encode_runs(offset)), Ok(offset));
}

/// The monitor's fixture (see `monitor`), read-only.
fn monitor_stores() -> &'static (MemoryStore, MemoryWorkspaceStorage) {
    static STORES: OnceLock<(MemoryStore, MemoryWorkspaceStorage)> = OnceLock::new();
    STORES.get_or_init(|| (crate::monitor::executions(), crate::monitor::workspaces()))
}

/// The text as the `cursor` of each of the monitor's paged listings: a 200 when the
/// listing's decoder takes it (the runs listing may also answer 400 for an offset past what
/// it pages through), a 400 when it does not; never another status.
fn monitor_listings(text: &str) {
    let (executions, workspaces) = monitor_stores();
    let stores = Stores {
        executions: Some(executions),
        workspaces: Some(workspaces),
    };
    let api = MonitorApi::new(Map::new(), None);
    let cursor = crate::monitor::encode_component(text);
    let listings: [(&str, bool, bool); 3] = [
        ("/api/executions", decode_cursor(text).is_ok(), false),
        ("/api/timers", cursors::decode_timer(text).is_ok(), false),
        (
            "/api/workspaces/acme/prod/runs",
            cursors::decode_runs(text).is_ok(),
            true,
        ),
    ];
    for (path, decodes, may_refuse) in listings {
        // The executions list is in the id order here, the order `decode_cursor` reads
        // (the monitor's default, most recently updated first, has cursors of its own).
        let order = if path == "/api/executions" {
            "order=id&"
        } else {
            ""
        };
        let query = format!("limit=2&{order}cursor={cursor}");
        let request = ApiRequest {
            method: "GET",
            path,
            query: &query,
            authorization: None,
            body: &[],
        };
        let response = api.handle_stores(stores, &request, 1_700_000_300.0);
        // An empty parameter is no parameter: the first page.
        let decodes = decodes || text.is_empty();
        let ok = match (decodes, response.status) {
            (true, 200) | (false, 400) => true,
            (true, 400) => may_refuse,
            _ => false,
        };
        assert!(
            ok,
            "{path}?{query}: {} {} (the cursor {})",
            response.status,
            response.body,
            if decodes { "decodes" } else { "does not decode" }
        );
    }
}
