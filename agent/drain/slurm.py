"""Drain through Slurm (ADR-14): ``scontrol`` / ``squeue`` / ``scancel``.

Slurm 22.05 has no REST call for drain or requeue (notes/slurm-on-one-host.md). Jobs carry their contract as
``--comment=contract=<workload>@<v>``. The clients run with ``SLURM_TIME_FORMAT=%s``, so the job's ``StartTime`` in
the one ``squeue`` listing is epoch seconds (no local-time ambiguity); it becomes
``Unit.attributes["started_at"]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from ..errors import SlurmError
from ..model import STARTED_AT, Contract, Unit, format_time
from .adapters import EVICT_DONE, EVICT_GONE

__all__ = ["ADVISORY_REASON", "NOT_READY_REASON", "SlurmAdapter", "SlurmError"]

NOT_READY_REASON = "sco-agent: no valid contract bundle"
ADVISORY_REASON = "sco advisory "  # agent.drain.plan: an advisory drain's reason starts so
ACTIVE_STATES = "CONFIGURING,RUNNING,COMPLETING,SUSPENDED,STOPPED"


def _signal_name(signal: str) -> str:
    name = signal.upper()
    return name[3:] if name.startswith("SIG") else name


def _gone_or_raise(exc: SlurmError) -> str:
    text = str(exc)
    if "Invalid job id" in text or "already completing" in text or "completed" in text:
        return EVICT_GONE
    raise exc


def start_from_epoch(value: str) -> str | None:
    """Squeue's ``%S`` under ``SLURM_TIME_FORMAT=%s`` → ISO-8601 UTC; None for N/A, Unknown, 0 or garbage."""
    try:
        seconds = int(value.strip())
        return format_time(datetime.fromtimestamp(seconds, UTC)) if seconds > 0 else None
    except (ValueError, OverflowError, OSError):
        return None


def contract_from_comment(comment: str) -> str | None:
    for part in comment.replace(";", ",").split(","):
        key, _, value = part.strip().partition("=")
        if key == "contract" and value:
            return value
    return None


class SlurmAdapter:
    """The ``SchedulerAdapter`` for Slurm, through ``scontrol``, ``squeue`` and ``scancel``."""

    name = "slurm"

    def __init__(self, node_name: str, slurm_conf: str | None = None, bin_dir: str = "",
                 timeout_s: float = 10.0) -> None:
        """Run the clients for ``node_name`` (from ``bin_dir``, with ``slurm_conf``), each within ``timeout_s``."""
        self.node = node_name
        self.env = dict(os.environ)
        self.env["SLURM_TIME_FORMAT"] = "%s"  # times as epoch seconds (strftime), whatever the local zone
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

    async def _arun(self, *argv: str) -> str:
        """The asyncio twin of ``_run``: no thread.

        When the engine's 800 ms deadline cancels the call, the
        client process is killed instead of lingering in a thread.
        """
        cmd = [str(Path(self.bin) / argv[0]) if self.bin else argv[0], *argv[1:]]
        try:
            proc = await asyncio.create_subprocess_exec(*cmd, env=self.env, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            raise SlurmError(f"{' '.join(cmd)} failed: {exc}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout)
        except BaseException:  # cancelled (deadline) or timed out: do not leave the client behind
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
            raise
        if proc.returncode != 0:
            text = (err or out).decode(errors="replace").strip()
            raise SlurmError(f"{' '.join(cmd)} exited {proc.returncode}: {text}")
        return out.decode(errors="replace")

    def mark_unschedulable(self, reason: str) -> None:
        """``scontrol update nodename=X state=drain reason=...``."""
        self._run(*self._drain_argv(reason))

    async def amark_unschedulable(self, reason: str) -> None:
        """The asyncio twin of ``mark_unschedulable``."""
        await self._arun(*self._drain_argv(reason))

    def mark_schedulable(self, reason: str) -> None:
        """Resume the node when its drain reason is an advisory's (never a hard notice's or not-ready drain)."""
        _state, current = self.node_state()
        if current.startswith(ADVISORY_REASON):
            self._run("scontrol", "update", f"nodename={self.node}", "state=resume")

    def _drain_argv(self, reason: str) -> tuple[str, ...]:
        return ("scontrol", "update", f"nodename={self.node}", "state=drain", f"reason={reason}")

    def units(self) -> list[Unit]:
        """The active jobs on this node, with their contract and start time."""
        return self._parse_units(self._run(*self._units_argv()))

    async def aunits(self) -> list[Unit]:
        """The asyncio twin of ``units``."""
        return self._parse_units(await self._arun(*self._units_argv()))

    def _units_argv(self) -> tuple[str, ...]:
        return ("squeue", "-h", "-w", self.node, "-t", ACTIVE_STATES, "-o", "%i|%T|%S|%k")

    @staticmethod
    def _parse_units(out: str) -> list[Unit]:
        """``job|state|start|comment`` lines; the comment comes last (it may itself contain ``|``)."""
        units = []
        for line in out.splitlines():
            job_id, _, rest = line.partition("|")
            state, _, rest = rest.partition("|")
            start, _, comment = rest.partition("|")
            if job_id.strip():
                attrs = {"state": state}
                started = start_from_epoch(start)
                if started is not None:
                    attrs[STARTED_AT] = started
                units.append(Unit(job_id.strip(), contract_from_comment(comment), attributes=attrs))
        return units

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        """Signal the batch step with the contract's signal (the workload's checkpoint trigger).

        Slurm has no
        grace period to set: the agent's own deadline (finish, verify) bounds the job; ``grace_s`` is unused.
        """
        try:
            self._run(*self._signal_argv(unit, contract))
        except SlurmError as exc:
            return _gone_or_raise(exc)
        return EVICT_DONE

    async def aevict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        """The asyncio twin of ``evict``."""
        try:
            await self._arun(*self._signal_argv(unit, contract))
        except SlurmError as exc:
            return _gone_or_raise(exc)
        return EVICT_DONE

    @staticmethod
    def _signal_argv(unit: Unit, contract: Contract) -> tuple[str, ...]:
        return ("scancel", f"--signal={_signal_name(contract.drain_signal)}", "--batch", unit.unit_id)

    def finish(self, unit: Unit, contract: Contract) -> None:
        """Requeue a requeueable job (Slurm stops it and starts it elsewhere); leave the others to finish."""
        if contract.requeue and unit.requeueable:
            try:
                self._run("scontrol", "requeue", unit.unit_id)
            except SlurmError as exc:
                _gone_or_raise(exc)

    async def afinish(self, unit: Unit, contract: Contract) -> None:
        """The asyncio twin of ``finish``."""
        if contract.requeue and unit.requeueable:
            try:
                await self._arun("scontrol", "requeue", unit.unit_id)
            except SlurmError as exc:
                _gone_or_raise(exc)

    def node_state(self) -> tuple[str, str]:
        """The node's Slurm state and reason (``sinfo``)."""
        out = self._run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T|%E").strip().splitlines()
        state, _, reason = (out[0] if out else "|").partition("|")
        return state, reason

    def set_ready(self, ready: bool, reason: str) -> None:
        """Drain the node as not ready, or resume it when the drain reason is the agent's own not-ready one."""
        if not ready:
            self._run("scontrol", "update", f"nodename={self.node}", "state=drain",
                      f"reason={NOT_READY_REASON}: {reason}"[:250])
            return
        _state, current = self.node_state()
        if current.startswith(NOT_READY_REASON):  # only undo our own not-ready drain, never a reclaim drain
            self._run("scontrol", "update", f"nodename={self.node}", "state=resume")
