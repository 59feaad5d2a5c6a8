"""The real Slurm test bed, when it is up: which of its nodes the demo may use, a job's state, and cancelling the
demo's own jobs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

__all__ = ["DEMO_JOB", "cancel_demo_jobs", "slurm_job_state", "slurm_testbed"]

DEMO_JOB = "sco-demo"  # the demo's Slurm jobs, cancelled at the start and the end of every run


def cancel_demo_jobs(conf: str) -> None:
    """Cancel the demo's jobs until none is left: a job mid-requeue survives the first scancel."""
    env = {**os.environ, "SLURM_CONF": conf}
    for _ in range(5):
        subprocess.run(["scancel", "--name", DEMO_JOB], capture_output=True, timeout=10, env=env)
        left = subprocess.run(["squeue", "-h", "-n", DEMO_JOB, "-t", "PD,R,CG,RQ,RH,S", "-o", "%i"],
                              capture_output=True, text=True, timeout=10, env=env).stdout.split()
        if not left:
            return
        time.sleep(1.0)


def slurm_job_state(job: str, conf: str | None) -> str:
    """Where the job runs now and how often it was requeued (``scontrol show job``)."""
    out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, timeout=10,
                         env={**os.environ, "SLURM_CONF": conf or ""}).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return f"{fields.get('JobState', '?')} on {fields.get('NodeList', '?')}, restarts {fields.get('Restarts', '?')}"


def slurm_testbed() -> tuple[str | None, list[str]]:
    """The Slurm test bed's config and its nodes in the reclaimable partition; (None, []) when it is not up."""
    conf = os.environ.get("SLURM_CONF") or str(REPO / ".sco" / "testbed" / "slurm" / "slurm.conf")
    if not Path(conf).exists() or shutil.which("sinfo") is None:
        return None, []
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-p", "reclaimable", "-o", "%N"], capture_output=True, text=True,
                             timeout=5, env={**os.environ, "SLURM_CONF": conf}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, []
    nodes = [n for n in ("node1", "node2", "node3") if n in out.split()]
    return (conf, nodes) if nodes else (None, [])
