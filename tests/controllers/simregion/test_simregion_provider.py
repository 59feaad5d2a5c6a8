"""The simulated region honours the provider contract: acquisition, ownership, hall-wide reclaims, drills and
typed errors for bad input — in process and over its HTTP API."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from contracts.pools import PurchaseModel
from contracts.provider import InstanceStatus, LaunchRequest, OwnerTags, Provider
from contracts.provider_errors import CapacityUnavailable, InvalidRequest, NotFound, QuotaExceeded, Throttled
from controllers.simregion.region import SimulatedRegion
from controllers.simregion.topology import BUSINESS_UNITS

from .helpers import make_region


def _owner(pool: str, workload: str = "etl", generation: int = 1) -> OwnerTags:
    return OwnerTags(workload=workload, pool=pool, partition="r1/batch", generation=generation)


def _reclaimable(region: SimulatedRegion, hall: str = "h1") -> str:
    return next(p.pool_id for p in region.catalogue().pools
                if p.hall == hall and p.purchase_model is PurchaseModel.RECLAIMABLE and p.size == "small")


def test_the_region_has_about_140_reclaimable_pools_plus_committed_and_guaranteed_ones() -> None:
    region, _ = make_region()
    pools = region.catalogue().pools
    by_model = {m: [p for p in pools if p.purchase_model is m] for m in PurchaseModel}
    assert 135 <= len(by_model[PurchaseModel.RECLAIMABLE]) <= 150
    assert {p.hall for p in pools} == {"h1", "h2", "h3"}
    assert len({p.aggregate for p in pools}) == 6
    assert {p.business_unit for p in by_model[PurchaseModel.COMMITTED]} == set(BUSINESS_UNITS)
    assert by_model[PurchaseModel.GUARANTEED]
    assert {r.business_unit for r in region.reservations()} == set(BUSINESS_UNITS)
    assert all(r.business_unit == "commerce" for r in region.reservations("commerce"))
    assert len(make_region(pools=40)[0].catalogue().pools) == 40 + 3 * 5 * len(BUSINESS_UNITS) + 15
    typed: Provider = region
    assert isinstance(typed, Provider)


def test_ten_instances_launch_in_one_call_are_listed_by_tag_and_terminated() -> None:
    region, _clock = make_region()
    pool = _reclaimable(region)
    owner = _owner(pool)
    launched = region.launch(LaunchRequest(pool_id=pool, count=10, owner=owner, metadata={"k": "v"}))
    assert len(launched) == 10 and all(i.owner == owner for i in launched)
    assert {i.instance_id for i in region.list_instances({"workload": "etl"})} == {i.instance_id for i in launched}
    assert region.list_instances({"workload": "other"}) == ()
    assert region.quota_headroom().instances_used == 10
    region.terminate(launched[0].instance_id)
    assert len(region.list_instances({"workload": "etl"})) == 9
    with pytest.raises(NotFound) as err:
        region.terminate(launched[0].instance_id)
    assert (err.value.kind, err.value.name) == ("instance", launched[0].instance_id)


def test_a_drill_reclaim_gives_a_notice_and_deletes_after_120_s() -> None:
    region, clock = make_region(background=False)
    pool = _reclaimable(region)
    (inst,) = region.launch(LaunchRequest(pool_id=pool, count=1, owner=_owner(pool)))
    receipt = region.reclaim((inst.instance_id,))
    assert receipt.drill and receipt.terminate_at == clock.now() + timedelta(seconds=120)
    notice = region.notice(inst.instance_id)
    assert notice is not None and notice.drill and notice.cause == "drill"
    assert region.instance(inst.instance_id).status is InstanceStatus.NOTIFIED
    clock.advance(timedelta(seconds=119))
    assert region.list_instances()
    clock.advance(timedelta(seconds=1))
    assert region.list_instances() == ()


def test_a_hall_wide_reclaim_takes_every_reclaimable_instance_in_that_hall() -> None:
    region, clock = make_region()
    e = region.engine
    pool = _reclaimable(region, "h2")
    committed = next(p.pool_id for p in region.catalogue().pools
                     if p.hall == "h2" and p.purchase_model is PurchaseModel.COMMITTED)
    mine = region.launch(LaunchRequest(pool_id=pool, count=3, owner=_owner(pool)))
    (floor,) = region.launch(LaunchRequest(pool_id=committed, count=1, owner=_owner(committed, "floor")))

    def reclaimable_in(hall: str) -> int:
        return sum(len(e.live[i]) for i, s in enumerate(e.specs)
                   if s.pool.hall == hall and s.pool.purchase_model is PurchaseModel.RECLAIMABLE)

    in_h2, in_h1 = reclaimable_in("h2"), reclaimable_in("h1")
    assert in_h2 > 1000
    taken = region.hall_reclaim("h2")
    assert len(taken) == in_h2
    assert {i.instance_id for i in mine} <= set(taken)
    noticed = sum(1 for iid in taken if iid in e.by_id)
    assert noticed == pytest.approx(in_h2 * 0.98, abs=in_h2 * 0.02)  # all but the no-notice share wait 120 s
    clock.advance(timedelta(seconds=120))
    region.sync()
    assert reclaimable_in("h2") == 0
    assert reclaimable_in("h1") >= in_h1 * 0.95  # other halls only see ordinary reclaims
    assert [i.instance_id for i in region.list_instances({"workload": "floor"})] == [floor.instance_id]
    with pytest.raises(CapacityUnavailable) as err:
        region.launch(LaunchRequest(pool_id=pool, count=1, owner=_owner(pool)))
    assert (err.value.pool_id, err.value.requested, err.value.available) == (pool, 1, 0)
    with pytest.raises(NotFound):
        region.hall_reclaim("h9")


def test_bad_input_is_refused_with_typed_errors_that_carry_the_values() -> None:
    region, _ = make_region(quota_instances=12)
    pool = _reclaimable(region)
    with pytest.raises(NotFound) as unknown:
        region.launch(LaunchRequest(pool_id="r1-h9-std-g9-huge-rc", count=1, owner=_owner("x")))
    assert unknown.value.name == "r1-h9-std-g9-huge-rc" and pool in unknown.value.known
    assert "unknown pool 'r1-h9-std-g9-huge-rc'" in str(unknown.value)
    with pytest.raises(InvalidRequest) as negative:
        LaunchRequest(pool_id=pool, count=-3, owner=_owner(pool))
    assert (negative.value.field, negative.value.value) == ("count", -3)
    region.launch(LaunchRequest(pool_id=pool, count=5, owner=_owner(pool)))
    with pytest.raises(QuotaExceeded) as quota:
        region.launch(LaunchRequest(pool_id=pool, count=8, owner=_owner(pool)))
    q = quota.value
    assert (q.resource, q.requested, q.used, q.limit) == ("instances", 8, 5, 12)
    assert "headroom 7" in str(q)
    free = region.engine.free(region.engine.index[pool])
    big, _ = make_region()
    with pytest.raises(CapacityUnavailable) as cap:
        big.launch(LaunchRequest(pool_id=pool, count=free + 100, owner=_owner(pool)))
    assert cap.value.requested == free + 100 and cap.value.available == big.engine.free(big.engine.index[pool])


@pytest.fixture
def served() -> Iterator[tuple[SimulatedRegion, str]]:
    from controllers.simregion.service import RegionService

    region, _ = make_region(quota_instances=12)
    service = RegionService(region, api_calls_per_s=5)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(service.start())
        ready.set()
        loop.run_until_complete(stop.wait())
        loop.run_until_complete(service.stop())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield region, service.url
    loop.call_soon_threadsafe(stop.set)
    thread.join(10)
    loop.close()


def test_over_http_the_typed_errors_arrive_with_their_values(served: tuple[SimulatedRegion, str]) -> None:
    from controllers.providers.simulated import SimulatedProvider

    region, url = served
    client = SimulatedProvider(url, region="r1")
    typed: Provider = client  # mypy checks the HTTP client against the written contract
    assert isinstance(typed, Provider)
    pool = _reclaimable(region)
    assert len(client.catalogue().pools) == len(region.catalogue().pools)
    made = client.launch(LaunchRequest(pool_id=pool, count=10, owner=_owner(pool)))
    assert len(client.list_instances({"workload": "etl"})) == 10
    with pytest.raises(QuotaExceeded) as quota:
        client.launch(LaunchRequest(pool_id=pool, count=3, owner=_owner(pool)))
    assert (quota.value.requested, quota.value.used, quota.value.limit) == (3, 10, 12)
    with pytest.raises(NotFound) as unknown:
        client.launch(LaunchRequest(pool_id="nope", count=1, owner=_owner(pool)))
    assert unknown.value.name == "nope" and pool in unknown.value.known
    with pytest.raises(InvalidRequest) as negative:
        client.call("POST", "/v1/launch", {"pool_id": pool, "count": -1, "owner": _owner(pool).model_dump()})
    assert (negative.value.field, negative.value.value) == ("count", -1)
    with pytest.raises(Throttled) as throttled:  # the region's own API budget: 5 mutating calls/s
        for _ in range(10):
            client.reclaim((made[0].instance_id,))
    assert throttled.value.budget_per_s == 5
    assert client.notice(made[0].instance_id) is not None
    assert client.notice(made[1].instance_id) is None
    assert client.rate_card().entries and client.forward_capacity(timedelta(hours=1))
    assert client.reservations("research")


def test_the_openstack_adapter_takes_rate_card_reservations_and_reclaim_from_the_provider_feeds(
        served: tuple[SimulatedRegion, str]) -> None:
    from controllers.providers.feeds import FeedClient
    from controllers.providers.openstack import OpenStackProvider

    region, url = served
    pool = _reclaimable(region)
    (inst,) = region.launch(LaunchRequest(pool_id=pool, count=1, owner=_owner(pool)))
    calls: list[str] = []
    adapter = OpenStackProvider(None, region="r1", image="sco-tiny", feeds=FeedClient(url), mutating_hook=calls.append)
    card = adapter.rate_card()
    assert card.rate(pool).guaranteed_rate_eur_h > card.rate(pool).rate_eur_h
    assert {r.business_unit for r in adapter.reservations()} == set(BUSINESS_UNITS)
    assert len(adapter.forward_capacity(timedelta(minutes=30))) == 141
    receipt = adapter.reclaim((inst.instance_id,))
    assert receipt.instances == (inst.instance_id,) and receipt.drill and calls == ["reclaim"]
    notice = FeedClient(url).notice(inst.instance_id)
    assert notice is not None and notice.terminate_at == receipt.terminate_at


def test_sco_sim_region_serve_answers_http_and_stops_on_sigterm() -> None:
    import json
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.support.ports import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sco.cli", "sim", "region", "serve", "--nats", "none", "--no-auth",
                             "--port", str(port), "--pools", "20", "--speed", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                    health = json.loads(resp.read())
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "sco sim region serve did not answer"
                time.sleep(0.2)
        assert health["region"] == "r1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/catalogue", timeout=5) as resp:
            assert len(json.loads(resp.read())) == 20 + 3 * 5 * len(BUSINESS_UNITS) + 15
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err


def test_reservations_count_floor_launches_and_forward_capacity_looks_ahead() -> None:
    region, _ = make_region()
    lease = next(r for r in region.reservations("research") if r.pool_id.startswith("r1-h3-std-g6-xlarge"))
    assert lease.in_use == 0 and lease.free == lease.instances == 12
    region.launch(LaunchRequest(pool_id=lease.pool_id, count=5, owner=_owner(lease.pool_id, "floor")))
    after = next(r for r in region.reservations("research") if r.reservation_id == lease.reservation_id)
    assert (after.in_use, after.free) == (5, 7)
    with pytest.raises(CapacityUnavailable) as err:
        region.launch(LaunchRequest(pool_id=lease.pool_id, count=8, owner=_owner(lease.pool_id, "floor")))
    assert (err.value.requested, err.value.available) == (8, 7)
    hour = region.forward_capacity(timedelta(hours=1))
    day = region.forward_capacity(timedelta(hours=24))
    assert len(hour) == 141 and all(f.end - f.start == timedelta(hours=1) for f in hour)
    assert all(0 < f.reclaim_probability < 1 for f in hour)
    assert sum(f.reclaim_probability for f in day) > sum(f.reclaim_probability for f in hour)
