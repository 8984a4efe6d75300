//! Declaring a search attribute on PostgreSQL builds its indexes with `CREATE INDEX
//! CONCURRENTLY`: writers are not held up for the build, a failed build leaves no index and no
//! declaration behind, and an `INVALID` index left by a killed build is rebuilt.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use execstore::executions::{parse_where, BatchItem, ListQuery, Status};
use execstore::{Effects, Execution, ExecutionStore};
use serde_json::json;

/// `n` executions with a customer and some filler (so that an index build takes a while).
fn populate(store: &dyn ExecutionStore, n: usize) {
    for chunk in 0..n.div_ceil(500) {
        let mut batch: Vec<BatchItem> = (chunk * 500..((chunk + 1) * 500).min(n))
            .map(|i| {
                let mut exe = Execution::new(format!("e{i:06}"), "orders");
                exe.status = Status::Running;
                let ctx = json!({"customer": format!("c-{}", i % 5000), "filler": "x".repeat(200)});
                exe.context = ctx.as_object().cloned().unwrap_or_default();
                BatchItem::new(exe, Effects::new())
            })
            .collect();
        for r in store.commit_batch(&mut batch).expect("populate") {
            r.expect("populate");
        }
    }
}

/// The attribute indexes (`<pfx>execstore_attr_*`) on the store's executions table, with
/// whether each is valid.
fn attribute_indexes(client: &mut postgres::Client, table: &str) -> Vec<(String, bool)> {
    client
        .query(
            "SELECT c.relname::text, i.indisvalid FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = to_regclass($1::text) AND c.relname LIKE '%execstore_attr_%' \
             ORDER BY 1",
            &[&table],
        )
        .expect("indexes")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// While a declaration builds its index over 50,000 executions, a commit to another
/// execution completes: it finishes before the declaration does (a plain `CREATE INDEX`
/// inside the declaring transaction made it wait for the whole build). The index is then
/// valid, holds the execution committed during the build, and answers the filter.
#[test]
fn a_commit_completes_while_a_declare_builds() {
    let h = pg_harness!(new);
    let store: Arc<dyn ExecutionStore> =
        Arc::new(execstore_postgres::PgStore::open(&h.url, h.options.clone()).expect("open"));
    let t = Instant::now();
    populate(&*store, 50_000);
    eprintln!(
        "populated 50,000 executions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let table = format!("{}_executions", h.options.prefix.as_deref().expect("a prefix"));
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).expect("connect");

    let finished = Arc::new(AtomicUsize::new(0));
    {
        let (declaring, finished_declaring) = (store.clone(), finished.clone());
        let started = Instant::now();
        let handle = std::thread::spawn(move || {
            let declared = declaring.declare_attribute("context.customer");
            let order = finished_declaring.fetch_add(1, Ordering::SeqCst);
            (declared, order, started.elapsed())
        });
        // Wait until the server is building the index on our table.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let building = client
                .query(
                    "SELECT 1 FROM pg_stat_progress_create_index WHERE relid = to_regclass($1::text)",
                    &[&table],
                )
                .expect("progress");
            if !building.is_empty() {
                break;
            }
            assert!(
                !handle.is_finished(),
                "the declaration ended before its build was seen: make the table larger"
            );
            assert!(Instant::now() < deadline, "no index build seen in 60 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        let t = Instant::now();
        let mut during = Execution::new("during-build", "orders");
        during.status = Status::Running;
        during.context = json!({"customer": "c-during"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        store.save(&mut during).expect("a commit during the build");
        let commit_order = finished.fetch_add(1, Ordering::SeqCst);
        let commit_took = t.elapsed();
        let (declared, declare_order, declare_took) = handle.join().expect("the declaring thread");
        declared.expect("declare");
        eprintln!(
            "declare: {:.2} s; a commit during the build: {:.1} ms",
            declare_took.as_secs_f64(),
            commit_took.as_secs_f64() * 1e3
        );
        assert!(
            commit_order < declare_order,
            "the commit waited for the declaration ({commit_took:?}, the declaration {declare_took:?})"
        );
    }

    let indexes = attribute_indexes(&mut client, &table);
    assert_eq!(indexes.len(), 2, "{indexes:?}");
    assert!(indexes.iter().all(|(_, valid)| *valid), "{indexes:?}");
    let q = ListQuery::new().filter(parse_where(r#"context.customer = "c-during""#, 0.0).expect("parse"));
    let page = store.list_executions(&q).expect("list");
    assert_eq!(
        page.items.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["during-build"]
    );
    assert!(page.scan.is_empty());
    // Declaring twice stays idempotent.
    assert_eq!(
        store.declare_attribute("context.customer").expect("again").path,
        "context.customer"
    );
    assert_eq!(attribute_indexes(&mut client, &table), indexes);
}

/// A build that fails (a document that is not JSON) leaves no index, valid or not, and no
/// declaration; once the document is fixed the same declaration succeeds. An `INVALID`
/// index of the attribute's name, as a build killed midway leaves, is dropped and built again
/// rather than kept.
#[test]
fn a_failed_build_leaves_nothing_and_an_invalid_index_is_rebuilt() {
    let h = pg_harness!(new);
    let store = h.pg();
    populate(store, 200);
    let prefix = h.options.prefix.clone().expect("a prefix");
    let table = format!("{prefix}_executions");
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).expect("connect");

    // A row whose document is not JSON, written past the listing keys' trigger.
    client
        .batch_execute(&format!(
            "SET execstore.keys_written = 'on'; UPDATE {table} SET data = 'not json' WHERE id = 'e000007'; \
             RESET execstore.keys_written"
        ))
        .expect("damage a row");
    let failed = store.declare_attribute("context.customer");
    assert!(
        failed.is_err(),
        "a build over a document that is not JSON fails: {failed:?}"
    );
    assert_eq!(
        attribute_indexes(&mut client, &table),
        Vec::<(String, bool)>::new(),
        "no index left"
    );
    assert!(store.attributes().expect("attributes").is_empty(), "not declared");

    // Fixed, it declares; then an INVALID index under the attribute's name, as a killed
    // concurrent build leaves (made here by a unique build that fails), is rebuilt.
    let text = client
        .query_one(&format!("SELECT data FROM {table} WHERE id = 'e000008'"), &[])
        .expect("a good document")
        .get::<_, String>(0)
        .replace("e000008", "e000007");
    client
        .execute(
            &format!("UPDATE {table} SET data = $1 WHERE id = 'e000007'"),
            &[&text],
        )
        .expect("repair");
    store.declare_attribute("context.customer").expect("declare");
    let indexes = attribute_indexes(&mut client, &table);
    assert_eq!(indexes.len(), 2);
    let (j_index, _) = indexes[0].clone();
    client
        .batch_execute(&format!("DROP INDEX {j_index}"))
        .expect("drop");
    let unique = client.batch_execute(&format!(
        "CREATE UNIQUE INDEX CONCURRENTLY {j_index} ON {table} ((definition_id))"
    ));
    assert!(unique.is_err(), "the unique build fails");
    assert!(
        attribute_indexes(&mut client, &table).contains(&(j_index.clone(), false)),
        "an INVALID index is left"
    );
    store
        .declare_attribute("context.customer")
        .expect("declare again");
    let after = attribute_indexes(&mut client, &table);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.iter().all(|(_, valid)| *valid), "rebuilt valid: {after:?}");
    // e000007 holds a copy of e000008's document: two executions of c-8.
    let q = ListQuery::new().filter(parse_where(r#"context.customer = "c-8""#, 0.0).expect("parse"));
    let page = store.list_executions(&q).expect("list");
    assert_eq!(
        page.items.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["e000007", "e000008"]
    );
    assert!(page.scan.is_empty());
}
