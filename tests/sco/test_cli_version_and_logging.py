"""``sco --version`` prints the installed package's version; the CLI names each command's log lines."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

from sco.cli import component
from testkit.paths import REPO


def test_sco_version_prints_the_package_version() -> None:
    run = subprocess.run([sys.executable, "-m", "sco", "--version"], capture_output=True, text=True, cwd=REPO,
                         timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"sco {version('sco')}"


def test_the_component_is_the_command_path() -> None:
    assert component(["controller", "run", "--partition", "r1/a"]) == "controller-run"
    assert component(["--log-format", "json", "ingest", "--nats", "x"]) == "ingest"
    assert component(["outbox", "relay"]) == "outbox-relay"
    assert component([]) == "sco"



def test_sco_agent_version_prints_the_package_version() -> None:
    run = subprocess.run([sys.executable, "-m", "agent.cli", "--version"], capture_output=True, text=True, cwd=REPO,
                         timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"sco-agent {version('sco')}"
