"""harel's own contract checks (`harel.testing`) on execstore.harel's stores: SQLite (a file and
`:memory:`) and PostgreSQL, sync and async."""

from __future__ import annotations

import inspect

import pytest
from harel.testing import (
    assert_async_listing_contract,
    assert_async_outbox_contract,
    assert_async_purge_contract,
    assert_listing_contract,
    assert_outbox_contract,
    assert_purge_contract,
)
from harel.testing.purge import assert_async_ids_with_prefix_contract, assert_ids_with_prefix_contract

from execstore.harel import AsyncPostgresStore, AsyncSqliteStore, SqliteStore


def test_listing_contract(store: SqliteStore) -> None:
    assert_listing_contract(store, ordered=True)
    assert_listing_contract(store, ordered=True, ns="again-")


def test_outbox_contract(store: SqliteStore) -> None:
    assert_outbox_contract(store)
    assert_outbox_contract(store, ns="ns-")


def test_purge_contract(store: SqliteStore) -> None:
    assert_purge_contract(store)
    assert_purge_contract(store, ns="ns-")


def test_ids_with_prefix_contract(store: SqliteStore) -> None:
    assert_ids_with_prefix_contract(store)
    assert_ids_with_prefix_contract(store, ns="x%_")


@pytest.mark.asyncio
async def test_async_listing_contract(astore: AsyncSqliteStore) -> None:
    await assert_async_listing_contract(astore, ordered=True)


@pytest.mark.asyncio
async def test_async_outbox_contract(astore: AsyncSqliteStore) -> None:
    await assert_async_outbox_contract(astore)


@pytest.mark.asyncio
async def test_async_purge_contract(astore: AsyncSqliteStore) -> None:
    await assert_async_purge_contract(astore)


@pytest.mark.asyncio
async def test_async_ids_with_prefix_contract(astore: AsyncSqliteStore) -> None:
    await assert_async_ids_with_prefix_contract(astore, ns="n-")


def test_async_methods_are_coroutine_functions() -> None:
    names = [
        "load", "load_for_event", "list_executions", "save", "commit", "is_processed", "read_trace",
        "pending_outbox", "ack_outbox", "pending_spawns", "ack_spawn", "due_timers", "delete_timer",
        "ids_with_prefix", "purge", "close", "append_trace",
    ]
    for cls in (AsyncSqliteStore, AsyncPostgresStore):
        for name in names:
            assert inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)
        assert inspect.iscoroutinefunction(cls.create)
