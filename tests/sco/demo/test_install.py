"""The newcomer's install: ``pip install sco[agent]`` in a fresh venv, for real (pip, the pinned constraints,
this checkout). The node agent must get nats-py and cryptography and nothing of the CLI's core (no pydantic,
no PyYAML), and ``sco-agent`` must run there."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from testkit.paths import REPO

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path) -> str:
    # outside the checkout and without PYTHONPATH: the venv must import the installed copy, not this tree
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result.stdout


def test_installing_the_agent_extra_pulls_no_pydantic_nor_pyyaml_and_sco_agent_runs(tmp_path: Path) -> None:
    env_dir = tmp_path / "agentvenv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
          "-c", str(REPO / "requirements" / "constraints.txt"), f"{REPO}[agent]"], tmp_path)
    frozen = _run([str(bin_dir / "python"), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                  tmp_path)
    names = {line.split("==")[0].lower() for line in frozen.splitlines() if "==" in line}
    assert {"nats-py", "cryptography", "sco"} <= names, frozen
    assert not names & {"pydantic", "pydantic-core", "pyyaml"}, frozen
    usage = _run([str(bin_dir / "sco-agent"), "--help"], tmp_path)
    assert "usage: sco-agent" in usage
    # every agent module imports in that venv (the console script alone loads only the CLI's entry module)
    _run([str(bin_dir / "python"), "-c",
          "import importlib, pkgutil, agent\n"
          "for m in pkgutil.walk_packages(agent.__path__, 'agent.'):\n"
          "    importlib.import_module(m.name)\n"], tmp_path)
