"""execstore.harel's `send`: an event for an execution through the outbox, as harel's relay
delivers any emit, sync and async, on every backend. Bad input raises the package's typed
error and writes nothing."""

from __future__ import annotations

import math
from typing import Any

import pytest
from harel.engine.execution import Execution, Status
from harel.engine.store import StoreConflict
from harel.spec.states import Event

from execstore import InvalidInputError, NotFoundError


def _seed(store: Any) -> None:
    store.save(Execution(id="run", definition_id="orders", status=Status.RUNNING))
    store.save(Execution(id="done", definition_id="orders", status=Status.DONE))


def _snapshot(store: Any) -> Any:
    return (
        [(e.seq, e.target_id, e.event.model_dump()) for e in store.pending_outbox()],
        [store.load(i).model_dump() for i in ("run", "done")],
    )


def test_send_enqueues_for_the_relay(store: Any) -> None:
    _seed(store)
    event = Event(id="evt-1", kind="Pay", data={"amount": 12.5, "items": [1, 2]})
    seq = store.send("run", event, expected_version=1)
    [entry] = store.pending_outbox()
    assert entry.seq == seq
    assert entry.target_id == "run"
    assert entry.event == event
    assert store.load("run").version == 1, "send writes no step"
    second = store.send("run", Event(id="evt-2", kind="Pay"))
    assert second > seq
    store.ack_outbox(seq)
    store.ack_outbox(second)
    assert store.pending_outbox() == []


@pytest.mark.parametrize(
    ("what", "args", "error"),
    [
        ("an unknown execution", ("nope", Event(id="e", kind="Pay")), NotFoundError),
        ("a stale version", ("run", Event(id="e", kind="Pay"), 7), StoreConflict),
        ("an execution not RUNNING", ("done", Event(id="e", kind="Pay")), InvalidInputError),
        ("a control kind", ("run", Event(id="e", kind="Cancel")), InvalidInputError),
        ("an empty kind", ("run", Event(id="e", kind="")), InvalidInputError),
        ("an empty id", ("run", Event(id="", kind="Pay")), InvalidInputError),
        ("NaN in the data", ("run", Event(id="e", kind="Pay", data={"x": math.nan})), InvalidInputError),
        ("Infinity deep in the data", ("run", Event(id="e", kind="Pay", data={"a": [{"b": -math.inf}]})), InvalidInputError),
        ("a lone surrogate in the execution id", ("run\ud800", Event(id="e", kind="Pay")), InvalidInputError),
        ("a lone surrogate in the event id", ("run", Event(id="e\udc00", kind="Pay")), InvalidInputError),
        ("a lone surrogate in the kind", ("run", Event(id="e", kind="P\ud800")), InvalidInputError),
        ("a lone surrogate in the data", ("run", Event(id="e", kind="Pay", data={"s": "a\ud800"})), InvalidInputError),
        ("a lone surrogate in a data key", ("run", Event(id="e", kind="Pay", data={"\udc00": 1})), InvalidInputError),
        ("an event too large", ("run", Event(id="e", kind="Pay", data={"blob": "x" * (9 << 20)})), InvalidInputError),
        ("an event that is not an Event", ("run", {"id": "e", "kind": "Pay"}), TypeError),
        ("a version that is not an int", ("run", Event(id="e", kind="Pay"), "1"), TypeError),
    ],
)
def test_send_refusals_change_nothing(store: Any, what: str, args: tuple[Any, ...], error: type) -> None:
    _seed(store)
    before = _snapshot(store)
    with pytest.raises(error):
        store.send(*args)
    assert _snapshot(store) == before, what


def test_nan_is_named_where_it_is(store: Any) -> None:
    _seed(store)
    with pytest.raises(InvalidInputError, match="finite") as info:
        store.send("run", Event(id="e", kind="Pay", data={"a": {"b": math.nan}}))
    assert info.value.field == "event.data.a.b"


@pytest.mark.asyncio
async def test_async_send(astore: Any) -> None:
    await astore.save(Execution(id="run", definition_id="orders", status=Status.RUNNING))
    seq = await astore.send("run", Event(id="evt-1", kind="Pay"))
    [entry] = await astore.pending_outbox()
    assert (entry.seq, entry.target_id, entry.event.id) == (seq, "run", "evt-1")
    with pytest.raises(NotFoundError):
        await astore.send("nope", Event(id="evt-2", kind="Pay"))
    assert len(await astore.pending_outbox()) == 1
