"""reflexr's engine on execstore.reflexr.SqliteStorage (and PostgresStorage when
EXECSTORE_PG_URL is set): rules fire runs that are served and executed to completion, while a
second process follows the log with ``subscribe``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from reflexr.core import Event, Rule, SourceActor, on
from reflexr.core import run as action
from reflexr.workspace import Reaction, Reactor, WorkspaceRef, Workspaces

from rxsupport import PG_URL, drop_schemas_async, fresh_schema

from execstore.reflexr import PostgresStorage, SqliteStorage

HERE = Path(__file__).parent
ORDERS = 6


class Shop(Event, abstract=True, event_namespace="shop"):
    """The shop's events."""


class OrderPlaced(Shop, name="order.placed"):
    order: str


class OrderShipped(Shop, name="order.shipped"):
    order: str


class Done(Shop, name="done"):
    pass


async def ship(reaction: Reaction[None]) -> object:
    order = reaction.events[-1].data["order"]
    await reaction.workspace.publish(OrderShipped(order=order))
    return {"shipped": order}


async def notify(reaction: Reaction[None]) -> object:
    return {"notified": reaction.events[-1].data["order"]}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.asyncio
async def test_reflexr_engine_serves_runs_while_another_process_follows(tmp_path: Path, backend: str) -> None:
    storage: SqliteStorage | PostgresStorage
    schema = fresh_schema()
    if backend == "sqlite":
        target = str(tmp_path / "shop.db")
        storage = SqliteStorage(target)
    else:
        if not PG_URL:
            pytest.skip("EXECSTORE_PG_URL is not set: no PostgreSQL to test against")
        target = PG_URL
        storage = PostgresStorage(PG_URL, schema=schema)
    follower = subprocess.Popen(
        [sys.executable, str(HERE / "apps" / "follower.py"), target, "acme", "shop", schema],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        assert json.loads(await asyncio.to_thread(follower.stdout.readline)) == {"ready": True}
        workspaces = Workspaces(
            storage,
            events=[OrderPlaced, Done],
            emitted=[OrderShipped],
            rules=[
                Rule(name="shop:ship", when=on("shop:order.placed"), then=action("ship")),
                Rule(name="shop:notify", when=on("shop:order.shipped"), then=action("notify"), ordering="none"),
            ],
        )
        reactor = Reactor(workspaces, actions={"ship": ship, "notify": notify})
        stop = asyncio.Event()
        served = asyncio.create_task(reactor.serve(poll_interval=timedelta(milliseconds=50), stop=stop))
        ws = await workspaces.open("acme", "shop", actor=SourceActor(name="shopfront"))
        for i in range(ORDERS):
            await ws.publish(OrderPlaced(order=f"o{i}"), id=f"order-{i}")
        ref = WorkspaceRef("acme", "shop")
        for _ in range(400):
            runs = await storage.runs(ref)
            if len(runs) == 2 * ORDERS and all(r.status == "succeeded" for r in runs):
                break
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(served, 30)
        runs = await storage.runs(ref)
        assert len(runs) == 2 * ORDERS and {r.status for r in runs} == {"succeeded"}
        outputs = sorted(json.dumps(r.output, sort_keys=True) for r in runs)
        assert outputs == sorted(
            [json.dumps({"shipped": f"o{i}"}) for i in range(ORDERS)]
            + [json.dumps({"notified": f"o{i}"}) for i in range(ORDERS)]
        )
        await ws.publish(Done(), id="done")
        log = await storage.read(ref)
        out, _ = await asyncio.to_thread(follower.communicate, timeout=60)
        seen = [json.loads(line) for line in out.splitlines()]
        assert follower.returncode == 0
        assert [(e["seq"], e["id"], e["type"]) for e in seen] == [(e.seq, e.id, e.event_type) for e in log]
        assert [e["seq"] for e in seen] == list(range(1, len(log) + 1))
        shipped = [e for e in seen if e["type"] == "shop:order.shipped"]
        assert len(shipped) == ORDERS and all(e["unknown"] for e in shipped)
        assert any(e["type"].startswith("reflexr:") and not e["unknown"] for e in seen)
        kinds = Counter(e["type"] for e in seen)
        print("follower saw", len(seen), "envelopes:", dict(kinds))
        assert kinds["shop:order.placed"] == ORDERS and kinds["shop:done"] == 1
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        storage.close()
        if backend == "postgres":
            await drop_schemas_async([schema])
