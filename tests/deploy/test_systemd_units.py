"""The VM install: every unit in deploy/systemd passes ``systemd-analyze verify``, is rated OK by ``systemd-analyze
security``, and runs a command line the ``sco`` CLI accepts."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sco.cli import build_parser
from testkit.paths import REPO

UNITS = REPO / "deploy" / "systemd"
SERVICES = sorted(UNITS.glob("*.service"))
TIMERS = sorted(UNITS.glob("*.timer"))
# what an operator's env file sets (docs/operations.md): the values only have to be of the right shape
EXAMPLE_ENV = {"SCO_PARTITION": "r1/slurm-hpc", "SCO_REGION": "r1", "SCO_DISTRIBUTOR_HOST": "10.30.0.5",
               "SCO_METRICS_PORT": "9300",
               "SCO_CONTROLLER_ARGS": "--clouds-yaml /etc/sco/clouds.yaml --credential-issuer sco-issuer "
                                      "--image sco-agent"}
needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def _instance(unit: Path) -> str:
    return unit.name.replace("@.service", "@r1.service")


def _copies(tmp_path: Path) -> list[Path]:
    out = []
    for unit in SERVICES:
        copy = tmp_path / _instance(unit)
        copy.write_text(re.sub(r"/opt/sco/bin/[\w-]+", "/bin/true", unit.read_text()))
        out.append(copy)
    for timer in TIMERS:  # verified beside the service each one starts
        (tmp_path / timer.name).write_text(timer.read_text())
        out.append(tmp_path / timer.name)
    return out


def test_there_is_a_unit_for_every_long_running_process() -> None:
    assert {u.name for u in SERVICES} == {
        "sco-controller@.service", "sco-exclusion-watcher@.service", "sco-ingest.service", "sco-outbox-relay.service",
        "sco-dagster-code.service", "sco-dagster-daemon.service", "sco-dagster-webserver.service",
        "sco-distributor.service", "sco-bundle-rollout.service"}
    assert {t.name for t in TIMERS} == {"sco-bundle-rollout.timer"}
    assert all((UNITS / t.name.replace(".timer", ".service")).is_file() for t in TIMERS)


@needs_systemd
def test_systemd_verifies_every_unit(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    run = subprocess.run(["systemd-analyze", "verify", *map(str, copies)], capture_output=True, text=True,
                         cwd=tmp_path)
    ours = [line for line in run.stderr.splitlines() if "sco-" in line]
    assert not ours, run.stderr


@needs_systemd
def test_systemd_rates_every_units_exposure_ok(tmp_path: Path) -> None:
    for copy in [c for c in _copies(tmp_path) if c.suffix == ".service"]:
        run = subprocess.run(["systemd-analyze", "security", "--offline=true", str(copy)], capture_output=True,
                             text=True, cwd=tmp_path)
        level = re.search(rf"Overall exposure level for {re.escape(copy.name)}: ([0-9.]+)", run.stdout)
        assert level and float(level.group(1)) <= 2.0, (copy.name, run.stdout[-400:])


def _exec_start(unit: Path) -> list[str]:
    line = next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart="))
    text = line.removeprefix("ExecStart=").replace("%i", "r1")
    for name, value in EXAMPLE_ENV.items():
        text = text.replace("${" + name + "}", value).replace("$" + name, value)
    assert "$" not in text, f"{unit.name}: an environment variable without an example value: {text}"
    return shlex.split(text)


@pytest.mark.parametrize("unit", [u for u in SERVICES if "/sco " in u.read_text()], ids=lambda u: u.name)
def test_each_sco_units_command_line_is_one_the_cli_accepts(unit: Path) -> None:
    argv = _exec_start(unit)
    assert argv[0] == "/opt/sco/bin/sco"
    args = build_parser().parse_args(argv[1:])  # argparse exits (SystemExit) on anything it does not know
    assert callable(getattr(args, "handler", None))


def test_the_dagster_units_serve_the_code_location_the_workspace_names() -> None:
    code = _exec_start(UNITS / "sco-dagster-code.service")
    module = code[code.index("--module-name") + 1]
    assert (REPO / Path(*module.split("."))).with_suffix(".py").is_file()
    workspace = yaml.safe_load((UNITS / "dagster" / "workspace.yaml").read_text())
    grpc = workspace["load_from"][0]["grpc_server"]
    assert str(grpc["port"]) == code[code.index("--port") + 1] and grpc["host"] == "127.0.0.1"
    for unit in ("sco-dagster-daemon.service", "sco-dagster-webserver.service"):
        argv = _exec_start(UNITS / unit)
        assert argv[argv.index("--workspace") + 1] == "/etc/sco/dagster/workspace.yaml"
