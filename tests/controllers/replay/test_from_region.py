"""The replay's trace as the simulated region writes it: every key read back from the region's events means
what the region meant by it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.subjects import RECLAIM_KINDS
from controllers.replay.from_region import trace_from_region
from controllers.replay.trace import Trace
from controllers.simregion.config import RegionConfig
from controllers.simregion.engine import RegionEngine

START = datetime(2026, 10, 1, tzinfo=UTC)


def _trace(no_notice_share: float) -> Trace:
    config = RegionConfig(seed=2, pools=12, reclaim_rate_pct_h=20.0, no_notice_share=no_notice_share,
                          hall_reclaims_per_30d=0.0)
    return trace_from_region(config, START, days=0.25, warmup_days=0.05)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_a_wave_is_without_notice_only_when_the_region_gave_none(share: float) -> None:
    trace = _trace(share)
    assert trace.reclaims, "the region reclaimed nothing: the test proves nothing"
    assert {r.no_notice_share for r in trace.reclaims} == {share}


def test_every_wave_is_a_reclaim_instant_of_the_region_and_a_deletion_is_not_another() -> None:
    # the same region run again, watched directly: one wave per (instant, pool) of a notice or no-notice loss
    config = RegionConfig(seed=2, pools=12, reclaim_rate_pct_h=20.0, no_notice_share=0.0, hall_reclaims_per_30d=0.0)
    begin = START - timedelta(days=0.05)
    engine = RegionEngine(config.model_copy(update={"room_first": True}), begin)
    instants: set[tuple[datetime, str]] = set()
    engine.on_event.append(lambda ev: instants.add((engine.at(ev.time), ev.pool))
                           if ev.kind in RECLAIM_KINDS and not ev.drill else None)
    engine.run_until(0.3 * 86400)
    trace = _trace(0.0)
    assert {(r.time, r.pool_id) for r in trace.reclaims} == instants
