"""Shared by the interop scripts: what harel 0.9 reads from a SQLite or PostgreSQL store, as JSON.

A store is named by DB: a SQLite file's path, or a `postgres://` / `postgresql://` URL, whose
tables are those under a prefix (`--prefix`, default "harel"); `open_store` opens it with
harel's own `SqliteStore` or `PostgresStore` (psycopg 3, harel's optional dependency).

`view(store, db, prefix)` returns harel's view of the store through harel's own store (every
execution loaded and dumped with `model_dump(mode="json")`, the listings, outbox, spawns,
timers, traces, dedupe markers, prefix lookups) plus the raw column text of every table and,
for each raw row, the text harel itself would write for the object it parses from that row.
Any failure raises: the scripts exit non-zero.
"""

from __future__ import annotations

import importlib.metadata
import json
import sqlite3
import sys

HAREL_VERSION = "0.9.0"
DEFAULT_PREFIX = "harel"

# The prefixes `ids_with_prefix` is asked about (LIKE metacharacters, a case variant, a tree).
ID_PREFIXES = ["pfx_", "PFX_", "pfx%", "par-001:", "par-101:", "ord-", "ünï"]

# The listings compared besides "all": (name, kwargs for harel's list_executions).
LISTINGS = [
    ("running_or_done", {"status": ["RUNNING", "DONE"]}),
    ("definition_order", {"definition_id": "order"}),
    ("roots_only", {"roots_only": True}),
    ("pending_order_roots", {"status": ["PENDING"], "definition_id": "order", "roots_only": True}),
    ("failed_or_cancelled", {"status": ["FAILED", "CANCELLED"]}),
]

# `due_timers(now)` is asked at these times; 1700000030.5 equals a stored fire_at exactly.
TIMER_NOWS = [1700000030.5, 1700000030.499, 1700003600.0, 1e12]

PAGE = 3  # list_executions page size: several pages for a few executions


def check_version() -> None:
    got = importlib.metadata.version("harel")
    if got != HAREL_VERSION:
        sys.exit(f"harel {HAREL_VERSION} is required, found {got}")


