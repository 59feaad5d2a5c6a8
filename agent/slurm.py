"""Drain through Slurm (ADR-14): ``scontrol`` / ``squeue`` / ``scancel`` (22.05 has no REST call for drain
or requeue; notes/slurm-on-one-host.md). Jobs carry their contract as ``--comment=contract=<workload>@<v>``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .adapters import EVICT_DONE, EVICT_GONE
from .model import AgentError, Contract, Unit

__all__ = ["NOT_READY_REASON", "SlurmAdapter", "SlurmError"]

NOT_READY_REASON = "sco-agent: no valid contract bundle"
ACTIVE_STATES = "CONFIGURING,RUNNING,COMPLETING,SUSPENDED,STOPPED"


class SlurmError(AgentError):
    pass


def _signal_name(signal: str) -> str:
    name = signal.upper()
    return name[3:] if name.startswith("SIG") else name


def contract_from_comment(comment: str) -> str | None:
    for part in comment.replace(";", ",").split(","):
        key, _, value = part.strip().partition("=")
        if key == "contract" and value:
            return value
    return None


class SlurmAdapter:
    name = "slurm"

    def __init__(self, node_name: str, slurm_conf: str | None = None, bin_dir: str = "",
                 timeout_s: float = 10.0) -> None:
        self.node = node_name
        self.env = dict(os.environ)
        if slurm_conf:
            self.env["SLURM_CONF"] = slurm_conf
        self.bin = bin_dir
        self.timeout = timeout_s

    def _run(self, *argv: str) -> str:
        cmd = [str(Path(self.bin) / argv[0]) if self.bin else argv[0], *argv[1:]]
        try:
            proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=self.timeout,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{' '.join(cmd)} failed: {exc}") from None
        if proc.returncode != 0:
            raise SlurmError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()}")
        return proc.stdout

    def mark_unschedulable(self, reason: str) -> None:
        self._run("scontrol", "update", f"nodename={self.node}", "state=drain", f"reason={reason}")

    def units(self) -> list[Unit]:
        out = self._run("squeue", "-h", "-w", self.node, "-t", ACTIVE_STATES, "-o", "%i|%T|%k")
        units = []
        for line in out.splitlines():
            job_id, _, rest = line.partition("|")
            state, _, comment = rest.partition("|")
            if job_id.strip():
                units.append(Unit(job_id.strip(), contract_from_comment(comment), attributes={"state": state}))
        return units

    def evict(self, unit: Unit, contract: Contract) -> str:
        """Signal the batch step with the contract's signal (the workload's checkpoint trigger)."""
        try:
            self._run("scancel", f"--signal={_signal_name(contract.drain_signal)}", "--batch", unit.unit_id)
        except SlurmError as exc:
            if "Invalid job id" in str(exc) or "already completing or completed" in str(exc):
                return EVICT_GONE
            raise
        return EVICT_DONE

    def finish(self, unit: Unit, contract: Contract) -> None:
        """Requeue a requeueable job (Slurm stops it and starts it elsewhere); leave the others to finish."""
        if not (contract.requeue and unit.requeueable):
            return
        try:
            self._run("scontrol", "requeue", unit.unit_id)
        except SlurmError as exc:
            if "Invalid job id" in str(exc) or "already completing" in str(exc):
                return
            raise

    def node_state(self) -> tuple[str, str]:
        out = self._run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T|%E").strip().splitlines()
        state, _, reason = (out[0] if out else "|").partition("|")
        return state, reason

    def set_ready(self, ready: bool, reason: str) -> None:
        if not ready:
            self._run("scontrol", "update", f"nodename={self.node}", "state=drain",
                      f"reason={NOT_READY_REASON}: {reason}"[:250])
            return
        _state, current = self.node_state()
        if current.startswith(NOT_READY_REASON):  # only undo our own not-ready drain, never a reclaim drain
            self._run("scontrol", "update", f"nodename={self.node}", "state=resume")
