"""The Slurm local path without Slurm: fake job processes (environment as slurmstepd sets it, under a
parent named ``slurmstepd``) are found through /proc and signalled per workload."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from signal import SIGKILL

import pytest

from agent.drain.adapters import LocalPlan
from agent.drain.local import SlurmProcessActuator, job_processes
from agent.model import Contract
from tests.agent.helpers import workload_entry


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    stepd = tmp_path / "slurmstepd"
    stepd.symlink_to("/bin/bash")
    procs = {}
    for job, contract, node in (("101", "a@1", "nodeX"), ("102", "b@1", "nodeX"), ("103", "a@1", "nodeY")):
        env = {**os.environ, "SLURM_JOB_ID": job, "SLURMD_NODENAME": node, "SCO_CONTRACT": contract}
        # its own process group: the teardown kills the ``sleep`` child with its fake slurmstepd
        procs[job] = subprocess.Popen([str(stepd), "-c", "sleep 30; :"], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        while len({p.job_id for p in job_processes("nodeX") if p.batch}) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        yield procs
    finally:
        for proc in procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, SIGKILL)
            proc.wait()


def plan(name: str, signal: str) -> LocalPlan:
    return LocalPlan(Contract.from_entry(f"{name}@1", workload_entry(name, signal=signal)), time.monotonic() + 5)


def test_each_workloads_jobs_get_their_own_signal_and_finish_touches_only_that_workload(
        jobs: dict[str, subprocess.Popen[bytes]]) -> None:
    found = job_processes("nodeX")
    assert {p.job_id for p in found} == {"101", "102"}  # not job 103 on nodeY
    assert {p.job_id for p in found if p.batch} == {"101", "102"}
    actuator = SlurmProcessActuator("nodeX")
    actuator.start([plan("a", "SIGUSR1")], "slurmctld did not answer")
    assert [(job, sig) for job, _, sig in actuator.signalled] == [("101", "SIGUSR1")]
    actuator.finish([plan("a", "SIGUSR1")])
    deadline = time.monotonic() + 5
    while "101" in {p.job_id for p in job_processes("nodeX")} and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {p.job_id for p in job_processes("nodeX")}
    assert left == {"102"} and actuator.remaining() == 1  # b's job is untouched
    assert jobs["103"].poll() is None
