"""The replay's tallies (``ReplayRun.accrue``): each replayed minute adds every held instance's cost at the rate
card in force then and at the planning rate, per purpose, to its workload — whichever card the minute reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from contracts.pools import PurchaseModel
from contracts.provider import Instance, OwnerTags, RateCard, RateCardEntry
from controllers.planning import Allocation, Purpose, Strategy, WorkloadPlan
from controllers.replay.replay_run import ReplayRun
from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from testkit.builders import contract

START = datetime(2026, 10, 1, tzinfo=UTC)
ETL = contract("etl", "T3")


def _run() -> tuple[ReplayRun, list[str]]:
    region = SimulatedRegion(RegionConfig(seed=3, pools=24, background=False), VirtualClock(START), start=START)
    run = ReplayRun(region, {ETL.ref: ETL}, {"etl": 10})
    pools = [pid for pid, p in run.pools.items() if p.purchase_model is PurchaseModel.RECLAIMABLE][:2]
    return run, pools


def _ours(n: int, pool: str, purpose: str = "reclaimable") -> Instance:
    tags = OwnerTags(workload="etl", pool=pool, partition=ETL.partition, generation=1).to_tags()
    return Instance(instance_id=f"i-{pool}-{n}-{purpose}", name=f"etl-{n}", region="r1", pool_id=pool,
                    status="active", tags=tags, metadata={"sco_purpose": purpose})


def _card(rates: dict[str, str], minute: int) -> RateCard:
    return RateCard(region="r1", time=START + timedelta(minutes=minute),
                    entries=tuple(RateCardEntry(pool_id=p, rate_eur_h=Decimal(r), guaranteed_rate_eur_h=Decimal("1"),
                                                utilisation=0.5, free_instances=3) for p, r in rates.items()))


def test_each_minute_costs_the_rate_of_the_card_it_reads_and_the_planning_rate_whatever_the_card() -> None:
    run, (a, b) = _run()
    listed = [_ours(0, a), _ours(1, a), _ours(2, b), _ours(3, b, "floor")]
    cards = [_card({a: "0.30", b: "0.50"}, 0), _card({a: "0.70"}, 1), _card({a: "0.70"}, 2)]
    step_h = Decimal(60) / 3600
    for card in cards:
        run.region.rate_card = lambda card=card: card   # type: ignore[method-assign]
        run.accrue(listed, {}, 60)
    o = run.outcome["etl"]
    catalogue = {a: run.pools[a].rate_eur_h, b: run.pools[b].rate_eur_h}
    # a pool missing from a card costs its catalogue rate; two instances of one pool, twice the minute's cost
    want = Decimal(0)
    for rate_a, rate_b in ((Decimal("0.30"), Decimal("0.50")), (Decimal("0.70"), catalogue[b]),
                           (Decimal("0.70"), catalogue[b])):
        for rate in (rate_a, rate_a, rate_b):
            want += rate * step_h
    assert o.reclaimable_cost == want
    floor = Decimal("0.50") * step_h + catalogue[b] * step_h + catalogue[b] * step_h
    assert o.floor_cost == floor
    planning = Decimal(0)
    for _ in cards:
        for pool in (a, a, b):
            planning += catalogue[pool] * step_h
    assert o.reclaimable_cost_planning == planning and o.instance_s == 3 * 3 * 60


def test_an_instance_of_another_workload_or_not_active_costs_nothing() -> None:
    run, (a, _) = _run()
    other = Instance(instance_id="i-x", name="x", region="r1", pool_id=a, status="active",
                     tags=OwnerTags(workload="nobody", pool=a, partition=ETL.partition, generation=1).to_tags())
    stopped = _ours(0, a).model_copy(update={"status": "error"})
    run.accrue([other, stopped], {}, 60)
    o = run.outcome["etl"]
    assert (o.reclaimable_cost, o.floor_cost, o.instance_s) == (Decimal(0), Decimal(0), 0)


def _plan(**instances: int) -> WorkloadPlan:
    allocations = tuple(Allocation(pid, Purpose.RECLAIMABLE, 3 * n, n, Decimal("0.1")) for pid, n in instances.items())
    return WorkloadPlan("etl", f"{ETL.ref}:10", Strategy.EXPECTED_COST, allocations, 10, 0, 0, Decimal(0))


def test_surplus_is_the_instances_held_beyond_the_plan_s_in_their_pool_not_units_an_instance_leaves_unused() -> None:
    run, (a, b) = _run()
    step_h = Decimal(60) / 3600
    rate = {pid: run.pools[pid].rate_eur_h * step_h for pid in (a, b)}
    listed = [_ours(0, a), _ours(1, a), _ours(2, a), _ours(3, b), _ours(4, b, "floor")]
    # the plan wants two instances in a and one in b: the third in a is surplus, whatever units the others hold
    run.accrue(listed, {"etl": _plan(**{a: 2, b: 1})}, 60)
    assert run.outcome["etl"].surplus_cost_planning == rate[a]
    # its next plan wants them all: nothing beyond it (the floor instance is never reclaimable surplus)
    run.accrue(listed, {"etl": _plan(**{a: 3, b: 1})}, 60)
    assert run.outcome["etl"].surplus_cost_planning == rate[a]
    # no plan in force: every reclaimable instance held is surplus
    run.accrue(listed, {}, 60)
    assert abs(run.outcome["etl"].surplus_cost_planning - (4 * rate[a] + rate[b])) < Decimal("1e-24")
