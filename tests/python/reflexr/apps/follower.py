"""Follows a workspace's log in its own process: prints one JSON line per envelope.

Usage: follower.py TARGET TENANT WORKSPACE [SCHEMA], TARGET a SQLite file or a postgres:// URL. It knows none of the application's event types (they
come back as reflexr's UnknownEvent) and stops after the first ``shop:done`` event.
"""

import asyncio
import json
import sys
from datetime import timedelta

from reflexr.core import UnknownEvent
from reflexr.workspace import WorkspaceRef

from execstore.reflexr import PostgresStorage, SqliteStorage


async def main(target: str, tenant: str, workspace: str, schema: str | None = None) -> None:
    storage: SqliteStorage | PostgresStorage
    if target.startswith("postgres"):
        storage = PostgresStorage(target, schema=schema)
    else:
        storage = SqliteStorage(target, poll_interval=timedelta(milliseconds=50))
    subscription = storage.subscribe(WorkspaceRef(tenant, workspace))
    print(json.dumps({"ready": True}), flush=True)
    async for envelope in subscription:
        line = {
            "seq": envelope.seq,
            "id": envelope.id,
            "type": envelope.event_type,
            "unknown": isinstance(envelope.event, UnknownEvent),
        }
        print(json.dumps(line), flush=True)
        if envelope.event_type == "shop:done":
            break
    await subscription.aclose()
    storage.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
