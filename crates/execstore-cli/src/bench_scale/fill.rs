//! The fill: the first [`TEMPLATE`] executions are W1's, committed through the contract
//! ([`ExecutionStore::commit_batch`]); every one after is a copy of one of them under a new id,
//! made by `INSERT ... SELECT` in the backend (a bench-only path: the SQL is here, not in the
//! adapters). A copy is what a real commit of its template writes, ids aside, and the store's
//! own triggers (the kept counts, PostgreSQL's listing keys) fire on its insert as on a
//! commit's; [`verify`] checks both after every fill.

use std::path::PathBuf;

use anyhow::Context as _;
use execstore::executions::{BatchItem, ListQuery, Status};
use execstore::kit::names::TableNames;
use execstore::{w1, Effects, ExecutionStore};

use super::{store_err, EVENTS, FILL_BATCH, FILL_SEED};

/// Executions committed for real; the rest are copies of them. A multiple of 25, so that a
/// copy of execution `i % TEMPLATE` has execution `i`'s definition, parent pattern and status.
pub(super) const TEMPLATE: usize = 1000;
/// Copies per transaction.
const COPY_CHUNK: usize = 5000;

/// Filled execution `i`'s id: W1's for the template, an ascending one for a copy (so a copy
/// appends to each id-keyed B-tree instead of landing anywhere in it).
pub(super) fn fill_id(i: usize) -> String {
    if i < TEMPLATE {
        w1::exe_id(FILL_SEED, i)
    } else {
        format!("f{i:031x}")
    }
}

/// Where the copies are made: the store's file or database, through a connection of its own.
pub(super) enum Copier {
    /// A SQLite file (tables without a prefix).
    Sqlite(PathBuf),
    /// A PostgreSQL database and the store's prefix.
    Postgres { url: String, prefix: String },
}

/// Fills executions `from..to`: the template's part through `commit_batch`, the rest copied.
pub(super) fn fill(
    store: &dyn ExecutionStore,
    copier: &Copier,
    from: usize,
    to: usize,
) -> anyhow::Result<()> {
    let real_end = to.min(TEMPLATE);
    if from < real_end {
        commit_real(store, from, real_end)?;
    }
    let start = from.max(TEMPLATE);
    if start < to {
        copier.copy(start, to)?;
    }
    Ok(())
}