def _listing(store, **kwargs) -> list[dict]:
    from harel.engine.execution import Status

    if "status" in kwargs:
        kwargs["status"] = [Status(s) for s in kwargs["status"]]
    items, cursor = [], None
    while True:
        page = store.list_executions(limit=PAGE, cursor=cursor, **kwargs)
        items += [s.model_dump(mode="json") for s in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return items


def is_postgres(db: str) -> bool:
    """Whether DB names a PostgreSQL server (a URL) rather than a SQLite file."""
    return db.startswith(("postgres://", "postgresql://"))


def open_store(db: str, prefix: str = DEFAULT_PREFIX, *, create_schema: bool = True):
    """harel's own store on DB: `SqliteStore(db)` (prefix "harel", as harel's default) or
    `PostgresStore.from_dsn(db, prefix=...)`; `create_schema=False` creates nothing (PostgreSQL)."""
    if is_postgres(db):
        from harel.engine.store.postgres import PostgresStore

        return PostgresStore.from_dsn(db, connect_retries=1, prefix=prefix, create_schema=create_schema)
    from harel.engine.store import SqliteStore

    if prefix != DEFAULT_PREFIX:
        raise SystemExit(f"--prefix {prefix}: the SQLite scripts use harel's default prefix only")
    return SqliteStore(db)


def pg_has_store(dsn: str, prefix: str) -> bool:
    """Whether the PostgreSQL database at `dsn` has a store's executions table under `prefix`."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{prefix}_executions",)).fetchone()[0]


_RAW_QUERIES = {
    "executions": "SELECT id, definition_id, data, version FROM {p}_executions ORDER BY id",
    "outbox": "SELECT seq, target_id, event FROM {p}_outbox ORDER BY seq",
    "processed_events": "SELECT execution_id, event_id FROM {p}_processed_events ORDER BY execution_id, event_id",
    "timers": "SELECT execution_id, path, fire_at FROM {p}_timers ORDER BY execution_id, path",
    "spawns": "SELECT seq, parent_id, child_id, root_path, context FROM {p}_spawns ORDER BY seq",
    "trace": "SELECT execution_id, idx, entry FROM {p}_trace ORDER BY execution_id, idx",
}


def raw_tables(path: str, prefix: str = DEFAULT_PREFIX) -> dict:
    """Every row of harel's six tables, columns as stored, in primary-key order (ids ordered as
    bytes), and the schema objects: "sqlite_master" (SQLite) or "pg_objects" (PostgreSQL: each
    relation and function whose name starts with `prefix`, as [kind, name])."""
    if is_postgres(path):
        return _raw_tables_pg(path, prefix)
    conn = sqlite3.connect(path)
    try:
        q = lambda sql: [list(r) for r in conn.execute(sql.format(p=prefix)).fetchall()]  # noqa: E731
        raw = {table: q(sql) for table, sql in _RAW_QUERIES.items()}
        raw["sqlite_master"] = q("SELECT type, name FROM sqlite_master ORDER BY type, name")
        return raw
    finally:
        conn.close()


def _raw_tables_pg(dsn: str, prefix: str) -> dict:
    import psycopg

    # text keys ordered as bytes, as SQLite orders them (whatever the database's collation)
    def bytewise(sql: str) -> str:
        head, keys = sql.split(" ORDER BY ")
        keys = [k.strip() for k in keys.split(",")]
        return head + " ORDER BY " + ", ".join(k if k in ("seq", "idx") else f'{k} COLLATE "C"' for k in keys)

    with psycopg.connect(dsn) as conn:
        q = lambda sql, params=None: [list(r) for r in conn.execute(sql, params).fetchall()]  # noqa: E731
        raw = {table: q(bytewise(sql.format(p=prefix))) for table, sql in _RAW_QUERIES.items()}
        raw["pg_objects"] = q(
            "SELECT kind, name FROM ("
            " SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence'"
            "  ELSE c.relkind::text END AS kind, c.relname::text AS name"
            "  FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
            " UNION ALL SELECT 'function', p.proname::text"
            "  FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
            ') o WHERE starts_with(name, %s) ORDER BY kind, name COLLATE "C"',
            (prefix + "_",),
        )
        return raw


def harel_would_write(raw: dict) -> dict:
    """For each raw row, the text harel writes for the object it parses from that row: the
    execution's `model_dump_json()`, the event's `model_dump_json()`, `json.dumps` of a spawn
    context or a trace step."""
    from harel.engine.execution import Execution
    from harel.spec.states import Event

    return {
        "executions": {r[0]: Execution.model_validate_json(r[2]).model_dump_json() for r in raw["executions"]},
        "outbox": {str(r[0]): Event.model_validate_json(r[2]).model_dump_json() for r in raw["outbox"]},
        "spawns": {str(r[0]): json.dumps(json.loads(r[4])) for r in raw["spawns"]},
        "trace": [[r[0], r[1], json.dumps(json.loads(r[2]))] for r in raw["trace"]],
    }


def view(store, path: str, prefix: str = DEFAULT_PREFIX) -> dict:
    """What harel reads through `store` (harel's own store on `path`, tables under `prefix`)."""
    raw = raw_tables(path, prefix)
    summaries = _listing(store)
    ids = [s["id"] for s in summaries]
    executions = {}
    for eid in ids:
        exe = store.load(eid)
        if exe is None:
            raise AssertionError(f"list_executions listed {eid!r} but load returned None")
        executions[eid] = exe.model_dump(mode="json")
    trace_ids = sorted(set(ids) | {r[0] for r in raw["trace"]})
    processed_pairs = [tuple(r) for r in raw["processed_events"]]
    processed_pairs += [(eid, "never-processed") for eid in ids[:3]] + [("no-such-execution", "ev")]
    return {
        "executions": executions,
        "summaries": summaries,
        "listings": {name: {"query": kw, "items": _listing(store, **dict(kw))} for name, kw in LISTINGS},
        "outbox": [
            {"seq": e.seq, "target_id": e.target_id, "event": e.event.model_dump(mode="json")}
            for e in store.pending_outbox()
        ],
        "spawns": [
            {
                "seq": s.seq,
                "parent_id": s.parent_id,
                "child_id": s.child_id,
                "root_path": s.root_path,
                "context": s.context,
            }
            for s in store.pending_spawns()
        ],
        "due_timers": [
            {"now": now, "timers": [list(t) for t in store.due_timers(now)]} for now in TIMER_NOWS
        ],
        "trace": {eid: store.read_trace(eid) for eid in trace_ids},
        "is_processed": [[e, ev, store.is_processed(e, ev)] for e, ev in processed_pairs],
        "ids_with_prefix": {p: sorted(store.ids_with_prefix(p)) for p in ID_PREFIXES},
        "missing_load_is_none": store.load("no-such-execution") is None,
        "raw": raw,
        "harel_would_write": harel_would_write(raw),
    }


def write_json(path: str, doc: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
