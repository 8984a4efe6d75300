"""`create_schema=False` runs no DDL at all, on SQLite and PostgreSQL, as harel's own: the
store works on the schema a migration tool made from harel's DDL (`sql_schema`), with no
index, table or function added, by a PostgreSQL role that may not create anything; a
missing table fails the first call that needs it, as harel's stores fail. With
`create_schema=True` execstore adds its listing indexes (and their record)."""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from harel.engine.execution import Execution, Status
from harel.engine.schema import Names, sql_schema
from harel.engine.store import TimerOp
from harel.spec.states import Event

import execstore
from execstore.harel import AsyncSqliteStore, MissingTableError, PostgresStore, SqliteStore

PREFIX = "acme"


def use(store: Any) -> None:
    """Every kind of write and read the store protocol has."""
    exe = Execution(id="o-1", definition_id="d", status=Status.RUNNING, created_at=1.0, updated_at=2.0)
    store.commit(
        exe,
        [("o-1", Event(id="e1", kind="K"))],
        processed_event_id="p1",
        timers=(TimerOp("schedule", "a", 5.0), TimerOp("schedule", "b", 6.0), TimerOp("cancel", "b", 0.0)),
        spawns=(("o-1:c", "r", {"k": 1}),),
        trace={"event_kind": "K"},
    )
    exe.status = Status.DONE
    exe.finished_at = 3.0
    store.commit(exe, [], trace={"event_kind": "L"})
    store.save(Execution(id="o-2", definition_id="other", parent_id="o-1"))
    page = store.list_executions(status=[Status.DONE], definition_id="d", roots_only=True, finished_after=2.5)
    assert [s.id for s in page.items] == ["o-1"]
    assert [s.id for s in store.list_executions(search="o-", limit=1).items] == ["o-1"]
    assert [e.event.id for e in store.pending_outbox()] == ["e1"]
    assert [s.child_id for s in store.pending_spawns()] == ["o-1:c"]
    assert store.due_timers(10.0) == [("o-1", "a", 5.0)]
    assert [t["event_kind"] for t in store.read_trace("o-1")] == ["K", "L"]
    assert store.is_processed("o-1", "p1")
    store.append_trace("o-1", {"event_kind": "M"})
    store.ack_outbox(store.pending_outbox()[0].seq)
    store.ack_spawn(store.pending_spawns()[0].seq)
    store.delete_timer("o-1", "a", 5.0)
    assert store.ids_with_prefix("o-") == ["o-1", "o-2"]
    assert store.purge("o-2", 1)


def sqlite_schema(path: Path) -> list[tuple[str, ...]]:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    return rows


def migrated_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    for stmt in sql_schema("sqlite", PREFIX):  # what a migration tool applies
        conn.execute(stmt)
    conn.commit()
    conn.close()


def test_sqlite_runs_no_ddl_on_a_migrated_schema(tmp_path: Path) -> None:
    db = tmp_path / "migrated.db"
    migrated_sqlite(db)
    before = sqlite_schema(db)
    with SqliteStore(db, prefix=PREFIX, create_schema=False) as store:
        use(store)
        store.trace_max = 1  # reopens, still without DDL
        store.append_trace("o-1", {"event_kind": "N"})
        assert [t["event_kind"] for t in store.read_trace("o-1")] == ["N"]
    assert sqlite_schema(db) == before


@pytest.mark.asyncio
async def test_async_sqlite_runs_no_ddl(tmp_path: Path) -> None:
    db = tmp_path / "migrated.db"
    migrated_sqlite(db)
    before = sqlite_schema(db)
    store = await AsyncSqliteStore.create(db, prefix=PREFIX, create_schema=False)
    await store.save(Execution(id="a-1", definition_id="d"))
    assert [s.id for s in (await store.list_executions(status=[Status.PENDING])).items] == ["a-1"]
    await store.close()
    assert sqlite_schema(db) == before


def test_create_schema_true_adds_the_listing_indexes(tmp_path: Path) -> None:
    db = tmp_path / "ours.db"
    migrated_sqlite(db)
    before = {r[1] for r in sqlite_schema(db)}
    SqliteStore(db, prefix=PREFIX).close()
    added = {r[1] for r in sqlite_schema(db)} - before
    assert f"{PREFIX}_execstore_migrations" in added
    assert f"{PREFIX}_execstore_executions_by_status" in added


