//! Table names, harel 0.9's PostgreSQL tables and execstore's own migrations.

use execstore::{Result, StoreError};
use postgres::{Client, GenericClient};

use crate::db::{self, Db};

/// harel's advisory lock key for schema setup (`harel.engine.store._base._PG_SCHEMA_LOCK`):
/// taking the same one serializes execstore's migrations with harel's own `CREATE ... IF NOT
/// EXISTS` (concurrent `CREATE TABLE IF NOT EXISTS` of one name can fail in PostgreSQL).
pub(crate) const SCHEMA_LOCK: i64 = 7_723_019;

/// The names of everything the store creates, for one prefix (shared by the SQL backends).
pub(crate) use execstore::kit::names::TableNames as Tables;

/// Fills a statement template with the table names.
pub(crate) trait Sql {
    /// `template` with `{executions}`, `{outbox}`, ..., `{pfx}` filled in.
    fn sql(&self, template: &str) -> String;
}

impl Sql for Tables {
    fn sql(&self, template: &str) -> String {
        self.fill(
            &template
                .replace("{json}", &json_of("data"))
                .replace("{new_json}", &json_of("NEW.data")),
        )
    }
}

/// The column `column` (harel's `data`, or `NEW.data` in a trigger) as text PostgreSQL's
/// JSON functions accept: the one spelling every read of the document's fields and every
/// index over them uses (PostgreSQL matches expression indexes structurally). `data` itself
/// is stored untouched.
///
/// What PostgreSQL's JSON functions refuse (anywhere in the document, even when the field
/// read is another one) and Python's `json.dumps` writes:
/// - the escape `\u0000` (a text cannot hold NUL): its six characters become `\ufffd`, the
///   same shape, so the document stays valid whatever precedes them;
/// - a lone surrogate's escape (`\ud800` not followed by a low one, or `\udc00` not after a
///   high one): it becomes `\ufffd` too. Pairs (`\ud83d\ude00`, how `json.dumps` writes an
///   emoji) are kept: they are marked first (their backslashes as the character 1, which
///   valid JSON never holds raw), then every surrogate escape left is a lone one, then the
///   marks are undone. An escape is a backslash after an even run of them (`\\ud800` is a
///   backslash and text).
///
/// A document without `\ud` or `\uD` (nearly all) skips the regular expressions, and so does
/// one holding the character 1 (not valid JSON either way).
pub(crate) fn parseable(column: &str) -> String {
    let pair = r"'(?<!\\)((?:\\\\)*)\\(u[dD][89abAB][0-9a-fA-F]{2})\\(u[dD][c-fC-F][0-9a-fA-F]{2})'";
    let lone = r"'(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}'";
    let marked = r"'\1' || chr(1) || '\2' || chr(1) || '\3'";
    let nul = format!(r"replace({column}, '\u0000', '\ufffd')");
    format!(
        r"(CASE WHEN strpos({column}, '\ud') + strpos({column}, '\uD') = 0 OR strpos({column}, chr(1)) > 0 THEN {nul} ELSE replace(regexp_replace(regexp_replace({nul}, {pair}, {marked}, 'g'), {lone}, '\1\\ufffd', 'g'), chr(1), '\') END)"
    )
}

/// `column` as `json` ([`parseable`]). `json` rather than `jsonb`: a validating scan,
/// cheaper than building a `jsonb`.
pub(crate) fn json_of(column: &str) -> String {
    format!("({}::json)", parseable(column))
}

/// harel 0.9's PostgreSQL store tables (`harel.engine.schema._PG_STORE`, without its
/// `commit_cas` function, which execstore does not use), statement for statement.
const HAREL_TABLES: [&str; 6] = [
    "CREATE TABLE IF NOT EXISTS {executions} \
     (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, version INT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {outbox} (seq BIGSERIAL PRIMARY KEY, target_id TEXT, event TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {processed_events} \
     (execution_id TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (execution_id, event_id))",
    "CREATE TABLE IF NOT EXISTS {timers} \
     (execution_id TEXT NOT NULL, path TEXT NOT NULL, fire_at DOUBLE PRECISION NOT NULL, \
     PRIMARY KEY (execution_id, path))",
    "CREATE TABLE IF NOT EXISTS {spawns} \
     (seq BIGSERIAL PRIMARY KEY, parent_id TEXT NOT NULL, child_id TEXT NOT NULL, \
     root_path TEXT NOT NULL, context TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {trace} \
     (execution_id TEXT NOT NULL, idx INT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (execution_id, idx))",
];

/// harel 0.9's six store tables under `t`'s prefix, as harel's own DDL creates them (what a
/// migration tool applies for a store opened without `create_schema`).
pub(crate) fn harel_tables(t: &Tables) -> Vec<String> {
    HAREL_TABLES.iter().map(|stmt| t.sql(stmt)).collect()
}

