"""Rebinds harel's SQLite stores to execstore.harel's in every loaded harel module: the
pytest plugin `swap` calls it in the test process, `sitecustomize` in the worker processes
harel's tests start (when `EXECSTORE_HAREL_SWAP` is set)."""

from __future__ import annotations

import sys


def swap() -> int:
    """Rebinds `SqliteStore` and `AsyncSqliteStore` wherever a harel module holds harel's own
    (`harel`, `harel.engine.store`, `harel.engine.aio_store`, ...), so a later `from
    harel.engine.store import SqliteStore` gets execstore's too. Returns how many bindings."""
    import harel  # noqa: F401  (loads harel's modules, so they can be rebound)
    import harel.engine.aio_store.sqlite
    import harel.engine.store.sqlite
    from execstore import harel as ours

    swaps = {
        harel.engine.store.sqlite.SqliteStore: ours.SqliteStore,
        harel.engine.aio_store.sqlite.AsyncSqliteStore: ours.AsyncSqliteStore,
    }
    swapped = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "harel" or name.startswith("harel.")):
            continue
        for attr, value in list(vars(module).items()):
            replacement = swaps.get(value) if isinstance(value, type) else None
            if replacement is not None:
                setattr(module, attr, replacement)
                swapped += 1
    return swapped
