"""A typical use of execstore.harel, checked by `mypy --strict` (test_typing.py)."""

from __future__ import annotations

import asyncio
from typing import Optional

from execstore import InvalidInputError
from execstore.harel import (
    AsyncSqliteStore,
    AsyncSqliteTransport,
    Event,
    Execution,
    ExecutionPage,
    Lease,
    OutboxEntry,
    PostgresStore,
    SqliteStore,
    SqliteTransport,
    Status,
    StoreConflict,
    TimerOp,
)


def step(store: SqliteStore, execution_id: str, event: Event) -> Optional[list[int]]:
    exe, seen = store.load_for_event(execution_id, event.id)
    if exe is None or seen:
        return None
    exe.status = Status.RUNNING
    try:
        return store.commit(
            exe,
            [(exe.id, Event(kind="Next"))],
            processed_event_id=event.id,
            timers=(TimerOp("schedule", "a.b", 10.0),),
            spawns=((f"{exe.id}:c", "a.c", {"k": 1}),),
            trace={"event_kind": event.kind},
        )
    except StoreConflict as conflict:
        print(conflict.expected, conflict.found)
        return None


def monitor(store: SqliteStore) -> list[str]:
    ids: list[str] = []
    cursor: Optional[str] = None
    while True:
        try:
            page: ExecutionPage = store.list_executions(status=[Status.RUNNING], limit=50, cursor=cursor)
        except InvalidInputError as e:
            print(e.field, e.reason)
            return ids
        ids += [s.id for s in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids


def relay(store: SqliteStore) -> int:
    entries: list[OutboxEntry] = store.pending_outbox()
    for entry in entries:
        store.ack_outbox(entry.seq)
    for execution_id, path, fire_at in store.due_timers(100.0):
        store.delete_timer(execution_id, path, fire_at)
    return len(entries)


async def main(dsn: Optional[str]) -> None:
    store = SqliteStore(":memory:", prefix="harel")
    store.trace_max = 50
    store.save(Execution(id="x", definition_id="d"))
    step(store, "x", Event(kind="Go"))
    relay(store)
    print(monitor(store), store.read_trace("x"), store.purge("x", 2))
    store.close()
    astore = await AsyncSqliteStore.create(":memory:", prefix="harel", create_schema=True)
    exe = Execution(id="y", definition_id="d")
    await astore.save(exe)
    loaded: Optional[Execution] = await astore.load("y")
    if loaded is not None and loaded.status == Status.RUNNING:
        seq: int = await astore.send("y", Event(kind="Go"), expected_version=loaded.version)
        print(seq)
    print(loaded, await astore.ids_with_prefix("y"), exe.version)
    await astore.close()
    with SqliteTransport(":memory:", clock=lambda: 100.0, prefix="harel") as transport:
        transport.publish("y", Event(kind="Go"), priority=1)
        lease: Optional[Lease] = transport.claim("worker-1", 30.0, min_priority=1)
        if lease is not None:
            transport.nack(lease, delay=5.0)
    atransport = await AsyncSqliteTransport.create(":memory:")
    await atransport.publish("y", Event(kind="Go"))
    alease = await atransport.claim("worker-1", 30.0)
    if alease is not None:
        await atransport.ack(alease)
    print(await atransport.depth())
    await atransport.close()
    if dsn is not None:
        with PostgresStore(dsn, prefix="harel") as pg:
            print(pg.list_executions(limit=1).items)


if __name__ == "__main__":
    asyncio.run(main(None))
