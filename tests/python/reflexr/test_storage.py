"""execstore.reflexr's storages on each backend: models, clock, errors, cancellation, subscribe,
bad input, closing, concurrency."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import Factory
from reflexr.core import Rule, StoredRule, UnknownEvent, on
from reflexr.core import run as action
from reflexr.core import SourceActor
from reflexr.workspace import Entry, RunPolicy, WorkspaceRef
from rxsupport import T0, ManualClock, Ping

import execstore

WS = WorkspaceRef("acme", "prod")
ACTOR = SourceActor(name="monitor")


def ping(event_id: str, n: int = 0) -> Entry:
    return Entry(id=event_id, actor=ACTOR, event=Ping(n=n))


async def append(storage: Any, *ids: str, ws: WorkspaceRef = WS) -> list[Any]:
    async with storage.transaction(ws) as tx:
        return list(await tx.append([ping(i) for i in ids]))


@pytest.mark.asyncio
async def test_models_round_trip_and_unknown_events(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    unknown = UnknownEvent(unknown_type="other:thing.done", x=1, nested={"a": [1, 2.5, "é ✓"]})
    async with storage.transaction(WS) as tx:
        out = await tx.append([ping("e1", 5), Entry(id="e2", actor=ACTOR, event=unknown, correlation_id="c")])
        assert [e.seq for e in out] == [1, 2]
        assert (await tx.envelope("e2")) == out[1]
    got = await storage.read(WS)
    assert got == out
    assert isinstance(got[0].event, Ping) and got[0].event.n == 5
    assert isinstance(got[1].event, UnknownEvent) and got[1].event.unknown_type == "other:thing.done"
    assert got[1].model_dump(mode="json")["event"] == {"type": "other:thing.done", "x": 1, "nested": {"a": [1, 2.5, "é ✓"]}}
    assert got[1].correlation_id == "c" and got[0].correlation_id == "e1"
    assert await storage.read(WS, types=["other:thing.done"]) == [out[1]]
    assert await storage.read(WS, last=1) == [out[1]]
    assert await storage.workspaces() == [WS]


@pytest.mark.asyncio
async def test_clock_is_called_per_entry_and_per_lease(make_storage: Factory) -> None:
    clock = ManualClock()
    storage = make_storage(clock)
    await append(storage, "a", "b", "c")
    assert clock.calls == 3
    clock.advance(-60)  # the clock goes back: ts stays at the previous one
    (d,) = await append(storage, "d")
    assert d.ts == T0
    clock.advance(120)
    (e,) = await append(storage, "e")
    assert e.ts == T0 + timedelta(seconds=60)
    calls = clock.calls
    assert await storage.acquire_lease(WS, "k", "h1", timedelta(seconds=10))
    assert not await storage.acquire_lease(WS, "k", "h2", timedelta(seconds=10))
    assert clock.calls == calls + 2
    clock.advance(11)  # lapsed by the storage's (injected) clock
    assert await storage.acquire_lease(WS, "k", "h2", timedelta(seconds=10))
    await storage.release_lease(WS, "k", "h1")  # not the holder: nothing
    assert not await storage.acquire_lease(WS, "k", "h1", timedelta(seconds=10))


@pytest.mark.asyncio
async def test_reflexr_value_errors(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    await append(storage, "e1")
    with pytest.raises(ValueError, match=r"^event e1 is already in the log$"):
        await append(storage, "e0", "e1")
    with pytest.raises(ValueError, match=r"^event e2 is already in the log$"):
        await append(storage, "e2", "e2")
    assert await storage.head_seq(WS) == 1
    rule = Rule(name="app:x", when=on("dt:ping"), then=action("act"))
    with pytest.raises(ValueError, match=r"^the next version of app:x is 1, not 2$"):
        async with storage.transaction(WS) as tx:
            await tx.save_stored_rule(StoredRule(rule=rule, version=2))
    async with storage.transaction(WS) as tx:
        await tx.save_stored_rule(StoredRule(rule=rule, version=1))
        with pytest.raises(ValueError, match=r"^the next version of app:x is 2, not 1$"):
            await tx.save_stored_rule(StoredRule(rule=rule, version=1))
    assert [s.version for s in await storage.stored_rules(WS)] == [1]


@pytest.mark.asyncio
async def test_raising_rolls_back_and_frees_the_workspace(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    with pytest.raises(KeyError):
        async with storage.transaction(WS) as tx:
            await tx.append([ping("e1")])
            raise KeyError("boom")
    assert await storage.head_seq(WS) == 0
    assert [e.seq for e in await append(storage, "e1")] == [1]


@pytest.mark.asyncio
async def test_cancelled_transaction_rolls_back_and_frees_the_workspace(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    entered = asyncio.Event()

    async def holder() -> None:
        async with storage.transaction(WS) as tx:
            await tx.append([ping("held")])
            entered.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(holder())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await storage.head_seq(WS) == 0
    await asyncio.wait_for(append(storage, "next"), 10)
    assert await storage.head_seq(WS) == 1

    # Cancelled in the middle of storage calls: each call ends first, then the block rolls back.
    for delay in (0, 0.0005, 0.001, 0.003):
        async def busy() -> None:
            async with storage.transaction(WS) as tx:
                for i in range(50):
                    await tx.append([ping(f"busy-{delay}-{i}")])

        task = asyncio.create_task(busy())
        await asyncio.sleep(delay)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        head = await storage.head_seq(WS)
        assert head in (1, 51)  # all of it committed (the cancel came too late) or none
        if head == 51:
            return


@pytest.mark.asyncio
async def test_a_transaction_cancelled_while_waiting_for_the_workspace_takes_nothing(
    make_storage: Factory,
) -> None:
    storage = make_storage(None)
    entered, release = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with storage.transaction(WS) as tx:
            await tx.append([ping("first")])
            entered.set()
            await release.wait()

    held = asyncio.create_task(holder())
    await entered.wait()
    waiter = asyncio.create_task(append(storage, "never"))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    await held
    await asyncio.wait_for(append(storage, "second"), 10)
    assert [e.id for e in await storage.read(WS)] == ["first", "second"]


@pytest.mark.asyncio
async def test_transactions_on_one_workspace_serialize(make_storage: Factory) -> None:
    storage = make_storage(None)

    async def writer(name: str) -> None:
        for i in range(15):
            async with storage.transaction(WS) as tx:
                head = await tx.head_seq()
                (env,) = await tx.append([ping(f"{name}-{i}")])
                assert env.seq == head + 1

    await asyncio.wait_for(asyncio.gather(*(writer(f"w{k}") for k in range(4))), 60)
    log = await storage.read(WS)
    assert [e.seq for e in log] == list(range(1, 61))
    assert all(b.ts >= a.ts for a, b in zip(log, log[1:], strict=False))


@pytest.mark.asyncio
async def test_subscribe_replays_follows_and_closes(make_storage: Factory) -> None:
    storage = make_storage(None)
    await append(storage, "a", "b")
    sub = storage.subscribe(WS, after_seq=1)
    assert (await asyncio.wait_for(anext(sub), 10)).id == "b"
    waiting = asyncio.create_task(anext(sub))
    await asyncio.sleep(0.05)
    await append(storage, "c")
    assert (await asyncio.wait_for(waiting, 10)).id == "c"
    await sub.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(sub)


@pytest.mark.asyncio
async def test_cancelled_anext_loses_no_envelope(make_storage: Factory) -> None:
    storage = make_storage(None)
    sub = storage.subscribe(WS)
    got: list[int] = []
    total = 0
    for round_ in range(12):
        batch = [f"r{round_}-{i}" for i in range(3)]
        writer = asyncio.create_task(append(storage, *batch))
        total += 3
        # Cancel anext at different moments: while it reads, while it waits, before it starts.
        task = asyncio.create_task(anext(sub))
        await asyncio.sleep(0.0005 * (round_ % 4))
        task.cancel()
        try:
            got.append((await task).seq)
        except asyncio.CancelledError:
            pass
        await writer
    while len(got) < total:
        got.append((await asyncio.wait_for(anext(sub), 10)).seq)
    assert got == list(range(1, total + 1))
    await sub.aclose()


@pytest.mark.asyncio
async def test_bad_input_raises_and_changes_nothing(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    bad: list[Any] = [
        lambda: storage.head_seq("acme/prod"),
        lambda: storage.head_seq(None),
        lambda: storage.read(WS, after_seq="1"),
        lambda: storage.read(WS, types="dt:ping"),
        lambda: storage.due_runs(now=datetime(2026, 1, 1), limit=5, policy=RunPolicy()),  # naive
        lambda: storage.due_runs(now=T0, limit=5, policy=None),
        lambda: storage.acquire_lease(WS, "k", None, timedelta(seconds=1)),
        lambda: storage.acquire_lease(WS, "k", "h", 5),
        lambda: storage.acquire_lease(WS, "k", "h", timedelta(0)),
        lambda: storage.save_cursor(WS, "c", None),
    ]
    for make in bad:
        with pytest.raises((TypeError, ValueError, execstore.InvalidInputError)):
            await make()
    tx_bad: list[Any] = [
        lambda tx: tx.append(ping("x")),
        lambda tx: tx.append([None]),
        lambda tx: tx.append([Entry(id="x", actor=ACTOR, event={"type": "dt:ping"})]),
        lambda tx: tx.append([Entry(id="", actor=ACTOR, event=Ping(n=1))]),
        lambda tx: tx.save_runs([{"id": "r"}]),
        lambda tx: tx.save_schedule("s", datetime(2026, 1, 1)),
        lambda tx: tx.save_states("app:a", {"s": None}),
        lambda tx: tx.save_stored_rule(None),
        lambda tx: tx.envelope(None),
    ]
    async with storage.transaction(WS) as tx:
        for make in tx_bad:
            with pytest.raises((TypeError, ValueError, execstore.InvalidInputError)):
                await make(tx)
        assert await tx.head_seq() == 0
        (env,) = await tx.append([ping("ok")])  # the transaction is still usable
    assert env.seq == 1 and await storage.head_seq(WS) == 1
    assert await storage.cursor(WS, "c") == 0


@pytest.mark.asyncio
async def test_a_closed_storage_raises(make_storage: Factory) -> None:
    storage = make_storage(None)
    await append(storage, "a")
    storage.close()
    assert storage.closed
    with pytest.raises(RuntimeError, match="closed"):
        await storage.head_seq(WS)
    with pytest.raises(RuntimeError, match="closed"):
        async with storage.transaction(WS):
            pass
    storage.close()  # twice is fine


@pytest.mark.asyncio
async def test_an_ended_transaction_refuses_calls(make_storage: Factory) -> None:
    storage = make_storage(None)
    async with storage.transaction(WS) as tx:
        pass
    with pytest.raises(RuntimeError, match="ended"):
        await tx.head_seq()


def test_the_gil_is_released_while_a_call_waits(make_storage: Factory) -> None:
    storage = make_storage(None)
    core = storage._core
    done = threading.Event()

    def wait() -> None:
        core.wait_for_append("acme", "prod", 0, 0.4)
        done.set()

    thread = threading.Thread(target=wait)
    start = time.monotonic()
    thread.start()
    spins = 0
    while not done.is_set() and time.monotonic() - start < 5:
        spins += 1
    thread.join()
    assert spins > 1000  # Python kept running while the call blocked
    assert datetime.now(UTC) > T0


@pytest.mark.asyncio
async def test_lone_surrogates_in_names_are_invalid_input_and_change_nothing(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    # What a lossy conversion of "a\udc00" would name.
    name = "a\ufffd"
    await append(storage, name)
    async with storage.transaction(WS) as tx:
        await tx.save_schedule(name, T0)
    await storage.save_cursor(WS, name, 1)
    assert await storage.acquire_lease(WS, name, name, timedelta(seconds=60))

    async def everything() -> object:
        return (
            await storage.read(WS),
            await storage.workspaces(),
            await storage.schedules(WS),
            await storage.cursor(WS, name),
            await storage.progress(WS),
        )

    before = await everything()
    for s in ["\ud800", "\udc00", "a\ud800", "a\udc00"]:
        calls: list[Any] = [
            lambda: storage.head_seq(WorkspaceRef(s, "prod")),
            lambda: storage.head_seq(WorkspaceRef("acme", s)),
            lambda: storage.read(WS, types=[s]),
            lambda: storage.rule_history(WS, s),
            lambda: storage.run(WS, s),
            lambda: storage.runs(WS, rule=s),
            lambda: storage.runs(WS, scope_key=s),
            lambda: storage.dead_letters(WS, rule=s),
            lambda: storage.acquire_lease(WS, s, "h", timedelta(seconds=1)),
            lambda: storage.acquire_lease(WS, "k", s, timedelta(seconds=1)),
            lambda: storage.release_lease(WS, s, name),
            lambda: storage.release_lease(WS, name, s),
            lambda: storage.cursor(WS, s),
            lambda: storage.save_cursor(WS, s, 2),
        ]
        for i, make in enumerate(calls):
            with pytest.raises(execstore.InvalidInputError) as info:
                await make()
            assert "surrogate" in info.value.reason, (s, i, info.value)
        tx_calls: list[Any] = [
            lambda tx: tx.envelope(s),
            lambda tx: tx.progress(s),
            lambda tx: tx.states(s, ["k"]),
            lambda tx: tx.states("r", [s]),
            lambda tx: tx.clear_states(s),
            lambda tx: tx.run(s),
            lambda tx: tx.scope_runs(s, "k"),
            lambda tx: tx.scope_runs("r", s),
            lambda tx: tx.schedule(s),
            lambda tx: tx.save_schedule(s, T0),
            lambda tx: tx.stored_rule(s),
        ]
        async with storage.transaction(WS) as tx:
            for i, make in enumerate(tx_calls):
                with pytest.raises(execstore.InvalidInputError) as info:
                    await make(tx)
                assert "surrogate" in info.value.reason, (s, i, info.value)
        with pytest.raises(execstore.InvalidInputError):
            async with storage.transaction(WorkspaceRef(s, "prod")):
                pass
        assert await everything() == before, s
