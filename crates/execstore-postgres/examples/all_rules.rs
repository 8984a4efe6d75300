//! What the monitor's due runs read to build the stored rules' policy on PostgreSQL: fresh
//! reflexr tables in a schema of their own (dropped after) with N workspaces that each have a
//! log and R active stored rules, then medians of 9 of the per-workspace calls (what the
//! monitor made before: `workspaces()` and a `stored_rules` call per workspace) and of
//! `all_stored_rules` (one query), which must answer the same.
//!
//! ```text
//! cargo run --release -p execstore-postgres --example all_rules -- URL [N] [R]
//! ```

use execstore::workspace::{rules_by_calls, WorkspaceStorage};
use execstore_postgres::{ConnectOptions, PgWorkspaceOptions, PgWorkspaceStorage};

#[path = "support/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a postgres:// URL");
    let n: usize = args.next().map_or(1_000, |s| s.parse().expect("N"));
    let r: usize = args.next().map_or(3, |s| s.parse().expect("R"));
    let schema = format!("allrules{}", std::process::id());
    let options = PgWorkspaceOptions::new().connect(ConnectOptions::new().schema(schema.clone()));
    let storage = PgWorkspaceStorage::open(&url, options).expect("open");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "SET search_path TO {schema}; \
             INSERT INTO reflexr_workspaces (tenant_id, workspace_id, head_seq, head_ts, last_position) \
             SELECT 't0', 'w' || lpad(g::text, 5, '0'), 1, now(), 0 FROM generate_series(1, {n}) g; \
             INSERT INTO reflexr_rules (tenant_id, workspace_id, name, version, status, rule, provenance) \
             SELECT 't0', 'w' || lpad(g::text, 5, '0'), 'rule-' || k, 1, \
               CASE WHEN k = 0 THEN 'archived' ELSE 'active' END, \
               json_build_object('name', 'rule-' || k, 'ordering', 'scope', 'when', json_build_object('on', json_build_array('x'))), \
               '{{}}'::json \
             FROM generate_series(1, {n}) g, generate_series(0, {r}) k; \
             ANALYZE reflexr_workspaces; ANALYZE reflexr_rules",
        ))
        .expect("fill");
    let (calls, a) = median_ms(9, || rules_by_calls(&storage).expect("calls").len());
    let (one, b) = median_ms(9, || storage.all_stored_rules().expect("all").len());
    assert_eq!(
        rules_by_calls(&storage).expect("calls"),
        storage.all_stored_rules().expect("all")
    );
    println!("{n} workspaces x {r} active rules (and one archived each)");
    println!(
        "per-workspace calls ({a} rules): {calls:.2} ms; all_stored_rules ({b}): {one:.2} ms; {:.1}x",
        calls / one
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
}
