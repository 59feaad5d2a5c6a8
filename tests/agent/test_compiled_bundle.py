"""The agent boots from what the real compiler publishes: `sco keys init` + `sco contracts compile` on the
example repository, `sco-agent userdata` for the node, then a drain by the compiled contracts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from agent.config import AgentConfig, parse_userdata
from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.notice.messages import parse_notice
from agent.runtime import Agent
from testkit.paths import REPO
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import notice_doc
from tests.support.cli import sco


def test_a_bundle_compiled_by_sco_boots_the_agent_and_drives_the_drain(tmp_path: Path) -> None:
    assert sco("keys", "init", "--dir", str(tmp_path / "keys")).returncode == 0
    compiled = sco("contracts", "compile", str(REPO / "deploy" / "contracts"), "--out", str(tmp_path / "out"),
                   "--key", str(tmp_path / "keys" / "signing.key.pem"),
                   "--governance-key", str(tmp_path / "keys" / "governance.key.pem"), cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    bundle_dir = tmp_path / "out" / "r1" / "slurm-hpc"
    payload = json.loads((bundle_dir / "agent-bundle.json").read_bytes())
    refs = sorted(payload["workloads"])
    out = subprocess.run([sys.executable, "-m", "agent.cli", "userdata", "--bundle-dir", str(bundle_dir),
                          "--instance", "i-hpc-1", "--node-name", "node1", "--scheduler", "slurm"],
                         check=True, capture_output=True, text=True, cwd=REPO).stdout
    ud = parse_userdata(out.encode())
    cfg = AgentConfig(state_dir=tmp_path / "state", metrics_port=0)
    sched = FakeScheduler(units_on_node=[Unit(str(i), ref) for i, ref in enumerate(refs[:3])])

    async def run() -> Agent:
        agent = Agent(cfg, ud, (tmp_path / "keys" / "signing.pub.pem").read_bytes(), sched, RecordingActuator())
        await agent.start(connect=False)
        assert agent.bundles.current is not None and sorted(agent.bundles.current.contracts) == refs
        agent.on_notice(parse_notice(notice_doc("i-hpc-1"), "nats", agent.clock.monotonic()))
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return agent

    agent = asyncio.run(run())
    report = agent.reports[0]
    assert sorted(report.workloads) == refs[:3]
    for ref in refs[:3]:
        compiled = payload["workloads"][ref]
        assert report.workloads[ref]["budget_s"] == compiled["drain_budget_s"]
        assert report.workloads[ref]["remaining"] == 0
    assert sched.ready_calls == [(True, "")]
