"""Shared pieces of the execstore.reflexr tests: event types, a hand-set clock, PostgreSQL schemas."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

from reflexr.core import Event

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PG_URL = os.environ.get("EXECSTORE_PG_URL")


class DtEvent(Event, abstract=True, event_namespace="dt"):
    """The namespace of the tests' event types."""


class Ping(DtEvent):
    n: int
    text: str = ""


class Pong(DtEvent):
    ok: bool


class ManualClock:
    """A clock set by hand; counts its calls."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start
        self.calls = 0

    def __call__(self) -> datetime:
        self.calls += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def fresh_schema() -> str:
    return "esr_" + uuid.uuid4().hex[:12]


async def drop_schemas_async(names: list[str]) -> None:
    """Drops the tests' PostgreSQL schemas (asyncpg, which reflexr[postgres] brings)."""
    if not PG_URL or not names:
        return
    import asyncpg

    conn = await asyncpg.connect(PG_URL)
    try:
        for name in names:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await conn.close()


def drop_schemas(names: list[str]) -> None:
    """Drops the tests' PostgreSQL schemas, outside an event loop."""
    import asyncio

    asyncio.run(drop_schemas_async(names))