/// execstore's record of the migrations it applied.
const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS {migrations} \
     (version INT PRIMARY KEY, description TEXT NOT NULL, checksum TEXT NOT NULL, \
     applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

pub(crate) use execstore::kit::migration::Migration;

/// Every migration this build knows, in order.
///
/// Ids order as bytes (`COLLATE "C"`) whatever the database's collation, as in SQLite and
/// Rust; the listing and sweep spell the indexed expressions exactly as written here.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "indexes for listing by id, status and definition, and the timer sweep",
        statements: &[
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_id_c ON {executions} ((id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_status \
         ON {executions} (({json}->>'status'), (id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_definition \
         ON {executions} (definition_id, (id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_timers_due \
         ON {timers} (fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\"))",
        ],
    },
    Migration {
        version: 2,
        description: "a partial status index of root executions, for listing roots only",
        // Without it, roots-only listing takes every execution of the status from the status
        // index and parses each document for its parent (W1: 180 ms a page of 100).
        statements: &["CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_root_status \
         ON {executions} (({json}->>'status'), (id COLLATE \"C\")) WHERE ({json}->>'parent_id') IS NULL"],
    },
    Migration {
        version: 3,
        description: "harel 0.9's commit_cas function, unless one is there",
        // harel's state-only save calls `<prefix>_commit_cas`; a harel opening tables that
        // execstore created, with `create_schema=False` (a migration tool owns the schema),
        // would fail without it. Created only if absent: a newer harel's own version is kept.
        // The body is harel 0.9's (`harel.engine.schema._PG_STORE`), statement for statement.
        statements: &["DO $execstore$ BEGIN \
         IF NOT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.proname = '{pfx}commit_cas' AND n.nspname = current_schema()) THEN \
         EXECUTE $fn$CREATE FUNCTION {pfx}commit_cas(p_id text, p_defn text, p_data text, p_old bigint, p_event text)
RETURNS boolean AS $$
DECLARE n int; row_exists boolean;
BEGIN
  UPDATE {executions} SET data = p_data, version = p_old + 1 WHERE id = p_id AND version = p_old;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 0 THEN
    SELECT EXISTS (SELECT 1 FROM {executions} WHERE id = p_id) INTO row_exists;
    IF p_old = 0 AND NOT row_exists THEN
      INSERT INTO {executions} (id, definition_id, data, version) VALUES (p_id, p_defn, p_data, 1);
    ELSE
      RETURN false;
    END IF;
  END IF;
  IF p_event <> '' THEN
    INSERT INTO {processed_events} (execution_id, event_id) VALUES (p_id, p_event) ON CONFLICT DO NOTHING;
  END IF;
  RETURN true;
END; $$ LANGUAGE plpgsql$fn$; \
         END IF; END $execstore$"],
    },
    Migration {
        version: 4,
        description: "execstore's commit functions: an event step, or a batch of them, in one round trip",
        statements: &[COMMIT_FUNCTION, COMMIT_BATCH_FUNCTION],
    },
    Migration {
        version: 5,
        description: "indexes for listing by created, updated and finished time and by active path",
        // The listing's time windows and search (`ListQuery::created` ... `search`), spelled
        // as the filtered listing spells them. A number that is not one would fail the cast,
        // but harel writes these as numbers or null (pydantic writes NaN and infinities as null).
        statements: &[
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_created \
         ON {executions} ((({json}->>'created_at')::float8), (id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_updated \
         ON {executions} ((({json}->>'updated_at')::float8), (id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_finished \
         ON {executions} ((({json}->>'finished_at')::float8), (id COLLATE \"C\"))",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_exe_active_path \
         ON {executions} ((({json}->>'active_path') COLLATE \"C\"), (id COLLATE \"C\"))",
        ],
    },
    Migration {
        version: 6,
        description: "the listing's keys in a table of their own, written with each step, instead of \
                      indexes over the parsed document",
        // Every update evaluated migrations 1, 2 and 5's seven expression indexes over `data`,
        // each a parse of the whole document, and none could be a HOT update: a third of a
        // commit. The keys (`{pfx}execstore_keys`, one row per execution) are written by
        // `{pfx}execstore_step` from values the caller passes, and by a trigger, parsing
        // the document once, for any other writer (harel's own store, the batch function);
        // the step function tells the trigger it wrote them through a transaction-local
        // setting. The listing joins them (see `KEYS_OF_DATA` for a store without them).
        statements: &[
            "CREATE TABLE IF NOT EXISTS {pfx}execstore_keys (id TEXT COLLATE \"C\" PRIMARY KEY, \
             status TEXT, root BOOLEAN NOT NULL, created_at FLOAT8, updated_at FLOAT8, \
             finished_at FLOAT8, active_path TEXT COLLATE \"C\")",
            "DROP INDEX IF EXISTS {pfx}execstore_exe_status, {pfx}execstore_exe_root_status, \
             {pfx}execstore_exe_created, {pfx}execstore_exe_updated, {pfx}execstore_exe_finished, \
             {pfx}execstore_exe_active_path",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_status \
             ON {pfx}execstore_keys (status, id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_root_status \
             ON {pfx}execstore_keys (status, id) WHERE root",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_created \
             ON {pfx}execstore_keys (created_at, id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_updated \
             ON {pfx}execstore_keys (updated_at, id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_finished \
             ON {pfx}execstore_keys (finished_at, id) WHERE finished_at IS NOT NULL",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_k_active_path \
             ON {pfx}execstore_keys (active_path, id)",
            KEYS_TRIGGERS,
            // After the triggers: their lock on the table holds every other writer off
            // until this commits, and a write that committed before is seen here.
            "INSERT INTO {pfx}execstore_keys \
             SELECT e.id, d.status, d.parent_id IS NULL, d.created_at, d.updated_at, d.finished_at, d.active_path \
             FROM {executions} e, LATERAL json_to_record({json}) \
             AS d(status text, parent_id text, created_at float8, updated_at float8, finished_at float8, active_path text) \
             ON CONFLICT (id) DO NOTHING",
            STEP_FUNCTION,
        ],
    },
    Migration {
        version: 7,
        // Search attributes (`ExecutionStore::declare_attribute`): the declared context paths;
        // each has two expression indexes over the document, built when declared (see
        // `executions/search.rs`).
        description: "the table of search attributes",
        statements: &["CREATE TABLE IF NOT EXISTS {pfx}execstore_attributes \
         (path TEXT PRIMARY KEY, index_name TEXT NOT NULL, declared_at TIMESTAMPTZ NOT NULL DEFAULT now())"],
    },
    Migration {
        version: 8,
        // The counts by definition, status and root-ness, kept up to date by triggers so that
        // every writer (execstore's step and batch functions, harel 0.9's own store, any
        // UPDATE) keeps them right, and `count_by_status` reads a few rows instead of every
        // execution's keys. See `COUNTS`.
        description: "execution counts by definition and status, kept by triggers",
        statements: &[COUNTS],
    },
    Migration {
        version: 9,
        // The per-definition graph's figures, kept by triggers as the counts are (delta rows
        // folded by readers). See `executions/graph.rs`.
        description: "graph figures by definition, kept by triggers",
        statements: &[super::graph::GRAPH],
    },
    Migration {
        version: 10,
        // Migration 6's keys trigger and the declared attributes' indexes read the document
        // as `replace(data, '\u0000', '\ufffd')`, which PostgreSQL's JSON refuses when it
        // holds a lone surrogate's escape (Python's `json.dumps` writes them): a write of
        // such a document through harel's statements failed, and so did a listing page
        // holding one. The trigger's function is rewritten with `parseable`'s spelling (its
        // text is execstore's own: the one expression is swapped, and the migration fails if
        // it is not found), and `rebuild_attribute_indexes` rebuilds each declared
        // attribute's two indexes (in this transaction: writers wait for the rebuild).
        description: "lone surrogates' escapes read as U+FFFD by the keys trigger and the attributes' indexes",
        statements: &[KEYS_SYNC_RESPELLED],
    },
    Migration {
        version: 11,
        // Migration 9's trace trigger appended a delta per step, which a bulk statement
        // turned into millions for the next reader to fold; the figures are now summed per
        // statement, and readers fold a bounded number of deltas. See `executions/graph.rs`.
        description: "the trace's graph deltas summed per statement, and folds bounded in rows",
        statements: &[super::graph::GRAPH_BY_STATEMENT],
    },
    Migration {
        version: 12,
        // The steps' and guards' figures are no longer kept: the graph reads them from a
        // bounded number of traces. Where executions sit, and the counts, stay kept. See
        // `executions/graph.rs`.
        description: "the graph's steps read from the traces, no longer kept by triggers",
        statements: &[super::graph::UNKEPT_STEPS],
    },
    Migration {
        version: 13,
        // An update whose document names another definition moved only the document: harel's
        // `definition_id` column kept the first one (harel's own UPDATE sets only `data` and
        // `version`), and with it the listing, the counts and the graph. The commit function
        // now sets the column too (to the same value at nearly every step, which keeps the
        // update HOT), and a trigger moves a changed execution's counts (where it sits moves
        // with migration 9's `..._graph_execution_moved`).
        description: "an update that changes an execution's definition moves its column, counts and figures",
        statements: &[DEFINITION_MOVES],
    },
    Migration {
        version: 14,
        // Each of execstore's functions is the product of several migrations (some rewrite
        // another's text), so no one statement makes it again. Its text as the migrations
        // left it is kept here instead, written after every open that migrated
        // (`mend::record`), so that a writer's open can make again a function a hand replaced
        // or dropped (`mend.rs`).
        description: "the text of execstore's functions as the migrations left them",
        statements: &[super::mend::FUNCTIONS_TABLE],
    },
];

/// Migration 13: `{pfx}execstore_commit`'s CAS update sets harel's `definition_id` column
/// (its text is execstore's own: the one statement is swapped, and the migration fails if it
/// is not found), and `{pfx}execstore_definition_moved` moves a changed execution's count
/// from the old definition to the new, with the status and root-ness its keys still hold: it
/// sorts before the keys trigger, which then counts the step's keys under the new definition
/// (and the step function's own keys update does the same). Where it sits is moved by
/// migration 9's `{pfx}execstore_graph_execution_moved`, as it always was for a writer that
/// changes the column.
const DEFINITION_MOVES: &str = r#"DO $m$
DECLARE
  v_old text := pg_get_functiondef('{pfx}execstore_commit(text, text, text, bigint, bigint, text[], text[], text, text[], text[], text[], text[], float8[], text, bigint)'::regprocedure);
  v_new text := replace(v_old,
    $o$UPDATE {executions} SET data = p_data, version = p_version WHERE id = p_id AND version = p_expected;$o$,
    $n$UPDATE {executions} SET data = p_data, version = p_version, definition_id = p_defn WHERE id = p_id AND version = p_expected;$n$);
BEGIN
  IF v_new = v_old THEN
    RAISE EXCEPTION 'execstore migration 13: {pfx}execstore_commit does not update as migration 4 wrote it';
  END IF;
  EXECUTE v_new;
END $m$;
CREATE OR REPLACE FUNCTION {pfx}execstore_definition_moved() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO {pfx}execstore_count_deltas (definition_id, status, root, n)
  SELECT d.definition_id, COALESCE(k.status, ''), k.root, d.n
  FROM {pfx}execstore_keys k, (VALUES (OLD.definition_id, -1), (NEW.definition_id, 1)) AS d(definition_id, n)
  WHERE k.id = NEW.id;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_definition_moved ON {executions};
CREATE TRIGGER {pfx}execstore_definition_moved AFTER UPDATE OF definition_id ON {executions} FOR EACH ROW
  WHEN (OLD.definition_id IS DISTINCT FROM NEW.definition_id AND OLD.id = NEW.id)
  EXECUTE FUNCTION {pfx}execstore_definition_moved()"#;

/// Migration 10's rewrite of `{pfx}execstore_keys_sync` (see `parseable`).
const KEYS_SYNC_RESPELLED: &str = r#"DO $m$
DECLARE
  v_old text := pg_get_functiondef('{pfx}execstore_keys_sync()'::regprocedure);
  v_new text := replace(v_old, $o$(replace(NEW.data, '\u0000', '\ufffd')::json)$o$, $n${new_json}$n$);
BEGIN
  IF v_new = v_old THEN
    RAISE EXCEPTION 'execstore migration 10: {pfx}execstore_keys_sync does not read the document as migration 6 wrote it';
  END IF;
  EXECUTE v_new;
END $m$"#;

/// Migration 8. A writer never updates a shared counter row (concurrent commits would wait on
/// each other's row locks, and two batches touching two definitions in opposite orders would
/// deadlock): each change of a listing key's status or root-ness, and each new or deleted
/// execution, appends a `+1`/`-1` row to `{pfx}execstore_count_deltas`, an insert no other
/// writer waits for. The counts are `{pfx}execstore_counts` plus the deltas; a reader folds
/// the deltas into the counts now and then (`{pfx}execstore_fold_counts`, one folder at a
/// time under an advisory lock, deleting only the deltas its snapshot sees).
///
/// The trigger on the keys table sees every status change (the step function writes the keys
/// itself, the keys trigger does for every other writer) and finds the definition by the
/// execution's primary key. A deleted execution is counted out by a trigger on harel's table
/// that reads its keys before the keys trigger deletes them: triggers of one event fire in
/// name order, and `..._counts_delete` sorts before `..._keys_delete`.
const COUNTS: &str = r#"CREATE TABLE IF NOT EXISTS {pfx}execstore_counts (definition_id TEXT NOT NULL,
  status TEXT NOT NULL, root BOOLEAN NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (definition_id, status, root));
CREATE TABLE IF NOT EXISTS {pfx}execstore_count_deltas (definition_id TEXT NOT NULL, status TEXT NOT NULL,
  root BOOLEAN NOT NULL, n INT NOT NULL);
CREATE OR REPLACE FUNCTION {pfx}execstore_counts_key() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO {pfx}execstore_count_deltas (definition_id, status, root, n)
    SELECT e.definition_id, COALESCE(OLD.status, ''), OLD.root, -1 FROM {executions} e WHERE e.id = OLD.id;
  END IF;
  INSERT INTO {pfx}execstore_count_deltas (definition_id, status, root, n)
  SELECT e.definition_id, COALESCE(NEW.status, ''), NEW.root, 1 FROM {executions} e WHERE e.id = NEW.id;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_counts_key_insert ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_counts_key_insert AFTER INSERT ON {pfx}execstore_keys FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_counts_key();
DROP TRIGGER IF EXISTS {pfx}execstore_counts_key_update ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_counts_key_update AFTER UPDATE ON {pfx}execstore_keys FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.root IS DISTINCT FROM NEW.root)
  EXECUTE FUNCTION {pfx}execstore_counts_key();
CREATE OR REPLACE FUNCTION {pfx}execstore_counts_out() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE {pfx}execstore_counts, {pfx}execstore_count_deltas;
    RETURN NULL;
  END IF;
  INSERT INTO {pfx}execstore_count_deltas (definition_id, status, root, n)
  SELECT OLD.definition_id, COALESCE(k.status, ''), k.root, -1 FROM {pfx}execstore_keys k WHERE k.id = OLD.id;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_counts_delete ON {executions};
CREATE TRIGGER {pfx}execstore_counts_delete AFTER DELETE ON {executions} FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_counts_out();
DROP TRIGGER IF EXISTS {pfx}execstore_counts_truncate ON {executions};
CREATE TRIGGER {pfx}execstore_counts_truncate AFTER TRUNCATE ON {executions} FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_counts_out();
CREATE OR REPLACE FUNCTION {pfx}execstore_fold_counts() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF pg_try_advisory_xact_lock(hashtext('{pfx}execstore_counts')) THEN
    WITH d AS (DELETE FROM {pfx}execstore_count_deltas RETURNING definition_id, status, root, n)
    INSERT INTO {pfx}execstore_counts AS c (definition_id, status, root, n)
    SELECT definition_id, status, root, SUM(n) FROM d GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (definition_id, status, root) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
END
$fn$;
DELETE FROM {pfx}execstore_count_deltas;
DELETE FROM {pfx}execstore_counts;
INSERT INTO {pfx}execstore_counts (definition_id, status, root, n)
SELECT e.definition_id, COALESCE(k.status, ''), k.root, COUNT(*)
FROM {executions} e JOIN {pfx}execstore_keys k ON k.id = e.id GROUP BY 1, 2, 3"#;

/// `{pfx}execstore_commit`: one event step, as one statement (so one round trip, and, called
/// on its own, one transaction), writing the rows the step wrote as separate statements
/// before (harel's rows, byte for byte): the CAS write, then its outbox, dedupe, spawn,
/// timer and trace rows, each kind one statement, run only if the step has some (a
/// statement's executor setup is much of its cost). A plpgsql function, whose statements
/// each take a fresh snapshot as separate statements did in READ COMMITTED: a lost CAS
/// reports the version that is there now, and the trace index is read once this step holds
/// the execution's row lock (which `append_trace` takes too).
///
/// A lost CAS returns `o_ok = false` and the version found (`NULL`: none), having written
/// nothing. `o_seqs` are the outbox seqs, in emit order (inserted in that order, so
/// ascending). `p_fire_ats[i]` is `NULL` for a cancel of `p_timer_paths[i]`; a path appears
/// once (the caller keeps each path's last change, which is what applying them in order
/// leaves). `p_trace_max` `NULL` keeps every trace step. NOTIFY wakes the waiters for each
/// kind of work the step added, at commit.
const COMMIT_FUNCTION: &str = "CREATE OR REPLACE FUNCTION {pfx}execstore_commit(
  p_id text, p_defn text, p_data text, p_version bigint, p_expected bigint,
  p_targets text[], p_events text[], p_processed text,
  p_children text[], p_root_paths text[], p_contexts text[],
  p_timer_paths text[], p_fire_ats float8[],
  p_trace text, p_trace_max bigint,
  OUT o_ok boolean, OUT o_found bigint, OUT o_seqs bigint[])
LANGUAGE plpgsql AS $fn$
DECLARE
  v_idx bigint;
BEGIN
  UPDATE {executions} SET data = p_data, version = p_version WHERE id = p_id AND version = p_expected;
  IF NOT FOUND THEN
    IF p_expected = 0 THEN
      -- A new execution. Two writers inserting one new id race on the primary key: the
      -- loser inserts nothing (after waiting for the winner).
      INSERT INTO {executions} (id, definition_id, data, version) VALUES (p_id, p_defn, p_data, p_version)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    IF NOT FOUND THEN
      SELECT version INTO o_found FROM {executions} WHERE id = p_id;
      o_ok := false;
      RETURN;
    END IF;
  END IF;
  o_ok := true;
  o_seqs := ARRAY[]::bigint[];
  IF cardinality(p_events) > 0 THEN
    WITH added AS (
      INSERT INTO {outbox} (target_id, event)
      SELECT e.target_id, e.event FROM unnest(p_targets, p_events) WITH ORDINALITY AS e(target_id, event, n)
      ORDER BY e.n
      RETURNING seq
    ) SELECT array_agg(seq ORDER BY seq) INTO o_seqs FROM added;
    PERFORM pg_notify('{pfx}execstore_outbox', '');
  END IF;
  IF p_processed IS NOT NULL THEN
    INSERT INTO {processed_events} (execution_id, event_id) VALUES (p_id, p_processed) ON CONFLICT DO NOTHING;
  END IF;
  IF cardinality(p_children) > 0 THEN
    INSERT INTO {spawns} (parent_id, child_id, root_path, context)
    SELECT p_id, s.child_id, s.root_path, s.context
    FROM unnest(p_children, p_root_paths, p_contexts) WITH ORDINALITY AS s(child_id, root_path, context, n)
    ORDER BY s.n;
    PERFORM pg_notify('{pfx}execstore_spawns', '');
  END IF;
  IF cardinality(array_remove(p_fire_ats, NULL)) > 0 THEN
    INSERT INTO {timers} (execution_id, path, fire_at)
    SELECT p_id, t.path, t.fire_at FROM unnest(p_timer_paths, p_fire_ats) AS t(path, fire_at)
    WHERE t.fire_at IS NOT NULL
    ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at;
    PERFORM pg_notify('{pfx}execstore_timers', '');
  END IF;
  IF array_position(p_fire_ats, NULL) IS NOT NULL THEN
    DELETE FROM {timers} d USING unnest(p_timer_paths, p_fire_ats) AS t(path, fire_at)
    WHERE t.fire_at IS NULL AND d.execution_id = p_id AND d.path = t.path;
  END IF;
  IF p_trace IS NOT NULL THEN
    INSERT INTO {trace} (execution_id, idx, entry)
    SELECT p_id, COALESCE((SELECT MAX(t.idx) FROM {trace} t WHERE t.execution_id = p_id), -1) + 1, p_trace
    RETURNING idx INTO v_idx;
    -- The ring: only once it is full is there a step to drop.
    IF p_trace_max IS NOT NULL AND v_idx >= p_trace_max THEN
      DELETE FROM {trace} WHERE execution_id = p_id AND idx <= v_idx - p_trace_max;
    END IF;
  END IF;
END
$fn$";

/// Keeps `{pfx}execstore_keys` for writers other than `{pfx}execstore_step`: a row written
/// by anyone else (harel, the batch function, an older execstore) gets its keys from its
/// document, parsed once, with the listing's own spelling of each field; a row deleted takes
/// its keys along, and so does a `TRUNCATE`. The step function's own writes are skipped by
/// the `WHEN` clause (evaluated as each row is written, without calling the function).
const KEYS_TRIGGERS: &str = r#"CREATE OR REPLACE FUNCTION {pfx}execstore_keys_sync() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' THEN
    DELETE FROM {pfx}execstore_keys WHERE id = OLD.id;
    RETURN NULL;
  END IF;
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE {pfx}execstore_keys;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.id IS DISTINCT FROM NEW.id THEN
    DELETE FROM {pfx}execstore_keys WHERE id = OLD.id;
  END IF;
  INSERT INTO {pfx}execstore_keys AS k (id, status, root, created_at, updated_at, finished_at, active_path)
  SELECT NEW.id, d.status, d.parent_id IS NULL, d.created_at, d.updated_at, d.finished_at, d.active_path
  FROM json_to_record((replace(NEW.data, '\u0000', '\ufffd')::json))
    AS d(status text, parent_id text, created_at float8, updated_at float8, finished_at float8, active_path text)
  ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, root = EXCLUDED.root,
    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
    finished_at = EXCLUDED.finished_at, active_path = EXCLUDED.active_path;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_keys_write ON {executions};
CREATE TRIGGER {pfx}execstore_keys_write AFTER INSERT OR UPDATE ON {executions} FOR EACH ROW
  WHEN (current_setting('execstore.keys_written', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_keys_sync();
DROP TRIGGER IF EXISTS {pfx}execstore_keys_delete ON {executions};
CREATE TRIGGER {pfx}execstore_keys_delete AFTER DELETE ON {executions} FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_keys_sync();
DROP TRIGGER IF EXISTS {pfx}execstore_keys_truncate ON {executions};
CREATE TRIGGER {pfx}execstore_keys_truncate AFTER TRUNCATE ON {executions} FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_keys_sync()"#;

/// `{pfx}execstore_step`: `{pfx}execstore_commit` (the step, one round trip) and the
/// execution's listing keys, which the caller passes as they are in `p_data`, so that the
/// document is not parsed on the server. The keys trigger is told to skip the step's row
/// (the setting is the transaction's, and cleared again before the keys are written).
const STEP_FUNCTION: &str = "CREATE OR REPLACE FUNCTION {pfx}execstore_step(
  p_id text, p_defn text, p_data text, p_version bigint, p_expected bigint,
  p_targets text[], p_events text[], p_processed text,
  p_children text[], p_root_paths text[], p_contexts text[],
  p_timer_paths text[], p_fire_ats float8[],
  p_trace text, p_trace_max bigint,
  p_status text, p_root boolean, p_created float8, p_updated float8, p_finished float8, p_path text,
  OUT o_ok boolean, OUT o_found bigint, OUT o_seqs bigint[])
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM set_config('execstore.keys_written', 'on', true);
  SELECT c.o_ok, c.o_found, c.o_seqs INTO o_ok, o_found, o_seqs
    FROM {pfx}execstore_commit(p_id, p_defn, p_data, p_version, p_expected, p_targets, p_events,
      p_processed, p_children, p_root_paths, p_contexts, p_timer_paths, p_fire_ats, p_trace,
      p_trace_max) AS c;
  PERFORM set_config('execstore.keys_written', 'off', true);
  IF o_ok THEN
    UPDATE {pfx}execstore_keys SET status = p_status, root = p_root, created_at = p_created,
      updated_at = p_updated, finished_at = p_finished, active_path = p_path
      WHERE id = p_id;
    IF NOT FOUND THEN
      INSERT INTO {pfx}execstore_keys (id, status, root, created_at, updated_at, finished_at, active_path)
        VALUES (p_id, p_status, p_root, p_created, p_updated, p_finished, p_path);
    END IF;
  END IF;
END
$fn$";

/// `{pfx}execstore_commit_batch`: many event steps in one statement (one round trip, one
/// transaction), each through `{pfx}execstore_commit`, in order, one result row each. The
/// steps' lists are flattened: step `i` owns the next `p_emit_counts[i]` emits,
/// `p_spawn_counts[i]` spawns and `p_timer_counts[i]` timer changes. A lost CAS writes
/// nothing of its step (so no savepoint is needed) and the batch goes on; any error fails
/// the whole statement, and so the whole batch.
const COMMIT_BATCH_FUNCTION: &str = "CREATE OR REPLACE FUNCTION {pfx}execstore_commit_batch(
  p_ids text[], p_defns text[], p_datas text[], p_versions bigint[], p_expecteds bigint[],
  p_emit_counts int[], p_targets text[], p_events text[], p_processed text[],
  p_spawn_counts int[], p_children text[], p_root_paths text[], p_contexts text[],
  p_timer_counts int[], p_timer_paths text[], p_fire_ats float8[],
  p_traces text[], p_trace_max bigint)
RETURNS TABLE (o_ok boolean, o_found bigint, o_seqs bigint[])
LANGUAGE plpgsql AS $fn$
DECLARE
  v_e int := 0;
  v_s int := 0;
  v_t int := 0;
BEGIN
  FOR i IN 1 .. cardinality(p_ids) LOOP
    SELECT c.o_ok, c.o_found, c.o_seqs INTO o_ok, o_found, o_seqs
      FROM {pfx}execstore_commit(p_ids[i], p_defns[i], p_datas[i], p_versions[i], p_expecteds[i],
        p_targets[v_e + 1 : v_e + p_emit_counts[i]], p_events[v_e + 1 : v_e + p_emit_counts[i]],
        p_processed[i],
        p_children[v_s + 1 : v_s + p_spawn_counts[i]], p_root_paths[v_s + 1 : v_s + p_spawn_counts[i]],
        p_contexts[v_s + 1 : v_s + p_spawn_counts[i]],
        p_timer_paths[v_t + 1 : v_t + p_timer_counts[i]], p_fire_ats[v_t + 1 : v_t + p_timer_counts[i]],
        p_traces[i], p_trace_max) AS c;
    v_e := v_e + p_emit_counts[i];
    v_s := v_s + p_spawn_counts[i];
    v_t := v_t + p_timer_counts[i];
    RETURN NEXT;
  END LOOP;
END
$fn$";

/// Creates harel's tables and applies every migration not yet recorded, in one transaction
/// under harel's schema advisory lock: several processes opening the same fresh database at
/// once serialize, and each finds the work of the ones before it done. An open that applied
/// a migration records execstore's functions as the migrations left them; on a database at
/// this build's latest migration, a function a hand dropped or replaced is made again, a
/// trigger a hand dropped or disabled is made to fire again, and the figures the triggers
/// keep are set again (`mend.rs`).
pub(crate) fn migrate(client: &mut Client, tables: &Tables) -> Result<()> {
    let mut tx = client.transaction().db()?;
    db::advisory_xact_lock(&mut tx, SCHEMA_LOCK)?;
    for stmt in HAREL_TABLES.iter().chain([&MIGRATIONS_TABLE]) {
        tx.batch_execute(&tables.sql(stmt)).db()?;
    }
    let select = tables.sql("SELECT checksum FROM {migrations} WHERE version = $1");
    let insert = tables.sql("INSERT INTO {migrations} (version, description, checksum) VALUES ($1, $2, $3)");
    let mut migrated = false;
    for migration in MIGRATIONS {
        let checksum = migration.checksum();
        let applied: Option<String> = tx
            .query_opt(&select, &[&migration.version])
            .db()?
            .map(|row| row.get(0));
        if migration.needs_applying(applied.as_deref(), &tables.migrations)? {
            for stmt in migration.statements {
                tx.batch_execute(&tables.sql(stmt)).db()?;
            }
            if migration.version == 10 {
                super::search::rebuild_attribute_indexes(&mut tx, tables)?;
            }
            tx.execute(&insert, &[&migration.version, &migration.description, &checksum])
                .db()?;
            migrated = true;
        }
    }
    if at_latest(&mut tx, tables)? {
        if migrated {
            super::mend::record(&mut tx, tables)?;
        }
        super::mend::mend(&mut tx, tables)?;
    }
    tx.commit().db()
}

/// Which of execstore's later objects a database has, read at open in one round trip: a
/// database an earlier build migrated, a read-only open of one no execstore of this version
/// migrated, or a schema harel owns (`create_schema` off) may lack them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Present {
    /// The listing keys of migration 6 (else they are read from the documents).
    pub(crate) keys: bool,
    /// The counts of migration 8 (else the counts are read from the keys).
    pub(crate) counts: bool,
    /// The graph figures of migration 9 (else the graph is scanned).
    pub(crate) graph: bool,
    /// Migration 11's bounded folds (else readers fold every delta).
    pub(crate) bounded_folds: bool,
}

/// What [`Present`] says of the database under `tables`, for an open that is `read_only` or
/// not.
pub(crate) fn present(client: &mut Client, tables: &Tables, read_only: bool) -> Result<Present> {
    let row = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, \
             to_regclass($3) IS NOT NULL, to_regprocedure($4) IS NOT NULL",
            &[
                &tables.sql("{pfx}execstore_keys"),
                &tables.sql("{pfx}execstore_counts"),
                &tables.sql("{pfx}execstore_graph"),
                &tables.sql("{pfx}execstore_fold_graph(integer)"),
            ],
        )
        .db()?;
    let present = Present {
        keys: row.get(0),
        counts: row.get(1),
        graph: row.get(2),
        bounded_folds: row.get(3),
    };
    // A migrated database missing one of the triggers or functions (a hand dropped,
    // disabled or replaced it; a writer's open mends it) may hold keys and figures some writer left stale: a read-only
    // open reads it as one before them, from the documents (`mend.rs`). A writer that does
    // not migrate keeps writing the keys itself.
    if read_only
        && present.keys
        && present.graph
        && at_latest(client, tables)?
        && !super::mend::intact(client, tables)?
    {
        return Ok(Present {
            keys: false,
            counts: false,
            graph: false,
            ..present
        });
    }
    Ok(present)
}

/// The highest migration a database records (a template: `Stmts::schema_version`).
pub(crate) const SCHEMA_VERSION: &str = "SELECT COALESCE(MAX(version), 0)::int8 FROM {migrations}";

/// Whether the database under `tables` records exactly this build's latest migration (not an
/// earlier one, nor a newer build's); false without a migrations table.
fn at_latest(client: &mut impl GenericClient, tables: &Tables) -> Result<bool> {
    if !db::has_table(client, &tables.migrations)? {
        return Ok(false);
    }
    let version: i64 = client.query_one(&tables.sql(SCHEMA_VERSION), &[]).db()?.get(0);
    Ok(version == execstore::kit::migration::latest(MIGRATIONS))
}

/// For a read-only open: every one of harel's tables is there (execstore's own migrations
/// need not be: a database only harel wrote is read without them, just less fast).
pub(crate) fn check_present(client: &mut Client, tables: &Tables) -> Result<()> {
    for table in tables.harel() {
        let found: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&table])
            .db()?
            .get(0);
        if found.is_none() {
            return Err(StoreError::NotFound {
                what: "table (opened read-only, so nothing is created)",
                key: table.to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_postgres_identifiers() {
        let t = Tables::new(Some(&"x".repeat(30))).unwrap();
        for stmt in MIGRATIONS[0].statements {
            let sql = t.sql(stmt);
            let name = sql.split_whitespace().nth(5).unwrap();
            assert!(name.len() <= 63, "{name}");
        }
        assert!(t.migrations.len() <= 63);
    }

    /// A released migration's statements never change (a store migrated by an earlier build
    /// refuses to open with a build whose checksum differs): add a migration instead.
    #[test]
    fn released_migrations_keep_their_checksums() {
        let released = [
            "fnv1a64:a73eda90161ca3b7",
            "fnv1a64:7c2046bf15d70c72",
            "fnv1a64:412fc1e32ce172ab",
            "fnv1a64:7c8b03a81f56d1f9",
            "fnv1a64:4e75c3399ca559be",
            "fnv1a64:2aa93722159bf5f9",
            "fnv1a64:b48f4aabfb71ff00",
            "fnv1a64:e45be1ae6b1ae720",
            "fnv1a64:377e0acb47a4f999",
            "fnv1a64:0293e8c7693174cb",
            "fnv1a64:e11dfa8343fa3ebe",
            "fnv1a64:623599b40c7d5612",
            "fnv1a64:5d0b2fa6c7b6f75a",
            "fnv1a64:41dd98a5a3ed8724",
        ];
        execstore::kit::migration::check_released(MIGRATIONS, &released).unwrap();
    }

    #[test]
    fn checksum_is_stable() {
        let c = MIGRATIONS[0].checksum();
        assert!(c.starts_with("fnv1a64:") && c.len() == 8 + 16);
    }
}
