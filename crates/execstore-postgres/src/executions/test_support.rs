//! What the listing's plan tests share (filters.rs, order.rs): the server, a store under a
//! prefix of its own whose tables are dropped after the check (panic or not), the 6,000
//! executions they fill it with, the plan of a statement the store runs, and two readers of
//! a query's first column.

use execstore::{executions::BatchItem, Effects, Execution, ExecutionStore};

use super::filters::Filtered;
use super::{drop_store, PgOptions, PgStore};

/// The server from `EXECSTORE_PG_URL`; without it the test fails, unless
/// `EXECSTORE_PG_OPTIONAL=1`, which prints a SKIPPED line naming `module` (as the crate's
/// other tests do).
fn server_url(module: &str) -> Option<String> {
    match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            use std::io::Write as _;
            let line = format!(
                "SKIPPED: executions::{module}::tests: EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)\n"
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            None
        }
        _ => panic!("EXECSTORE_PG_URL is not set: this test needs a PostgreSQL server"),
    }
}

/// The first column of the one row `sql` answers.
pub(crate) fn one<T: for<'a> postgres::types::FromSql<'a>>(
    client: &mut postgres::Client,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> T {
    client.query_one(sql, params).unwrap().get(0)
}

/// The first column of every row `sql` answers, as text.
pub(crate) fn texts(
    client: &mut postgres::Client,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> Vec<String> {
    client
        .query(sql, params)
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Runs `check(url, prefix, store)` on a store under the prefix `name<pid>`, then drops its
/// tables, whether the check passed or panicked.
pub(crate) fn on_own_prefix(module: &str, name: &str, check: impl FnOnce(&str, &str, &PgStore)) {
    let Some(url) = server_url(module) else { return };
    let prefix = format!("{name}{}", std::process::id());
    let store = PgStore::open(&url, PgOptions::new().prefix(prefix.clone())).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&url, &prefix, &store)));
    drop(store);
    let _ = drop_store(&url, Some(&prefix));
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Commits the 6,000 executions `make(0..6000)` (ids `e00000`...; 300 bytes of filler in
/// each context, so a scan costs what it would), a hundred a batch, then gathers statistics;
/// returns a client of the server.
pub(crate) fn fill(
    url: &str,
    prefix: &str,
    store: &PgStore,
    make: impl Fn(&mut Execution, usize),
) -> postgres::Client {
    for chunk in 0..60 {
        let mut batch: Vec<BatchItem> = (0..100)
            .map(|i| {
                let n = chunk * 100 + i;
                let mut exe = Execution::new(format!("e{n:05}"), format!("d{}", n % 5));
                make(&mut exe, n);
                exe.context.insert("filler".into(), "x".repeat(300).into());
                BatchItem::new(exe, Effects::new())
            })
            .collect();
        for r in store.commit_batch(&mut batch).unwrap() {
            r.unwrap();
        }
    }
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    analyze(&mut client, prefix);
    client
}

/// Gathers the statistics of the store's executions and listing keys.
pub(crate) fn analyze(client: &mut postgres::Client, prefix: &str) {
    client
        .batch_execute(&format!("ANALYZE {prefix}_executions, {prefix}_execstore_keys"))
        .unwrap();
}

/// The server's plan of `f`, one line a step, joined.
pub(crate) fn explain(client: &mut postgres::Client, f: &Filtered) -> String {
    let args: Vec<&(dyn postgres::types::ToSql + Sync)> = f.args.iter().map(|a| a.as_sql()).collect();
    let rows = client.query(&format!("EXPLAIN {}", f.sql), &args).unwrap();
    rows.iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}
