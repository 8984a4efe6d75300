"""What harel's `json.dumps` takes and strict JSON does not: trace steps and spawn contexts
holding `float('nan')`, `±inf` and lone surrogates (`'\\ud800'`). execstore.harel takes the
same steps as harel's own stores (sync and async, SQLite and PostgreSQL), stores the very
text harel stores, and reads back values equal to those written. Execution contexts go
through pydantic (`model_dump_json`) in harel and here alike: NaN is written as null, a lone
surrogate is refused by pydantic before any store sees it."""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from harel.engine.execution import Execution
from harel.engine.store import SqliteStore as HarelSqliteStore

from execstore.harel import AsyncPostgresStore, AsyncSqliteStore, PostgresStore, SqliteStore

NAN, INF = float("nan"), float("inf")
# A trace step and a spawn context with every value strict JSON refuses, in keys and
# nested too, beside ordinary ones.
STEP: dict[str, Any] = {
    "event_kind": "Tick\ud800",
    "from_path": "a",
    "to_path": "b\udfff",
    "context_out": {"n": NAN, "i": INF, "m": -INF, "s": "x\ud800y", "\udc00key": [NAN, 1, 0.1]},
    "max": "\U0010ffff",
    "text": "NaN Infinity",
}
CONTEXT: dict[str, Any] = {"seed": NAN, "limits": [INF, -INF], "name": "\ud83d", "ok": "é"}


def pg_url() -> str:
    url = os.environ.get("EXECSTORE_PG_URL")
    if not url:
        pytest.skip("EXECSTORE_PG_URL not set")
    return url


def same(a: Any, b: Any) -> bool:
    """Equality with NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def step_in(store: Any, exe_id: str) -> None:
    exe = Execution(id=exe_id, definition_id="d")
    store.commit(exe, [], spawns=((f"{exe_id}:c", "r", CONTEXT),), trace=STEP)
    store.append_trace(exe_id, {"appended": NAN, "s": "\ud800"})


def check_read_back(trace: list[dict[str, Any]], spawns: list[Any], exe_id: str) -> None:
    assert len(trace) == 2
    assert same(trace[0], {**STEP, "index": 0}), trace[0]
    assert same(trace[1], {"appended": NAN, "s": "\ud800", "index": 1}), trace[1]
    mine = [s for s in spawns if s.parent_id == exe_id]
    assert len(mine) == 1 and same(mine[0].context, CONTEXT), mine


def sqlite_rows(path: Path, prefix: str = "harel") -> list[tuple[str, ...]]:
    with sqlite3.connect(path) as conn:
        trace = conn.execute(f"SELECT entry FROM {prefix}_trace ORDER BY execution_id, idx").fetchall()
        spawns = conn.execute(f"SELECT context FROM {prefix}_spawns ORDER BY seq").fetchall()
    conn.close()
    return trace + spawns


def test_sqlite_stores_harels_text_and_reads_it_back(tmp_path: Path) -> None:
    ours = SqliteStore(tmp_path / "ours.db")
    step_in(ours, "x-1")
    check_read_back(ours.read_trace("x-1"), ours.pending_spawns(), "x-1")
    ours.close()
    theirs = HarelSqliteStore(tmp_path / "theirs.db")
    step_in(theirs, "x-1")
    theirs.close()
    rows = sqlite_rows(tmp_path / "ours.db")
    assert rows == sqlite_rows(tmp_path / "theirs.db")
    assert "NaN" in rows[0][0] and "\\ud800" in rows[0][0], rows  # harel's text, as it is
    # And harel reads what execstore wrote, equal.
    theirs = HarelSqliteStore(tmp_path / "ours.db")
    check_read_back(theirs.read_trace("x-1"), theirs.pending_spawns(), "x-1")
    theirs.close()


def test_memory_store_reads_back(tmp_path: Path) -> None:
    with SqliteStore(":memory:") as ours:
        step_in(ours, "m-1")
        check_read_back(ours.read_trace("m-1"), ours.pending_spawns(), "m-1")


@pytest.mark.asyncio
async def test_async_sqlite_store(tmp_path: Path) -> None:
    store = await AsyncSqliteStore.create(tmp_path / "a.db")
    exe = Execution(id="a-1", definition_id="d")
    await store.commit(exe, [], spawns=(("a-1:c", "r", CONTEXT),), trace=STEP)
    await store.append_trace("a-1", {"appended": NAN, "s": "\ud800"})
    check_read_back(await store.read_trace("a-1"), await store.pending_spawns(), "a-1")
    await store.close()
    theirs = HarelSqliteStore(tmp_path / "theirs.db")
    step_in(theirs, "a-1")
    theirs.close()
    assert sqlite_rows(tmp_path / "a.db") == sqlite_rows(tmp_path / "theirs.db")


def pg_rows(url: str, prefix: str) -> list[tuple[str, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        trace = conn.execute(f"SELECT entry FROM {prefix}_trace ORDER BY execution_id, idx").fetchall()
        spawns = conn.execute(f"SELECT context FROM {prefix}_spawns ORDER BY seq").fetchall()
    return trace + spawns


@pytest.fixture
def harel_pg_prefix(pg_prefix: str) -> Any:
    """A second prefix, for harel's own PostgresStore, its tables dropped after."""
    import psycopg
    from harel.engine.schema import Names

    url = pg_url()
    prefix = pg_prefix + "h"
    yield prefix
    n = Names(prefix)
    with psycopg.connect(url) as conn:
        for t in (n.executions, n.outbox, n.processed_events, n.timers, n.spawns, n.trace):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
        conn.execute(f"DROP FUNCTION IF EXISTS {n.commit_cas}")


