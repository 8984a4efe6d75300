"""A pytest plugin that runs harel 0.9.0's own test suite (its sdist's `test/`, fetched with
pip at run time by `harel_suite_test` in scripts/lib/python.sh, never copied here) with
execstore.harel's classes in place of harel's SQLite stores.

Loaded with `-p swap` before harel's test modules are imported, it rebinds `SqliteStore` and
`AsyncSqliteStore` in every harel module that holds harel's own (`harel`,
`harel.engine.store`, `harel.engine.aio_store`, ...), so `from harel.engine.store import
SqliteStore` in a test gets execstore's. The tests it skips are listed below, each with its
reason: they read harel's private attributes (a sqlite3 connection execstore does not have)
or assert harel's exact schema (execstore's `create_schema=True` adds its listing indexes).
"""

from __future__ import annotations

import pytest

import swapping

# Each test skipped, by its node id under test/, with the reason.
PRIVATE = "reads harel's private attributes (its sqlite3 connection `_conn`), which execstore's store does not have"
SKIPPED = {
    "unit/engine/test_store.py::test_sqlite_failed_commit_rolls_back_and_releases_the_write_lock": PRIVATE,
    "unit/engine/aio/test_async_sqlite.py::test_a_failed_commit_rolls_back_and_releases_the_write_lock": PRIVATE,
    "unit/engine/aio/test_async_sqlite.py::test_concurrent_commits_on_one_store_do_not_interleave_transactions": PRIVATE,
    "unit/engine/test_schema.py::test_the_sqlite_backends_create_exactly_the_described_schema": (
        "asserts harel's exact schema; execstore's create_schema=True adds its listing indexes and "
        "their record (<prefix>_execstore_migrations), as docs/guide.md says"
    ),
}


SWAPPED = swapping.swap()


def pytest_report_header(config: pytest.Config) -> str:
    return f"execstore.harel swapped in for harel's SqliteStore and AsyncSqliteStore ({SWAPPED} bindings)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    found = set()
    for item in items:
        nodeid = item.nodeid.removeprefix("test/").split("[", 1)[0]
        reason = SKIPPED.get(nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"execstore: {reason}"))
            found.add(nodeid)
    files = {item.nodeid.removeprefix("test/").split("::", 1)[0] for item in items}
    for nodeid in SKIPPED:
        if nodeid not in found and nodeid.split("::", 1)[0] in files:
            # Its file ran but the test is gone: the list is out of date.
            raise pytest.UsageError(f"a test listed to skip was not collected: {nodeid}")
