"""``sco distributor serve`` as an operator runs it: the compiled bundles behind the stack's credentials (each
minted agent as its own user, the controller by its password or bearer token), an agent minted while it runs
let in at once, and one-line errors for a wrong start."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from agent.httpwire import exchange
from sco.stack import credentials as creds_mod
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.support.cli import sco
from tests.support.paths import REPO


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _mint(home: Path, key: str, password: str) -> None:
    creds = creds_mod.load_or_create(home)
    creds = replace(creds, agents={**creds.agents, key: password})
    creds_mod.write_private(home / creds_mod.CREDENTIALS_FILE, creds.to_json())


def test_serve_admits_the_stack_agents_and_controller_and_follows_new_mints(tmp_path: Path) -> None:
    home = tmp_path / ".sco"
    home.mkdir()
    _mint(home, "r1/i-1", "pw-1")
    controller = creds_mod.load_or_create(home).nats["controller"]
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/slurm-hpc", 1, [workload_entry("etl")])
    write_bundle_dir(tmp_path / "out" / "r1" / "slurm-hpc", raw, sig)
    (tmp_path / "out" / "r1" / "slurm-hpc" / "controller-bundle.json").write_text(json.dumps({"generation": 1}))
    proc = subprocess.Popen([sys.executable, "-m", "sco", "distributor", "serve", "--bundles", str(tmp_path / "out"),
                             "--port", "0", "--home", str(home)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving r1/slurm-hpc" in line, line
        url = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
        agent_path = url + "/r1/slurm-hpc/agent-bundle.json"
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-1", "pw-1"))[2] == raw
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-2", "pw-2"))[0] == 401
        _mint(home, "r1/i-2", "pw-2")  # what the controller's launch does through StackAgentCredentials
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-2", "pw-2"))[0] == 200
        ctl = {"Authorization": f"Bearer {controller}"}
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json", headers=ctl)[0] == 200
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json",
                        headers=_basic("controller", controller))[0] == 200
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json",
                        headers=_basic("agent.r1.i-1", "pw-1"))[0] == 403
        assert "sco_distributor_bundle_age_seconds" in exchange("GET", url + "/metrics", headers=ctl)[2].decode()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_serve_refuses_to_start_without_bundles_or_a_stack(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    missing = sco("distributor", "serve", "--bundles", str(tmp_path / "nope"), "--home", str(tmp_path / ".sco"))
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    no_stack = sco("distributor", "serve", "--bundles", str(tmp_path / "out"), "--home", str(tmp_path / ".sco"))
    assert no_stack.returncode == 2 and "run `sco up` first" in no_stack.stderr
    (tmp_path / ".sco").mkdir()
    creds_mod.load_or_create(tmp_path / ".sco")
    empty = sco("distributor", "serve", "--bundles", str(tmp_path / "out"), "--home", str(tmp_path / ".sco"))
    assert empty.returncode == 2 and "holds no <region>/<cluster>/agent-bundle.json" in empty.stderr
