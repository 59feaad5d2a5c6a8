"""An advisory that no reclaim followed (ADR-16): the node is made schedulable again when the advisory lapses,
and the drained share of the node, for the time it stood cordoned, is charged to the workload that opted in."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.notice.advisory import false_positive_charges, lapse_deadline
from agent.notice.messages import parse_notice
from agent.runtime import Agent
from contracts.cost_attributes import ADVISORY_LAPSE_S
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, notice_doc, workload_entry

NODE = node_identity()


class ShiftedClock:
    """The real clocks plus an offset a test moves forward (the drain still runs on real time)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


def advisory_doc(clock: ShiftedClock, lead_s: float = 360) -> dict[str, Any]:
    now = clock.now()
    return {"region": "r1", "instance_id": NODE.instance, "pool_id": "p", "issued_at": now.isoformat(),
            "expected_at": (now + timedelta(seconds=lead_s)).isoformat(), "probability": 0.6}


def scenario(tmp_path: Path, then_notice: bool) -> tuple[FakeScheduler, list[dict[str, Any]], list[bool]]:
    """Advisory (ml opted in, etl not; one unit each), then maybe a hard notice; checks before and after the lapse."""
    keys = new_keys()
    bundle = make_bundle(keys, NODE.partition, 1, [workload_entry("etl", budget=2),
                                                   workload_entry("ml", budget=2, advisory=True)])
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, bundle)
    sched = FakeScheduler(units_on_node=[Unit("1", "etl@1"), Unit("2", "ml@1")])
    clock = ShiftedClock()
    checks: list[bool] = []

    async def go() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator(), clock=clock)
        await agent.start(connect=False)
        agent.on_notice(parse_notice(advisory_doc(clock), "nats", clock.monotonic(), default_kind="advisory"))
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        checks.append(await agent.advisories.check())  # the advisory still holds: nothing undone
        if then_notice:
            agent.on_notice(parse_notice(notice_doc(NODE.instance, notice_id="n1"), "nats", clock.monotonic()))
            await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        clock.offset += 360 + ADVISORY_LAPSE_S + 1  # past expected_at + the lapse window
        checks.append(await agent.advisories.check())
        checks.append(await agent.advisories.check())  # once only
        await agent.stop()
        return agent

    agent = asyncio.run(go())
    return sched, [e.read() for e in agent.spool.head(1000)], checks


def test_a_lapsed_advisory_uncordons_the_node_and_charges_the_opted_in_workload(tmp_path: Path) -> None:
    sched, events, checks = scenario(tmp_path, then_notice=False)
    assert checks == [False, True, False]
    assert sched.names().count("unschedulable") == 1 and sched.names().count("schedulable") == 1
    assert sched.names().index("schedulable") > sched.names().index("unschedulable")
    (lapsed,) = [e for e in events if e["kind"] == "advisory-lapsed"]
    assert lapsed["workload"] == "ml" and lapsed["cause"] == "advisory-false-positive" and not lapsed["drill"]
    attrs = lapsed["attributes"]
    # ml held one of the node's two units: half the node stood drained from the advisory to the un-cordon
    assert float(attrs["node_share"]) == 0.5
    assert attrs["wasted_s"] == pytest.approx(attrs["cordoned_s"] / 2, abs=1)
    assert attrs["cordoned_s"] >= 360 + ADVISORY_LAPSE_S


def test_an_advisory_followed_by_its_reclaim_is_neither_undone_nor_charged(tmp_path: Path) -> None:
    sched, events, checks = scenario(tmp_path, then_notice=True)
    assert checks == [False, False, False]
    assert "schedulable" not in sched.names()
    assert not [e for e in events if e["kind"] == "advisory-lapsed"]


@pytest.mark.parametrize(("expected_in_s", "lapse_after_s"), [
    pytest.param(360, 360 + ADVISORY_LAPSE_S, id="the window runs from the advisory's expected time"),
    pytest.param(-600, ADVISORY_LAPSE_S, id="an expected time already past never cuts the window short"),
    pytest.param(None, ADVISORY_LAPSE_S, id="an advisory without an expected time lapses a window after receipt"),
])
def test_the_lapse_deadline(expected_in_s: float | None, lapse_after_s: float) -> None:
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    expected = None if expected_in_s is None else now + timedelta(seconds=expected_in_s)
    assert lapse_deadline(100.0, expected, now, 100.0) == pytest.approx(100.0 + lapse_after_s)


def test_the_charge_is_the_opted_in_share_of_the_node_for_the_time_it_stood_cordoned() -> None:
    versions = {"ml@1": ("ml", "1"), "etl@1": ("etl", "1")}
    (ml,) = false_positive_charges({"ml@1": {"units": 3, "wasted_s": 40}}, versions, 4, 1000.0)
    assert (ml.workload, ml.wasted_s, ml.share, ml.drain_wasted_s) == ("ml", 750, 0.75, 40)
    both = false_positive_charges({"ml@1": {"units": 0}, "etl@1": {"units": 0}}, versions, 0, 1000.0)
    assert [(c.workload, c.wasted_s) for c in both] == [("etl", 500), ("ml", 500)]  # an empty node: split equally
