"""The order of a pass's launches (``reconcile.interleave``, issue 18): launches that cover a workload's uncovered
instances first, then those that only move instances between pools; fewest held first within each. Table tests
through the diff as ``decide`` runs it: desired slots and a listing in, the launches' order out."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pytest

from controllers.controller.model import Observed, Purpose, SlotKey
from controllers.controller.reconcile import diff, interleave, unclaimed_workloads, uncovered_instances
from controllers.planning import units_per_instance
from testkit.builders import PARTITION, T0

R, F = Purpose.RECLAIMABLE, Purpose.FLOOR
Slots = dict[tuple[str, str, Purpose], int]
Listing = list[tuple[str, str, Purpose, str, int]]     # (workload, pool, purpose, status, how many)


def _listing(rows: Listing) -> list[Observed]:
    return [Observed(f"{w}-{pid}-{status}-{n}", f"node-{w}-{n}", w, pid, PARTITION, 1, purpose, status, "h1",
                     T0 - timedelta(hours=1)) for w, pid, purpose, status, k in rows for n in range(k)]


def ordered(desired: Slots, rows: Listing, tiers: dict[str, str] | None = None) -> list[tuple[str, str, int]]:
    """The pass's launches as ``decide`` orders them: (workload, pool, count)."""
    slots = {SlotKey(w, pid, purpose): n for (w, pid, purpose), n in desired.items()}
    observed = _listing(rows)
    held: dict[str, int] = defaultdict(int)
    for o in observed:
        held[o.workload] += o.live
    d = diff(slots, observed, partition=PARTITION, generation=2, tiers=tiers or {w: "T3" for w, *_ in desired})
    out = interleave(d.launches, held, uncovered_instances(slots, observed, partition=PARTITION))
    return [(a.workload, a.key.pool, a.count) for a in out]


SMALL_MOVES = ({("small", "p02", R): 2}, [("small", "p00", R, "active", 2)])   # holds 2 in p00, planned into p02


def _with_small(desired: Slots, rows: Listing) -> tuple[Slots, Listing]:
    return {**desired, **SMALL_MOVES[0]}, [*rows, *SMALL_MOVES[1]]


@pytest.mark.parametrize(("desired", "rows", "expected"), [
    pytest.param(*_with_small({("big", "p00", R): 20, ("big", "p01", R): 5}, [("big", "p00", R, "active", 20)]),
                 [("big", "p01", 5), ("small", "p02", 2)],
                 id="a new claim of a workload holding many goes before a move of one holding few"),
    pytest.param(*_with_small({("big", "p00", R): 10}, [("big", "p00", R, "active", 9),
                                                        ("big", "p00", R, "notified", 1)]),
                 [("big", "p00", 1), ("small", "p02", 2)],
                 id="the replacement of a noticed instance is uncovered: before a move"),
    pytest.param(*_with_small({("big", "c0", F): 2, ("big", "p00", R): 10}, [("big", "p00", R, "active", 12)]),
                 [("big", "c0", 2), ("small", "p02", 2)],
                 id="a floor short is uncovered even when reclaimable surplus is held elsewhere"),
    pytest.param(*_with_small({("big", "p00", R): 4, ("big", "p01", R): 8}, [("big", "p00", R, "active", 10)]),
                 [("big", "p01", 8), ("small", "p02", 2)],
                 id="a launch straddling the deficit is a deficit launch, whole (one call, one launch key)"),
    pytest.param({("w", "p01", R): 3, ("w", "p02", R): 9, ("x", "p00", R): 30, ("x", "p03", R): 1},
                 [("w", "p00", R, "active", 10), ("x", "p00", R, "active", 30)],
                 [("w", "p01", 3), ("x", "p03", 1), ("w", "p02", 9)],
                 id="a workload's launches beyond its deficit are moves: after every other workload's deficit"),
    pytest.param({("a", "p00", R): 5, ("a", "p01", R): 3, ("b", "p00", R): 1, ("b", "p01", R): 3},
                 [("a", "p00", R, "active", 5), ("b", "p00", R, "active", 1)],
                 [("b", "p01", 3), ("a", "p01", 3)],
                 id="within the deficit class the workload holding fewest goes first, as before"),
    pytest.param({("m", "p01", R): 4, ("n", "p01", R): 6}, [("m", "p00", R, "active", 4), ("n", "p00", R, "active", 6)],
                 [("m", "p01", 4), ("n", "p01", 6)],
                 id="within the move class the workload holding fewest goes first, as before"),
])
def test_launches_covering_uncovered_instances_go_before_launches_that_move_instances(
        desired: Slots, rows: Listing, expected: list[tuple[str, str, int]]) -> None:
    assert ordered(desired, rows) == expected


