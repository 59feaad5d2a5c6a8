"""``sco controller run --agent-nats-url stack --agent-credentials stack``: the real controller process launches
into the simulated region with the cloud-config and mints each launched instance's own NATS user in the stack
(``$SCO_HOME/credentials.json`` and the running nats-server)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controllers.providers.simulated import SimulatedProvider
from sco.stack import manager, services
from tests.controllers.controller.helpers import PARTITION
from tests.controllers.controller.test_process_faults import _bundle, region_url  # noqa: F401 (a fixture)
from tests.support.paths import REPO

NATS_ONLY = {"SCO_POSTGRES_URL": "postgresql://unused@127.0.0.1:1/x", "SCO_CLICKHOUSE_URL": "http://127.0.0.1:1"}


@pytest.fixture
def stack_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="sco-ctlagents-")) / ".sco"
    try:
        manager.up(home, env=NATS_ONLY, fast=True)
        yield home
    finally:
        manager.down(home)
        shutil.rmtree(home.parent, ignore_errors=True)


def test_the_controller_process_mints_each_launched_instance_its_own_nats_user(
        tmp_path: Path, region_url: str, pg_migrated_url: str, stack_home: Path) -> None:  # noqa: F811
    bundle = _bundle(tmp_path)
    items = [{"source": "slurm", "item_id": f"e{n}", "contract_ref": "etl@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for n in range(8)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    done = subprocess.run(
        [sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle", str(bundle[0]),
         "--pubkey", str(bundle[1]), "--governance-key", str(bundle[2]), "--sim-url", region_url,
         "--postgres", pg_migrated_url, "--claims-file", str(tmp_path / "claims.json"), "--interval", "0.2",
         "--recovery-share", "1", "--holder", "controller-agents", "--passes", "12",
         "--agent-nats-url", "stack", "--agent-credentials", "stack",
         "--metadata-url", f"{region_url}/metadata/{{instance}}"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SCO_HOME": str(stack_home), "SCO_DEBUG": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    launched = {i.instance_id for i in SimulatedProvider(region_url, region="r1").list_instances() if i.owner}
    assert launched, done.stdout[-2000:]
    agents = json.loads((stack_home / "credentials.json").read_text())["agents"]
    assert {key.split("/", 1)[1] for key in agents if key.startswith("r1/")} == launched
    port = int(json.loads((stack_home / "stack.json").read_text())["services"]["nats"]["port"])
    some = sorted(launched)[0]
    assert services.nats_accepts(port, f"agent.r1.{some}", agents[f"r1/{some}"])
