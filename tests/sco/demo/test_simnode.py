"""The demo's simulated scheduler gives its units start times from the injected clock (what the agent's
wasted-work figure is computed from)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sco.demo.simnode import SimScheduler

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_simulated_units_start_at_varied_moments_between_the_instances_launch_and_the_node_coming_up() -> None:
    booted = NOW - timedelta(minutes=10)
    starts = [u.started_at() for u in SimScheduler("n1", "w@1", units_on_node=4, now=lambda: NOW,
                                                   booted_at=booted).units()]
    assert all(s is not None and booted <= s <= NOW for s in starts)
    assert len(set(starts)) == 4  # varied: the work each unit loses differs
    other = [u.started_at() for u in SimScheduler("n2", "w@1", units_on_node=4, now=lambda: NOW,
                                                  booted_at=booted).units()]
    assert other != starts  # and from node to node


def test_without_a_launch_time_the_units_start_when_the_node_comes_up() -> None:
    units = SimScheduler("n1", "w@1", now=lambda: NOW).units()
    assert [u.started_at() for u in units] == [NOW, NOW]
