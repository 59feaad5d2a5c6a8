"""The region's listing built once per instance state (issue 19, the replay made faster): the same ``Instance``
while nothing changed, a fresh one the moment its notice is out, gone when the instance is; with the cache off
every listing is built afresh and equal."""

from __future__ import annotations

from contracts.pools import PurchaseModel
from contracts.provider import InstanceStatus, LaunchRequest, OwnerTags
from controllers.simregion.region import SimulatedRegion

from .helpers import make_region


def _launch(n: int = 3) -> tuple[SimulatedRegion, list[str]]:
    region, _ = make_region()
    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model is PurchaseModel.RECLAIMABLE)
    made = region.launch(LaunchRequest(pool_id=pool, count=n, owner=OwnerTags(
        workload="etl", pool=pool, partition="r1/batch", generation=1)))
    return region, [i.instance_id for i in made]


def test_a_listed_instance_is_the_same_object_until_its_notice_and_shows_the_notice_at_once() -> None:
    region, ids = _launch()
    first = {i.instance_id: i for i in region.list_instances({"partition": "r1/batch"})}
    again = {i.instance_id: i for i in region.list_instances()}
    assert set(first) == set(ids) and all(again[k] is first[k] for k in ids)
    region.reclaim((ids[0],), drill=True)
    after = {i.instance_id: i for i in region.list_instances()}
    assert after[ids[0]].status is InstanceStatus.NOTIFIED and after[ids[1]] is first[ids[1]]
    region.terminate(ids[1])
    assert {i.instance_id for i in region.list_instances()} == {ids[0], ids[2]}
    assert region.list_instances({"partition": "other"}) == ()


def test_with_the_cache_off_every_listing_is_built_afresh_and_equal_to_the_cached_one() -> None:
    region, _ = _launch()
    cached = region.list_instances()
    region.cache_listing = False
    fresh = region.list_instances()
    assert fresh == cached and all(a is not b for a, b in zip(fresh, cached, strict=True))


def test_the_listing_is_the_same_tuple_until_one_of_ours_comes_goes_or_gets_its_notice() -> None:
    region, ids = _launch()
    first = region.list_instances({"partition": "r1/batch"})
    assert region.list_instances({"partition": "r1/batch"}) is first
    assert region.list_instances() is not first and region.list_instances() == first   # another filter, its own
    for change in (lambda: region.reclaim((ids[0],), drill=True), lambda: region.terminate(ids[1]),
                   lambda: _launch_more(region)):
        before = region.list_instances()
        change()
        after = region.list_instances()
        assert after is not before and after != before
        assert region.list_instances() is after


def _launch_more(region: SimulatedRegion) -> None:
    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model is PurchaseModel.RECLAIMABLE)
    region.launch(LaunchRequest(pool_id=pool, count=1, owner=OwnerTags(workload="etl", pool=pool,
                                                                      partition="r1/batch", generation=1)))
