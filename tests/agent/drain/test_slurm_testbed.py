"""Against the real Slurm test bed (deploy/testbed/slurm/up) and a real NATS server: a notice for node1
drains it, the running job gets its signal and is requeued onto another node, the drain is verified, and
the events reach JetStream. Also: with slurmctld not answering (SIGSTOP), the job's processes on node1 are
signalled directly after 800 ms."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import pytest

from agent.drain.local import SlurmProcessActuator
from agent.drain.slurm import SlurmAdapter
from agent.runtime import Agent
from contracts.events import Event
from contracts.subjects import notice_subject
from testkit.nats import NatsProcess
from tests.agent.helpers import (
    agent_config,
    make_bundle,
    new_keys,
    node_identity,
    notice_doc,
    stream_events,
    wait_for,
    workload_entry,
)
from tests.support.testbeds import SLURM_DIR

# the Slurm test bed and its own nats-server
pytestmark = [pytest.mark.testbed, pytest.mark.services, pytest.mark.xdist_group("slurm-bed")]

TESTBED = SLURM_DIR
SLURM_CONF = str(TESTBED / "slurm.conf")
NODE = node_identity(node="node1", instance="i-node1")
JOB = """#!/bin/bash
trap 'echo "USR1 $SLURMD_NODENAME $SLURM_RESTART_COUNT" >> {marks}' USR1
echo "start $SLURMD_NODENAME ${{SLURM_RESTART_COUNT:-0}}" >> {marks}
while true; do sleep 0.1; done
"""


def slurm(*argv: str, check: bool = True) -> str:
    env = {**os.environ, "SLURM_CONF": SLURM_CONF}
    proc = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=20, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def node_state(node: str) -> tuple[str, str]:
    state, _, reason = slurm("sinfo", "-h", "-N", "-n", node, "-o", "%T|%E").strip().partition("|")
    return state, reason


def job(job_id: str) -> dict[str, Any]:
    for j in json.loads(slurm("squeue", "--json"))["jobs"]:
        if str(j["job_id"]) == job_id:
            return dict(j)
    return {}


@pytest.fixture
def testbed(tmp_path: Path) -> Iterator[Path]:
    if not Path(SLURM_CONF).exists():
        pytest.fail("the Slurm test bed is not up: run deploy/testbed/slurm/up")
    slurm("scancel", "--partition=reclaimable", check=False)
    for n in ("node1", "node2", "node3"):
        slurm("scontrol", "update", f"nodename={n}", "state=resume", check=False)
    yield tmp_path
    slurm("scancel", "--partition=reclaimable", check=False)
    for n in ("node1", "node2", "node3"):
        slurm("scontrol", "update", f"nodename={n}", "state=resume", check=False)


def submit_on_node1(tmp_path: Path) -> tuple[str, Path]:
    marks = tmp_path / "marks.txt"
    script = tmp_path / "job.sh"
    script.write_text(JOB.format(marks=marks))
    script.chmod(0o755)
    for n in ("node2", "node3"):  # make node1 the only place it can start; the requeue may go anywhere
        slurm("scontrol", "update", f"nodename={n}", "state=drain", "reason=test-setup")
    out = slurm("sbatch", "--parsable", "--requeue", "-p", "reclaimable", "--comment=contract=etl@1",
                "--open-mode=append", "-o", str(tmp_path / "job.out"), str(script))
    job_id = out.strip().split(";")[0]
    deadline = time.monotonic() + 120  # a condition wait: patient on a loaded machine
    while time.monotonic() < deadline and not (marks.exists() and "start node1" in marks.read_text()):
        time.sleep(0.1)
    for n in ("node2", "node3"):
        slurm("scontrol", "update", f"nodename={n}", "state=resume")
    assert job(job_id).get("job_state") == "RUNNING" and job(job_id).get("nodes") == "node1"
    return job_id, marks


def test_a_notice_for_node1_drains_it_signals_the_job_requeues_it_elsewhere_and_events_reach_jetstream(
        testbed: Path) -> None:
    job_id, marks = submit_on_node1(testbed)
    listed = {u.unit_id: u for u in SlurmAdapter("node1", SLURM_CONF).units()}  # the job's StartTime reaches it
    start = listed[job_id].started_at()
    assert start is not None and abs((datetime.now(UTC) - start).total_seconds()) < 60
    assert listed[job_id].contract_ref == "etl@1" and listed[job_id].attributes["state"] == "RUNNING"
    nats_srv = NatsProcess(testbed / "nats")
    nats_srv.start()
    keys = new_keys()
    cfg, ud, pub = agent_config(testbed / "agent", keys, NODE,
                                make_bundle(keys, NODE.partition, 1, [workload_entry("etl", budget=4)]),
                                nats_url=nats_srv.url, slurm_conf=SLURM_CONF)

    async def run() -> tuple[Agent, list[dict[str, Any]], float]:
        from tests.agent.helpers import ensure_stream

        await ensure_stream(nats_srv.url)
        agent = Agent(cfg, ud, pub, SlurmAdapter("node1", SLURM_CONF), SlurmProcessActuator("node1"))
        await agent.start()
        assert await wait_for(lambda: agent._subs, 60)
        nc = await nats.connect(nats_srv.url)
        sent = time.monotonic()
        await nc.publish(notice_subject(NODE.region, NODE.instance), json.dumps(notice_doc(NODE.instance)).encode())
        await nc.flush()
        await nc.close()
        await wait_for(lambda: agent.drains, 60)
        await asyncio.wait_for(asyncio.gather(*agent.drains), 30)
        assert await agent.flush_events(timeout=10)
        events = await stream_events(nats_srv.url)
        await agent.stop()
        return agent, events, sent

    try:
        agent, events, _ = asyncio.run(run())
    finally:
        nats_srv.stop()
    report = agent.reports[0]
    assert report.path == "scheduler" and report.first_action_s is not None and report.first_action_s < 2.0
    state, reason = node_state("node1")
    assert "drain" in state and "sco reclaim notice" in reason
    assert "USR1 node1" in marks.read_text()  # the batch step got the contract's signal on node1
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        j = job(job_id)
        if j.get("job_state") == "RUNNING" and j.get("nodes") in ("node2", "node3") \
                and f"start {j['nodes']} 1" in marks.read_text():
            break
        time.sleep(0.2)
    j = job(job_id)
    assert j.get("restart_cnt", 0) >= 1 and j.get("job_state") == "RUNNING" and j.get("nodes") in ("node2", "node3")
    assert "start " + str(j["nodes"]) + " 1" in marks.read_text()
    assert report.workloads["etl@1"]["remaining"] == 0 and not report.workloads["etl@1"]["overrun"]
    kinds = [str(Event.model_validate(e).kind) for e in events]
    assert "notice" in kinds
    assert "drained" in kinds and kinds.count("drain-started") >= 3  # unschedulable, evict, signal, finish
    drained = next(e for e in events if e["kind"] == "drained")
    assert drained["workload"] == "etl" and drained["attributes"]["remaining"] == 0
    assert drained["attributes"]["node"] == "node1"
    # the job ran a few seconds since its StartTime; the test contract checkpoints every 30 min, no final write
    assert drained["attributes"]["wasted_units"] == 1 and 0 <= drained["attributes"]["wasted_s"] < 120


def test_with_slurmctld_not_answering_the_jobs_processes_on_node1_are_signalled_directly_after_800_ms(
        testbed: Path) -> None:
    job_id, marks = submit_on_node1(testbed)
    keys = new_keys()
    cfg, ud, pub = agent_config(testbed / "agent", keys, NODE,
                                make_bundle(keys, NODE.partition, 1, [workload_entry("etl", budget=3)]),
                                slurm_conf=SLURM_CONF)
    ctld = int((TESTBED / "run" / "slurmctld.pid").read_text())
    actuator = SlurmProcessActuator("node1")

    async def run() -> tuple[Agent, float]:
        agent = Agent(cfg, ud, pub, SlurmAdapter("node1", SLURM_CONF, timeout_s=5), actuator)
        await agent.start(connect=False)
        from agent.notice.messages import parse_notice

        os.kill(ctld, signal.SIGSTOP)  # slurmctld hangs: every scontrol/squeue call blocks
        try:
            received = time.monotonic()
            agent.on_notice(parse_notice(notice_doc(NODE.instance), "nats", received))
            await asyncio.wait_for(asyncio.gather(*agent.drains), 30)
        finally:
            os.kill(ctld, signal.SIGCONT)
        await agent.stop()
        return agent, received

    agent, _ = asyncio.run(run())
    report = agent.reports[0]
    assert report.path == "local" and report.local_at_s is not None and 0.78 <= report.local_at_s < 1.2
    assert actuator.signalled and actuator.signalled[0][0] == job_id and actuator.signalled[0][2] == "USR1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "USR1 node1" not in marks.read_text():
        time.sleep(0.1)
    assert "USR1 node1" in marks.read_text()
    assert report.workloads["etl@1"]["remaining"] == 0  # the job's processes are gone from node1
    kinds = [e.read()["kind"] for e in agent.spool.head(1000)]
    assert "drain-local" in kinds and "drained" in kinds
