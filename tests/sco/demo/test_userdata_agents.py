"""The demo's real agents booted from the user-data the controller sent (sco.demo.userdata_agents): a real
``Controller`` (PostgreSQL, the simulated region in process) launches with its cloud-config and mints each
instance's own NATS user on a stack that runs only NATS; the region serves that user-data back byte for byte;
an agent booted from what was read back passes ``sco-agent check``, logs in with the password the controller
minted, drains its node in the Kubernetes API double on a notice (the pods evicted and ended by the kubelet) and
ships ``drained``."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import nats
import psycopg
import pytest
import yaml

from contracts.agent_userdata import NATS_PASSWORD_PATH, USERDATA_PATH
from contracts.provider import Instance
from contracts.schema import ContractSpec
from contracts.subjects import notice_subject
from contracts.tiers import resolve
from controllers.controller.breaker import SafetyConfig
from controllers.controller.claims import WorkItem
from controllers.controller.loop import Controller, ControllerSettings
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from sco.demo.userdata_agents import Launch, UserDataAgents, launch_password
from sco.stack import credentials as creds_mod
from sco.stack import manager
from testkit.builders import FakeSource, base
from tests.agent.helpers import (
    ensure_stream,
    make_bundle,
    new_keys,
    notice_doc,
    stream_events,
    workload_entry,
    write_bundle_dir,
)
from tests.controllers.controller.helpers import CallLog, StepClock

pytestmark = [pytest.mark.services]

PARTITION = "r1/k8s-prod"
QUIET = dict(reclaim_rate_pct_h=0.0, hall_reclaims_per_30d=0.0, bursts_per_aggregate_day=0.0, seed=5)


def _admin_url(home: Path) -> str:
    return str(json.loads((home / "stack.json").read_text())["services"]["nats"]["url"])


@dataclass
class Launched:
    region: SimulatedRegion
    log: CallLog                  # the controller's launch requests, as it sent them
    agents: UserDataAgents
    instances: tuple[Instance, ...]


@pytest.fixture
def launched(stack_home: Path, tmp_path: Path, pg_migrated_url: str) -> Iterator[Launched]:
    """A controller's first passes for a Kubernetes workload, with the demo's agent options."""
    keys = new_keys()
    raw, sig = make_bundle(keys, PARTITION, 4, [workload_entry("web", version="7", budget=10, scheduler="kubernetes"),
                                                 workload_entry("hpc", scheduler="slurm")])
    write_bundle_dir(tmp_path / "bundles" / PARTITION, raw, sig)
    (tmp_path / "signing.pub.pem").write_bytes(keys.public_pem)
    web, findings = resolve(ContractSpec.model_validate(base(
        "T3", workload="web", partition=PARTITION, scheduler="kubernetes", resources={"vcpu": 2, "memory_gib": 4})))
    assert web is not None, findings
    clock = StepClock()
    region = SimulatedRegion(RegionConfig.model_validate(QUIET), clock)
    log = CallLog(region, clock)
    source = FakeSource([WorkItem("kubernetes", f"demo/web-{i}", web.ref, 2, 4, "pending") for i in range(3)])
    settings = ControllerSettings("r1", PARTITION, holder="udagents", safety=SafetyConfig(recovery_share=Decimal(1)),
                                  nats_urls=(manager.agent_relay_url(stack_home),),
                                  metadata_url="http://127.0.0.1:9/metadata/{instance}")
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        ctl = Controller(settings, log, conn, source, {web.ref: web}, clock, agent_bundle=(raw, sig),
                         agent_credentials=manager.StackAgentCredentials(stack_home))
        for _ in range(12):
            ctl.step()
            clock.advance(seconds=5)
            if region.list_instances():
                break
    instances = region.list_instances()
    assert instances and log.requests, f"the controller launched nothing: {ctl.last}"
    agents = UserDataAgents(region, tmp_path / "bundles", tmp_path / "signing.pub.pem", tmp_path / "nodes")
    try:
        yield Launched(region, log, agents, instances)
    finally:
        agents.close()


def _launch(inst: Instance) -> Launch:
    assert inst.owner is not None
    return Launch(inst.instance_id, "r1", inst.owner.partition, inst.pool_id, inst.owner.workload, inst.launched_at)


def _sent(w: Launched, inst: Instance) -> str:
    """The user-data of the launch request that made ``inst``."""
    (request,) = [r for r in w.log.requests if r.metadata["sco_launch_key"] == inst.metadata["sco_launch_key"]]
    assert request.user_data is not None
    return request.user_data


def test_each_instance_serves_back_the_controller_s_cloud_config_with_the_password_it_minted(
        launched: Launched, stack_home: Path) -> None:
    agents, minted = launched.agents, creds_mod.load_or_create(stack_home).agents
    assert agents.qualifies(PARTITION, "web") and not agents.qualifies(PARTITION, "hpc")
    assert not agents.qualifies(PARTITION, "absent")
    for inst in launched.instances:
        text = launched.region.user_data(inst.instance_id)
        assert text == _sent(launched, inst) and text is not None  # byte for byte what the launch sent
        assert text.startswith("## template: jinja\n#cloud-config\n")
        assert '"instance":"{{ v1.instance_id }}"' in text and NATS_PASSWORD_PATH in text
        files = {f["path"]: f for f in yaml.safe_load(text)["write_files"]}
        password = base64.b64decode(files[NATS_PASSWORD_PATH]["content"]).decode()
        assert launch_password(text) == password == minted[f"r1/{inst.instance_id}"]  # the controller minted it
    assert launch_password(None) is None and launch_password("#cloud-config\nruncmd: []\n") is None


def _wait(pred: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_an_agent_booted_from_the_user_data_the_controller_sent_drains_its_node_on_a_notice_and_ships_drained(
        launched: Launched, stack_home: Path) -> None:
    admin = _admin_url(stack_home)
    asyncio.run(ensure_stream(admin))
    inst, agents = launched.instances[0], launched.agents
    iid, node = inst.instance_id, f"node-{inst.instance_id[:8]}"
    booted = agents.boot(_launch(inst))
    assert booted.user_data == _sent(launched, inst)  # read back from the region: what the controller sent
    assert (booted.root / "user-data.txt").read_text() == booted.user_data
    assert f"instance {iid}, name {node}" in booted.checked  # `sco-agent check` passed first
    assert json.loads(booted.files[USERDATA_PATH].read_text())["instance"] == iid  # rendered, not a template
    minted = creds_mod.load_or_create(stack_home).agents[f"r1/{iid}"]
    assert booted.files[NATS_PASSWORD_PATH].read_text() == minted  # the controller's password, nothing demo-made
    kube = agents.kube
    assert kube is not None
    pods = [p for p in kube.list_objects("Pod", "demo") if p["spec"]["nodeName"] == node]
    assert len(pods) == 2 and all(p["metadata"]["labels"]["sco.io/contract"] == "web" for p in pods)
    ready = _wait(lambda: ((kube.get_object("Node", node) or {}).get("metadata", {})
                           .get("labels", {}).get("sco.io/agent-ready") == "true"), 30)
    assert ready, (booted.root / "agent.log").read_text()[-2000:]

    async def notify() -> None:
        nc = await nats.connect(admin)
        await nc.publish(notice_subject("r1", iid), json.dumps(notice_doc(iid)).encode())
        await nc.flush()
        await nc.close()

    def shipped(kind: str) -> Callable[[], bool]:
        return lambda: any(e.get("kind") == kind and e.get("instance") == iid
                           for e in asyncio.run(stream_events(admin)))

    # the agent logged in to NATS as agent.r1.<instance> (it was ready only with its bundle; the notice
    # comes on its own subject only): retry the notice until the drain starts, as the relay re-sends
    assert _wait(lambda: asyncio.run(notify()) or (kube.get_object("Node", node) or {})
                 .get("spec", {}).get("unschedulable") is True, 30), (booted.root / "agent.log").read_text()[-2000:]
    assert _wait(shipped("drained"), 30), (booted.root / "agent.log").read_text()[-2000:]
    assert not [p for p in kube.list_objects("Pod", "demo") if p["spec"]["nodeName"] == node]
    # the agent removes its token files after it emits "drained", then emits "credentials-revoked"
    # (agent.drain.engine, _release): the file is looked at once that later event is in, not right after "drained"
    assert _wait(shipped("credentials-revoked"), 60), (booted.root / "agent.log").read_text()[-2000:]
    assert not booted.files[NATS_PASSWORD_PATH].exists(), "the instance's NATS password is removed after the drain"
    agents.stop(iid)
    assert booted.process.returncode == 0 and kube.get_object("Node", node) is None