def harel_pg(url: str, prefix: str) -> list[tuple[str, ...]]:
    from harel.engine.store import PostgresStore as HarelPostgresStore

    theirs = HarelPostgresStore.from_dsn(url, prefix=prefix)
    step_in(theirs, "p-1")
    check_read_back(theirs.read_trace("p-1"), theirs.pending_spawns(), "p-1")
    theirs._conn.close()
    return pg_rows(url, prefix)


def test_postgres_stores_harels_text_and_reads_it_back(pg_prefix: str, harel_pg_prefix: str) -> None:
    url = pg_url()
    with PostgresStore(url, prefix=pg_prefix) as ours:
        step_in(ours, "p-1")
        check_read_back(ours.read_trace("p-1"), ours.pending_spawns(), "p-1")
    assert pg_rows(url, pg_prefix) == harel_pg(url, harel_pg_prefix)


@pytest.mark.asyncio
async def test_async_postgres_store(pg_prefix: str, harel_pg_prefix: str) -> None:
    url = pg_url()
    store = await AsyncPostgresStore.create(url, prefix=pg_prefix)
    exe = Execution(id="p-1", definition_id="d")
    await store.commit(exe, [], spawns=(("p-1:c", "r", CONTEXT),), trace=STEP)
    await store.append_trace("p-1", {"appended": NAN, "s": "\ud800"})
    check_read_back(await store.read_trace("p-1"), await store.pending_spawns(), "p-1")
    await store.close()
    assert pg_rows(url, pg_prefix) == harel_pg(url, harel_pg_prefix)


def test_execution_contexts_follow_harel(tmp_path: Path) -> None:
    # pydantic writes NaN and infinities as null, in harel's store and here alike.
    ours, theirs = SqliteStore(tmp_path / "ours.db"), HarelSqliteStore(tmp_path / "theirs.db")
    for store in (ours, theirs):
        store.save(Execution(id="c-1", definition_id="d", context={"n": NAN, "i": -INF}))
        loaded = store.load("c-1")
        assert loaded is not None and loaded.context == {"n": None, "i": None}
    # A lone surrogate in a context: pydantic refuses it before either store writes a thing.
    for store in (ours, theirs):
        with pytest.raises(Exception) as info:
            store.save(Execution(id="c-2", definition_id="d", context={"s": "\ud800"}))
        assert type(info.value).__name__ == "PydanticSerializationError"
        assert store.load("c-2") is None
    ours.close()
    theirs.close()
    with sqlite3.connect(tmp_path / "ours.db") as a, sqlite3.connect(tmp_path / "theirs.db") as b:
        q = "SELECT data FROM harel_executions ORDER BY id"
        assert a.execute(q).fetchall() == b.execute(q).fetchall()
    a.close()
    b.close()
