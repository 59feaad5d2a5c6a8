"""The simulated region's statistics over a simulated week match its configuration (fixed seed)."""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

import pytest

from .helpers import START, make_region

WEEK = timedelta(days=7)


@pytest.mark.slow  # a few seconds of CPU: make test runs it, make test-fast does not
@pytest.mark.parametrize(
    ("rate", "no_notice", "advisory", "median_s"),
    [(4.0, 0.02, 0.65, 360.0), (2.0, 0.10, 0.30, 600.0)],
    ids=["design-defaults", "other-settings"],
)
def test_a_simulated_week_reclaims_at_the_configured_rate_with_the_configured_notice_and_advisory_shares(
        rate: float, no_notice: float, advisory: float, median_s: float) -> None:
    region, clock = make_region(reclaim_rate_pct_h=rate, no_notice_share=no_notice, advisory_share=advisory,
                                advisory_median_s=median_s)
    t0 = time.process_time()  # CPU time: what the simulator costs, whatever else the machine runs
    clock.advance(WEEK)
    region.sync()
    elapsed = time.process_time() - t0
    s = region.engine.stats
    assert s.reclaimed > 5000
    assert s.reclaim_rate_pct_h == pytest.approx(rate, rel=0.10)
    assert s.no_notice / s.reclaimed == pytest.approx(no_notice, abs=0.006)
    assert s.advised / s.reclaimed == pytest.approx(advisory, abs=0.04)
    assert statistics.median(s.advisory_leads) == pytest.approx(median_s, rel=0.15)
    assert elapsed < 20, f"a simulated week took {elapsed:.1f} s of CPU"


def test_the_same_seed_gives_the_same_history_and_another_seed_a_different_one() -> None:
    def history(seed: int) -> list[tuple[str, float, str, str]]:
        region, clock = make_region(seed=seed)
        out: list[tuple[str, float, str, str]] = []
        region.engine.on_event.append(lambda ev: out.append((str(ev.kind), ev.time, ev.instance, ev.cause)))
        clock.advance(timedelta(hours=12))
        region.sync()
        return out

    first, again, other = history(3), history(3), history(4)
    assert len(first) > 100
    assert first == again
    assert first != other


def test_the_rate_card_follows_utilisation_and_comes_every_five_minutes() -> None:
    region, clock = make_region()
    cards = []
    for _ in range(24 * 12):
        clock.advance(timedelta(minutes=5))
        cards.append(region.rate_card())
    assert [c.time for c in cards[:3]] == [START + timedelta(minutes=5 * (i + 1)) for i in range(3)]
    pool = cards[0].entries[0].pool_id
    series = [(c.rate(pool).utilisation, c.rate(pool).rate_eur_h) for c in cards]
    busiest, idlest = max(series), min(series)
    assert busiest[0] > idlest[0] + 0.1
    assert busiest[1] > idlest[1]
    assert all(e.rate_eur_h < e.guaranteed_rate_eur_h for c in cards for e in c.entries)


def test_reclaimer_strategies_choose_different_victims_for_the_same_demand() -> None:
    import random

    from controllers.simregion.engine import Inst
    from controllers.simregion.reclaimer import select_victims

    cands = [Inst(id=f"i{n}", pool=0, vcpu=v, launched=float(t), owned=False)
             for n, (v, t) in enumerate([(4, 50), (8, 10), (16, 30), (32, 5), (4, 1), (64, 70)])]
    picks = {s: [c.id for c in select_victims(s, cands, 20, random.Random(1))]
             for s in ("oldest", "newest", "best-fit", "random")}
    assert picks["oldest"] == ["i4", "i3"]  # launched at 1 and 5: 36 vCPU
    assert picks["newest"] == ["i5"]  # launched at 70, 64 vCPU
    assert picks["best-fit"] == ["i2", "i4"]  # 16 + 4 = exactly 20 (the older 4-vCPU one)
    assert sum(next(c.vcpu for c in cands if c.id == i) for i in picks["random"]) >= 20
    with pytest.raises(ValueError, match="unknown reclaimer strategy"):
        select_victims("cheapest", cands, 20, random.Random(1))
