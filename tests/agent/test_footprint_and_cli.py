"""The agent stays light (no pydantic, only the light contracts modules), its CLI and its metrics page."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from agent.drain.local import RecordingActuator
from agent.httpwire import request
from agent.metrics import Metrics, serve_metrics
from agent.runtime import Agent
from testkit.paths import REPO
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, workload_entry
from tests.support.ports import free_port

LIGHT = {"contracts", "contracts.bundle_verify", "contracts.signing", "contracts.canonical", "contracts.subjects",
         "contracts.admission",  # the shared Kubernetes label names (standard library only)
         "contracts.event_record",  # the event record the agent and the output commit share (standard library only)
         "contracts.errors",  # the package's error hierarchy (standard library only)
         "contracts.agent_record",  # the agent bundle entry (standard library only)
         "contracts.bundle_wire",  # the bundle file names and the ETag rule on the wire (standard library only)
         "contracts.agent_userdata",  # the user-data record the controller writes (standard library only)
         "contracts.cost_attributes"}  # the ledger's event attribute names, wasted_s (standard library only)


def test_loading_every_agent_module_imports_no_pydantic_and_only_the_light_contracts_modules() -> None:
    code = (  # nats-py's own imports (aiohttp when installed, as here) are taken out: the minimal venv has none
        "import sys, nats.aio.client\n"
        "before = set(sys.modules)\n"
        "import agent.cli, agent.runtime, agent.metrics\n"
        "import agent.drain.slurm, agent.drain.kube, agent.drain.local, agent.drain.credentials\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('contracts', 'pydantic', 'yaml', 'kubernetes', 'email', 'http', 'aiohttp')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    loaded = set(json.loads(out.stdout.replace("'", '"')))
    assert loaded <= LIGHT, loaded - LIGHT  # no http.client/email either: agent.httpwire speaks HTTP itself


def test_sco_agent_check_verifies_the_user_data_bundle_and_refuses_a_foreign_one(tmp_path: Path) -> None:
    keys, other = new_keys(), new_keys()
    node = node_identity()
    cfg, _, _ = agent_config(tmp_path / "ok", keys, node, make_bundle(keys, node.partition, 4, [workload_entry("etl")]))
    bad, _, _ = agent_config(tmp_path / "bad", keys, node, make_bundle(other, node.partition, 4, [workload_entry("e")]))
    run = [sys.executable, "-m", "agent.cli", "check"]
    ok = subprocess.run([*run, "--userdata", str(cfg.userdata), "--public-key", str(cfg.public_key),
                         "--state-dir", str(tmp_path / "s")], capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0 and "generation 4" in ok.stdout and "etl@1" in ok.stdout
    refused = subprocess.run([*run, "--userdata", str(bad.userdata), "--public-key", str(bad.public_key),
                              "--state-dir", str(tmp_path / "s")], capture_output=True, text=True, cwd=REPO)
    assert refused.returncode == 2 and "signature does not verify" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_sco_agent_userdata_prints_a_document_the_agent_boots_from(tmp_path: Path) -> None:
    keys = new_keys()
    node = node_identity()
    raw, sig = make_bundle(keys, node.partition, 2, [workload_entry("etl")])
    bundle_dir = tmp_path / "r1" / "slurm-batch"
    bundle_dir.mkdir(parents=True)
    (bundle_dir / "agent-bundle.json").write_bytes(raw)
    (bundle_dir / "agent-bundle.json.sig").write_bytes(sig + b"\n")
    out = subprocess.run([sys.executable, "-m", "agent.cli", "userdata", "--bundle-dir", str(bundle_dir),
                          "--instance", "i-9", "--node-name", "node9", "--scheduler", "slurm",
                          "--nats-url", "nats://relay:4222"], capture_output=True, text=True, cwd=REPO, check=True)
    (tmp_path / "ud.json").write_text(out.stdout)
    (tmp_path / "k.pub").write_bytes(keys.public_pem)
    (tmp_path / "nats.password").write_text("pw\n")
    command = [sys.executable, "-m", "agent.cli", "check", "--userdata", str(tmp_path / "ud.json"),
               "--public-key", str(tmp_path / "k.pub"), "--state-dir", str(tmp_path / "s")]
    bare = {k: v for k, v in os.environ.items() if not k.startswith("SCO_AGENT_")}
    check = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                           env={**bare, "SCO_AGENT_NATS_PASSWORD_FILE": str(tmp_path / "nats.password")})
    assert check.returncode == 0, check.stderr
    assert "as agent.r1.i-9" in check.stdout
    assert json.loads(out.stdout)["partition"] == "r1/slurm-batch"
    refused = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=bare)
    assert refused.returncode == 2 and "no credential is configured" in refused.stderr


def test_the_metrics_endpoint_serves_notices_drain_seconds_overruns_bundle_age_and_spool_depth(
        tmp_path: Path) -> None:
    keys = new_keys()
    node = node_identity()
    cfg, ud, pub = agent_config(tmp_path, keys, node, make_bundle(keys, node.partition, 1, [workload_entry("etl")]))

    async def run() -> str:
        agent = Agent(cfg, ud, pub, FakeScheduler(), RecordingActuator(), metrics=Metrics())
        await agent.start(connect=False)
        server = await serve_metrics(agent.metrics, "127.0.0.1", free_port())
        try:
            port = server.sockets[0].getsockname()[1]
            status, raw = await asyncio.to_thread(request, "GET", f"http://127.0.0.1:{port}/metrics")
            missing, _ = await asyncio.to_thread(request, "GET", f"http://127.0.0.1:{port}/nope")
            assert status == 200 and missing == 404
        finally:
            server.close()
            await server.wait_closed()
            await agent.stop()
        return raw.decode()

    body = asyncio.run(run())
    for name in ("sco_agent_notices_total", "sco_agent_drain_seconds", "sco_agent_overruns_total",
                 "sco_agent_bundle_age_seconds", "sco_agent_spool_depth", "\nsco_agent_ready 1",
                 "\nsco_agent_bundle_generation 1"):
        assert name in body, name
    assert "# TYPE sco_agent_first_action_seconds histogram" in body
