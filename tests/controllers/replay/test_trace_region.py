"""A recorded history as a provider (``TraceRegion``, ADR-03's report on the production path): the room a rate
card showed, the waves that take our instances, the history's rates and reclaim counts, through the provider
protocol the controller uses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from contracts.pools import PurchaseModel
from contracts.provider import LaunchRequest, OwnerTags
from contracts.provider_errors import CapacityUnavailable
from contracts.subjects import EventKind
from controllers.replay.trace import Reclaim, Trace
from controllers.replay.trace_region import TraceRegion
from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.records import SimEvent
from controllers.simregion.topology import build_pools

START = datetime(2026, 10, 1, tzinfo=UTC)
SPECS = build_pools("r1", 4)
POOLS = tuple(s.pool for s in SPECS)
A, B = (p.pool_id for p in POOLS if p.purchase_model is PurchaseModel.RECLAIMABLE and p.hall == "h1")
COMMITTED = next(p.pool_id for p in POOLS if p.purchase_model is PurchaseModel.COMMITTED)
CARD = timedelta(minutes=5)


def _trace(waves: tuple[Reclaim, ...] = (), free_a: tuple[int, ...] = (5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5)) -> Trace:
    """One hour of cards (pool A: ``free_a`` free, 20 others live; B: 50 free), rates rising by a cent a card."""
    times = [START + n * CARD for n in range(len(free_a))]
    return Trace(start=START, end=START + timedelta(hours=1), pools=POOLS,
                 capacity={s.pool.pool_id: s.slots for s in SPECS}, reclaims=waves,
                 rate_cards=tuple((t, {A: Decimal("0.10") + Decimal("0.01") * n, B: Decimal("0.20")})
                                  for n, t in enumerate(times)),
                 free=tuple((t, {A: f, B: 50}) for t, f in zip(times, free_a, strict=True)),
                 live=tuple((t, {A: 20, B: 10}) for t in times))


def _region(trace: Trace) -> tuple[TraceRegion, VirtualClock, list[SimEvent]]:
    clock = VirtualClock(trace.start - trace.warmup)
    region = TraceRegion(trace, RegionConfig(), clock)
    seen: list[SimEvent] = []
    region.engine.on_event.append(seen.append)
    region.sync()
    return region, clock, seen


def _launch(region: TraceRegion, pool: str, count: int) -> list[str]:
    owner = OwnerTags(workload="etl", pool=pool, partition="r1/batch", generation=1)
    return [i.instance_id for i in region.launch(LaunchRequest(pool_id=pool, count=count, owner=owner))]


def test_a_pool_lends_what_its_last_rate_card_showed_free_and_refuses_more_as_the_provider_does() -> None:
    region, clock, _ = _region(_trace(free_a=(3, 3, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8)))
    assert len(_launch(region, A, 3)) == 3
    with pytest.raises(CapacityUnavailable) as refused:
        _launch(region, A, 1)
    assert refused.value.requested == 1 and refused.value.available == 0
    clock.advance_to(START + 2 * CARD)   # the third card shows 8 free: 5 more than we hold
    assert len(_launch(region, A, 5)) == 5
    assert len(_launch(region, COMMITTED, 2)) == 2, "a committed pool lends its slots"


def test_a_wave_takes_our_instances_with_its_share_gives_notice_and_deletes_after_the_window() -> None:
    wave = Reclaim(time=START + timedelta(minutes=7), pool_id=A, share=1.0, hold=timedelta(minutes=30), victims=4)
    region, clock, seen = _region(_trace((wave,)))
    mine = _launch(region, A, 5)
    clock.advance_to(wave.time)
    region.sync()
    notices = [e for e in seen if e.kind is EventKind.NOTICE]
    assert sorted(e.instance for e in notices if e.workload == "etl") == sorted(mine)
    assert all(region.notice(i) is not None for i in mine)
    others = [e for e in notices if not e.workload]
    assert len(others) == 0, "the history's 4 victims are all counted by our 5: none announced beyond them"
    clock.advance_to(wave.time + timedelta(seconds=119))
    assert len(region.list_instances()) == 5
    clock.advance_to(wave.time + timedelta(seconds=120))
    assert region.list_instances() == ()
    assert {e.instance for e in seen if e.kind is EventKind.TERMINATED} == set(mine)
    with pytest.raises(CapacityUnavailable):   # the wave holds the room it took from us for its hold
        _launch(region, A, 1)
    clock.advance_to(wave.time + timedelta(minutes=30))
    assert len(_launch(region, A, 5)) == 5


def test_the_historys_victims_are_drawn_from_everyone_in_the_pool_and_the_others_announced_without_a_workload(
        ) -> None:
    wave = Reclaim(time=START + timedelta(minutes=7), pool_id=A, share=0.15, victims=3)
    region, clock, seen = _region(_trace((wave,)))
    mine = _launch(region, A, 2)
    clock.advance_to(wave.time + timedelta(minutes=1))
    region.sync()
    ours_hit = [e for e in seen if e.kind is EventKind.NOTICE and e.workload == "etl"]
    others = [e for e in seen if e.kind is EventKind.NOTICE and not e.workload]
    assert len(ours_hit) + len(others) == 3, "the history's count of victims, ours among them"
    assert len({e.instance for e in others}) == len(others) and {e.instance for e in ours_hit} <= set(mine)
    assert region.engine.pool_rate_pct_h(region.engine.index[A]) > 0


@pytest.mark.parametrize(("share", "victims", "expected"), [
    (0.25, 5, 5 * 5 / 25),   # 5 victims among 20 others and 5 of ours: one of ours a wave on average
    (0.25, 0, 5 * 0.25),     # no recorded count: each of ours with the wave's share
    (1.0, 20, 5.0),          # the whole pool (a hall reclaim): all of ours
])
def test_a_wave_takes_ours_as_the_recorded_demand_would_from_everyone_in_the_pool(
        share: float, victims: int, expected: float) -> None:
    region, _, _ = _region(_trace())
    _launch(region, A, 5)
    engine, i = region.trace_engine, region.trace_engine.index[A]
    wave = Reclaim(time=START, pool_id=A, share=share, victims=victims)
    mean = sum(len(engine.victims_of(wave, i)) for _ in range(2000)) / 2000
    assert mean == pytest.approx(expected, abs=0.08)


def test_a_wave_without_notice_loses_our_instance_at_once() -> None:
    wave = Reclaim(time=START + timedelta(minutes=7), pool_id=A, share=1.0, no_notice_share=1.0, victims=1)
    region, clock, seen = _region(_trace((wave,)))
    (mine,) = _launch(region, A, 1)
    clock.advance_to(wave.time)
    assert region.list_instances() == ()
    kinds = [e.kind for e in seen if e.instance == mine]
    assert kinds == [EventKind.LAUNCHED, EventKind.NO_NOTICE_LOSS, EventKind.TERMINATED]


def test_the_rate_card_and_forward_capacity_are_the_historys_own() -> None:
    region, clock, _ = _region(_trace())
    clock.advance_to(START + 3 * CARD)
    card = {e.pool_id: e for e in region.rate_card().entries}
    assert card[A].rate_eur_h == Decimal("0.13") and card[B].rate_eur_h == Decimal("0.20")
    assert card[A].free_instances == 5 and card[A].utilisation == pytest.approx(20 / 25)
    _launch(region, A, 2)
    ahead = {f.pool_id: f for f in region.forward_capacity(timedelta(minutes=30))}
    assert ahead[A].expected_free_instances == 3, "no calendar in the history: the free room now"
    assert region.catalogue().source == "trace:r1"


def test_a_pools_instances_are_the_other_tenants_its_card_counted_and_ours() -> None:
    # the ranking's forecast weighs a pool's reclaims by its instances: counting only ours, a history with none of
    # ours yet has no instance anywhere and the forecast is never fitted
    region, _, _ = _region(_trace())
    e = region.trace_engine
    assert e.instances(e.index[A]) == 20 and e.instances(e.index[B]) == 10
    _launch(region, A, 3)
    assert e.instances(e.index[A]) == 23
