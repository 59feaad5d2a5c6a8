"""deploy/slurm/job_submit.lua on the real Slurm test bed (deploy/testbed/slurm/up; ADR-04).

The fixture installs the script and a data file written by `sco contracts sync-admission` from the signed
example bundle next to the test bed's slurm.conf, enables ``JobSubmitPlugins=lua`` with
``scontrol reconfigure`` and restores the original configuration afterwards. Jobs are submitted held so that
none of them occupies a node."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sco.cli import main
from testkit.paths import REPO
from tests.support.testbeds import SLURM_DIR

from .helpers import sync_args

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("slurm-bed")]
EXPECTED = "--comment=contract=<name>@<version>"


def _env() -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(SLURM_DIR / "slurm.conf")}


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=_env(), capture_output=True, text=True, timeout=30, check=False,
                          cwd="/tmp")


def sbatch(*args: str) -> subprocess.CompletedProcess[str]:
    return run("sbatch", "--hold", "-J", "sco-admission-test", *args, "--wrap", "sleep 1")


def job_id(result: subprocess.CompletedProcess[str]) -> str:
    match = re.search(r"Submitted batch job (\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    return match.group(1)


@pytest.fixture(scope="module")
def lua_admission(signed: Path) -> Iterator[Path]:
    conf = SLURM_DIR / "slurm.conf"
    if not conf.exists():
        pytest.fail(f"{conf} is missing: run deploy/testbed/slurm/up first")
    # Never leave the plugin on: even a leftover of an interrupted run is removed on restore.
    original = "".join(x for x in conf.read_text().splitlines(keepends=True) if not x.startswith("JobSubmitPlugins"))
    data = SLURM_DIR / "sco-admission.txt"
    script = SLURM_DIR / "job_submit.lua"
    assert main(sync_args(signed, "r1/slurm-hpc", "--lua-out", str(data))) == 0
    shutil.copy(REPO / "deploy" / "slurm" / "job_submit.lua", script)
    conf.write_text(original.rstrip("\n") + "\nJobSubmitPlugins=lua\n")
    try:
        result = run("scontrol", "reconfigure")
        assert result.returncode == 0, result.stderr
        yield data
    finally:
        conf.write_text(original)
        run("scontrol", "reconfigure")
        run("scancel", "--name", "sco-admission-test")
        script.unlink(missing_ok=True)
        data.unlink(missing_ok=True)


def test_a_job_without_a_contract_comment_is_refused_on_the_reclaimable_partition(lua_admission: Path) -> None:
    for args in (["-p", "reclaimable"], []):  # explicit, and through the default partition
        result = sbatch(*args)
        assert result.returncode != 0
        assert EXPECTED in result.stderr, result.stderr
        assert "reclaimable" in result.stderr


def test_a_job_naming_a_published_contract_is_accepted(lua_admission: Path) -> None:
    result = sbatch("-p", "reclaimable", "--comment=contract=genomics-align@5")
    assert result.returncode == 0, result.stderr
    job_id(result)


def test_an_unknown_contract_version_is_refused_naming_the_published_one(lua_admission: Path) -> None:
    result = sbatch("-p", "reclaimable", "--comment=contract=genomics-align@9")
    assert result.returncode != 0
    assert "genomics-align@9 is not published" in result.stderr and "genomics-align@5" in result.stderr


def test_the_guaranteed_partition_is_unaffected(lua_admission: Path) -> None:
    result = sbatch("-p", "guaranteed")
    assert result.returncode == 0, result.stderr


def test_a_partition_list_that_includes_the_reclaimable_partition_needs_the_contract(lua_admission: Path) -> None:
    assert sbatch("-p", "guaranteed,reclaimable").returncode != 0
    assert sbatch("-p", "guaranteed,reclaimable", "--comment=contract=risk-batch-eod@7").returncode == 0


def test_moving_a_guaranteed_job_to_the_reclaimable_partition_is_refused_without_a_contract(
        lua_admission: Path) -> None:
    jid = job_id(sbatch("-p", "guaranteed"))
    result = run("scontrol", "update", f"jobid={jid}", "partition=reclaimable")
    assert result.returncode != 0
    assert "Access/permission denied" in result.stderr, result.stderr  # scontrol shows no user message
    log = (SLURM_DIR / "log" / "slurmctld.log").read_text(errors="replace")
    assert re.search(rf"sco job_modify: refused job {jid} .*{re.escape(EXPECTED)}", log)
    assert run("scontrol", "update", f"jobid={jid}", "partition=reclaimable",
               "comment=contract=genomics-align@5").returncode == 0


def test_without_the_data_file_reclaimable_jobs_fail_closed_and_guaranteed_ones_still_run(
        lua_admission: Path) -> None:
    saved = lua_admission.read_text()
    lua_admission.unlink()
    try:
        result = sbatch("-p", "reclaimable", "--comment=contract=genomics-align@5")
        assert result.returncode != 0 and "closed" in result.stderr, result.stderr
        assert sbatch("-p", "guaranteed").returncode == 0
    finally:
        lua_admission.write_text(saved)
