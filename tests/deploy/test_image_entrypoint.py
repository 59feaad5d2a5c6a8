"""The image's ENTRYPOINT (deploy/images/entrypoint.sh) against the two ways it is called: the manifests' args
are ``sco`` sub-commands, the Dagster chart's user-deployment args are a whole ``dagster api grpc …`` command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from testkit.paths import REPO

ENTRYPOINT = REPO / "deploy" / "images" / "entrypoint.sh"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_dockerfile_enters_through_the_script() -> None:
    text = (REPO / "deploy" / "images" / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["/usr/local/bin/sco-entrypoint"\]$', text, re.M)
    assert "COPY deploy/images/entrypoint.sh /usr/local/bin/sco-entrypoint" in text


def test_a_sco_sub_command_as_args_runs_sco() -> None:
    run = _run("controller", "run", "--help")
    assert run.returncode == 0, run.stderr
    assert "usage: sco controller run" in run.stdout


def test_the_dagster_charts_grpc_args_run_dagster_not_sco() -> None:
    run = _run("dagster", "api", "grpc", "--help")
    assert run.returncode == 0, run.stderr
    assert "Serve the Dagster inter-process API over GRPC" in run.stdout


def test_no_args_prints_scos_help() -> None:
    run = _run()
    assert run.returncode == 0 and "usage: sco" in run.stdout
