"""The region's shared token budget (ADR-12, issue 18): one PostgreSQL row that every partition controller's
process draws from. Real PostgreSQL; the budget's clock is injected (the fleet simulation's virtual time)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from contracts.provider_errors import Throttled
from controllers.controller.budget import BudgetedProvider, RegionBudget


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def conns(pg_migrated_url: str) -> Iterator[list[Any]]:
    cs = [psycopg.connect(pg_migrated_url, autocommit=True) for _ in range(4)]
    yield cs
    for c in cs:
        c.close()


def test_partitions_on_separate_connections_share_one_burst_and_one_refill_rate(conns: list[Any]) -> None:
    clock = Clock()
    a, b = (RegionBudget(c, "r1", rate=10, monotonic=clock).ensure() for c in conns[:2])
    taken = [x.try_acquire() == 0.0 for x in (a, b) * 8]
    assert sum(taken) == 10                        # one burst of 10 between both, not 10 each
    assert 0 < b.try_acquire() <= 0.1 + 1e-9       # the wait until the next token
    clock.t += 0.5                                 # half a second: 5 more tokens for the region
    assert sum(x.try_acquire() == 0.0 for x in (b, a) * 5) == 5
    assert a.totals() == (15, a.refused + b.refused) and a.spent + b.spent == 15


def test_concurrent_processes_never_take_more_than_the_region_has(conns: list[Any]) -> None:
    clock = Clock()
    budgets = [RegionBudget(c, "r1", rate=10, burst=20, monotonic=clock).ensure() for c in conns]
    got: list[int] = []

    def drain(bud: RegionBudget) -> None:
        got.append(sum(bud.try_acquire() == 0.0 for _ in range(30)))

    threads = [threading.Thread(target=drain, args=(bud,)) for bud in budgets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(got) == 20 and budgets[0].totals() == (20, 100)


def test_a_budgeted_provider_raises_throttled_when_the_regions_row_is_empty(conns: list[Any]) -> None:
    clock = Clock()
    budget = RegionBudget(conns[0], "r2", rate=1, monotonic=clock).ensure()
    calls: list[str] = []

    class Inner:
        region = "r2"

        def terminate(self, instance_id: str) -> None:
            calls.append(instance_id)

    provider = BudgetedProvider(Inner(), budget)  # type: ignore[arg-type]
    provider.terminate("i-1")
    with pytest.raises(Throttled) as err:
        provider.terminate("i-2")
    assert calls == ["i-1"] and err.value.key == "region r2" and 0.99 <= err.value.retry_after_s <= 1.0


def test_a_region_without_its_row_is_refused_naming_the_fix(conns: list[Any]) -> None:
    with pytest.raises(LookupError, match="ensure"):
        RegionBudget(conns[0], "nowhere", monotonic=Clock()).try_acquire()
