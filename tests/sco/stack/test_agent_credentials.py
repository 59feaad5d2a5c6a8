"""The stack's ``AgentCredentials`` adapter: the password a launch's cloud-config carries becomes the instance's
own NATS user on the stack's nats-server, and a real ``sco-agent run`` booted from the files cloud-init writes
logs in with it and drains on a notice (deploy/testbed/cloudinit/up for the rendering)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nats
import pytest

from contracts.subjects import notice_subject
from controllers.controller.userdata import LaunchUserData, render
from sco.demo.kubeapi import KubeApiDouble
from sco.stack import manager, natsserver
from testkit.paths import REPO
from tests.agent.helpers import make_bundle, new_keys, notice_doc, workload_entry
from tests.support import cloudinit
from tests.support.ports import free_port

INSTANCE = "0b5e7c1d-2f3a-4b6c-8d9e-0a1b2c3d4e5f"
PARTITION = "r1/k8s-batch"


def nats_port(home: Path) -> int:
    return int(json.loads((home / "stack.json").read_text())["services"]["nats"]["port"])


def test_minting_makes_the_launch_password_the_instance_own_user_and_a_new_one_replaces_it(stack_home: Path) -> None:
    creds = manager.StackAgentCredentials(stack_home)
    port = nats_port(stack_home)
    creds.mint("r1", "i-a", "pw-launch-1")
    creds.mint("r1", "i-b", "pw-launch-1")
    assert natsserver.nats_accepts(port, "agent.r1.i-a", "pw-launch-1")
    assert natsserver.nats_accepts(port, "agent.r1.i-b", "pw-launch-1")
    assert not natsserver.nats_accepts(port, "agent.r1.i-a", "pw-other")
    creds.mint("r1", "i-a", "pw-launch-2")
    assert natsserver.nats_accepts(port, "agent.r1.i-a", "pw-launch-2")
    assert not natsserver.nats_accepts(port, "agent.r1.i-a", "pw-launch-1")
    assert manager.agent_relay_url(stack_home) == f"nats://127.0.0.1:{port}"


def _metrics(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""


@pytest.mark.testbed
def test_an_agent_booted_from_the_rendered_files_logs_in_as_its_own_user_and_drains_on_a_notice(
        stack_home: Path, tmp_path: Path) -> None:
    keys = new_keys()
    raw, sig = make_bundle(keys, PARTITION, 1, [workload_entry("web", budget=3, scheduler="kubernetes")])
    password = "launch-password-1"
    text = render(LaunchUserData(region="r1", partition=PARTITION, pool="r1-h1-gp-large", scheduler="kubernetes",
                                 bundle=raw, bundle_sig=sig, nats_urls=(manager.agent_relay_url(stack_home),),
                                 nats_password=password))
    manager.StackAgentCredentials(stack_home).mint("r1", INSTANCE, password)  # what the controller does at launch
    rendered = cloudinit.render(text, cloudinit.instance_data(INSTANCE, "kn1"), tmp_path)
    files = cloudinit.lay_out(rendered, tmp_path / "root")
    (tmp_path / "bundle.pub").write_bytes(keys.public_pem)
    token = files["/etc/sco/nats.password"].parent / "kube.token"
    token.write_text("node-bound")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCO_AGENT_")}
    for line in files["/etc/sco/agent.env"].read_text().splitlines():  # the unit's EnvironmentFile, under root
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = ":".join(str(files.get(p, token)) for p in value.split(":"))
    port = free_port()
    with KubeApiDouble() as kube:
        kube.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})
        env.update({"SCO_AGENT_KUBE_API": kube.url, "SCO_AGENT_KUBE_TOKEN_FILE": str(token),
                    "SCO_AGENT_LOCAL_DRAIN_COMMAND": "true", "SCO_AGENT_SPOOL_FSYNC": "0"})
        proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "run", "--userdata",
                                 str(files["/etc/sco/agent-userdata.json"]), "--public-key",
                                 str(tmp_path / "bundle.pub"), "--state-dir", str(tmp_path / "state"),
                                 "--metrics-port", str(port)], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "\nsco_agent_nats_connected 1" not in _metrics(port):
                time.sleep(0.2)
            assert "\nsco_agent_nats_connected 1" in _metrics(port), "the agent never logged in to NATS"

            async def notify() -> None:
                admin = json.loads((stack_home / "stack.json").read_text())["services"]["nats"]["url"]
                nc = await nats.connect(admin)
                await nc.publish(notice_subject("r1", INSTANCE), json.dumps(notice_doc(INSTANCE)).encode())
                await nc.flush()
                await nc.close()

            asyncio.run(notify())
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and files["/etc/sco/nats.password"].exists():
                time.sleep(0.2)
            node = kube.get_object("Node", "kn1") or {}
            assert node["spec"]["unschedulable"] is True, "the notice on the agent's own subject was acted on"
            assert not files["/etc/sco/nats.password"].exists(), "its NATS password is removed after the drain"
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out.decode()[-2000:]
