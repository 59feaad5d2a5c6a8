"""Exact integer sort keys for the rank orders: the same orders as the ``Decimal`` keys, cheaper.

The planner ranks a shape's pools by tuples of a score, a rate per unit (``rate / units per instance``, a
``Decimal`` division) and the pool id. Sorting a thousand pools that way costs a ``Decimal`` division and a tuple
per pool, for every shape of every plan. Here each pool's rate is an exact integer (the rate times a power of
ten), a shape's rates per unit are those integers times ``lcm(units per instance) / units per instance`` (so
exact, and in the same order as the quotients), the score is its rank among the scores in force and the pool id
its rank among the ids: one integer per pool, compared in C.

Same order as the ``Decimal`` keys: a ``Decimal`` quotient is the exact quotient correctly rounded to the
context's precision (28 digits), so it keeps the order of the exact quotients and their ties, unless two
different quotients round to the same ``Decimal``. Two different quotients of rates below 10^12 (scaled) and
units per instance below 10^4 differ by more than one part in 10^20, far above 28 digits. Outside those bounds
(or a context of less precision, or a score that is not a number) ``keys`` is ``None`` and the tables sort
by the ``Decimal`` keys as before.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from decimal import Decimal

__all__ = ["Keys"]

Entry = tuple[int, int]  # (pool index, units one instance holds)

_RATE_BOUND = 10**12
_UNITS_BOUND = 10**4
_FLOAT_EXACT = 2**53  # every integer up to it is a float, exactly, and so is every sum and product up to it


class Keys:
    """Per-pool integer columns (scaled rate, score rank, id rank) and the rank orders they give."""

    __slots__ = ("after_rate", "id_rank", "max_rate", "n", "rate", "score", "scores")

    def __init__(self, rate: list[int], score: list[int], scores: int, id_rank: list[int]) -> None:
        self.rate, self.score, self.scores, self.id_rank, self.n = rate, score, scores, id_rank, len(id_rank)
        self.after_rate = [s * self.n + r for s, r in zip(score, id_rank, strict=True)]  # (score, id) as one integer
        self.max_rate = max(rate, default=0)

    @classmethod
    def of(cls, rates: Sequence[Decimal], scores: Sequence[float], id_rank: list[int]) -> Keys | None:
        """The keys of these pools, or ``None`` when integer keys could order them differently."""
        if decimal.getcontext().prec < 28 or any(map(math.isnan, scores)):
            return None
        try:  # an infinite rate has no integer ratio (OverflowError), nor has a NaN (ValueError)
            ratios = [r.as_integer_ratio() for r in rates]
        except (OverflowError, ValueError):
            return None
        if any(p < 0 for p, _ in ratios):
            return None
        scale = math.lcm(*(q for _, q in ratios)) if ratios else 1
        scaled = [p * (scale // q) for p, q in ratios]
        if scaled and max(scaled) >= _RATE_BOUND:
            return None
        distinct = {v: j for j, v in enumerate(sorted(set(scores), reverse=True))}
        return cls(scaled, [distinct[s] for s in scores], len(distinct), id_rank)

    def depth(self, entries: list[Entry]) -> list[Entry] | None:
        """Best score, then rate per unit, then pool id.

        The entries by score and id (one integer each, ``after_rate``); then the runs of entries of one score
        re-sorted by rate per unit and id, where there are such runs (the distinct scores tell).
        """
        if not entries or max(k for _, k in entries) >= _UNITS_BOUND:
            return None
        after = self.after_rate
        keys = [after[i] for i, _ in entries]
        ranked = [entries[j] for j in sorted(range(len(entries)), key=keys.__getitem__)]
        score = self.score
        scores = [score[i] for i, _ in ranked]
        if len(set(scores)) == len(scores):
            return ranked
        rate, ids, n, start = self.rate, self.id_rank, len(ranked), 0
        while start < n:
            end = start + 1
            while end < n and scores[end] == scores[start]:
                end += 1
            if end - start > 1:
                tied = ranked[start:end]
                lcm = math.lcm(*(k for _, k in tied))
                ranked[start:end] = sorted(tied, key=lambda e: (rate[e[0]] * (lcm // e[1]), ids[e[0]]))
            start = end
        return ranked

    def price(self, entries: list[Entry]) -> list[Entry] | None:
        """Rate per unit, then best score, then pool id."""
        units = {k for _, k in entries}
        if not units or max(units) >= _UNITS_BOUND:
            return None
        lcm, width = math.lcm(*units), self.scores * self.n  # (score, id) below the rate per unit
        times: dict[int, int] | dict[int, float] = {k: lcm // k * width for k in units}
        rate, after_rate = self.rate, self.after_rate
        if self.max_rate * lcm * width + width <= _FLOAT_EXACT:  # every key an integer a float holds exactly
            times = {k: float(t) for k, t in times.items()}  # floats sort faster than integers of two digits
        keys = [rate[i] * times[k] + after_rate[i] for i, k in entries]
        return [entries[j] for j in sorted(range(len(entries)), key=keys.__getitem__)]

    def floor(self, entries: list[Entry], committed: Sequence[bool]) -> list[Entry] | None:
        """Committed before on-demand, then rate per unit, then pool id."""
        units = {k for _, k in entries}
        if not units or max(units) >= _UNITS_BOUND:
            return None
        lcm, n, rate, ids = math.lcm(*units), self.n, self.rate, self.id_rank
        times = {k: lcm // k * n for k in units}
        on_demand = (max(rate) * lcm + 1) * n  # above every (rate per unit, id)
        keys = [(0 if committed[i] else on_demand) + rate[i] * times[k] + ids[i] for i, k in entries]
        return [entries[j] for j in sorted(range(len(entries)), key=keys.__getitem__)]
