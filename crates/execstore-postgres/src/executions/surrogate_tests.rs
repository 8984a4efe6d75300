//! Documents holding escapes PostgreSQL's JSON refuses and Python's `json.dumps` writes (a lone
//! surrogate's, `\u0000`), written with harel 0.9's statements (harel's pydantic never writes
//! a lone surrogate; a migration or repair tool writing plain SQL may): every write goes
//! through the keys trigger and the declared attributes' indexes, and every read (listing,
//! counts, search) answers (`schema::parseable`); migration 10 brings a store that migration 9
//! left there.

use execstore::executions::{parse_where, ListQuery, Status};
use execstore::ExecutionStore;

use super::schema::{Sql as _, Tables};
use super::test_support::on_own_prefix;
use super::{PgOptions, PgStore};

/// A document as harel writes it, with `context` as JSON text.
fn doc(id: &str, status: &str, path: &str, context: &str) -> String {
    format!(
        r#"{{"id": "{id}", "definition_id": "d", "status": "{status}", "active_path": "{path}", "context": {context}, "created_at": 1.0, "updated_at": 2.0}}"#
    )
}

/// harel's own `INSERT` of a new execution.
fn harel_insert(
    client: &mut postgres::Client,
    prefix: &str,
    id: &str,
    data: &str,
) -> Result<u64, postgres::Error> {
    client.execute(
        &format!(
            "INSERT INTO {prefix}_executions (id, definition_id, data, version) VALUES ($1, 'd', $2, 1)"
        ),
        &[&id, &data],
    )
}

/// The ids a `where` filter lists, sorted.
fn found(store: &PgStore, filter: &str) -> Vec<String> {
    let query = ListQuery::new()
        .limit(50)
        .filter(parse_where(filter, 0.0).unwrap());
    let mut ids: Vec<String> = store
        .list_executions(&query)
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    ids
}

/// Every listing answers, with each row's keys as the trigger read them.
fn check_reads(store: &PgStore) {
    let page = store.list_executions(&ListQuery::new().limit(50)).unwrap();
    let mut rows: Vec<(String, Status, Option<String>)> = page
        .items
        .into_iter()
        .map(|s| (s.id, s.status, s.active_path))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        rows,
        vec![
            ("h1".into(), Status::Running, Some("s".into())),
            ("h2".into(), Status::Running, Some("s\u{fffd}".into())),
            ("h3".into(), Status::Failed, Some("t".into())),
            ("h4".into(), Status::Running, Some("s".into())),
        ]
    );
    let running = ListQuery::new().status(vec![Status::Running]);
    let counts: Vec<(Status, u64)> = store
        .count_by_status(&ListQuery::new())
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(counts, vec![(Status::Running, 3), (Status::Failed, 1)]);
    let listed = store.list_executions(&running.clone().limit(50)).unwrap();
    assert_eq!(listed.items.len(), 3);
    // The pair is the emoji it spells; the lone surrogate reads as U+FFFD.
    assert_eq!(found(store, "context.a = \"\u{1f600}\""), vec!["h3"]);
    assert_eq!(found(store, "context.a = \"x\u{fffd}\""), vec!["h1", "h4"]);
    assert_eq!(found(store, "context.a ^= x"), vec!["h1", "h4"]);
    assert_eq!(found(store, "context.n > 1"), vec!["h2"]);
}

