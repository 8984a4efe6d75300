#!/usr/bin/env python3
"""Workload W1 on harel 0.9's own PostgresStore, printed as one JSON line.

The peer of `execstore bench --backend postgres` in `bench/compare-pg`: the same calls as
bench/harel_w1.py (../shared/bench/WORKLOAD.md from the repository's root, "W1"; its
generation, event step and timings are imported from harel_w1.py, so both drivers run the
very same calls) driven through the real `harel.engine.store.PostgresStore` (psycopg 3, one
connection, create_schema=True) with harel's own models, on a PostgreSQL server, in fresh
tables.

    python bench/harel_pg_w1.py --db postgres://USER@HOST:PORT/DB --executions 2000 --events 20

Flags are those of `execstore bench --backend postgres` where they apply: --db (the
server's URL; default $EXECSTORE_PG_URL), --prefix, --executions, --events, --trace, --seed.
Without --prefix the tables go under a unique prefix and are dropped after the run (on
failure too), with harel's `<prefix>_commit_cas` function; with --prefix (which must not
name existing tables) they are kept.

The JSON keys and their order are harel_w1.py's (the spec's §7): `db_bytes` is the sum of
`pg_total_relation_size` (heap, indexes, TOAST) of harel's six tables after the run, as
`execstore bench --backend postgres` reports its own; `sqlite`, `synchronous` and
`wal_bytes_after_close` are null. Extras at the end: `backend` ("postgres"), `postgres`
(the server's version) and `prefix`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import sys
import time
import json

try:
    import psycopg
except ImportError as exc:  # pragma: no cover - depends on the interpreter
    sys.exit(f"harel_pg_w1: needs psycopg 3 next to harel 0.9.0 (pip install 'psycopg[binary]'): {exc}")

import harel_w1 as w1
from harel.engine.execution import Status
from harel.engine.store import PostgresStore

HAREL_TABLES = ("executions", "outbox", "processed_events", "timers", "spawns", "trace")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="harel_pg_w1.py",
        description="Workload W1 (WORKLOAD.md) on harel 0.9's PostgresStore; prints one JSON line.",
    )
    p.add_argument("--db", default=os.environ.get("EXECSTORE_PG_URL"), metavar="URL",
                   help="the server: postgres://USER@HOST:PORT/DATABASE (default: $EXECSTORE_PG_URL)")
    p.add_argument("--prefix", default=None,
                   help="table prefix; must not name existing tables; the tables are kept. "
                        "Default: a unique prefix, dropped after the run")
    p.add_argument("--executions", type=int, default=2000, metavar="N")
    p.add_argument("--events", type=int, default=20, metavar="K", help="rounds (events per execution)")
    p.add_argument("--trace", choices=("on", "off"), default="on")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="0 <= S < 2^32")
    a = p.parse_args(argv)
    if not a.db or not re.match(r"postgres(ql)?://", a.db):
        p.error("--db postgres://USER@HOST:PORT/DATABASE is needed (or EXECSTORE_PG_URL)")
    if a.prefix is not None and not re.fullmatch(r"[a-z_][a-z0-9_]{0,29}", a.prefix):
        p.error("--prefix: a lowercase letter or _, then lowercase letters, digits or _ (at most 30)")
    if a.executions < 1:
        p.error("--executions must be at least 1")
    if a.events < 0:
        p.error("--events must not be negative")
    if not 0 <= a.seed < 2**32:
        p.error("--seed must be in 0 .. 2^32-1")
    return a


def drop(url: str, prefix: str) -> None:
    """Drops harel's tables and commit_cas function under `prefix` (on a connection of its own,
    so that it works whatever state the run left its connection in)."""
    with psycopg.connect(url) as conn:
        for t in HAREL_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {prefix}_{t}")
        conn.execute(f"DROP FUNCTION IF EXISTS {prefix}_commit_cas(text, text, text, bigint, text)")


def run(a: argparse.Namespace, prefix: str) -> dict:
    n, k, seed, trace_on = a.executions, a.events, a.seed, a.trace == "on"
    names = [f"{prefix}_{t}" for t in HAREL_TABLES]

    ids = [w1.exe_id(seed, i) for i in range(n)]  # once, like any driver keeps its ids

    wall0 = time.perf_counter()
    conn = psycopg.connect(a.db)
    exists = conn.execute("SELECT to_regclass(%s)", (names[0],)).fetchone()[0] is not None
    conn.commit()
    if exists:
        conn.close()
        raise SystemExit(f"harel_pg_w1: tables with the prefix {prefix} already exist; W1 needs fresh "
                         "tables (pick another --prefix)")
    store = PostgresStore(conn, prefix=prefix, create_schema=True)
    if store.trace_max != w1.TRACE_MAX:
        raise SystemExit(f"harel_pg_w1: harel's trace_max is {store.trace_max}, W1 expects {w1.TRACE_MAX}")

    # phase 0: create
    def create() -> None:
        for i in range(n):
            store.save(w1.new_execution(ids, i))

    create_s, _ = w1.timed(create)

    # phase 1: K rounds of event steps
    def rounds() -> None:
        for r in range(1, k + 1):
            for i in range(n):
                w1.event_step(store, ids[i], r, k, i, trace_on)

    commit_s, _ = w1.timed(rounds)

    # list_all_pages_ms: one full pass of RUNNING roots
    def list_all() -> tuple[int, int]:
        cursor, rows, pages = None, 0, 0
        while True:
            page = store.list_executions(status=[Status.RUNNING], roots_only=True, limit=w1.PAGE, cursor=cursor)
            rows += len(page.items)
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                return rows, pages

    list_all_s, (list_rows, list_pages) = w1.timed(list_all)

    # list_mid_page_ms: the page at offset (P div 2) * 100
    mid_cursor = w1.offset_cursor((list_pages // 2) * w1.PAGE)
    list_mid_ms, _ = w1.median_ms(
        lambda: store.list_executions(status=[Status.RUNNING], roots_only=True, limit=w1.PAGE, cursor=mid_cursor)
    )

    # due_timers_ms
    due_ms, due = w1.median_ms(lambda: store.due_timers(w1.DUE_NOW))

    # outbox_drain_acks_per_s: one pending read, then one ack (DELETE + COMMIT) per entry
    def drain() -> int:
        entries = store.pending_outbox()
        for e in entries:
            store.ack_outbox(e.seq)
        return len(entries)

    drain_s, acked = w1.timed(drain)

    # read_trace_100_ms: one pass over the first min(100, N) executions
    trace_ids = ids[: min(100, n)]
    read_trace_ms, trace_rows = w1.median_ms(lambda: sum(len(store.read_trace(x)) for x in trace_ids))

    # outside all timings: the stored text of execution 0, the tables' size, the server
    with conn.cursor() as cur:
        cur.execute(f"SELECT data FROM {names[0]} WHERE id = %s", (ids[0],))
        exe0_sha = hashlib.sha256(cur.fetchone()[0].encode("utf-8")).hexdigest()
        cur.execute("SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0) "
                    "FROM unnest(%s::text[]) AS t", (names,))
        db_bytes = int(cur.fetchone()[0])
        cur.execute("SHOW server_version")
        server = cur.fetchone()[0]
    conn.commit()
    store.close()
    wall_s = time.perf_counter() - wall0

    return {
        "impl": f"harel-{w1.harel_version()}-postgresstore",
        "executions": n,
        "events": k,
        "commit_events_per_s": round(n * k / commit_s, 1) if commit_s > 0 else None,
        "list_all_pages_ms": round(list_all_s * 1000.0, 3),
        "list_mid_page_ms": round(list_mid_ms, 3),
        "due_timers_ms": round(due_ms, 3),
        "outbox_drain_acks_per_s": round(acked / drain_s, 1) if drain_s > 0 else None,
        "read_trace_100_ms": round(read_trace_ms, 3),
        "db_bytes": db_bytes,
        "python": platform.python_version(),
        "sqlite": None,
        # extras
        "trace": trace_on,
        "synchronous": None,
        "seed": seed,
        "create_saves_per_s": round(n / create_s, 1) if create_s > 0 else None,
        "list_rows": list_rows,
        "list_pages": list_pages,
        "due_timers_rows": len(due),
        "outbox_acked": acked,
        "read_trace_rows": trace_rows,
        "wal_bytes_after_close": None,
        "exe0_data_sha256": exe0_sha,
        "wall_s": round(wall_s, 3),
        "backend": "postgres",
        "postgres": server,
        "prefix": prefix,
    }


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    keep = a.prefix is not None
    # lower case: PostgreSQL folds harel's unquoted names
    prefix = a.prefix or f"w1h_{os.getpid():x}_{time.time_ns() & 0xFFFFFFFFFF:x}"
    try:
        out = run(a, prefix)
    finally:
        if not keep:
            drop(a.db, prefix)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
