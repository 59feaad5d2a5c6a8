"""The plausibility check (agent/notice/check.py) as tables, and the agent refusing what it refuses."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.notice.check import (
    KNOWN_CAUSES,
    MAX_JSON_DEPTH,
    MAX_NOTICE_BYTES,
    PROMISED_LEAD_S,
    REASONS,
    FloodBound,
    RefusalLog,
    check_notice,
    check_raw,
    json_depth,
)
from agent.notice.messages import parse_notice
from agent.runtime import Agent, SystemClock
from contracts.settings import CompilerSettings
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, notice_doc, workload_entry

NODE = node_identity()
ISSUED = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)


def doc(**changes: Any) -> dict[str, Any]:
    """A provider notice for NODE issued at ISSUED with a 120 s window, with ``changes`` (None deletes)."""
    out = notice_doc(NODE.instance, issued=ISSUED)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def at(seconds: float) -> str:
    return (ISSUED + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(("changes", "kind", "reason"), [
    ({}, "notice", None),
    ({"terminate_at": at(0)}, "notice", None),  # notice + 0 s: the earliest plausible deletion
    ({"terminate_at": at(2 * PROMISED_LEAD_S)}, "notice", None),  # notice + 2 × the lead: the latest
    ({"cause": "hall-reclaim"}, "notice", None),
    ({"cause": "drill", "drill": True}, "notice", None),
    ({"cause": None}, "notice", None),  # no cause: a reclaim
    ({"region": None}, "notice", None),  # no region: the subject named it
    ({"instance_id": "i-someone-else"}, "notice", "other-instance"),
    ({"region": "r2"}, "notice", "other-region"),
    ({"cause": "because-i-said-so"}, "notice", "unknown-cause"),
    ({"terminate_at": at(-1)}, "notice", "window-early"),
    ({"terminate_at": at(2 * PROMISED_LEAD_S + 1)}, "notice", "window-late"),
    ({"terminate_at": at(86400)}, "notice", "window-late"),
    ({"terminate_at": None}, "notice", "no-window"),
    ({"issued_at": None, "notice_id": "n-1"}, "notice", "no-window"),
    ({"terminate_at": None, "expected_at": at(3600)}, "advisory", None),  # a forecast has no window
    ({"instance_id": "i-someone-else"}, "advisory", "other-instance"),
    ({"cause": "because-i-said-so"}, "advisory", "unknown-cause"),
])
def test_a_notice_is_plausible_only_for_this_node_within_the_window_and_with_a_known_cause(
        changes: dict[str, Any], kind: str, reason: str | None) -> None:
    notice = parse_notice(doc(**changes), "nats", 0.0, default_kind=kind)
    refusal = check_notice(notice, NODE)
    assert (refusal.reason if refusal else None) == reason
    if refusal is not None:
        assert refusal.reason in REASONS and notice.notice_id in refusal.message


@pytest.mark.parametrize(("raw", "reason"), [
    (json.dumps(doc()).encode(), None),
    (b"x" * MAX_NOTICE_BYTES, None),  # at the bound: parsing decides
    (b"x" * (MAX_NOTICE_BYTES + 1), "oversize"),
    (b"[" * 100_000 + b"]" * 100_000, "oversize"),
    (b'{"a": [[[1]]]}', None),
    (b'{"a": [[[[1]]]]}', "too-deep"),
    (b'{"a": "[[[[[[[[{{{{{{{{"}', None),  # brackets inside a string do not nest
    (b'{"a": "\\"[[[[[[[[[[", "b": 1}', None),  # nor after an escaped quote
    (b"[[[[[[[[[[", "too-deep"),  # unterminated
    (b"}}}}}}}}}}", None),  # unbalanced but flat: json.loads refuses it as malformed
])
def test_a_raw_notice_is_bounded_in_size_and_depth_before_it_is_parsed(raw: bytes, reason: str | None) -> None:
    refusal = check_raw(raw, "nats")
    assert (refusal.reason if refusal else None) == reason


def test_a_hundred_thousand_nested_brackets_are_refused_as_too_deep_without_a_recursion_error() -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    refusal = check_raw(raw, "metadata", limit=len(raw))
    assert refusal is not None and refusal.reason == "too-deep" and "metadata" in refusal.message


@pytest.mark.parametrize(("raw", "depth"), [
    (b"1", 0), (b"{}", 1), (b'{"a": {"b": [1, 2]}}', 3), (b"[[], [[]], []]", 3), (b'["]]]", [["{"]]]', 3),
])
def test_the_nesting_depth_is_counted_on_the_bytes_outside_strings(raw: bytes, depth: int) -> None:
    assert json_depth(raw) == depth


def test_the_bounds_hold_the_metadata_document_and_the_lead_is_the_contracts() -> None:
    metadata = {"instance_id": NODE.instance, "notices": [doc(kind="notice")]}
    assert json_depth(json.dumps(metadata).encode()) <= MAX_JSON_DEPTH
    assert CompilerSettings().notice_s == PROMISED_LEAD_S
    assert {"reclaimed", "hall-reclaim", "drill"} <= KNOWN_CAUSES  # what controllers/simregion sets


def test_a_reason_is_logged_once_a_minute_and_others_are_not_held_back() -> None:
    log = RefusalLog()
    assert [log.due("window-late", t) for t in (0.0, 1.0, 59.9, 60.0, 61.0)] == [True, False, False, True, False]
    assert log.due("other-instance", 1.0) and log.suppressed == {"window-late": 3}


def test_the_flood_bound_records_sixteen_and_then_only_counts() -> None:
    bound = FloodBound()
    assert [bound.record() for _ in range(20)] == [True] * 16 + [False] * 4


class SteppedClock(SystemClock):
    """The system's wall clock; a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


