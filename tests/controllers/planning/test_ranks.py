"""The integer rank keys (``controllers/planning/ranks.py``) order pools exactly as the ``Decimal`` keys do."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from controllers.planning.ranks import Keys


def pools(rng: random.Random, n: int) -> tuple[list[Decimal], list[float], list[int], list[tuple[int, int]]]:
    """Rates with 2 to 6 decimals (many equal per unit), scores with ties, ids, entries of 1 to 64 units."""
    rates = [Decimal(rng.choice(["0.0400", "0.08", "0.1200", "0.012345", "0.3", "0.9", "0.09"]))
             * rng.choice([1, 2, 3, 4, 8]) for _ in range(n)]
    scores = [round(rng.random(), 1) for _ in range(n)]
    ids = [f"p{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    rank = [0] * n
    for r, i in enumerate(sorted(range(n), key=ids.__getitem__)):
        rank[i] = r
    entries = [(i, rng.choice([1, 2, 3, 4, 6, 8, 16, 64])) for i in rng.sample(range(n), n * 2 // 3)]
    return rates, scores, rank, entries


@pytest.mark.parametrize("seed", range(6))
def test_integer_keys_give_the_decimal_keys_orders_ties_included(seed: int) -> None:
    rng = random.Random(seed)
    rates, scores, rank, entries = pools(rng, 300)
    keys = Keys.of(rates, scores, rank)
    assert keys is not None
    committed = [rng.random() < 0.5 for _ in rates]
    assert keys.depth(entries) == sorted(entries, key=lambda e: (-scores[e[0]], rates[e[0]] / e[1], rank[e[0]]))
    assert keys.price(entries) == sorted(entries, key=lambda e: (rates[e[0]] / e[1], -scores[e[0]], rank[e[0]]))
    assert keys.floor(entries, committed) == sorted(
        entries, key=lambda e: (0 if committed[e[0]] else 1, rates[e[0]] / e[1], rank[e[0]]))


def test_the_orders_would_differ_if_the_rate_per_unit_were_ignored() -> None:
    rates, scores, rank = [Decimal("0.30"), Decimal("0.20")], [0.5, 0.5], [0, 1]
    keys = Keys.of(rates, scores, rank)
    assert keys is not None
    # pool 0: 0.30 / 3 = 0.10 a unit beats pool 1: 0.20 / 1, though its rate is higher and its id first anyway
    assert keys.price([(1, 1), (0, 3)]) == [(0, 3), (1, 1)]
    assert keys.depth([(0, 1), (1, 1)]) == [(1, 1), (0, 1)]  # same score: the cheaper unit first


@pytest.mark.parametrize(("rates", "scores"), [
    ([Decimal("123456789.123456")], [0.5]),   # too many digits for the bound: the Decimal keys decide
    ([Decimal("0.1")], [float("nan")]),       # a score that is not a number
    ([Decimal("Infinity")], [0.5]),
    ([Decimal("NaN")], [0.5]),                # a rate that is not a number
    ([Decimal("0.1"), Decimal("-0.2")], [0.5, 0.5]),  # a negative rate
])
def test_no_integer_keys_where_they_could_order_differently(rates: list[Decimal], scores: list[float]) -> None:
    assert Keys.of(rates, scores, list(range(len(rates)))) is None


@pytest.mark.parametrize("digits", [4, 11])
def test_price_keys_give_the_decimal_order_whether_a_float_holds_them_or_not(digits: int) -> None:
    """Four decimals: the keys fit a float's 53 bits and sort as floats; eleven: they do not and stay integers."""
    rng = random.Random(digits)
    n = 300
    rates = [Decimal(f"{rng.uniform(0.05, 3):.{digits}f}") for _ in range(n)]
    scores = [round(rng.random(), 2) for _ in range(n)]
    rank = list(range(n))
    entries = [(i, rng.choice([1, 2, 3, 4, 6, 8, 16, 64])) for i in range(n)]
    keys = Keys.of(rates, scores, rank)
    assert keys is not None
    width = keys.scores * keys.n
    fits_a_float = keys.max_rate * 192 * width + width <= 2**53  # 192 = lcm of the units per instance
    assert fits_a_float is (digits == 4)
    assert keys.price(entries) == sorted(entries, key=lambda e: (rates[e[0]] / e[1], -scores[e[0]], rank[e[0]]))
