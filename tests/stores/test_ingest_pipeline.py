"""The ingest loop's pipeline without servers: a batch is inserted while the one before is acknowledged, inserts
stay one at a time and in order, and at most one acknowledgement is on its way."""

from __future__ import annotations

import asyncio
import threading
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
    # set when batch b's insert has begun: the acknowledgement of batch b - 1 waits for it (below)
    insert_began = [threading.Event() for _ in batches]
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
        insert_began[b].set()
        inserting.remove(b)

    async def ack_all(nc: Any, msgs: list[Any]) -> None:
        b = index[id(msgs[0])]
        log.append(("ack", b))
        if b + 1 < len(batches):
            # A slow acknowledgement, slow until the next insert has begun: the ordering no longer rests on a
            # 50 ms sleep outracing the insert's thread. Were the next insert to wait for this acknowledgement,
            # the wait would give up after 60 s and log the acknowledgement first: the asserts below fail.
            await asyncio.to_thread(insert_began[b + 1].wait, 60)
        log.append(("acked", b))

    monkeypatch.setattr(ingest, "_fetch", fetch)
    monkeypatch.setattr(ingest, "_idle", idle)
    monkeypatch.setattr(ingest, "_insert_rows", insert_rows)
    monkeypatch.setattr(ingest_module, "ack_all", ack_all)
    asyncio.run(ingest.run(idle_exit=True))

    assert [b for step, b in log if step == "insert"] == [0, 1, 2, 3]
    # sent in batch order, each once (the last one, with no next insert to wait for, may end before the one
    # before it: two acknowledgements may overlap, one of them awaited before the next insert)
    assert [b for step, b in log if step == "ack"] == [0, 1, 2, 3]
    assert sorted(b for step, b in log if step == "acked") == [0, 1, 2, 3]
    assert log.index(("insert", 1)) < log.index(("acked", 0))  # batch 1 inserted while batch 0 is acknowledged
    for b in range(2, 4):
        assert log.index(("acked", b - 2)) < log.index(("insert", b))  # one acknowledgement on its way at most
    assert ingest.inserted == 40
