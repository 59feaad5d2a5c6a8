"""The Dagster freshness test (issue 17): on a real Dagster instance (a temporary ``DAGSTER_HOME``), with the
ingest running as its own process (``sco ingest``), the rankings' freshness check passes; stop the ingest, let
virtual time pass (Dagster's clock frozen 20 minutes later) while the schedule keeps re-ranking, and the check
fails with a message naming the lag; start the ingest again and the events that waited in JetStream make the
ranking fresh again. No wall-clock wait: every wait is on a condition, with a generous limit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from testkit.paths import REPO
from tests.support.wait import wait_for

from .helpers import Stack

pytestmark = pytest.mark.services

REGION = "rfresh"  # a region of its own: the session's other tests share the stores
POOLS = [f"{REGION}-h1-wx-large-rc{i}" for i in range(3)]


def _catalogue(stack: Stack, now: datetime) -> None:
    from contracts.pools import Pool, PurchaseModel
    from orchestration.catalogue import write_catalogue

    write_catalogue(stack.ch(), [Pool(pool_id=p, region=REGION, hall="h1", aggregate="h1-agg-wx", sku_family="wx",
                                      size="large", vcpu=16, memory_gib=64, purchase_model=PurchaseModel.RECLAIMABLE,
                                      rate_eur_h=Decimal("0.14"), guaranteed_rate_eur_h=Decimal("0.40"))
                                 for p in POOLS], now)


def _publish(nats_url: str, at: datetime, tag: str) -> str:
    """One reclaim notice per pool at ``at`` on the event stream; returns the instance tag."""
    from contracts.events import Event
    from stores import nats as sco_nats

    async def go() -> None:
        nc = await sco_nats.connect(nats_url)
        try:
            js = nc.jetstream()
            await sco_nats.ensure_events_stream(js)
            for i, pool in enumerate(POOLS):
                await sco_nats.publish_event(js, Event(kind="notice", time=at, region=REGION, pool=pool,  # type: ignore[arg-type]
                                                       instance=f"{tag}-{i}", cause="reclaimed", source="freshness"))
        finally:
            await nc.close()

    asyncio.run(go())
    return tag


def _landed(stack: Stack, tag: str) -> bool:
    rows = stack.ch().rows("SELECT count() FROM events WHERE region = {r:String} AND startsWith(instance, {t:String})",
                           {"r": REGION, "t": f"{tag}-"})
    return int(rows[0][0]) == len(POOLS)


class Ingest:
    """``sco ingest`` as its own long-running process, as the demo and a deployment run it."""

    def __init__(self, nats_url: str, clickhouse_url: str, log: Path) -> None:
        self.argv = [sys.executable, "-m", "sco", "ingest", "--nats", nats_url, "--clickhouse", clickhouse_url]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture
def ingest(stack: Stack, tmp_path: Path) -> Iterator[tuple[Ingest, str]]:
    from testkit.nats import NatsProcess

    nats = NatsProcess().start()
    service = Ingest(nats.url, stack.clickhouse_url, tmp_path / "ingest.log")
    try:
        yield service, nats.url
    finally:
        service.stop()
        nats.close()


def _rank_and_check(stack: Stack, instance: Any) -> Any:
    """What the rankings schedule runs: the catalogue and the ranking, with the ranking's freshness check (its
    great-expectations checks run too on the schedule; here they would only cost a minute)."""
    from dagster import materialize

    from orchestration.defs.catalogue.assets import pool_catalogue
    from orchestration.defs.health.freshness import FRESHNESS_CHECKS
    from orchestration.defs.rankings.assets import pool_rankings
    from orchestration.resources import AnalyticsSettings

    resources = {**stack.resources(), "settings": AnalyticsSettings(region=REGION)}
    result = materialize([pool_catalogue, pool_rankings, *FRESHNESS_CHECKS], resources=resources,
                         instance=instance, selection=[pool_catalogue, pool_rankings], raise_on_error=False)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return next(e for e in result.get_asset_check_evaluations()
                if e.asset_check_key.asset_key.to_user_string() == "pool_rankings"
                and e.asset_check_key.name == "freshness_check")


def test_the_rankings_go_stale_when_the_ingest_stops_and_the_freshness_check_names_the_lag(
        stack: Stack, ingest: tuple[Ingest, str], tmp_path: Path) -> None:
    from dagster import DagsterInstance
    from dagster._core.test_utils import freeze_time  # Dagster's own clock mock

    service, nats_url = ingest
    now = datetime.now(UTC).replace(microsecond=0)
    _catalogue(stack, now - timedelta(days=1))
    service.start()
    first = _publish(nats_url, now - timedelta(minutes=2), "before")
    wait_for(lambda: _landed(stack, first), timeout=120, what="the ingest landing the first notices")

    home = tmp_path / "dagster_home"
    home.mkdir()
    with DagsterInstance.local_temp(str(home)) as instance:
        with freeze_time(now):
            fresh = _rank_and_check(stack, instance)
        assert fresh.passed, fresh.description
        assert "last update was 2 minutes ago" in fresh.description

        service.stop()  # the ingest stops; the region goes on: its notices wait in JetStream
        later = now + timedelta(minutes=20)
        waiting = _publish(nats_url, later - timedelta(minutes=1), "while-stopped")
        with freeze_time(later):  # 20 minutes of virtual time; the schedule still ranks every 5 minutes
            stale = _rank_and_check(stack, instance)
        assert not stale.passed
        assert "overdue" in stale.description and "last update was 22 minutes ago" in stale.description, \
            stale.description
        assert not _landed(stack, waiting)

        service.start()  # back: what waited lands, the next ranking is fresh again
        wait_for(lambda: _landed(stack, waiting), timeout=120, what="the restarted ingest landing what waited")
        with freeze_time(later):
            again = _rank_and_check(stack, instance)
        assert again.passed, again.description

        # the instance keeps the history SRE sees: three rankings, the freshness check's last result
        records = instance.fetch_materializations(_key("pool_rankings"), limit=10).records
        assert len(records) == 3


def _key(name: str) -> Any:
    from dagster import AssetKey

    return AssetKey(name)
