"""The OpenStack adapter against real Keystone/Nova/Glance/Placement (deploy/testbed/openstack/up)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from contracts.provider import InstanceStatus, LaunchRequest, OwnerTags, Provider
from contracts.provider_errors import InvalidRequest, NotFound, NotOwned, QuotaExceeded
from tests.support.testbeds import OPENSTACK_CLOUDS
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.xdist_group("openstack-bed"),
    pytest.mark.testbed,
    # openstacksdk 4.22 warns about its own internal arguments on every call
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:openstack.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:openstack.*"),
]

CLOUDS = OPENSTACK_CLOUDS


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, Any]]:
    if not CLOUDS.exists():
        pytest.fail(f"{CLOUDS} missing: run deploy/testbed/openstack/up")
    import yaml

    from controllers.providers.appcred import connect_sdk
    from controllers.providers.openstack import OpenStackProvider

    doc = yaml.safe_load(CLOUDS.read_text())
    calls: list[str] = []
    provider = OpenStackProvider.from_clouds_yaml(CLOUDS, "sco-testbed", image=doc["sco"]["image"],
                                                  project=doc["sco"]["project"], mutating_hook=calls.append)
    typed: Provider = provider  # mypy checks the adapter against the written contract
    assert isinstance(typed, Provider)
    admin = connect_sdk(**doc["clouds"]["sco-testbed-admin"])
    workload = f"w-{uuid.uuid4().hex[:8]}"
    yield {"provider": provider, "calls": calls, "admin": admin, "doc": doc, "workload": workload,
           "conn": provider._conn}
    conn = provider._conn
    for server in list(conn.compute.servers()):
        if workload in (server.name or "") or (server.name or "").startswith("intruder-"):
            conn.compute.delete_server(server, ignore_missing=True)
    wait_for(lambda: not any(workload in (s.name or "") for s in conn.compute.servers()), 300, interval=0.5)




def _pool(provider: Any, hall: str = "hall-a", family: str = "gp", size: str = "small") -> str:
    pools = provider.catalogue().pools
    return str(next(p.pool_id for p in pools if p.hall == hall and p.sku_family == family and p.size == size))


def test_the_catalogue_has_a_pool_per_flavour_and_hall_with_the_aggregate(env: dict[str, Any]) -> None:
    pools = env["provider"].catalogue().pools
    halls = {p.hall for p in pools}
    assert halls == {"hall-a", "hall-b"}
    assert {p.sku_family for p in pools} == {"gp", "mem"}
    assert len(pools) == 3 * 2
    assert all(p.rate_eur_h < p.guaranteed_rate_eur_h for p in pools)


def test_ten_instances_launch_in_one_call_and_are_listed_by_their_tags(env: dict[str, Any]) -> None:
    provider, calls = env["provider"], env["calls"]
    owner = OwnerTags(workload=env["workload"], pool=_pool(provider), partition="r1/batch", generation=7)
    before = len(calls)
    launched = provider.launch(LaunchRequest(pool_id=owner.pool, count=10, owner=owner,
                                             metadata={"purpose": "test"}, user_data="#cloud-config\n{}"))
    assert len(calls) - before == 1 and calls[-1] == "launch"  # one mutating call: Nova multi-create
    assert len(launched) == 10
    listed = provider.list_instances({"workload": env["workload"]})
    assert {i.instance_id for i in listed} == {i.instance_id for i in launched}
    assert all(i.owner == owner and i.hall == "hall-a" and i.pool_id == owner.pool for i in listed)
    wait_for(lambda: all(i.status is InstanceStatus.ACTIVE
                      for i in provider.list_instances({"workload": env["workload"]})), 300, interval=0.5)
    env["owner"] = owner


def test_what_we_own_is_rebuilt_from_the_tags_alone(env: dict[str, Any]) -> None:
    from controllers.providers.openstack import OpenStackProvider

    fresh = OpenStackProvider.from_clouds_yaml(CLOUDS, "sco-testbed", image="sco-tiny")  # no state at all
    owned = [i for i in fresh.owned() if i.owner and i.owner.workload == env["workload"]]
    assert len(owned) == 10
    assert {i.owner for i in owned} == {env["owner"]}


def test_terminating_an_instance_without_our_tags_is_refused_with_not_owned(env: dict[str, Any]) -> None:
    conn, provider = env["conn"], env["provider"]
    image = conn.image.find_image("sco-tiny")
    flavor = conn.compute.find_flavor("gp.small")
    intruder = conn.compute.create_server(name=f"intruder-{env['workload']}", image_id=image.id,
                                          flavor_id=flavor.id, networks="none", tags=["team:someone-else"])
    with pytest.raises(NotOwned) as err:
        provider.terminate(intruder.id)
    assert err.value.instance_id == intruder.id
    assert "sco:workload" in err.value.missing_tags and "team:someone-else" in err.value.tags
    assert "refusing to terminate" in str(err.value)
    assert conn.compute.get_server(intruder.id).status != "DELETED"
    assert intruder.id not in {i.instance_id for i in provider.owned()}


def test_our_instances_are_terminated(env: dict[str, Any]) -> None:
    provider = env["provider"]
    mine = provider.list_instances({"workload": env["workload"]})
    for inst in mine:
        provider.terminate(inst.instance_id)
    wait_for(lambda: not provider.list_instances({"workload": env["workload"]}), 300, interval=0.5)
    with pytest.raises(NotFound) as err:
        provider.terminate(str(uuid.uuid4()))
    assert err.value.kind == "instance"


def test_a_launch_over_quota_is_refused_with_the_quota_values(env: dict[str, Any]) -> None:
    provider, limit = env["provider"], env["doc"]["sco"]["quota_instances"]
    owner = OwnerTags(workload=env["workload"], pool=_pool(provider), partition="r1/batch", generation=8)
    used = provider.quota_headroom().instances_used
    with pytest.raises(QuotaExceeded) as err:
        provider.launch(LaunchRequest(pool_id=owner.pool, count=limit + 1, owner=owner))
    assert (err.value.resource, err.value.requested, err.value.limit) == ("instances", limit + 1, limit)
    assert err.value.used == used
    assert not provider.list_instances({"workload": env["workload"], "generation": "8"})


def test_nova_own_quota_refusal_is_translated_to_quota_exceeded(env: dict[str, Any]) -> None:
    provider, limit = env["provider"], env["doc"]["sco"]["quota_instances"]
    owner = OwnerTags(workload=env["workload"], pool=_pool(provider), partition="r1/batch", generation=9)
    provider.quota_headroom = lambda: provider.__class__.quota_headroom(provider).model_copy(
        update={"instances_limit": -1, "vcpu_limit": -1})  # skip the client-side pre-check: Nova must refuse
    try:
        with pytest.raises(QuotaExceeded) as err:
            provider.launch(LaunchRequest(pool_id=owner.pool, count=limit + 5, owner=owner))
    finally:
        del provider.quota_headroom
    assert err.value.resource == "instances" and err.value.requested == limit + 5 and err.value.limit == limit


def test_an_unknown_flavour_and_an_unknown_pool_are_typed_not_found(env: dict[str, Any]) -> None:
    admin, provider = env["admin"], env["provider"]
    name = f"gone.{uuid.uuid4().hex[:6]}"
    flavor = admin.compute.create_flavor(name=name, vcpus=1, ram=256, disk=1, is_public=True)
    admin.compute.create_flavor_extra_specs(flavor, {"sco:sku_family": "gone", "sco:size": name[5:]})
    try:
        pool_id = _pool(provider, family="gone", size=name[5:])
    finally:
        admin.compute.delete_flavor(flavor)
    owner = OwnerTags(workload=env["workload"], pool=pool_id, partition="r1/batch", generation=1)
    with pytest.raises(NotFound) as err:
        provider.launch(LaunchRequest(pool_id=pool_id, count=1, owner=owner))
    assert err.value.kind == "flavour" and err.value.name == flavor.id
    with pytest.raises(NotFound) as err2:
        provider.launch(LaunchRequest(pool_id="no-such-pool", count=1, owner=owner))
    assert err2.value.kind == "pool" and err2.value.name == "no-such-pool" and pool_id not in err2.value.known
    with pytest.raises(InvalidRequest) as err3:
        LaunchRequest(pool_id=owner.pool, count=-2, owner=owner)
    assert (err3.value.field, err3.value.value) == ("count", -2)


def test_with_a_reader_connection_placement_gives_free_instances_and_utilisation_per_pool(
        env: dict[str, Any]) -> None:
    from controllers.providers.openstack import OpenStackProvider

    provider = OpenStackProvider(env["conn"], region="RegionOne", image="sco-tiny", topology=env["admin"])
    small = _pool(provider, hall="hall-a", family="gp", size="small")
    medium = _pool(provider, hall="hall-a", family="gp", size="medium")
    before = provider.capacity()
    assert before[small][0] > 100 and 0.0 <= before[small][1] < 1.0
    assert {p.aggregate for p in provider.catalogue().pools} == {"agg-a1", "agg-b1"}
    owner = OwnerTags(workload=env["workload"], pool=medium, partition="r1/batch", generation=11)
    provider.launch(LaunchRequest(pool_id=medium, count=2, owner=owner))
    wait_for(lambda: all(i.status is InstanceStatus.ACTIVE
                         for i in provider.list_instances({"workload": env["workload"], "generation": "11"})),
             300, interval=0.5)
    after = provider.capacity()
    assert before[small][0] - after[small][0] == 4  # 2 × (2 vCPU, 1 GiB) = 4 gp.small (1 vCPU, 512 MiB)
    assert after[small][1] > before[small][1]
    card = provider.rate_card()
    assert card.rate(small).free_instances == after[small][0]
    hall_b = _pool(provider, hall="hall-b", family="gp", size="small")
    assert after[hall_b][0] == before[hall_b][0]  # the other hall's aggregate is untouched
    for inst in provider.list_instances({"workload": env["workload"], "generation": "11"}):
        provider.terminate(inst.instance_id)


def test_a_launch_boots_the_image_its_request_names_and_the_configured_one_otherwise(env: dict[str, Any]) -> None:
    from controllers.providers.openstack import OpenStackProvider

    # ADR-32: the controller picks the agent image per launch; this adapter's own image does not exist
    provider = OpenStackProvider.from_clouds_yaml(CLOUDS, "sco-testbed", image="sco-no-such-image",
                                                  project=env["doc"]["sco"]["project"])
    owner = OwnerTags(workload=env["workload"], pool=_pool(provider), partition="r1/batch", generation=12)
    with pytest.raises(NotFound) as err:
        provider.launch(LaunchRequest(pool_id=owner.pool, count=1, owner=owner))
    assert (err.value.kind, err.value.name) == ("image", "sco-no-such-image")
    launched = provider.launch(LaunchRequest(pool_id=owner.pool, count=1, owner=owner, image="sco-tiny"))
    server = env["conn"].compute.get_server(launched[0].instance_id)
    assert server.image["id"] == env["conn"].image.find_image("sco-tiny").id
    provider.terminate(launched[0].instance_id)
    wait_for(lambda: not provider.list_instances({"workload": env["workload"], "generation": "12"}), 300,
             interval=0.5)
