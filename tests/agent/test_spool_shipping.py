"""The spool and its shipping under a flood (issue 15): appends do not wait for a ship in flight, a ship does
not wait behind queued fsync'd appends, the spool stays bounded, and an agent restart loses nothing."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nats

from agent.metrics import Metrics
from agent.shipping import EventShipper
from agent.spool import Spool
from testkit.nats import NatsProcess
from tests.agent.helpers import stream_events, wait_for

LIMIT = 30.0  # seconds; generous on purpose (a loaded machine), only a broken build waits this long


def event(i: int) -> dict[str, Any]:
    return {"event_id": f"00000000-0000-0000-0015-{i:012d}", "kind": "notice", "region": "r1", "partition": "p1",
            "pool": "pool-a", "instance": "i-1", "time": "2026-12-01T00:00:00Z", "cause": "test",
            "drill": False, "source": "agent", "attributes": {"n": i}}


class SlowNats:
    """A real NATS connection whose JetStream publishes wait at ``gate`` (a slow server, a ship in flight)."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.gate = asyncio.Event()
        self.in_flight = 0

    @property
    def is_connected(self) -> bool:
        return bool(self.nc.is_connected)

    def jetstream(self) -> SlowNats:
        return self

    async def publish(self, subject: str, data: bytes, **kwargs: Any) -> Any:
        self.in_flight += 1
        try:
            await self.gate.wait()
            return await self.nc.jetstream().publish(subject, data, **kwargs)
        finally:
            self.in_flight -= 1


def shipper_for(spool: Spool, writer: ThreadPoolExecutor, connection: Any) -> tuple[EventShipper, asyncio.Event]:
    wake = asyncio.Event()
    closing = {"now": False}
    shipper = EventShipper(spool, writer, Metrics(), wake, lambda: connection, lambda: closing["now"])
    return shipper, wake


async def _append(writer: ThreadPoolExecutor, spool: Spool, first: int, count: int) -> list[Any]:
    loop = asyncio.get_running_loop()
    return [loop.run_in_executor(writer, spool.append, event(i)) for i in range(first, first + count)]


def test_appends_go_on_while_a_ship_waits_on_nats_and_a_ship_goes_on_while_appends_wait_on_the_disk(
        events_nats: NatsProcess, tmp_path: Path) -> None:
    async def scenario() -> None:
        nc = await nats.connect(events_nats.url)
        slow = SlowNats(nc)
        spool = Spool(tmp_path / "spool", fsync=False)  # the slow disk is the blocked writer below
        writer = ThreadPoolExecutor(1, thread_name_prefix="spool-writer")
        shipper, wake = shipper_for(spool, writer, slow)
        await asyncio.gather(*await _append(writer, spool, 0, 10))
        ship = asyncio.create_task(shipper.run())
        wake.set()
        assert await wait_for(lambda: slow.in_flight > 0, LIMIT)

        # 1. a ship is in flight (NATS does not answer): 200 appends complete meanwhile
        await asyncio.wait_for(asyncio.gather(*await _append(writer, spool, 10, 200)), LIMIT)
        assert slow.in_flight > 0 and spool.depth == 210

        # 2. the writer thread is busy (a slow disk) with 100 appends queued behind it: the ship completes
        disk = threading.Event()
        blocked = writer.submit(disk.wait)
        queued = await _append(writer, spool, 210, 100)
        slow.gate.set()
        assert await wait_for(lambda: spool.depth == 0, LIMIT), f"{spool.depth} not shipped"
        assert not blocked.done() and not any(f.done() for f in queued)

        disk.set()
        await asyncio.gather(*queued)
        assert await shipper.flush(asyncio.get_running_loop().time, LIMIT)
        ship.cancel()
        await nc.close()
        writer.shutdown()

    asyncio.run(scenario())
    shipped = asyncio.run(stream_events(events_nats.url))
    assert sorted(e["attributes"]["n"] for e in shipped) == list(range(310))


def test_a_flood_with_nats_away_stays_bounded_and_a_restart_after_a_lost_delete_ships_each_event_once(
        events_nats: NatsProcess, tmp_path: Path) -> None:
    async def scenario() -> None:
        directory = tmp_path / "spool"
        spool = Spool(directory, max_events=100, fsync=False)
        with ThreadPoolExecutor(1) as writer:  # NATS away: nothing ships, the oldest are dropped and counted
            await asyncio.gather(*await _append(writer, spool, 0, 400))
        assert (spool.depth, spool.dropped) == (100, 300)

        nc = await nats.connect(events_nats.url)
        for entry in spool.head(40):  # shipped, then the agent died before deleting them
            data = entry.path.read_bytes()
            await nc.jetstream().publish("sco.events.r1.notice", data,
                                         headers={"Nats-Msg-Id": entry.read()["event_id"]})

        reopened = Spool(directory, max_events=100, fsync=False)  # the agent restarts
        assert (reopened.depth, reopened.dropped) == (100, 300)
        with ThreadPoolExecutor(1) as writer:
            shipper, wake = shipper_for(reopened, writer, nc)
            ship = asyncio.create_task(shipper.run())
            wake.set()
            assert await shipper.flush(asyncio.get_running_loop().time, LIMIT)
            ship.cancel()
        await nc.close()

    asyncio.run(scenario())
    shipped = asyncio.run(stream_events(events_nats.url))
    assert sorted(e["attributes"]["n"] for e in shipped) == list(range(300, 400))  # each once, the newest kept
