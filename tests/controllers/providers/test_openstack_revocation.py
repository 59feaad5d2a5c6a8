"""Honest revocation on the real Keystone of the OpenStack test bed (ADR-31, issue 14): a credential issued per
instance at launch is deleted on termination, and the event says ok only when Keystone confirmed it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from contracts.provider import LaunchRequest, OwnerTags
from controllers.controller.revocation import KeystoneRevoker
from tests.support.testbeds import OPENSTACK_CLOUDS
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.xdist_group("openstack-bed"),
    pytest.mark.testbed,
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:openstack.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:openstack.*"),
]


@pytest.fixture(scope="module")
def bed() -> Iterator[dict[str, Any]]:
    if not OPENSTACK_CLOUDS.exists():
        pytest.fail(f"{OPENSTACK_CLOUDS} missing: run deploy/testbed/openstack/up")
    import yaml

    from controllers.providers.appcred import connect_sdk
    from controllers.providers.node_credentials import KeystoneNodeCredentials
    from controllers.providers.openstack import OpenStackProvider

    doc = yaml.safe_load(OPENSTACK_CLOUDS.read_text())
    issuer = connect_sdk(**doc["clouds"]["sco-testbed-admin"])  # stands in for the issuer (OpenBao's plugin)
    credentials = KeystoneNodeCredentials(issuer, ttl=timedelta(hours=1), roles=("reader",))
    provider = OpenStackProvider.from_clouds_yaml(OPENSTACK_CLOUDS, "sco-testbed", image=doc["sco"]["image"],
                                                  project=doc["sco"]["project"], node_credentials=credentials)
    workload = f"rv-{uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {"provider": provider, "credentials": credentials, "issuer": issuer,
                             "workload": workload, "doc": doc, "instances": []}
    yield state
    conn = provider._conn
    for server in list(conn.compute.servers()):
        if workload in (server.name or ""):
            conn.compute.delete_server(server, ignore_missing=True)
    for iid in state["instances"]:
        found = credentials.find(iid)
        if found is not None:
            issuer.identity.delete_application_credential(credentials.user_id, found.id)




def test_launch_issues_one_expiring_keystone_credential_per_instance_named_after_it(bed: dict[str, Any]) -> None:
    provider, credentials = bed["provider"], bed["credentials"]
    pool = next(p.pool_id for p in provider.catalogue().pools if p.hall == "hall-a" and p.sku_family == "gp"
                and p.size == "small")
    owner = OwnerTags(workload=bed["workload"], pool=pool, partition="r1/batch", generation=1)
    launched = provider.launch(LaunchRequest(pool_id=pool, count=2, owner=owner, metadata={"purpose": "test"}))
    bed["instances"] = [i.instance_id for i in launched]
    assert len(launched) == 2
    for inst in launched:
        found = credentials.find(inst.instance_id)
        assert found is not None and found.name == f"sco-node-{inst.instance_id}"
        assert found.expires_at, "the per-instance credential must expire"


def test_termination_deletes_the_credential_and_only_keystone_s_confirmation_makes_it_ok(
        bed: dict[str, Any]) -> None:
    provider, credentials = bed["provider"], bed["credentials"]
    revoker = KeystoneRevoker(credentials)
    first = bed["instances"][0]
    provider.terminate(first)
    done = revoker.revoke(first, f"spiffe://sco.local/sco/r1/node/{first}")
    assert (done.ok, done.reason) == (True, "revoked")
    assert credentials.find(first) is None
    again = revoker.revoke(first, "spiffe://x")
    assert (again.ok, again.reason) == (True, "already-gone")


def test_a_keystone_refusal_is_reported_as_a_failure_not_as_revoked(bed: dict[str, Any]) -> None:
    from controllers.providers.node_credentials import KeystoneNodeCredentials

    second = bed["instances"][1]
    # the orchestrator's own restricted application credential may not manage application credentials: 403
    orchestrator = bed["provider"]._conn
    refused = KeystoneRevoker(KeystoneNodeCredentials(orchestrator, user_id=bed["credentials"].user_id))
    done = refused.revoke(second, "spiffe://x")
    assert (done.ok, done.reason) == (False, "failed") and "Forbidden" in done.detail
    assert bed["credentials"].find(second) is not None  # nothing was revoked, and the event says so
    bed["provider"].terminate(second)
    assert KeystoneRevoker(bed["credentials"]).revoke(second, "spiffe://x").reason == "revoked"
    wait_for(lambda: not bed["provider"].list_instances({"workload": bed["workload"]}), 300, interval=0.5)