def test_the_agent_refuses_implausible_notices_counts_them_by_reason_logs_once_a_minute_and_never_drains(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1,
                                                                  [workload_entry("etl", budget=2)]))
    sched = FakeScheduler(units_on_node=[Unit("1", "etl@1")])
    clock = SteppedClock()
    now = datetime.now(UTC)
    late = notice_doc(NODE.instance, issued=now, terminate_in_s=3600)
    bad = [json.dumps(late).encode(), json.dumps(notice_doc("i-other", issued=now)).encode(),
           b"[" * 50 + b"]" * 50, b"{" + b" " * 5000 + b"}", b"not json"]

    async def go() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator(), clock=clock)
        await agent.start(connect=False)
        for _ in range(3):
            for raw in bad:
                agent._on_message(raw, "notice")
        clock.t += 61.0
        agent._on_message(json.dumps(late).encode(), "notice")
        agent.on_metadata(json.dumps({"instance_id": NODE.instance, "notices": [late]}).encode())
        await asyncio.sleep(0.05)
        await agent.stop()
        return agent

    with caplog.at_level(logging.WARNING, logger="sco.agent"):
        agent = asyncio.run(go())
    assert not agent.drains and "unschedulable" not in sched.names()
    counts = {r: agent.metrics.value("sco_agent_notices_refused_total", channel="nats", reason=r)
              for r in ("window-late", "other-instance", "too-deep", "oversize", "malformed")}
    assert counts == {"window-late": 4, "other-instance": 3, "too-deep": 3, "oversize": 3, "malformed": 3}
    assert agent.metrics.value("sco_agent_notices_refused_total", channel="metadata", reason="window-late") == 1
    logged = [r.getMessage() for r in caplog.records if "notice refused" in r.getMessage()]
    assert sum("(window-late)" in m for m in logged) == 2  # at 0 s, then again after a minute
    assert all(sum(f"({r})" in m for m in logged) == 1 for r in ("other-instance", "too-deep", "oversize"))


def test_a_flood_of_advisories_starts_one_advisory_drain_and_records_sixteen_events_then_counts(
        tmp_path: Path) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, [
        workload_entry("etl", budget=2), workload_entry("ml", budget=2, advisory=True)]))
    sched = FakeScheduler(units_on_node=[Unit("1", "etl@1"), Unit("2", "ml@1")], leave_on_evict=False)
    issued = datetime.now(UTC)

    async def go() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        for i in range(40):
            advisory = {"region": "r1", "instance_id": NODE.instance, "pool_id": "p", "notice_id": f"a-{i}",
                        "issued_at": issued.isoformat(), "expected_at": (issued + timedelta(minutes=6)).isoformat(),
                        "probability": 0.6}
            agent._on_message(json.dumps(advisory).encode(), "advisory")
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return agent

    agent = asyncio.run(go())
    events = [e.read() for e in agent.spool.head(1000)]
    advisories = [e for e in events if e["kind"] == "advisory"]
    assert len(agent.drains) == 1 and sched.names().count("unschedulable") == 1
    assert {a for w, _, a in sched.calls if w == "evict"} == {"2"}  # only the workload that opted in
    assert sorted({str(e["attributes"]["action"]) for e in advisories}) == ["already-draining", "drain"]
    assert len(advisories) == 17
    assert agent.metrics.value("sco_agent_notices_coalesced_total", channel="nats", kind="advisory") == 23
