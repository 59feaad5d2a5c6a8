"""The Slurm batch helper on the real Slurm test bed: the drain signal sent to the batch shell only
(`scancel --signal=USR1 --batch`, as the node agent does) reaches the work, which writes its final state, and
the job is requeued and starts again from that state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.paths import REPO
from tests.support.testbeds import SLURM_DIR

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("slurm-bed")]

WORKER = """
import json, signal, sys, time
from pathlib import Path
state = Path(sys.argv[1])
data = json.loads(state.read_text()) if state.exists() else {"starts": 0, "finals": 0, "step": 0}
data["starts"] += 1
state.write_text(json.dumps(data))
stop = []
signal.signal(signal.SIGUSR1, lambda *_: stop.append(1))
while not stop and data["step"] < 10_000:
    data["step"] += 1
    time.sleep(0.01)
data["finals"] += 1 if stop else 0
state.write_text(json.dumps(data))  # the "final checkpoint"
"""


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLURM_CONF": str(SLURM_DIR / "slurm.conf")}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=30, check=False)


def job_state(job: str) -> dict[str, object]:
    out = json.loads(run("squeue", "--json").stdout or "{}")  # 22.05 ignores -j with --json
    return next((j for j in out.get("jobs", []) if str(j.get("job_id")) == job), {})


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_drain_signal_reaches_the_work_and_the_job_is_requeued_from_its_final_state(tmp_path: Path) -> None:
    if not (SLURM_DIR / "slurm.conf").exists():
        pytest.fail("run deploy/testbed/slurm/up first")
    (tmp_path / "worker.py").write_text(WORKER)
    state = tmp_path / "state.json"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexec {sys.executable} -m workload.checkpoint.slurm_batch --signal SIGUSR1 "
                      f"--budget-s 20 -- {sys.executable} {tmp_path / 'worker.py'} {state}\n")
    script.chmod(0o755)
    result = run("sbatch", "--parsable", "-p", "reclaimable", "--requeue", "--open-mode=append",
                 "--comment=contract=genomics-align@5", "-J", "sco-requeue-test", f"--chdir={REPO}",
                 f"--output={tmp_path / 'job.log'}", str(script))
    assert result.returncode == 0, result.stderr
    job = result.stdout.strip().split(";")[0]
    try:
        wait_for(lambda: state.exists() and json.loads(state.read_text())["starts"] == 1, 120, "the first start")
        assert run("scancel", "--signal=USR1", "--batch", job).returncode == 0
        wait_for(lambda: json.loads(state.read_text())["finals"] == 1, 120, "the final state on the signal")
        wait_for(lambda: int(str(job_state(job).get("restart_cnt", 0))) >= 1, 120, "the requeue")
        # The requeued job starts again after the test bed's cred_expire (5 s) + 1 s; forcing StartTime=now
        # onto the same node gets "Job credential revoked" and ends the job.
        wait_for(lambda: json.loads(state.read_text())["starts"] == 2, 180, "the restart")
        data = json.loads(state.read_text())
        assert data["step"] > 0 and data["finals"] == 1
        log = (tmp_path / "job.log").read_text()
        assert "forwarding to the work" in log and "requeued" in log
    finally:
        run("scancel", job)
