"""On the OpenStack test bed (deploy/testbed/openstack/up): the cloud-config a controller sends with a real
launch, read back from Nova as an administrator sees it (``OS-EXT-SRV-ATTR:user_data``, microversion >= 2.3),
renders with the real cloud-init (deploy/testbed/cloudinit/up) into files ``sco-agent check`` accepts, and the
password in it is the one minted for that instance; the adapter's own readback (``OpenStackProvider.user_data``,
through its administrator ``topology`` connection) returns the same text."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from contracts.provider_errors import ProviderError
from contracts.schema import ContractSpec
from contracts.tiers import resolve
from controllers.controller.breaker import SafetyConfig
from controllers.controller.loop import Controller, ControllerSettings
from controllers.controller.userdata import MemoryAgentCredentials
from testkit.builders import FakeSource, base
from tests.agent.helpers import make_bundle, new_keys, workload_entry
from tests.controllers.controller.helpers import StepClock
from tests.support import cloudinit
from tests.support.testbeds import OPENSTACK_CLOUDS
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.xdist_group("openstack-bed"),
    pytest.mark.testbed,
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:openstack.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:openstack.*"),
]


@pytest.fixture
def bed() -> Iterator[dict[str, Any]]:
    if not OPENSTACK_CLOUDS.exists():
        pytest.fail(f"{OPENSTACK_CLOUDS} missing: run deploy/testbed/openstack/up")
    from controllers.providers.appcred import connect_sdk
    from controllers.providers.openstack import OpenStackProvider

    doc = yaml.safe_load(OPENSTACK_CLOUDS.read_text())
    admin = connect_sdk(**doc["clouds"]["sco-testbed-admin"])  # reads user_data back; the topology for capacity
    provider = OpenStackProvider.from_clouds_yaml(OPENSTACK_CLOUDS, "sco-testbed", image=doc["sco"]["image"],
                                                  project=doc["sco"]["project"], topology=admin,
                                                  region="r1")
    tag = uuid.uuid4().hex[:8]
    region = "r1"  # the region the controller names its partitions, pools and agents by
    state = {"provider": provider, "admin": admin, "region": region,
             "workload": f"ud-{tag}", "partition": f"{region}/ud-{tag}"}  # a partition of its own: touches no other
    yield state
    conn = provider._conn
    for server in list(conn.compute.servers()):
        if state["workload"] in (server.name or ""):
            conn.compute.delete_server(server, ignore_missing=True)
    wait_for(lambda: not any(state["workload"] in (s.name or "") for s in conn.compute.servers()), 300,
             interval=0.5)


def test_the_user_data_nova_holds_for_a_controller_launched_instance_passes_the_agent_check(
        bed: dict[str, Any], pg_migrated_url: str, tmp_path: Path) -> None:
    from controllers.providers.openstack import OpenStackProvider

    provider, admin, workload, partition = bed["provider"], bed["admin"], bed["workload"], bed["partition"]
    region = bed["region"]
    spec = base("T3", workload=workload, partition=partition, resources={"vcpu": 1, "memory_gib": 1})
    contract, findings = resolve(ContractSpec.model_validate(spec))
    assert contract is not None, findings
    keys = new_keys()
    raw, sig = make_bundle(keys, partition, 1, [workload_entry(workload)])
    (tmp_path / "bundle.pub").write_bytes(keys.public_pem)
    source = FakeSource()
    source.demand(contract.ref, 2, vcpu=1, mem=1)
    creds, clock = MemoryAgentCredentials(), StepClock()
    settings = ControllerSettings(region, partition, holder="userdata-test",
                                  safety=SafetyConfig(recovery_share=Decimal(1)),
                                  nats_urls=("nats://relay.hall-a.r1:4222",),
                                  metadata_url="http://169.254.169.254/sco/metadata/{instance}",
                                  distributor_url="https://bundles.r1:8443")
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        ctl = Controller(settings, provider, conn, source, {contract.ref: contract}, clock, agent_bundle=(raw, sig),
                         agent_credentials=creds)
        for _ in range(12):
            ctl.step()
            clock.advance(seconds=5)
            if provider.list_instances({"workload": workload}):
                break
    launched = provider.list_instances({"workload": workload})
    assert launched, f"the controller launched nothing: {ctl.last}"
    member = OpenStackProvider.from_clouds_yaml(OPENSTACK_CLOUDS, "sco-testbed", image="unused", region=region)
    with pytest.raises(ProviderError, match=r"no user-data of .* to this credential"):  # Nova's policy: admin only
        member.user_data(launched[0].instance_id)
    for inst in launched:
        server = admin.compute.get(f"/servers/{inst.instance_id}", microversion="2.3").json()["server"]
        text = base64.b64decode(server["OS-EXT-SRV-ATTR:user_data"]).decode()
        assert text.startswith("## template: jinja\n#cloud-config\n")
        assert provider.user_data(inst.instance_id) == text  # the adapter's readback (UserDataReadback)
        work = tmp_path / inst.instance_id
        work.mkdir()
        data = cloudinit.instance_data(inst.instance_id, server["OS-EXT-SRV-ATTR:hostname"] or inst.name,
                                       region=region, zone=inst.hall or "hall-a")
        rendered = cloudinit.render(text, data, work)
        valid = cloudinit.schema(rendered, work)
        assert valid.returncode == 0, valid.stdout + valid.stderr
        files = cloudinit.lay_out(rendered, work / "root")
        check = cloudinit.agent_check(files, tmp_path / "bundle.pub", work / "state")
        assert check.returncode == 0, check.stderr
        assert f"ok: {partition} generation 1" in check.stdout and f"instance {inst.instance_id}," in check.stdout
        assert f"as agent.{region}.{inst.instance_id}" in check.stdout
        assert creds.minted[(region, inst.instance_id)] == files["/etc/sco/nats.password"].read_text()
