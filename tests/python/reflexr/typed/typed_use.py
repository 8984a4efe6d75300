"""A typical use of execstore.reflexr, checked with mypy --strict by test_typing.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reflexr.core import Envelope, Event, SourceActor
from reflexr.workspace import Entry, RunPolicy, Storage, Transaction, WorkspaceRef

from execstore.reflexr import MemoryStorage, PostgresStorage, SqliteStorage


class Oncall(Event, abstract=True, event_namespace="oncall"):
    """The application's events."""


class ServiceError(Oncall):
    service: str
    severity: int


def clock() -> datetime:
    return datetime.now(UTC)


async def publish(storage: Storage, ws: WorkspaceRef) -> list[Envelope]:
    async with storage.transaction(ws) as tx:
        txn: Transaction = tx
        if await txn.envelope("alert-7") is not None:
            return []
        event = ServiceError(service="auth", severity=8)
        return await txn.append([Entry(id="alert-7", actor=SourceActor(name="monitor"), event=event)])


async def follow(storage: Storage, ws: WorkspaceRef) -> int:
    seen = 0
    subscription = storage.subscribe(ws, after_seq=0)
    async for envelope in subscription:
        seen = envelope.seq
        break
    await subscription.aclose()
    return seen


async def main(path: str, dsn: str) -> None:
    ws = WorkspaceRef("acme", "prod")
    storages: list[Storage] = [
        MemoryStorage(),
        MemoryStorage(clock),
        SqliteStorage(path, clock=clock, poll_interval=timedelta(seconds=1)),
        PostgresStorage(dsn, clock=clock),
    ]
    for storage in storages:
        await publish(storage, ws)
        await follow(storage, ws)
        due = await storage.due_runs(now=clock(), limit=10, policy=RunPolicy())
        for ref, run in due:
            print(ref.tenant_id, run.id)
    sqlite = SqliteStorage(path)
    print(await sqlite.head_seq(ws), sqlite.closed)
    sqlite.close()
