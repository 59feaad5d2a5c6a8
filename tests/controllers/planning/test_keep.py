"""The pool facts a first plan reads from its table's columns are the facts of the pool states (issue 18)."""

from __future__ import annotations

from decimal import Decimal

from controllers.planning import PoolState
from controllers.planning.keep import Facts
from controllers.planning.model import Caps
from controllers.planning.tables import Static

from ..builders import pool


def states() -> list[PoolState]:
    """Pools out of id order, one excluded, one with a correlation group in force, and an id given twice."""
    return [PoolState(pool("p3", agg="a3"), 5), PoolState(pool("p1", agg="a1"), 5, excluded=True),
            PoolState(pool("p2", agg="a2"), 5, group="g-merged"), PoolState(pool("p1", agg="a1-again"), 7),
            PoolState(pool("g1", model="guaranteed"), 5, excluded=True)]


def test_the_facts_read_from_the_columns_are_the_facts_of_the_pool_states() -> None:
    given, caps = states(), Caps()
    facts = Facts.of_static(Static(given, Decimal("0.85")), caps)
    assert facts == Facts.of(given, caps)
    assert facts.groups == {"p3": "a3", "p1": "a1-again", "p2": "g-merged", "g1": "agg-g1"}  # the last p1 wins
    assert facts.excluded == {"p1", "g1"}


def test_the_comparison_would_see_a_different_group_or_exclusion() -> None:
    given, caps = states(), Caps()
    other = [*given[:2], PoolState(pool("p2", agg="a2"), 5), *given[3:]]  # p2 without its merged group
    assert Facts.of_static(Static(other, Decimal("0.85")), caps) != Facts.of(given, caps)
    unexcluded = [given[0], PoolState(pool("p1", agg="a1"), 5), *given[2:4]]
    assert Facts.of_static(Static(unexcluded, Decimal("0.85")), caps).excluded == set()
