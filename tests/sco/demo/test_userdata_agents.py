"""The demo's real agents booted from the controller's user-data (sco.demo.userdata_agents): on a stack that runs
only NATS, an instance's cloud-config is rendered and laid out without cloud-init, passes ``sco-agent check``,
and the ``sco-agent`` process it starts logs in as the instance's own NATS user, drains its node in the
Kubernetes API double on a notice (the pods evicted and ended by the kubelet) and ships ``drained``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nats
import pytest

from contracts.agent_userdata import NATS_PASSWORD_PATH, USERDATA_PATH
from contracts.subjects import notice_subject
from sco.demo.userdata_agents import Launch, UserDataAgents
from sco.stack import manager
from tests.agent.helpers import (
    ensure_stream,
    make_bundle,
    new_keys,
    notice_doc,
    stream_events,
    workload_entry,
    write_bundle_dir,
)
from tests.support.stack import nats_only_stack

pytestmark = [pytest.mark.services]

PARTITION = "r1/k8s-prod"
INSTANCE = "5d0c9e2a-1b3f-4a5e-8c7d-6f1e2d3c4b5a"


@pytest.fixture(scope="module")
def stack_home() -> Iterator[Path]:
    with nats_only_stack("sco-udagents-") as home:
        yield home


def _admin_url(home: Path) -> str:
    return str(json.loads((home / "stack.json").read_text())["services"]["nats"]["url"])


@pytest.fixture
def agents(stack_home: Path, tmp_path: Path) -> Iterator[UserDataAgents]:
    keys = new_keys()
    raw, sig = make_bundle(keys, PARTITION, 4, [workload_entry("web", version="7", budget=10, scheduler="kubernetes"),
                                                 workload_entry("hpc", scheduler="slurm")])
    write_bundle_dir(tmp_path / "bundles" / PARTITION, raw, sig)
    (tmp_path / "signing.pub.pem").write_bytes(keys.public_pem)
    fleet = UserDataAgents(tmp_path / "bundles", tmp_path / "signing.pub.pem", manager.agent_relay_url(stack_home),
                           "http://127.0.0.1:9/metadata/{instance}", manager.StackAgentCredentials(stack_home),
                           tmp_path / "nodes")
    try:
        yield fleet
    finally:
        fleet.close()


def _wait(pred: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_only_kubernetes_workloads_qualify_and_their_user_data_is_the_controller_s_cloud_config(
        agents: UserDataAgents) -> None:
    assert agents.qualifies(PARTITION, "web") and not agents.qualifies(PARTITION, "hpc")
    assert not agents.qualifies(PARTITION, "absent")
    text = agents.user_data(Launch(INSTANCE, "r1", PARTITION, "r1-h1-gp", "web"), "pw-launch")
    assert text.startswith("## template: jinja\n#cloud-config\n")
    assert '"instance":"{{ v1.instance_id }}"' in text and "/etc/sco/nats.password" in text


def test_an_agent_booted_from_the_rendered_user_data_drains_its_node_on_a_notice_and_ships_drained(
        agents: UserDataAgents, stack_home: Path) -> None:
    admin = _admin_url(stack_home)
    asyncio.run(ensure_stream(admin))
    booted = agents.boot(Launch(INSTANCE, "r1", PARTITION, "r1-h1-gp", "web",
                                launched_at=datetime.now(UTC) - timedelta(minutes=3)))
    assert f"instance {INSTANCE}, name node-5d0c9e2a" in booted.checked  # `sco-agent check` passed first
    assert json.loads(booted.files[USERDATA_PATH].read_text())["instance"] == INSTANCE  # rendered, not a template
    kube = agents.kube
    assert kube is not None
    pods = [p for p in kube.list_objects("Pod", "demo") if p["spec"]["nodeName"] == "node-5d0c9e2a"]
    assert len(pods) == 2 and all(p["metadata"]["labels"]["sco.io/contract"] == "web" for p in pods)
    ready = _wait(lambda: ((kube.get_object("Node", "node-5d0c9e2a") or {}).get("metadata", {})
                           .get("labels", {}).get("sco.io/agent-ready") == "true"), 30)
    assert ready, (booted.root / "agent.log").read_text()[-2000:]

    async def notify() -> None:
        nc = await nats.connect(admin)
        await nc.publish(notice_subject("r1", INSTANCE), json.dumps(notice_doc(INSTANCE)).encode())
        await nc.flush()
        await nc.close()

    def drained() -> bool:
        return any(e.get("kind") == "drained" and e.get("instance") == INSTANCE
                   for e in asyncio.run(stream_events(admin)))

    # the agent logged in to NATS as agent.r1.<instance> (it was ready only with its bundle; the notice
    # comes on its own subject only): retry the notice until the drain starts, as the relay re-sends
    assert _wait(lambda: asyncio.run(notify()) or (kube.get_object("Node", "node-5d0c9e2a") or {})
                 .get("spec", {}).get("unschedulable") is True, 30), (booted.root / "agent.log").read_text()[-2000:]
    assert _wait(drained, 30), (booted.root / "agent.log").read_text()[-2000:]
    assert not [p for p in kube.list_objects("Pod", "demo") if p["spec"]["nodeName"] == "node-5d0c9e2a"]
    assert not booted.files[NATS_PASSWORD_PATH].exists(), "the instance's NATS password is removed after the drain"
    agents.stop(INSTANCE)
    assert booted.process.returncode == 0 and kube.get_object("Node", "node-5d0c9e2a") is None
