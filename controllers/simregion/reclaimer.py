"""Victim selection when guaranteed demand needs room in a host aggregate, after CERN's preemptible-instance
reaper: several strategies, each a pure function of the candidates, the vCPU needed and a seeded RNG."""

from __future__ import annotations

import heapq
import operator
import random
from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = ["STRATEGIES", "Candidate", "select_victims"]


class Candidate(Protocol):
    @property
    def vcpu(self) -> int:
        """The instance's vCPU."""

    @property
    def launched(self) -> float:
        """When it was launched (simulation seconds)."""

    @property
    def id(self) -> str:
        """The instance id."""


def _take(ordered: Sequence[Candidate], need: int) -> list[Candidate]:
    out: list[Candidate] = []
    freed = 0
    for c in ordered:
        if freed >= need:
            break
        out.append(c)
        freed += c.vcpu
    return out


def _enough(cands: Sequence[Candidate], need: int) -> int:
    """How many candidates always cover ``need`` vCPU, whatever their order."""
    smallest = min(map(_vcpu, cands), default=1)
    return need // max(smallest, 1) + 1


_launched = operator.attrgetter("launched")
_vcpu = operator.attrgetter("vcpu")


def _oldest(cands: Sequence[Candidate], need: int, rng: random.Random) -> list[Candidate]:
    """Longest-running first (ties keep the candidates' order, so the choice stays deterministic)."""
    return _take(heapq.nsmallest(_enough(cands, need), cands, key=_launched), need)


def _newest(cands: Sequence[Candidate], need: int, rng: random.Random) -> list[Candidate]:
    """Least work lost: the instances that started last go first."""
    return _take(heapq.nlargest(_enough(cands, need), cands, key=_launched), need)


def _random(cands: Sequence[Candidate], need: int, rng: random.Random) -> list[Candidate]:
    shuffled = sorted(cands, key=lambda c: c.id)
    rng.shuffle(shuffled)
    return _take(shuffled, need)


def _best_fit(cands: Sequence[Candidate], need: int, rng: random.Random) -> list[Candidate]:
    """Fewest vCPU wasted: largest instances that still fit the remaining need, then the smallest that covers it."""
    remaining = need
    pool = sorted(cands, key=lambda c: (-c.vcpu, c.launched, c.id))
    out: list[Candidate] = []
    for c in pool:
        if remaining <= 0:
            break
        if c.vcpu <= remaining:
            out.append(c)
            remaining -= c.vcpu
    if remaining > 0:
        rest = [c for c in pool if c not in out]
        cover = [c for c in rest if c.vcpu >= remaining]
        if cover:
            out.append(min(cover, key=lambda c: (c.vcpu, c.launched, c.id)))
        else:
            out.extend(_take(rest, remaining))
    return out


STRATEGIES: dict[str, Callable[[Sequence[Candidate], int, random.Random], list[Candidate]]] = {
    "oldest": _oldest, "newest": _newest, "best-fit": _best_fit, "random": _random,
}


def select_victims(strategy: str, cands: Sequence[Candidate], need_vcpu: int, rng: random.Random) -> list[Candidate]:
    """The instances ``strategy`` reclaims to free ``need_vcpu``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown reclaimer strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[strategy](cands, max(need_vcpu, 1), rng)
