"""The caps bound fills a workload's claim within ADR-06's caps; its oracle is only a bound if the fill in
ascending cost is the cheapest mix the caps allow, and the mix never breaks a cap."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import pytest

from bench.caps_bound import Slot, capped_fill, card_shares, reclaimed


def _region(pools_per_group: int = 3) -> list[Slot]:
    return [Slot(f"{hall}-{agg}-{n}", f"{hall}-{agg}", hall)
            for hall in ("h1", "h2", "h3") for agg in ("a", "b") for n in range(pools_per_group)]


def test_a_fill_places_the_whole_claim_without_breaking_a_pool_group_or_hall_cap() -> None:
    mix = capped_fill(_region())
    groups: dict[str, float] = defaultdict(float)
    halls: dict[str, float] = defaultdict(float)
    for s in _region():
        groups[s.group] += mix.get(s.pool, 0.0)
        halls[s.hall] += mix.get(s.pool, 0.0)
    assert sum(mix.values()) == pytest.approx(1.0)
    assert max(mix.values()) <= 0.15 + 1e-9
    assert max(groups.values()) <= 0.30 + 1e-9
    assert max(halls.values()) <= 0.40 + 1e-9
    assert len(mix) >= 7 and sum(1 for g in groups.values() if g > 0) >= 4


@pytest.mark.parametrize(("slots", "placed"), [
    ([Slot(f"p{n}", "g", "h1") for n in range(9)], 0.30),                             # one group: 30 % at most
    ([Slot(f"p{n}", f"g{n % 2}", "h1") for n in range(9)], 0.60),                     # two groups, one hall
    ([Slot("p0", "g0", "h1"), Slot("p1", "g1", "h2"), Slot("p2", "g2", "h3")], 0.45),  # three pools: 15 % each
])
def test_a_claim_the_caps_cannot_hold_is_placed_only_as_far_as_they_allow(slots: list[Slot], placed: float) -> None:
    assert sum(capped_fill(slots).values()) == pytest.approx(placed)


def test_the_fill_in_ascending_cost_is_the_cheapest_mix_of_any_fill_order() -> None:
    rng = random.Random(7)
    slots = [Slot("a1", "ga", "h1"), Slot("a2", "ga", "h1"), Slot("b1", "gb", "h2"), Slot("b2", "gb", "h2"),
             Slot("c1", "gc", "h3"), Slot("c2", "gc", "h3")]
    for _ in range(20):
        cost = {s.pool: rng.random() for s in slots}
        best = reclaimed(capped_fill(sorted(slots, key=lambda s: cost[s.pool]), 0.3, 0.5, 0.5), cost)
        every = [reclaimed(capped_fill(order, 0.3, 0.5, 0.5), cost) for order in itertools.permutations(slots)]
        assert best == pytest.approx(min(every))


def test_single_cheapest_takes_the_cheapest_pool_and_the_oracle_no_worse_a_mix_than_any_capped_fill() -> None:
    slots = _region()
    rng = random.Random(3)
    hit = {s.pool: rng.random() * 0.1 for s in slots}
    price = {s.pool: 0.3 + rng.random() * 0.2 for s in slots}
    room = {s.pool: rng.random() for s in slots}
    shares = card_shares(slots, hit, price, room, room)
    cheapest = min(slots, key=lambda s: price[s.pool]).pool
    assert shares["single-cheapest"] == pytest.approx(hit[cheapest])
    assert shares["capped oracle"] <= min(v for k, v in shares.items() if k.startswith("capped "))
    assert shares["capped oracle"] < shares["capped price-first"]
