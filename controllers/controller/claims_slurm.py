"""Slurm claim source: ``squeue --json`` (pending and running jobs in the reclaimable partitions, with their
``--comment=contract=<name>@<version>``) and ``sinfo --json`` for idle nodes. Parsing is pure and tested on
captured output; ``SlurmSource`` runs the commands (``SLURM_CONF`` must point at the cluster's config)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from typing import Any

from .claims import WorkItem, parse_contract_ref

__all__ = ["SlurmSource", "parse_sinfo_idle", "parse_squeue"]

_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)$")
_SCALE_GIB = {"K": 1 / (1024 * 1024), "M": 1 / 1024, "G": 1.0, "T": 1024.0, "": 1 / 1024}


def _tres(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in (text or "").split(",") if "=" in part)


def _mem_gib(value: str | None) -> float:
    m = _MEM.match(value or "")
    return float(m.group(1)) * _SCALE_GIB[m.group(2)] if m else 0.0


def parse_squeue(doc: dict[str, Any], partitions: Sequence[str]) -> list[WorkItem]:
    """The work items of ``squeue --json`` in the given partitions."""
    items = []
    for job in doc.get("jobs", []):
        state = str(job.get("job_state", "")).upper()
        if state not in ("PENDING", "RUNNING", "CONFIGURING", "REQUEUED"):
            continue
        if not set(str(job.get("partition", "")).split(",")) & set(partitions):
            continue
        tres = _tres(str(job.get("tres_req_str", "")))
        vcpu = float(tres.get("cpu") or job.get("cpus") or 1)
        items.append(WorkItem(
            source="slurm", item_id=str(job.get("job_id")), contract_ref=parse_contract_ref(job.get("comment")),
            vcpu=vcpu, memory_gib=_mem_gib(tres.get("mem")),
            state="running" if state in ("RUNNING", "CONFIGURING") else "pending",
            node=str(job.get("nodes") or "") if state == "RUNNING" else ""))
    return items


def parse_sinfo_idle(doc: dict[str, Any]) -> set[str]:
    """The names of the idle nodes in ``sinfo --json``."""
    idle = set()
    for node in doc.get("nodes", []):
        state = node.get("state")
        states = {str(s).upper() for s in (state if isinstance(state, list) else [state])}
        states |= {str(s).upper() for s in node.get("state_flags", []) or []}
        if "IDLE" in states and not states & {"ALLOCATED", "MIXED", "COMPLETING"}:
            idle.add(str(node.get("name") or node.get("hostname")))
    return idle


class SlurmSource:
    def __init__(self, partitions: Sequence[str] = ("reclaimable",), slurm_conf: str | None = None,
                 timeout_s: float = 10.0) -> None:
        self.partitions = tuple(partitions)
        self.env = {**os.environ, **({"SLURM_CONF": slurm_conf} if slurm_conf else {})}
        self.timeout_s = timeout_s

    def _json(self, *argv: str) -> dict[str, Any]:
        out = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=self.timeout_s,
                             check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed (rc {out.returncode}): {out.stderr.strip()[:300]}; "
                               "check SLURM_CONF and that slurmctld is up")
        loaded: dict[str, Any] = json.loads(out.stdout)
        return loaded

    def work(self) -> list[WorkItem]:
        """Pending and running contracted (or uncontracted) work in reclaimable partitions."""
        return parse_squeue(self._json("squeue", "--json"), self.partitions)

    def idle_nodes(self) -> set[str]:
        """Names of nodes the scheduler reports idle (no work), for the orphan rule."""
        return parse_sinfo_idle(self._json("sinfo", "--json"))
