"""The summary's row for the real agents booted from the user-data the controller sent: their notices, drains
and drain times beside the in-process agents', and its verdict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from sco.demo.summary import Summary

T = "2026-12-02T01:00:00Z"


def _event(kind: str, instance: str, source: str = "agent", drain_ms: int | None = None) -> bytes:
    doc: dict[str, Any] = {"kind": kind, "instance": instance, "source": source, "time": T, "attributes": {}}
    if drain_ms is not None:
        doc["attributes"]["drain_ms"] = drain_ms
    return json.dumps(doc).encode()


def _summary(booted: list[str], refused: list[str] | None = None, events: list[bytes] | None = None) -> Summary:
    s = Summary(started=datetime(2026, 12, 2, tzinfo=UTC), userdata_agents_max=3, userdata_booted=booted,
                userdata_refused=refused or [], userdata_reclaimed=booted[0] if booted else "")
    for e in events or []:
        s.on_event(e)
    return s


EVENTS = [
    _event("notice", "u1", source="simregion"), _event("notice", "u1"), _event("drained", "u1", drain_ms=1500),
    _event("notice", "u2"), _event("notice", "u2"), _event("drained", "u2", drain_ms=2500),  # one notice, re-sent
    _event("notice", "p1"), _event("drained", "p1", drain_ms=800),
    _event("notice", "p2"), _event("overrun", "p2", drain_ms=9000),
]


def test_the_row_counts_the_user_data_agents_notices_and_drains_beside_the_in_process_agents() -> None:
    row = _summary(["u1", "u2", "u3"], events=EVENTS).userdata_row()
    assert row[0] == "Agents from user-data" and row[3] == "PASS"
    assert row[2] == ("3 booted from the user-data the controller sent: 2 got a notice, 2 drained, 0 overran, "
                      "drain p50 1.5 s, max 2.5 s; in-process agents: 2 got a notice, 1 drained, 1 overran, "
                      "drain p50 0.8 s, max 9.0 s")
    assert "reclaims u1 on purpose" in row[4]


@pytest.mark.parametrize(("booted", "refused", "events", "verdict"), [
    (["u1"], ["u9: sco-agent check refused"], EVENTS, "FAIL"),      # a node whose files the agent refused
    (["u1"], [], [_event("notice", "u1")], "FAIL"),                   # booted, noticed, never drained
    (["p2"], [], EVENTS, "FAIL"),                                     # it overran
    ([], [], EVENTS, "n/a"),                                          # none booted, none refused: nothing to judge
])
def test_a_refused_boot_no_drain_or_an_overrun_fails_the_row(booted: list[str], refused: list[str],
                                                             events: list[bytes], verdict: str) -> None:
    assert _summary(booted, refused, events).userdata_row()[3] == verdict


def test_the_slurm_test_bed_s_real_agents_are_not_counted_as_in_process_agents() -> None:
    s = _summary(["u1", "u2", "u3"], events=EVENTS)
    s.slurm_instances = {"p2"}
    assert "in-process agents: 1 got a notice, 1 drained, 0 overran" in s.userdata_row()[2]


def test_the_row_is_in_the_table_only_when_the_demo_boots_such_agents_and_the_headline_counts_them() -> None:
    with_them = _summary(["u1", "u2"], events=EVENTS)
    assert "Agents from user-data" in [r[0] for r in with_them.rows()]
    assert "2 real sco-agent process(es) booted from the user-data the controller sent" in with_them.headline()
    without = Summary(started=datetime(2026, 12, 2, tzinfo=UTC))
    assert "Agents from user-data" not in [r[0] for r in without.rows()]
