"""Guaranteed requests take the room reclaimable work leaves free before they reclaim anything (ADR-05: the
reclaimer selects victims only when a guaranteed request cannot be placed), and hold it while they run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controllers.simregion.config import RegionConfig
from controllers.simregion.engine import Inst, RegionEngine

START = datetime(2026, 10, 1, 9, tzinfo=UTC)  # hour 9: the daily cycle sits at its mean


def quiet_region() -> tuple[RegionEngine, str, list[int]]:
    """A region with no other tenants and no random demand; one aggregate's pools, for hand arithmetic."""
    engine = RegionEngine(RegionConfig(seed=3, background=False, room_first=True, reclaim_rate_pct_h=0.0,
                                       bursts_per_aggregate_day=0, hall_reclaims_per_30d=0, daily_amplitude=0.0,
                                       no_notice_share=0.0), START)
    agg = "h1-agg-a"
    return engine, agg, engine.aggregates[agg]


def fill(engine: RegionEngine, pools: list[int], share: float) -> int:
    """Fill every pool of the aggregate to ``share`` of its slots; returns the vCPU placed."""
    placed = 0
    for i in pools:
        for n in range(int(engine.specs[i].slots * share)):
            engine.add(Inst(id=f"{i}-{n}", pool=i, vcpu=engine.specs[i].pool.vcpu, launched=float(n), owned=False))
            placed += engine.specs[i].pool.vcpu
    return placed


def test_a_request_that_fits_in_the_free_room_reclaims_nothing_and_shrinks_what_the_pools_lend() -> None:
    engine, agg, pools = quiet_region()
    fill(engine, pools, 0.5)
    free_before = sum(engine.free(i) for i in pools)
    victims = engine.request_room(agg, engine.slot_vcpu[agg] // 4, hold_s=3600)
    assert victims == []
    assert engine.held_vcpu(agg, engine.now) == engine.slot_vcpu[agg] // 4
    assert sum(engine.free(i) for i in pools) < free_before * 0.6


def test_a_request_larger_than_the_free_room_reclaims_only_what_does_not_fit() -> None:
    engine, agg, pools = quiet_region()
    placed = fill(engine, pools, 0.5)
    room = sum(engine.capacity(i, engine.now) * engine.specs[i].pool.vcpu for i in pools) - placed
    overflow = engine.slot_vcpu[agg] // 10
    victims = engine.request_room(agg, room + overflow, hold_s=3600)
    freed = sum(v.vcpu for v in victims)
    largest = max(engine.specs[i].pool.vcpu for i in pools)
    # at least the overflow; beyond it at most one instance a pool (capacity rounds down per pool) and the
    # last victim's own size
    assert overflow <= freed <= overflow + largest + sum(engine.specs[i].pool.vcpu for i in pools)
    assert freed < room  # most of the request landed in free room
    assert all(v.doomed and v.notice_at == engine.now for v in victims)


def test_when_the_request_leaves_its_room_is_lent_again() -> None:
    engine, agg, pools = quiet_region()
    fill(engine, pools, 0.5)
    before = [engine.capacity(i, engine.now) for i in pools]
    engine.request_room(agg, engine.slot_vcpu[agg] // 4, hold_s=600)
    assert [engine.capacity(i, engine.now) for i in pools] != before
    engine.run_until(601)
    assert engine.held_vcpu(agg, engine.now) == 0
    assert [engine.capacity(i, engine.now) for i in pools] == before


def test_the_forward_calendar_sees_a_booked_request_before_it_lands() -> None:
    engine, agg, pools = quiet_region()
    engine.demand.book(agg, 1800.0, 5400.0, engine.slot_vcpu[agg] // 2)
    i = pools[0]
    assert engine.capacity(i, 1799.0) > engine.capacity(i, 1800.0) > 0
    assert engine.capacity(i, 5400.0) == engine.capacity(i, 0.0)


def test_a_request_on_an_unknown_aggregate_is_refused_with_the_known_ones() -> None:
    engine, _, _ = quiet_region()
    with pytest.raises(ValueError, match=r"h9-agg-z.*use one of"):
        engine.request_room("h9-agg-z", 4, hold_s=60)
