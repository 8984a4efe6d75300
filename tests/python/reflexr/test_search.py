"""``search_log`` and ``search_runs`` (docs/search.md, "The workspace log and runs") on each
backend: the matches, the bounded scan and its cursor, and a bad query as InvalidInput."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import Factory
from reflexr.core import Run, SourceActor
from reflexr.workspace import Entry, WorkspaceRef
from rxsupport import T0, ManualClock, Ping

import execstore

WS = WorkspaceRef("shop", "main")
ACTOR = SourceActor(name="m")


async def fill(storage: object) -> None:
    async with storage.transaction(WS) as tx:  # type: ignore[attr-defined]
        await tx.append([Entry(id=f"e{i}", actor=ACTOR, event=Ping(n=i, text="auth" if i % 5 == 0 else "web")) for i in range(1, 41)])
        await tx.save_runs(
            [
                Run(
                    id=f"r{i:02}",
                    rule="bill",
                    scope_key=f"k{i}",
                    scope={"customer": f"c-{i % 3}"},
                    fired_seq=2 * i + 1,
                    matched=(2 * i + 1,),
                    correlation_id="c",
                    status="dead" if i % 2 == 0 else "pending",
                    next_attempt_at=T0,
                    created_at=T0 + timedelta(seconds=i),
                    updated_at=T0 + timedelta(seconds=i),
                )
                for i in range(12)
            ]
        )


@pytest.mark.asyncio
async def test_search_log_bounded_and_resumable(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    await fill(storage)
    page = await storage.search_log(WS, 'event.text = "auth"')
    assert [e.seq for e in page.envelopes] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert (page.scanned, page.scanned_to, page.next) == (40, 40, None)
    page = await storage.search_log(WS, "event.n > 10 and event.text = auth", scan=12)
    assert ([e.seq for e in page.envelopes], page.scanned_to, page.next) == ([], 12, 12)
    page = await storage.search_log(WS, "event.n > 10 and event.text = auth", scan=12, after_seq=page.next)
    assert ([e.seq for e in page.envelopes], page.next) == ([15, 20], 24)
    page = await storage.search_log(WS, "event.text = auth", newest_first=True, limit=2)
    assert ([e.seq for e in page.envelopes], page.next) == ([40, 35], 35)
    assert isinstance(page.envelopes[0].event, Ping)


@pytest.mark.asyncio
async def test_search_runs_by_scope_status_and_firing_event(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    await fill(storage)
    page = await storage.search_runs(WS, "scope.customer = c-0 and status = dead")
    assert [r.id for r in page.runs] == ["r06", "r00"]
    # Fired by envelope 2i + 1: auth on 5, 15 (i = 2, 7).
    page = await storage.search_runs(WS, "event.text = auth")
    assert [r.id for r in page.runs] == ["r07", "r02"]
    page = await storage.search_runs(WS, "rule exists", scan=5)
    assert (len(page.runs), page.scanned) == (5, 5) and page.next is not None
    rest = await storage.search_runs(WS, "rule exists", cursor=page.next)
    assert [r.id for r in page.runs + rest.runs] == [f"r{i:02}" for i in range(11, -1, -1)]


@pytest.mark.asyncio
async def test_bad_queries_are_invalid_input(make_storage: Factory) -> None:
    storage = make_storage(ManualClock())
    await fill(storage)
    with pytest.raises(execstore.InvalidInputError, match="at character 13"):
        await storage.search_log(WS, "event.text =")
    with pytest.raises(execstore.InvalidInputError, match="none of"):
        await storage.search_runs(WS, "status = sleeping")
    with pytest.raises(execstore.InvalidInputError, match="scan"):
        await storage.search_log(WS, "seq > 0", scan=0)
    assert await storage.head_seq(WS) == 40
