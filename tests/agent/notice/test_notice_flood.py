"""A flood of notices for the node's own instance, over a real NATS server to the real ``sco-agent run``
process: one drain, one event per distinct notice id up to a bound, counters for the rest (copies and the
distinct ones past the bound), and the process's peak RSS (``VmHWM``) under the unit's MemoryHigh."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nats

from agent.notice.check import MAX_RECORDED_NOTICES
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
FLOOD = 10_000
DISTINCT = 4_000  # ids flood-0 … flood-3999, then again: 6,000 copies of notices already seen
UNIT = REPO / "deploy" / "agent" / "sco-agent.service"


# ``sco-agent run`` as in its own venv (bench/agent_footprint.py): nats-py imports aiohttp when it is installed,
# as it is in the project's venv (~10 MiB), but the agent's venv holds only nats-py and cryptography
AS_DEPLOYED = "import sys; sys.modules['aiohttp'] = None; from agent.cli import main; sys.exit(main())"


def memory_high_mib() -> float:
    """The unit's ``MemoryHigh=`` (``48M``) in MiB."""
    match = re.search(r"^MemoryHigh=(\d+)M$", UNIT.read_text(), re.MULTILINE)
    assert match, f"{UNIT} has no MemoryHigh=<n>M"
    return float(match.group(1))


def status_mib(pid: int, field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (the peak since the process started) from /proc, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def scrape(port: int) -> dict[str, float]:
    """Every series summed over its labels (``name`` → total)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            body = resp.read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            base = name.split("{", 1)[0]
            out[base] = out.get(base, 0.0) + float(value)
    return out


async def flood(url: str) -> None:
    nc = await nats.connect(url)
    subject = notice_subject(NODE.region, NODE.instance)
    for i in range(FLOOD):
        await nc.publish(subject, json.dumps(notice_doc(NODE.instance, notice_id=f"flood-{i % DISTINCT}")).encode())
        if i % 500 == 499:
            await nc.flush()
    await nc.flush()
    await nc.close()


def test_ten_thousand_own_notices_give_one_drain_an_event_per_distinct_id_up_to_a_bound_and_peak_rss_under_memory_high(
        tmp_path: Path, events_nats: NatsProcess) -> None:
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
        proc = subprocess.Popen([sys.executable, "-c", AS_DEPLOYED, "run", "--userdata", str(cfg.userdata),
                                 "--public-key", str(cfg.public_key), "--state-dir", str(cfg.state_dir),
                                 "--metrics-port", str(port)], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and scrape(port).get("sco_agent_nats_connected") != 1:
                time.sleep(0.1)
            assert scrape(port).get("sco_agent_nats_connected") == 1
            boot = status_mib(proc.pid, "VmRSS")
            asyncio.run(flood(events_nats.url))
            handled = ("sco_agent_notices_total", "sco_agent_notices_duplicate_total",
                       "sco_agent_notices_refused_total", "sco_agent_nats_dropped_total")
            deadline, seen = time.monotonic() + 120, 0.0
            while time.monotonic() < deadline and seen < FLOOD:
                seen = sum(scrape(port).get(name, 0.0) for name in handled)
                time.sleep(0.1)
            metrics = scrape(port)
            assert seen == FLOOD, metrics  # every notice admitted, refused or dropped at the client: none lost
            deadline, kinds = time.monotonic() + 20, []
            while time.monotonic() < deadline and "credentials-revoked" not in kinds:
                events = asyncio.run(stream_events(events_nats.url))
                kinds = [e["kind"] for e in events]
                time.sleep(0.2)
            peak = status_mib(proc.pid, "VmHWM")  # the process's peak RSS over its whole life
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0, out.decode()[-2000:]
    notices = [e for e in events if e["kind"] == "notice"]
    actions = [e["attributes"]["action"] for e in notices]
    assert actions.count("drain") == 1 and kinds.count("credentials-revoked") == 1  # one drain
    assert set(actions) <= {"drain", "already-draining"}
    ids = [e["attributes"]["notice_id"] for e in notices]
    assert len(ids) == len(set(ids)) <= 1 + MAX_RECORDED_NOTICES  # one event per distinct id, up to the bound
    admitted = metrics.get("sco_agent_notices_total", 0.0)
    duplicates = metrics.get("sco_agent_notices_duplicate_total", 0.0)
    assert metrics.get("sco_agent_notices_coalesced_total", 0.0) == admitted - len(notices)  # the counter
    assert duplicates > 0 and admitted <= DISTINCT  # a copy of a seen id is counted, never admitted again
    assert peak < memory_high_mib(), f"peak RSS (VmHWM) {peak:.1f} MiB (connected: {boot:.1f} MiB)"
    print(f"\nflood of {FLOOD} ({DISTINCT} distinct ids): admitted {admitted:.0f}, copies {duplicates:.0f}, "
          f"dropped at the client {metrics.get('sco_agent_nats_dropped_total', 0.0):.0f}, events {len(notices)}, "
          f"RSS connected {boot:.1f} MiB, peak (VmHWM) {peak:.1f} MiB")