/// Commits executions `from..to` with W1's 20 events each, [`FILL_BATCH`] executions a batch,
/// then relays the batch's outbox entries and spawn intents as a running engine's relay would.
fn commit_real(store: &dyn ExecutionStore, from: usize, to: usize) -> anyhow::Result<()> {
    let rounds: Vec<w1::Round> = (1..=EVENTS).map(|r| w1::Round::new(r, EVENTS)).collect();
    let mut start = from;
    while start < to {
        let end = (start + FILL_BATCH).min(to);
        let mut items = Vec::with_capacity((end - start) * (EVENTS as usize + 1));
        for i in start..end {
            let mut exe = w1::execution(i);
            exe.id = fill_id(i);
            if i % 5 == 4 {
                exe.parent_id = Some(fill_id(i - 1));
            }
            items.push(BatchItem::new(exe.clone(), Effects::new()));
            exe.version = 1;
            for round in &rounds {
                // Each item is the state after its step, at the version the item before it
                // leaves: the last step (which finishes every odd execution) is stored too.
                let effects = w1::step(&mut exe, i, round, w1::in_event_id(round.r, i), true);
                items.push(BatchItem::new(exe.clone(), effects));
                exe.version += 1;
            }
        }
        for result in store.commit_batch(&mut items).map_err(store_err)? {
            result.map_err(store_err)?;
        }
        while store
            .relay_outbox(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        while store
            .relay_spawns(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        start = end;
    }
    Ok(())
}

/// One copy: its id and its template's, and (every fifth) its parent's and the template's
/// parent's.
struct CopyIds {
    new_id: String,
    tpl_id: String,
    new_parent: Option<String>,
    tpl_parent: Option<String>,
}

fn copies(from: usize, to: usize) -> Vec<CopyIds> {
    (from..to)
        .map(|i| {
            let t = i % TEMPLATE;
            let parent = i % 5 == 4;
            CopyIds {
                new_id: fill_id(i),
                tpl_id: fill_id(t),
                new_parent: parent.then(|| fill_id(i - 1)),
                tpl_parent: parent.then(|| fill_id(t - 1)),
            }
        })
        .collect()
}

/// The copy statements over a map `m (new_id, tpl_id, new_parent, tpl_parent)`: the document
/// keeps its template's bytes with the ids replaced (its own and its parent's, 32 hex digits
/// each, found nowhere else in it). The outbox and the spawns are not copied: the real fill's
/// relay left them empty.
fn copy_statements(t: &TableNames, map: &str) -> [String; 4] {
    let data = "CASE WHEN m.new_parent IS NULL THEN replace(e.data, m.tpl_id, m.new_id) \
                ELSE replace(replace(e.data, m.tpl_id, m.new_id), m.tpl_parent, m.new_parent) END";
    [
        format!(
            "INSERT INTO {} (id, definition_id, data, version) SELECT m.new_id, e.definition_id, {data}, \
             e.version FROM {map} m JOIN {} e ON e.id = m.tpl_id ORDER BY m.new_id",
            t.executions, t.executions
        ),
        format!(
            "INSERT INTO {} (execution_id, idx, entry) SELECT m.new_id, x.idx, x.entry \
             FROM {map} m JOIN {} x ON x.execution_id = m.tpl_id ORDER BY m.new_id, x.idx",
            t.trace, t.trace
        ),
        format!(
            "INSERT INTO {} (execution_id, event_id) SELECT m.new_id, x.event_id \
             FROM {map} m JOIN {} x ON x.execution_id = m.tpl_id ORDER BY m.new_id, x.event_id",
            t.processed_events, t.processed_events
        ),
        format!(
            "INSERT INTO {} (execution_id, path, fire_at) SELECT m.new_id, x.path, x.fire_at \
             FROM {map} m JOIN {} x ON x.execution_id = m.tpl_id ORDER BY m.new_id, x.path",
            t.timers, t.timers
        ),
    ]
}

impl Copier {
    fn tables(&self) -> anyhow::Result<TableNames> {
        let prefix = match self {
            Copier::Sqlite(_) => None,
            Copier::Postgres { prefix, .. } => Some(prefix.as_str()),
        };
        TableNames::new(prefix).map_err(store_err)
    }

    /// Copies executions `from..to` (all at or past [`TEMPLATE`]) over one connection,
    /// [`COPY_CHUNK`] a transaction.
    fn copy(&self, from: usize, to: usize) -> anyhow::Result<()> {
        let t = self.tables()?;
        let chunks = || {
            (from..to)
                .step_by(COPY_CHUNK)
                .map(move |s| (s, (s + COPY_CHUNK).min(to)))
        };
        match self {
            Copier::Sqlite(path) => {
                // The same SQLite library as the store's (its locks see each other's); a
                // large cache, as the copies land all over the JSON expression indexes.
                let mut conn = rusqlite::Connection::open(path)?;
                conn.busy_timeout(std::time::Duration::from_secs(60))?;
                conn.execute_batch(
                    "PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; \
                     CREATE TEMP TABLE IF NOT EXISTS fill_map (new_id TEXT PRIMARY KEY, \
                     tpl_id TEXT NOT NULL, new_parent TEXT, tpl_parent TEXT)",
                )?;
                for (start, end) in chunks() {
                    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                    tx.execute("DELETE FROM temp.fill_map", [])?;
                    {
                        let mut insert = tx.prepare("INSERT INTO temp.fill_map VALUES (?1, ?2, ?3, ?4)")?;
                        for c in copies(start, end) {
                            insert.execute(rusqlite::params![
                                c.new_id,
                                c.tpl_id,
                                c.new_parent,
                                c.tpl_parent
                            ])?;
                        }
                    }
                    for sql in copy_statements(&t, "temp.fill_map") {
                        tx.execute(&sql, [])?;
                    }
                    tx.commit()?;
                }
            }
            Copier::Postgres { url, .. } => {
                let mut client = postgres::Client::connect(url, postgres::NoTls)?;
                for (start, end) in chunks() {
                    let copies = copies(start, end);
                    let mut tx = client.transaction()?;
                    tx.batch_execute(
                        "SET LOCAL synchronous_commit = off; \
                         CREATE TEMP TABLE fill_map (new_id TEXT COLLATE \"C\" PRIMARY KEY, tpl_id TEXT NOT NULL, \
                         new_parent TEXT, tpl_parent TEXT) ON COMMIT DROP",
                    )?;
                    let column = |f: fn(&CopyIds) -> Option<&str>| copies.iter().map(f).collect::<Vec<_>>();
                    tx.execute(
                        "INSERT INTO fill_map SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])",
                        &[
                            &column(|c| Some(&c.new_id)),
                            &column(|c| Some(&c.tpl_id)),
                            &column(|c| c.new_parent.as_deref()),
                            &column(|c| c.tpl_parent.as_deref()),
                        ],
                    )?;
                    for sql in copy_statements(&t, "fill_map") {
                        tx.execute(&sql, &[])?;
                    }
                    tx.commit()?;
                }
                // The statistics autovacuum would gather within a minute of a bulk change:
                // measured at once, a read is planned on the table as it was before the copies
                // (at 10,000 executions, 9,000 of them copied in seconds, the listing keys'
                // estimates were 88 rows where 10,320 matched, and a definition's page took
                // 16 ms where it takes 2 once analyzed).
                client.batch_execute(&format!(
                    "ANALYZE {}, {}execstore_keys, {}, {}",
                    t.executions, t.pfx, t.trace, t.timers
                ))?;
            }
        }
        Ok(())
    }

    /// Every row keyed by execution `id`, as text, with `id` (and `parent`, if given) written
    /// back as `as_id` (`as_parent`): the executions row, its trace, its dedupe markers, its
    /// timers, in key order.
    fn rows_of(&self, id: &str, parent: Option<(&str, &str)>, as_id: &str) -> anyhow::Result<Vec<String>> {
        let t = self.tables()?;
        let (from_parent, to_parent) = parent.unwrap_or(("", ""));
        let p = |n: usize| match self {
            Copier::Sqlite(_) => format!("?{n}"),
            Copier::Postgres { .. } => format!("${n}"),
        };
        let (p1, p2, p3, p4) = (p(1), p(2), p(3), p(4));
        let document = format!(
            "SELECT 'executions|' || definition_id || '|' || replace(replace(data, {p1}, {p2}), {p3}, {p4}) \
             || '|' || CAST(version AS TEXT) FROM {} WHERE id = {p1}",
            t.executions
        );
        let keyed = [
            format!(
                "SELECT 'trace|' || CAST(idx AS TEXT) || '|' || entry FROM {} WHERE execution_id = {p1} ORDER BY idx",
                t.trace
            ),
            format!(
                "SELECT 'processed|' || event_id FROM {} WHERE execution_id = {p1} ORDER BY event_id",
                t.processed_events
            ),
            format!(
                "SELECT 'timer|' || path || '|' || CAST(fire_at AS TEXT) FROM {} WHERE execution_id = {p1} \
                 ORDER BY path",
                t.timers
            ),
        ];
        let mut rows = Vec::new();
        match self {
            Copier::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path)?;
                let mut stmt = conn.prepare(&document)?;
                let found = stmt.query_map(rusqlite::params![id, as_id, from_parent, to_parent], |r| {
                    r.get::<_, String>(0)
                })?;
                for row in found {
                    rows.push(row?);
                }
                for sql in &keyed {
                    let mut stmt = conn.prepare(sql)?;
                    for row in stmt.query_map([id], |r| r.get::<_, String>(0))? {
                        rows.push(row?);
                    }
                }
            }
            Copier::Postgres { url, .. } => {
                let mut client = postgres::Client::connect(url, postgres::NoTls)?;
                for row in client.query(document.as_str(), &[&id, &as_id, &from_parent, &to_parent])? {
                    rows.push(row.get::<_, String>(0));
                }
                for sql in &keyed {
                    for row in client.query(sql.as_str(), &[&id])? {
                        rows.push(row.get::<_, String>(0));
                    }
                }
            }
        }
        Ok(rows)
    }

    /// The executions by status, counted from the rows (`''`: none).
    fn status_rows(&self) -> anyhow::Result<Vec<(String, u64)>> {
        let t = self.tables()?;
        let mut out = Vec::new();
        match self {
            Copier::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path)?;
                let mut stmt = conn.prepare(&format!(
                    "SELECT COALESCE(json_extract(data, '$.status'), ''), count(*) FROM {} GROUP BY 1",
                    t.executions
                ))?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
                for row in rows {
                    let (s, n) = row?;
                    out.push((s, u64::try_from(n).unwrap_or(0)));
                }
            }
            Copier::Postgres { url, .. } => {
                let mut client = postgres::Client::connect(url, postgres::NoTls)?;
                let sql = format!(
                    "SELECT COALESCE(data::jsonb->>'status', ''), count(*) FROM {} GROUP BY 1",
                    t.executions
                );
                for row in client.query(sql.as_str(), &[])? {
                    out.push((row.get(0), u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)));
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// What [`verify`] found.
pub(super) struct Verified {
    /// Executions by status, as the rows say.
    pub running: u64,
    pub done: u64,
}

/// Checks the store after a fill to `to`: the counts the store keeps (`count_by_status`) are
/// the rows' (`SELECT count(*) ... GROUP BY status`), finished executions are mixed with
/// running ones, and the last copy's rows equal its template's, ids aside (by SQL, every
/// table, byte for byte; and through the contract, the loaded execution and its trace).
pub(super) fn verify(store: &dyn ExecutionStore, copier: &Copier, to: usize) -> anyhow::Result<Verified> {
    let rows = copier.status_rows()?;
    let kept = store.count_by_status(&ListQuery::new()).map_err(store_err)?;
    let mut kept: Vec<(String, u64)> = kept
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| (s.as_str().to_owned(), n))
        .collect();
    kept.sort();
    anyhow::ensure!(
        kept == rows,
        "the kept counts {kept:?} are not the rows' {rows:?}"
    );
    let of = |s: Status| rows.iter().find(|(r, _)| r == s.as_str()).map_or(0, |(_, n)| *n);
    let verified = Verified {
        running: of(Status::Running),
        done: of(Status::Done),
    };
    anyhow::ensure!(
        verified.done > 0 && verified.running > 0,
        "the fill left {} finished and {} running executions: they should be mixed",
        verified.done,
        verified.running
    );
    // The last copy with a parent, and the last one without.
    for i in [to.saturating_sub(1), to.saturating_sub(2)] {
        if i < TEMPLATE {
            continue;
        }
        let t = i % TEMPLATE;
        let (copy, tpl) = (fill_id(i), fill_id(t));
        let parents = (i % 5 == 4).then(|| (fill_id(i - 1), fill_id(t - 1)));
        let copied = copier.rows_of(
            &copy,
            parents.as_ref().map(|(c, p)| (c.as_str(), p.as_str())),
            &tpl,
        )?;
        let real = copier.rows_of(&tpl, None, &tpl)?;
        anyhow::ensure!(
            copied == real && real.len() > EVENTS as usize,
            "copy {copy}'s rows are not its template {tpl}'s"
        );
        let mut loaded = store
            .load(&copy)
            .map_err(store_err)?
            .context("a copied execution is missing")?;
        let template = store
            .load(&tpl)
            .map_err(store_err)?
            .context("a template execution is missing")?;
        loaded.id = template.id.clone();
        loaded.parent_id = template.parent_id.clone();
        anyhow::ensure!(loaded == template, "copy {copy} does not load as {tpl} does");
        let traces = (
            store.read_trace(&copy).map_err(store_err)?,
            store.read_trace(&tpl).map_err(store_err)?,
        );
        anyhow::ensure!(traces.0 == traces.1, "copy {copy}'s trace is not {tpl}'s");
    }
    Ok(verified)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fill past the template on a file: the copies are their templates' rows, the kept
    /// counts follow them, and half the executions are finished (the last step is stored).
    #[test]
    fn a_copied_fill_equals_real_commits_and_mixes_finished_with_running() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("fill.db");
        let target = execstore_any::Target {
            backend: &execstore_any::SQLITE,
            location: path.to_string_lossy().into_owned(),
        };
        let store = target
            .open(&execstore_any::Options::new().executions(true))
            .map_err(store_err)?
            .executions
            .context("no execution store")?;
        let copier = Copier::Sqlite(path);
        fill(&*store, &copier, 0, TEMPLATE + 60)?;
        let verified = verify(&*store, &copier, TEMPLATE + 60)?;
        assert_eq!((verified.done, verified.running), (530, 530));
        // A second fill continues where the first stopped, and the counts still agree.
        fill(&*store, &copier, TEMPLATE + 60, TEMPLATE + 125)?;
        let verified = verify(&*store, &copier, TEMPLATE + 125)?;
        assert_eq!(verified.done + verified.running, (TEMPLATE + 125) as u64);
        Ok(())
    }
}
