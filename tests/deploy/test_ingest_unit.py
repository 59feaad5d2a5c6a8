"""deploy/ingest/: the ingest as its own long-running service (issue 17), not a pass inside a Dagster sensor."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

UNIT = REPO / "deploy" / "ingest" / "sco-ingest.service"


def _settings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_the_unit_runs_sco_ingest_for_good_restarts_it_and_keeps_credentials_off_the_command_line() -> None:
    s = _settings()
    assert s["ExecStart"] == ["/opt/sco/bin/sco ingest"]  # long-running: no --once
    assert s["Restart"] == ["always"] and s["EnvironmentFile"] == ["/etc/sco/ingest.env"]
    assert s["DynamicUser"] == ["yes"] and s["NoNewPrivileges"] == ["yes"] and s["CapabilityBoundingSet"] == [""]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit_and_rates_its_exposure_ok(tmp_path: Path) -> None:
    unit = tmp_path / "sco-ingest.service"
    unit.write_text(UNIT.read_text().replace("/opt/sco/bin/sco ingest", "/bin/true")
                    .replace("EnvironmentFile=/etc/sco/ingest.env", "EnvironmentFile=-/etc/sco/ingest.env"))
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert not [line for line in verify.stderr.splitlines() if "sco-ingest" in line], verify.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", str(unit)],
                              capture_output=True, text=True)
    level = re.search(r"Overall exposure level for sco-ingest.service: ([0-9.]+)", security.stdout)
    assert level and float(level.group(1)) <= 3.0, security.stdout[-800:]
