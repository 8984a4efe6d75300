"""Fixtures for execstore.harel's tests: a store on a SQLite file, on `:memory:`, and on
PostgreSQL (a unique prefix per test, its tables dropped after; skipped when
EXECSTORE_PG_URL is not set)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from execstore._core import HarelStore
from execstore.harel import AsyncPostgresStore, AsyncSqliteStore, PostgresStore, SqliteStore

BACKENDS = ["sqlite_file", "sqlite_memory", "postgres"]


def pg_url() -> str:
    url = os.environ.get("EXECSTORE_PG_URL")
    if not url:
        pytest.skip("EXECSTORE_PG_URL not set")
    return url


@pytest.fixture
def pg_prefix() -> Iterator[str]:
    url = pg_url()
    prefix = "t" + uuid.uuid4().hex[:12]
    yield prefix
    HarelStore.drop_postgres(url, prefix)


def _open(kind: str, tmp_path: Path, request: Any) -> SqliteStore:
    if kind == "sqlite_file":
        return SqliteStore(tmp_path / "store.db")
    if kind == "sqlite_memory":
        return SqliteStore(":memory:")
    prefix = request.getfixturevalue("pg_prefix")
    return PostgresStore(pg_url(), prefix=prefix)


@pytest.fixture(params=BACKENDS)
def store(request: Any, tmp_path: Path) -> Iterator[SqliteStore]:
    s = _open(request.param, tmp_path, request)
    yield s
    s.close()


@pytest_asyncio.fixture(params=BACKENDS)
async def astore(request: Any, tmp_path: Path) -> AsyncIterator[AsyncSqliteStore | AsyncPostgresStore]:
    s: AsyncSqliteStore | AsyncPostgresStore
    if request.param == "sqlite_file":
        s = await AsyncSqliteStore.create(tmp_path / "store.db")
    elif request.param == "sqlite_memory":
        s = await AsyncSqliteStore.create(":memory:")
    else:
        prefix = request.getfixturevalue("pg_prefix")
        s = await AsyncPostgresStore.create(pg_url(), prefix=prefix)
    yield s
    await s.close()
