"""Fallback does the work it was launched for (ADR-23, ADR-24): the plan leaves the units live fallback holds to it,
an instance being returned stops covering so its units are placed on reclaimable capacity before it goes, and a
return is called off when the plan is short again. Pure passes on a fixed clock (``decide``), no database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controllers.controller.decide import begin, decide
from controllers.controller.decision import Decision, Desired, Memory, StartFallback, WritePlans
from controllers.controller.fallback_pass import covered_claims
from controllers.controller.model import Glance, Observation, Observed, Purpose, Terminate
from controllers.controller.settings import ControllerSettings
from controllers.planning import Claim
from controllers.planning import Purpose as PlanPurpose
from testkit.builders import PARTITION, T0, contract, contracts
from tests.controllers.controller.test_decide import POOLS, demand, market, row

SVC = contract("svc", "T4")   # a 30 % floor, automatic fallback within its cap; one unit an instance here


def fallback(iid: str, pool: str = "g1", status: str = "active") -> Observed:
    return Observed(iid, f"node-{iid}", "svc", pool, PARTITION, 1, Purpose.FALLBACK, status, "h1",
                    T0 - timedelta(hours=2), "T4")


def run(held: tuple[Observed, ...], returning: frozenset[str] = frozenset(), free: int = 50,
        idle: int = 3, memory: Memory | None = None) -> tuple[Decision, dict[str, int]]:
    """One acting pass of ``svc`` claiming 10 units while ``held`` runs; the plan's units by purpose."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(SVC))
    rows: dict[str, dict[str, Any]] = {o.instance_id: row(o, idle) for o in held}
    glance = Glance(1, False, 1, held, rows)
    mem = memory or Memory.fresh(desired.settings)
    mem.safety.cycles, mem.safety.recovering, mem.tenure = 2, False, 1
    if returning:
        mem.returning["svc"] = returning
    mem, hold = begin(glance, desired, mem, T0)
    assert hold is None
    d = decide(Observation(glance, rows, (), demand(SVC, 10), market(free=free), {}, {}, 0), desired, mem, T0)
    plan = d.of(WritePlans)[0].plans["svc"]
    units = {str(k): sum(a.units for a in plan.allocations if a.purpose is k)
             for k in (PlanPurpose.FLOOR, PlanPurpose.RECLAIMABLE)}
    return d, units


def test_the_units_live_fallback_holds_are_left_to_it_and_not_bought_again_on_reclaimable_capacity() -> None:
    _, alone = run(())
    d, covered = run((fallback("f1"), fallback("f2")))
    assert alone == {"floor": 3, "reclaimable": 7}
    assert covered == {"floor": 3, "reclaimable": 5}           # 10 wanted: 3 floor, 2 on fallback, 5 reclaimable
    assert not d.of(StartFallback)                             # nothing short: no more fallback
    assert not [t for t in d.of(Terminate) if t.reason == "return"]


def test_a_notified_or_ended_fallback_instance_covers_nothing() -> None:
    _, units = run((fallback("f1", status="notified"),))
    assert units["reclaimable"] == 7


def test_an_instance_being_returned_stops_covering_so_its_units_are_placed_while_it_is_offered_for_termination(
) -> None:
    d, units = run((fallback("f1"), fallback("f2")), returning=frozenset({"f2"}))
    assert units["reclaimable"] == 6                             # f2's unit placed before f2 goes
    assert [t.instance.instance_id for t in d.of(Terminate) if t.reason == "return"] == ["f2"]
    assert d.memory.returning == {"svc": frozenset({"f2"})}     # offered again next pass until it is gone


def test_a_return_whose_instance_is_gone_is_forgotten() -> None:
    d, units = run((fallback("f1"),), returning=frozenset({"f9"}))
    assert units["reclaimable"] == 6 and "svc" not in d.memory.returning
    assert not [t for t in d.of(Terminate) if t.reason == "return"]


def test_a_return_is_called_off_when_the_plan_is_short_again_and_the_instance_covers_once_more() -> None:
    held = (fallback("f1"), fallback("f2"))
    d, units = run(held, returning=frozenset({"f2"}), free=0)   # no reclaimable room: the plan is short
    assert units["reclaimable"] == 0
    assert not [t for t in d.of(Terminate) if t.reason == "return"] and "svc" not in d.memory.returning
    assert _short(d) == 6                                        # 10 wanted: 3 floor, f1 covers 1
    again, _ = run(held, free=0, memory=d.memory)                # the next pass: f1 and f2 cover 2
    assert _short(again) == 5 and not [t for t in again.of(Terminate) if t.reason == "return"]


def _short(d: Decision) -> int:
    return d.of(WritePlans)[0].plans["svc"].shortfall_units


def test_covered_claims_count_each_live_fallback_instance_s_units_and_leave_other_claims_as_they_are() -> None:
    other = contract("etl", "T3")
    claims = (Claim(SVC, 10), Claim(other, 4))
    pools = {p.pool_id: p for p in POOLS}
    big = pools["g1"].model_copy(update={"pool_id": "g4", "vcpu": 8, "memory_gib": 32})
    pools["g4"] = big
    out = covered_claims(claims, (fallback("f1"), fallback("f2", pool="g4"), fallback("f3", status="notified")),
                         pools, {})
    assert [c.covered for c in out] == [3, 0]                   # 1 unit in g1, 2 in the 8-vCPU g4
    assert out[1] is claims[1]
    assert out[0].digest == f"{SVC.ref}:10-3" and claims[0].digest == f"{SVC.ref}:10"
    assert covered_claims(claims, (), pools, {}) is claims
    assert covered_claims(claims, (fallback("f1"),), pools, {"svc": frozenset({"f1"})}) is claims


def test_fallback_is_launched_for_the_plan_s_shortfall_alone_which_is_already_net_of_what_fallback_covers() -> None:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(SVC))
    memory = Memory.fresh(desired.settings)
    memory.short_since["svc"] = T0 - timedelta(minutes=6)
    d, _ = run((fallback("f1"), fallback("f2")), free=0, memory=memory)
    assert _short(d) == 5                                        # 10 wanted: 3 floor, 2 covered, none reclaimable
    assert sum(a.launch.count for a in d.of(StartFallback)) == 5  # the 5 short, not 5 less the 2 covered again
