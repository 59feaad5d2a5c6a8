"""The ingest loop's pipeline without servers: a batch is inserted while the one before is acknowledged, inserts
stay one at a time and in order, and at most one acknowledgement is on its way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contracts.events import Event
from stores import ingest as ingest_module
from stores.ingest import Batch, Ingest
from tests.stores.helpers import make_event


class _Msg:
    def __init__(self, event: Event) -> None:
        self.subject, self.data, self.headers = event.subject, event.to_json(), None

    async def nak(self, delay: float | None = None) -> None:
        raise AssertionError("nothing fails here")


class _Nc:
    is_closed = False

    async def flush(self, timeout: float | None = None) -> None:
        return None


class _Js:
    _nc = _Nc()


def test_a_batch_is_inserted_while_the_one_before_is_acknowledged_and_never_two_inserts_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    batches = [[_Msg(make_event(b * 10 + i)) for i in range(10)] for b in range(4)]
    index = {id(msg): b for b, batch in enumerate(batches) for msg in batch}
    log: list[tuple[str, int]] = []
    inserting: list[int] = []
    ingest = Ingest(_Js(), client=None)
    waiting = iter(batches)

    async def fetch() -> list[Any]:
        return next(waiting, [])

    async def idle() -> bool:
        return True

    def insert_rows(batch: Batch) -> None:
        b = index[id(batch.good[0])]
        inserting.append(b)
        assert len(inserting) == 1, f"batch {b} inserted while batch {inserting[0]} is"
        log.append(("insert", b))
        inserting.remove(b)

    async def ack_all(nc: Any, msgs: list[Any]) -> None:
        await asyncio.sleep(0.05)  # a slow acknowledgement: the next insert does not wait for it
        log.append(("acked", index[id(msgs[0])]))

    monkeypatch.setattr(ingest, "_fetch", fetch)
    monkeypatch.setattr(ingest, "_idle", idle)
    monkeypatch.setattr(ingest, "_insert_rows", insert_rows)
    monkeypatch.setattr(ingest_module, "ack_all", ack_all)
    asyncio.run(ingest.run(idle_exit=True))

    assert [b for step, b in log if step == "insert"] == [0, 1, 2, 3]
    assert [b for step, b in log if step == "acked"] == [0, 1, 2, 3]
    assert log.index(("insert", 1)) < log.index(("acked", 0))  # batch 1 inserted while batch 0 is acknowledged
    for b in range(2, 4):
        assert log.index(("acked", b - 2)) < log.index(("insert", b))  # one acknowledgement on its way at most
    assert ingest.inserted == 40
