"""The real ``sco-agent run`` process: boots from user-data, serves metrics, drains a Kubernetes node (API
double) on a NATS notice, ships the events, exits cleanly on SIGTERM."""

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

from contracts.subjects import notice_subject
from sco.demo.kubeapi import KubeApiDouble
from testkit.nats import NatsProcess
from testkit.paths import REPO
from tests.agent.helpers import (
    agent_config,
    make_bundle,
    new_keys,
    node_identity,
    notice_doc,
    stream_events,
    workload_entry,
)
from tests.support.ports import free_port

NODE = node_identity(node="kn1", instance="i-kn1", scheduler="kubernetes", partition="r1/k8s-batch")


def test_the_agent_process_drains_its_node_on_a_notice_and_ships_every_event(tmp_path: Path,
                                                                              events_nats: NatsProcess) -> None:
    keys = new_keys()
    cfg, _, _ = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1,
                                                               [workload_entry("web", budget=3)]),
                             nats_url=events_nats.url)
    token = tmp_path / "token"
    token.write_text("node-bound")
    port = free_port()
    with KubeApiDouble() as kube:
        kube.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})
        kube.put_object("Pod", {"metadata": {"name": "w1", "namespace": "t", "labels": {
            "sco.io/contract": "web", "sco.io/contract-version": "1"}}, "spec": {"nodeName": "kn1"},
            "status": {"phase": "Running"}})
        env = {**os.environ, "SCO_AGENT_KUBE_API": kube.url, "SCO_AGENT_KUBE_TOKEN_FILE": str(token),
               "SCO_AGENT_LOCAL_DRAIN_COMMAND": "true", "SCO_AGENT_SPOOL_FSYNC": "0"}
        proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "--log-format", "json", "run",
                                 "--userdata", str(cfg.userdata), "--public-key", str(cfg.public_key),
                                 "--state-dir", str(cfg.state_dir),
                                 "--metrics-port", str(port)], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            # generous deadlines, left as soon as the condition holds: a loaded machine boots and drains late
            deadline = time.monotonic() + 60
            body = ""
            while time.monotonic() < deadline and "\nsco_agent_nats_connected 1" not in body:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as resp:
                        body = resp.read().decode()
                except OSError:
                    pass
                time.sleep(0.1)
            assert "\nsco_agent_ready 1" in body and "\nsco_agent_nats_connected 1" in body
            node = kube.get_object("Node", "kn1") or {}
            assert node["metadata"]["labels"]["sco.io/agent-ready"] == "true"

            async def notify() -> None:
                nc = await nats.connect(events_nats.url)
                await nc.publish(notice_subject(NODE.region, NODE.instance),
                                 json.dumps(notice_doc(NODE.instance)).encode())
                await nc.flush()
                await nc.close()

            asyncio.run(notify())
            deadline = time.monotonic() + 120
            kinds: list[str] = []
            while time.monotonic() < deadline and "credentials-revoked" not in kinds:
                kinds = [e["kind"] for e in asyncio.run(stream_events(events_nats.url))]
                time.sleep(0.2)
            node = kube.get_object("Node", "kn1") or {}
            assert node["spec"]["unschedulable"] is True
            assert kube.get_object("Pod", "w1", "t") is None
            assert {"notice", "drain-started", "drained", "credentials-revoked"} <= set(kinds)
            assert not token.exists()  # the node's own token is gone (ADR-31)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0, out.decode()[-2000:]
        lines = out.decode().splitlines()  # every line it wrote is a JSON log line
        assert lines and all(json.loads(line)["component"] == "agent" for line in lines), lines[:5]