def test_within_a_class_tier_1_goes_first_in_a_round() -> None:
    desired: Slots = {("t3", "p01", R): 2, ("t1", "p01", R): 2}
    assert ordered(desired, [], {"t3": "T3", "t1": "T1"}) == [("t1", "p01", 2), ("t3", "p01", 2)]


@pytest.mark.parametrize(("desired", "rows", "uncovered"), [
    pytest.param({("w", "p00", R): 3, ("w", "p01", R): 2}, [("w", "p00", R, "active", 4)], {("w", False): 1},
                 id="desired less live, across the workload's pools"),
    pytest.param({("w", "p00", R): 3}, [("w", "p00", R, "notified", 2), ("w", "p00", R, "building", 1)],
                 {("w", False): 2}, id="notified instances are leaving: not live; building ones are"),
    pytest.param({("w", "c0", F): 2, ("w", "p00", R): 1}, [("w", "p00", R, "active", 3)], {("w", True): 2},
                 id="floor apart: reclaimable surplus does not cover a floor short"),
    pytest.param({("w", "p00", R): 1}, [("w", "p00", R, "active", 3)], {}, id="surplus is no negative deficit"),
])
def test_uncovered_instances(desired: Slots, rows: Listing, uncovered: dict[tuple[str, bool], int]) -> None:
    slots = {SlotKey(w, pid, purpose): n for (w, pid, purpose), n in desired.items()}
    assert uncovered_instances(slots, _listing(rows), partition=PARTITION) == uncovered


def test_without_the_uncovered_counts_the_order_is_the_rounds_alone() -> None:
    slots = {SlotKey("big", "p01", R): 5, SlotKey("small", "p02", R): 2}
    d = diff(slots, [], partition=PARTITION, generation=1)
    assert [a.workload for a in interleave(d.launches, {"big": 20, "small": 2})] == ["small", "big"]


def test_a_workload_whose_claim_is_uncovered_goes_before_plan_completions_of_workloads_holding_fewer() -> None:
    """Right after the build (the fleet simulation at 20,000): ``spread`` holds 2 instances that cover its claim
    but its plan wants 3 more pools; ``big`` holds 20 and a new claim wants 1 more instance."""
    slots = {SlotKey("big", "p00", R): 20, SlotKey("big", "p01", R): 1, SlotKey("spread", "p00", R): 2,
             SlotKey("spread", "p02", R): 3}
    observed = _listing([("big", "p00", R, "active", 20), ("spread", "p00", R, "active", 2)])
    d = diff(slots, observed, partition=PARTITION, generation=2, tiers={"big": "T3", "spread": "T3"})
    uncovered = uncovered_instances(slots, observed, partition=PARTITION)
    held = {"big": 20, "spread": 2}
    assert [a.workload for a in interleave(d.launches, held, uncovered)] == ["spread", "big"]   # fewest held
    assert [a.workload for a in interleave(d.launches, held, uncovered, {"big"})] == ["big", "spread"]


def test_unclaimed_workloads_are_those_whose_live_instances_hold_fewer_units_than_the_claim() -> None:
    from controllers.planning import Claim

    from ..builders import contract, pool

    pools = {"p00": pool("p00", vcpu=8), "p01": pool("p01", vcpu=4)}
    a, b, c = (contract("T3", name=f"wk-{n}", vcpu=2) for n in "abc")
    k8, k4 = (units_per_instance(pools[p], a) for p in ("p00", "p01"))
    assert (k8, k4) == (4, 2)
    observed = _listing([("wk-a", "p00", R, "active", 1), ("wk-b", "p01", R, "active", 1),
                         ("wk-b", "p01", R, "notified", 1), ("wk-c", "p00", R, "active", 1)])
    claims = [Claim(a, k8), Claim(b, k4 + 1), Claim(c, k8 + 1)]
    # a: covered exactly; b: its noticed instance does not count; c: one unit short
    assert unclaimed_workloads(claims, observed, pools, partition=PARTITION) == {"wk-b", "wk-c"}
