"""Fixtures of the execstore.reflexr tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from rxsupport import PG_URL, ManualClock, drop_schemas, fresh_schema

from execstore.reflexr import MemoryStorage, PostgresStorage, SqliteStorage


Factory = Callable[[ManualClock | None], MemoryStorage | SqliteStorage | PostgresStorage]

BACKENDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """Makes fresh storages of one backend (each its own file or schema)."""
    kind = request.param
    if kind == "postgres" and not PG_URL:
        pytest.skip("EXECSTORE_PG_URL is not set: no PostgreSQL to test against")
    made: list[MemoryStorage | SqliteStorage | PostgresStorage] = []
    schemas: list[str] = []

    def make(clock: ManualClock | None = None) -> MemoryStorage | SqliteStorage | PostgresStorage:
        storage: MemoryStorage | SqliteStorage | PostgresStorage
        if kind == "memory":
            storage = MemoryStorage(clock)
        elif kind == "sqlite":
            path = tmp_path / f"s{len(made)}.db"
            storage = SqliteStorage(path, clock=clock, poll_interval=timedelta(seconds=0.05))
        else:
            assert PG_URL is not None
            schema = fresh_schema()
            schemas.append(schema)
            storage = PostgresStorage(PG_URL, clock=clock, schema=schema)
        made.append(storage)
        return storage

    yield make
    for storage in made:
        storage.close()
    drop_schemas(schemas)
