"""What counts as a reclaim has one home (contracts.subjects.is_reclaim): a no-notice reclaim in the simulated
region is a `no-notice-loss` event, and the exclusion watcher counts it as a wave; drills never count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from contracts.events import Event
from contracts.subjects import EventKind
from controllers.controller.exclusion import Exclusion, ExclusionWatcher
from controllers.controller.exclusion_stream import signal_of
from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.records import Inst
from controllers.simregion.region import SimulatedRegion

START = datetime(2026, 10, 1, 9, tzinfo=UTC)


def reclaim_three_times(*, drill: bool, no_notice_share: float = 1.0) -> tuple[list[Event], Exclusion | None]:
    """Three reclaims of one instance each, ten minutes apart, in one pool of a quiet simulated region; every
    event the region emits goes through the exclusion stream's reading into the watcher."""
    region = SimulatedRegion(RegionConfig(seed=3, background=False, reclaim_rate_pct_h=0.0,
                                          bursts_per_aggregate_day=0, hall_reclaims_per_30d=0,
                                          no_notice_share=no_notice_share), VirtualClock(START))
    engine = region.engine
    events: list[Event] = []
    engine.on_event.append(lambda ev: events.append(region.to_event(ev)))
    pool = engine.aggregates[next(iter(engine.aggregates))][0]
    victims = [Inst(id=f"i-{n}", pool=pool, vcpu=engine.specs[pool].pool.vcpu, launched=0.0, owned=False)
               for n in range(3)]
    for victim in victims:
        engine.add(victim)
    watcher, tripped = ExclusionWatcher(), None
    for n, victim in enumerate(victims):
        engine.run_until(600.0 * n)
        engine.doom(victim, "drill" if drill else "reclaimed", drill=drill)  # notice or not: the region's share
        engine.run_until(600.0 * n + 300.0)
    for ev in events:
        tripped = watcher.observe(signal_of(ev)) or tripped
    return events, tripped


def test_a_no_notice_reclaim_in_the_simulated_region_counts_as_a_wave_for_the_exclusion_watcher() -> None:
    events, tripped = reclaim_three_times(drill=False)
    losses = [e for e in events if e.kind is EventKind.NO_NOTICE_LOSS]
    assert [e.instance for e in losses] == ["i-0", "i-1", "i-2"]
    assert all(e.cause == "reclaimed-no-notice" and not e.drill for e in losses)
    assert not [e for e in events if e.kind is EventKind.NOTICE]
    assert tripped is not None and tripped.reason.startswith("3 reclamation waves")
    assert set(tripped.evidence) == {str(e.event_id) for e in losses}  # the terminations never count again


def test_the_termination_after_a_no_notice_loss_keeps_its_cause_for_humans() -> None:
    events, _ = reclaim_three_times(drill=False)
    ends = [e for e in events if e.kind is EventKind.TERMINATED]
    assert [(e.instance, e.cause, e.attributes["notice_ms"]) for e in ends] == [
        ("i-0", "reclaimed-no-notice", None), ("i-1", "reclaimed-no-notice", None),
        ("i-2", "reclaimed-no-notice", None)]


def test_noticed_reclaims_count_as_waves_as_before() -> None:
    events, tripped = reclaim_three_times(drill=False, no_notice_share=0.0)
    assert not [e for e in events if e.kind is EventKind.NO_NOTICE_LOSS]
    assert tripped is not None
    assert set(tripped.evidence) == {str(e.event_id) for e in events if e.kind is EventKind.NOTICE}


@pytest.mark.parametrize("no_notice_share", [0.0, 1.0])
def test_drills_never_count_as_waves(no_notice_share: float) -> None:
    events, tripped = reclaim_three_times(drill=True, no_notice_share=no_notice_share)
    assert len([e for e in events if e.drill]) >= 6  # the drills happened: a start and an end each
    assert tripped is None