/// The writes of `check_reads`' rows, as harel makes them.
fn harel_writes(client: &mut postgres::Client, prefix: &str) {
    for (id, data) in [
        ("h1", doc("h1", "RUNNING", "s", r#"{"a": "x\ud800"}"#)),
        (
            "h2",
            doc(
                "h2",
                "RUNNING",
                r"s\udfff",
                r#"{"n": 2, "b": "\udc00\ud800 \u0000"}"#,
            ),
        ),
        (
            "h3",
            doc("h3", "RUNNING", "s", r#"{"a": "\ud83d\ude00", "b": "\\ud800"}"#),
        ),
    ] {
        harel_insert(client, prefix, id, &data).unwrap();
    }
    // An update of h3 and a fourth row written with harel's commit_cas.
    client
        .execute(
            &format!("UPDATE {prefix}_executions SET data = $1, version = 2 WHERE id = 'h3' AND version = 1"),
            &[&doc(
                "h3",
                "FAILED",
                "t",
                r#"{"a": "\ud83d\ude00", "c": "\ud800\ud800\udc00"}"#,
            )],
        )
        .unwrap();
    let cas = format!("SELECT {prefix}_commit_cas('h4', 'd', $1, 0, '')");
    let ok: bool = client
        .query_one(
            &cas,
            &[&doc("h4", "RUNNING", "s", r#"{"a": "x\ud800", "z": "\\\ud800"}"#)],
        )
        .unwrap()
        .get(0);
    assert!(ok);
}

#[test]
fn harel_writes_lone_surrogates_and_every_read_answers() {
    on_own_prefix("surrogate", "sur", |url, prefix, store| {
        store.declare_attribute("context.a").unwrap();
        store.declare_attribute("context.n").unwrap();
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        harel_writes(&mut client, prefix);
        check_reads(store);
    });
}

/// A store as migration 9 left it: the keys trigger and an attribute's indexes with the old
/// spelling. A lone surrogate fails harel's write there; migration 10 (at the next open)
/// respells both, and the rows are written and read as in a fresh store.
#[test]
fn migration_10_respells_the_trigger_and_the_indexes() {
    on_own_prefix("surrogate", "surm", |url, prefix, store| {
        store.declare_attribute("context.a").unwrap();
        store.declare_attribute("context.n").unwrap();
        let tables = Tables::new(Some(prefix)).unwrap();
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let old = r"(replace(data, '\u0000', '\ufffd')::jsonb)";
        let old_indexes: Vec<String> = client
            .query(
                &format!("SELECT index_name FROM {prefix}_execstore_attributes ORDER BY path"),
                &[],
            )
            .unwrap()
            .iter()
            .flat_map(|r| {
                let index: String = r.get(0);
                [
                    format!("CREATE INDEX {index}_j ON {prefix}_executions (({old} #> '{{context,a}}'), (id COLLATE \"C\")) WHERE ({old} #> '{{context,a}}') IS NOT NULL"),
                    format!("DROP INDEX {index}_t"),
                ]
            })
            .collect();
        // Migration 9's state: migration 6's trigger function, the old index spelling, and no
        // record of migration 10.
        let trigger = super::schema::MIGRATIONS
            .iter()
            .find(|m| m.version == 6)
            .and_then(|m| m.statements.iter().find(|s| s.contains("execstore_keys_sync")))
            .unwrap();
        client.batch_execute(&tables.sql(trigger)).unwrap();
        for index in client
            .query(
                &format!("SELECT index_name FROM {prefix}_execstore_attributes"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
        {
            client.batch_execute(&format!("DROP INDEX {index}_j")).unwrap();
        }
        for stmt in &old_indexes {
            let _ = client.batch_execute(stmt);
        }
        client
            .execute(
                &format!("DELETE FROM {prefix}_execstore_migrations WHERE version = 10"),
                &[],
            )
            .unwrap();
        let refused = harel_insert(
            &mut client,
            prefix,
            "h1",
            &doc("h1", "RUNNING", "s", r#"{"a": "x\ud800"}"#),
        )
        .expect_err("migration 9's trigger refuses a lone surrogate");
        assert!(
            refused.to_string().contains("surrogate") || format!("{refused:?}").contains("surrogate"),
            "{refused:?}"
        );
        // The next open migrates.
        let reopened = PgStore::open(url, PgOptions::new().prefix(prefix.to_owned())).unwrap();
        let defs: Vec<String> = client
            .query(
                "SELECT indexdef FROM pg_indexes WHERE indexname LIKE $1 ORDER BY indexname",
                &[&format!("{prefix}_execstore_attr\\_%")],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(defs.len(), 4, "two indexes per attribute: {defs:?}");
        for def in &defs {
            assert!(def.contains("chr(1)"), "respelled: {def}");
        }
        harel_writes(&mut client, prefix);
        check_reads(&reopened);
    });
}
