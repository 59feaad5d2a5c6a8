"""The simulated region keeps each launch's user-data and serves it back as Nova does (base64, the exact bytes),
in process and over HTTP through ``SimulatedProvider``; user-data over Nova's 65,535 bytes of base64 is refused
with ``InvalidRequest`` before anything is launched."""

from __future__ import annotations

import base64

import pytest

from contracts.pools import PurchaseModel
from contracts.provider import USER_DATA_LIMIT_B64, LaunchRequest, OwnerTags, UserDataReadback
from contracts.provider_errors import InvalidRequest, NotFound
from controllers.providers.simulated import SimulatedProvider
from controllers.simregion.region import SimulatedRegion

from .helpers import make_region, serving

# a jinja header, CRLF, a tab, non-ASCII and a YAML block: nothing in it may be normalised on the way
TEXT = ("## template: jinja\n#cloud-config\r\nwrite_files:\n  - content: |\n"
        "\t\u00e9t\u00e9 \u2713 {{ v1.instance_id }}\n")
LARGEST = USER_DATA_LIMIT_B64 // 4 * 3  # bytes whose base64 is the largest size within the limit (65,532)


def _pool(region: SimulatedRegion) -> str:
    return next(p.pool_id for p in region.catalogue().pools
                if p.purchase_model is PurchaseModel.RECLAIMABLE and p.size == "small")


def _request(pool: str, user_data: str | None, count: int = 1) -> LaunchRequest:
    return LaunchRequest(pool_id=pool, count=count, user_data=user_data,
                         owner=OwnerTags(workload="web", pool=pool, partition="r1/k8s", generation=1))


def test_every_instance_of_a_launch_serves_back_the_exact_user_data_it_was_sent() -> None:
    region, _ = make_region()
    pool = _pool(region)
    made = region.launch(_request(pool, TEXT, count=3))
    (bare,) = region.launch(_request(pool, None))
    readback: UserDataReadback = region
    assert isinstance(readback, UserDataReadback)
    assert [region.user_data(i.instance_id) for i in made] == [TEXT] * 3
    assert region.user_data(bare.instance_id) is None
    assert "user_data" not in region.instance(made[0].instance_id).model_dump()  # not on the ordinary listing
    other = next(i for i in region.engine.by_id.values() if not i.owned)  # another tenant's instance
    for iid in (other.id, "no-such-instance"):
        with pytest.raises(NotFound) as err:
            region.user_data(iid)
        assert (err.value.kind, err.value.name) == ("instance", iid)


def test_user_data_over_nova_s_limit_is_refused_before_anything_is_launched() -> None:
    region, _ = make_region()
    pool = _pool(region)
    (edge,) = region.launch(_request(pool, "x" * LARGEST))
    assert region.user_data(edge.instance_id) == "x" * LARGEST
    used = region.quota_headroom().instances_used
    with pytest.raises(InvalidRequest) as err:
        region.launch(_request(pool, "x" * (LARGEST + 1), count=2))
    assert err.value.field == "user_data" and err.value.value == f"{USER_DATA_LIMIT_B64 + 1} bytes of base64"
    assert "65535" in str(err.value) and "distributor" in err.value.fix
    assert region.quota_headroom().instances_used == used


def test_over_http_the_region_serves_the_user_data_base64_and_the_client_decodes_the_exact_bytes() -> None:
    region, _ = make_region()
    pool = _pool(region)
    with serving(region) as url:
        client = SimulatedProvider(url, region="r1")
        readback: UserDataReadback = client  # mypy checks the HTTP client against the protocol
        (inst,) = client.launch(_request(pool, TEXT))
        raw = client.call("GET", f"/v1/instances/{inst.instance_id}/user-data")
        assert raw == {"instance_id": inst.instance_id, "user_data": base64.b64encode(TEXT.encode()).decode()}
        assert readback.user_data(inst.instance_id) == TEXT
        assert "user_data" not in client.call("GET", f"/v1/instances/{inst.instance_id}")
        (bare,) = client.launch(_request(pool, None))
        assert client.user_data(bare.instance_id) is None
        with pytest.raises(NotFound):
            client.user_data("no-such-instance")
        with pytest.raises(InvalidRequest) as err:
            client.launch(_request(pool, "x" * (LARGEST + 1)))
        assert err.value.field == "user_data" and "65535" in str(err.value)
        assert len(client.list_instances({"workload": "web"})) == 2
