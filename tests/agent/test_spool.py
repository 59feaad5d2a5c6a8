"""The on-disk event spool: order, restart safety, the bound and what happens when it is full."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.spool import Spool


def ev(i: int, pad: int = 0) -> dict[str, object]:
    return {"event_id": f"e-{i}", "kind": "notice", "region": "r1", "pad": "x" * pad}


def test_events_come_back_in_order_and_survive_a_restart(tmp_path: Path) -> None:
    spool = Spool(tmp_path, fsync=False)
    for i in range(5):
        spool.append(ev(i))
    spool.ack(spool.head(1)[0])
    (tmp_path / "0000000000000099.tmp").write_text("half-written")
    reopened = Spool(tmp_path)
    assert [e.read()["event_id"] for e in reopened.head()] == ["e-1", "e-2", "e-3", "e-4"]
    assert not list(tmp_path.glob("*.tmp"))
    reopened.append(ev(5))
    assert [e.read()["event_id"] for e in reopened.head()][-1] == "e-5"
    assert reopened.depth == 5


def test_when_the_event_bound_is_reached_the_oldest_events_are_dropped_and_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_events=3, fsync=False)
    for i in range(7):
        spool.append(ev(i))
    assert spool.depth == 3 and spool.dropped == 4
    assert [e.read()["event_id"] for e in spool.head()] == ["e-4", "e-5", "e-6"]
    assert Spool(tmp_path, max_events=3).dropped == 4  # the count is persisted


def test_the_byte_bound_holds_too(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_events=1000, max_bytes=4096, fsync=False)
    for i in range(20):
        spool.append(ev(i, pad=900))
    assert spool.bytes <= 4096 and spool.depth == 4 and spool.dropped == 16
    assert sum(p.stat().st_size for p in tmp_path.glob("*.json")) == spool.bytes
    assert json.loads(spool.head(1)[0].path.read_bytes())["event_id"] == "e-16"


def test_a_bound_too_small_to_hold_an_event_is_refused_with_the_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_events=0"):
        Spool(tmp_path, max_events=0)