@pytest.mark.parametrize("path", ["file", ":memory:"])
def test_sqlite_missing_tables_fail_at_first_use(tmp_path: Path, path: str) -> None:
    target = tmp_path / "none.db" if path == "file" else ":memory:"
    store = SqliteStore(target, prefix=PREFIX, create_schema=False)  # opening needs nothing
    with pytest.raises(MissingTableError, match=f"no such table: {PREFIX}_executions") as info:
        store.load("x")
    assert isinstance(info.value, sqlite3.OperationalError) and isinstance(info.value, execstore.BackendError)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        store.save(Execution(id="x", definition_id="d"))
    store.close()
    if path == "file":
        assert sqlite_schema(target) == []  # type: ignore[arg-type]


# --- PostgreSQL -----------------------------------------------------------------------------


def pg_url() -> str:
    url = os.environ.get("EXECSTORE_PG_URL")
    if not url:
        pytest.skip("EXECSTORE_PG_URL not set")
    return url


def pg_objects(url: str, prefix: str) -> list[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rels = conn.execute(
            "SELECT relkind::text, relname::text FROM pg_class WHERE relname LIKE %s ORDER BY relname",
            (prefix + "%",),
        ).fetchall()
        procs = conn.execute(
            "SELECT 'f', proname::text FROM pg_proc WHERE proname LIKE %s ORDER BY proname", (prefix + "%",)
        ).fetchall()
    return rels + procs


@pytest.fixture
def limited_role() -> Iterator[tuple[str, str]]:
    """A prefix whose schema harel's own DDL made (as a migration tool would), and the URL of
    a role that may read and write those tables but create nothing."""
    import psycopg

    url = pg_url()
    prefix = "m" + uuid.uuid4().hex[:10]
    role = prefix + "_app"
    with psycopg.connect(url, autocommit=True) as conn:
        for stmt in sql_schema("postgres", prefix):
            conn.execute(stmt)
        n = Names(prefix)
        tables = ", ".join([n.executions, n.outbox, n.processed_events, n.timers, n.spawns, n.trace])
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}")
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    limited = url.replace("://postgres@", f"://{role}@", 1)
    assert limited != url, "EXECSTORE_PG_URL names the user postgres"
    yield prefix, limited
    with psycopg.connect(url, autocommit=True) as conn:
        n = Names(prefix)
        for t in (n.executions, n.outbox, n.processed_events, n.timers, n.spawns, n.trace, n.messages, n.groups):
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
        for f in (n.commit_cas, n.claim, n.ack):
            conn.execute(f"DROP FUNCTION IF EXISTS {f}")
        conn.execute(f"REVOKE ALL ON SCHEMA public FROM {role}")
        conn.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}")
        conn.execute(f"DROP ROLE {role}")


def test_postgres_role_without_ddl_rights_works_on_a_migrated_schema(limited_role: tuple[str, str]) -> None:
    prefix, url = limited_role
    with pytest.raises(execstore.BackendError):  # the role may not create anything ...
        PostgresStore(url, prefix=prefix)  # ... which create_schema=True would
    before = pg_objects(pg_url(), prefix)
    with PostgresStore(url, prefix=prefix, create_schema=False) as store:
        use(store)
        store.trace_max = 1
        store.append_trace("o-1", {"event_kind": "N"})
        assert [t["event_kind"] for t in store.read_trace("o-1")] == ["N"]
    assert pg_objects(pg_url(), prefix) == before


def test_postgres_missing_tables_fail_at_first_use() -> None:
    url = pg_url()
    prefix = "n" + uuid.uuid4().hex[:10]
    with PostgresStore(url, prefix=prefix, create_schema=False) as store:
        with pytest.raises(execstore.BackendError, match=f"{prefix}_executions") as info:
            store.load("x")
        import psycopg.errors

        assert isinstance(info.value, psycopg.errors.UndefinedTable)
    assert pg_objects(url, prefix) == []
