"""execstore.harel's search: `list_executions(where=...)` and the search attributes
(declare, list, drop), sync and async, on every backend; a bad query raises
InvalidInputError and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from harel.engine.execution import Execution, Status

from execstore import InvalidInputError


def _fill(store: Any) -> None:
    for i in range(8):
        exe = Execution(
            id=f"s{i:02}",
            definition_id="orders",
            status=Status.DONE if i % 2 else Status.RUNNING,
            context={"customer": f"c-{i % 3}", "total": i * 10, "address": {"city": "Lyon" if i < 4 else "Nice"}},
        )
        store.save(exe)


def _ids(page: Any) -> list[str]:
    return [s.id for s in page.items]


def test_where_filters_with_the_other_filters(store: Any) -> None:
    _fill(store)
    assert _ids(store.list_executions(where='context.customer = "c-1"')) == ["s01", "s04", "s07"]
    assert _ids(store.list_executions(where="context.total >= 50 and context.address.city = Nice")) == [
        "s05",
        "s06",
        "s07",
    ]
    assert _ids(store.list_executions(status=[Status.DONE], where="context.customer in (c-0, c-2)")) == [
        "s03",
        "s05",
    ]
    with pytest.raises(InvalidInputError, match="at character 19: expected a value"):
        store.list_executions(where="context.customer =")
    with pytest.raises(InvalidInputError):
        store.list_executions(where="nope = 1")


def test_attributes_declare_list_drop(store: Any) -> None:
    _fill(store)
    assert store.attributes() == []
    assert store.declare_attribute('context."customer"') == "context.customer"
    assert store.declare_attribute("context.customer") == "context.customer"
    assert store.attributes() == ["context.customer"]
    assert _ids(store.list_executions(where="context.customer ^= c-2")) == ["s02", "s05"]
    with pytest.raises(InvalidInputError):
        store.declare_attribute("status")
    assert store.attributes() == ["context.customer"]
    assert store.drop_attribute("context.customer") is True
    assert store.drop_attribute("context.customer") is False
    assert store.attributes() == []


@pytest.mark.asyncio
async def test_async_where_and_attributes(astore: Any) -> None:
    for i in range(4):
        await astore.save(Execution(id=f"a{i}", definition_id="d", context={"k": i}))
    assert await astore.declare_attribute("context.k") == "context.k"
    assert await astore.attributes() == ["context.k"]
    page = await astore.list_executions(where="context.k > 1")
    assert [s.id for s in page.items] == ["a2", "a3"]
    assert await astore.drop_attribute("context.k") is True
