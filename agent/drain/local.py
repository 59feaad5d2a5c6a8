"""Local drain actuators (ADR-14): used when the scheduler has not answered within 800 ms.

* ``SlurmProcessActuator`` — signals the batch shell of every Slurm job running on this node directly
  (found through ``/proc/<pid>/environ``: ``SLURM_JOB_ID`` and ``SLURMD_NODENAME``), with the contract's
  signal; at the deadline sends SIGTERM to every process of those jobs.
* ``KubeletShutdownActuator`` — holds a systemd *delay* inhibitor (so the agent can finish and ship its
  events) and starts an orderly shutdown; the kubelet's GracefulNodeShutdown then terminates pods by
  priority with the grace periods in deploy/agent/kubelet-graceful-shutdown.yaml.
* ``RecordingActuator`` — the test double: records what it was asked to do.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .adapters import LocalPlan

__all__ = ["KubeletShutdownActuator", "RecordingActuator", "SlurmProcessActuator", "job_processes"]


def _environ(pid: str) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key.startswith((b"SLURM", b"SCO_")):
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def _ppid_comm(pid: str) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ppid = stat.rsplit(")", 1)[1].split()[1]
        return Path(f"/proc/{ppid}/comm").read_text().strip()
    except (OSError, IndexError):
        return ""


@dataclass(frozen=True)
class JobProcess:
    pid: int
    job_id: str
    batch: bool
    contract: str | None


def job_processes(node_name: str, proc: Path = Path("/proc")) -> list[JobProcess]:
    """The processes of Slurm jobs running on ``node_name``, from ``/proc/<pid>/environ``."""
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        env = _environ(entry.name)
        job = env.get("SLURM_JOB_ID")
        if not job or env.get("SLURMD_NODENAME") != node_name:
            continue
        out.append(JobProcess(int(entry.name), job, _ppid_comm(entry.name) == "slurmstepd",
                              env.get("SCO_CONTRACT")))
    return out


def _signum(name: str) -> int:
    upper = name.upper()
    return int(getattr(signal, upper if upper.startswith("SIG") else "SIG" + upper))


class SlurmProcessActuator:
    """Signals the jobs of this node directly.

    A job belongs to a plan when its ``SCO_CONTRACT`` names the
    plan's contract or its id is one of the plan's units; when the scheduler never listed the units, the
    jobs nobody claims go to the first plan (the longest budget). ``finish`` only touches the jobs of the
    plans it is given, so one workload's deadline never cuts another's short.
    """

    name = "slurm-process-signal"

    def __init__(self, node_name: str) -> None:
        """Signal the jobs of ``node_name``; record what was signalled and terminated."""
        self.node = node_name
        self.signalled: list[tuple[str, int, str]] = []  # (job, pid, signal)
        self.terminated: list[int] = []
        self.jobs_by_ref: dict[str, set[str]] = {}

    @staticmethod
    def _assign(procs: list[JobProcess], plans: list[LocalPlan]) -> list[tuple[JobProcess, LocalPlan]]:
        known = {u.unit_id for p in plans for u in p.units}
        out = []
        for proc in procs:
            plan = next((p for p in plans if proc.contract == p.contract.ref
                         or any(u.unit_id == proc.job_id for u in p.units)), None)
            if plan is None:
                if known or proc.contract:
                    continue  # a job of another workload (by the scheduler's list or its own SCO_CONTRACT)
                plan = plans[0]
            out.append((proc, plan))
        return out

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        """Send each plan's contract signal to the batch shell of each of its jobs."""
        if not plans:
            return
        for proc, plan in self._assign(job_processes(self.node), plans):
            self.jobs_by_ref.setdefault(plan.contract.ref, set()).add(proc.job_id)
            if not proc.batch:
                continue
            try:
                os.kill(proc.pid, _signum(plan.contract.drain_signal))
                self.signalled.append((proc.job_id, proc.pid, plan.contract.drain_signal))
            except ProcessLookupError:
                continue

    def finish(self, plans: list[LocalPlan]) -> None:
        """SIGTERM every process of these plans' jobs; SIGKILL those already sent SIGTERM."""
        jobs = set().union(*(self.jobs_by_ref.get(p.contract.ref, set()) for p in plans),
                           *({u.unit_id for u in p.units} for p in plans))
        procs = job_processes(self.node)
        if not jobs and plans:
            jobs = {proc.job_id for proc, _ in self._assign(procs, plans)}
        for proc in procs:
            if proc.job_id not in jobs:
                continue
            sig = signal.SIGKILL if proc.pid in self.terminated else signal.SIGTERM
            try:
                os.kill(proc.pid, sig)
                self.terminated.append(proc.pid)
            except ProcessLookupError:
                continue

    def remaining(self) -> int | None:
        """Jobs still running on this node (all workloads)."""
        return len({p.job_id for p in job_processes(self.node)})


class KubeletShutdownActuator:
    """Production local path for Kubernetes nodes. ``command`` defaults to ``systemctl poweroff``."""

    name = "kubelet-graceful-shutdown"

    def __init__(self, command: str = "systemctl poweroff", inhibit_s: int = 30) -> None:
        """Start ``command`` behind a systemd delay inhibitor held ``inhibit_s`` seconds."""
        self.command = shlex.split(command)
        self.inhibit_s = inhibit_s
        self.started = False
        self.procs: list[subprocess.Popen[bytes]] = []  # kept: the inhibitor lives while the agent ships

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        """Hold the inhibitor and start the orderly shutdown, once."""
        if self.started:
            return
        self.started = True
        # a delay lock: the shutdown waits (up to InhibitDelayMaxSec) while the agent ships its events
        with contextlib.suppress(OSError):
            self.procs.append(subprocess.Popen(
                ["systemd-inhibit", "--what=shutdown", "--mode=delay", "--who=sco-agent",
                 f"--why={reason[:100]}", "sleep", str(self.inhibit_s)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.procs.append(subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def finish(self, plans: list[LocalPlan]) -> None:
        """Nothing to do: the kubelet's graceful shutdown ends the pods."""
        return

    def remaining(self) -> int | None:
        """None: this actuator cannot count pods."""
        return None


@dataclass
class RecordingActuator:
    """Test double: records calls with their monotonic time; ``units`` is what it reports as remaining."""

    name: str = "recording"
    units: int | None = 0
    calls: list[tuple[str, float, list[str], str]] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        """Record the start."""
        self.calls.append(("start", time.monotonic(), [p.contract.ref for p in plans], reason))
        self.started.set()

    def finish(self, plans: list[LocalPlan]) -> None:
        """Record the finish."""
        self.calls.append(("finish", time.monotonic(), [p.contract.ref for p in plans], ""))

    def remaining(self) -> int | None:
        """The configured ``units``."""
        return self.units
