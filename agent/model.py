"""The node's own view: who it is and the interruption-critical contract fields it holds (ADR-15).

Plain dataclasses (no pydantic): the agent must stay small."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["AgentError", "Contract", "NodeIdentity", "Unit"]


class AgentError(Exception):
    """An input the agent cannot use; the message names the value and the fix."""


@dataclass(frozen=True)
class NodeIdentity:
    """Who this node is. From the user-data written at launch (docs/agent.md)."""

    region: str
    partition: str
    instance: str
    node_name: str
    pool: str | None = None
    scheduler: str = "slurm"


@dataclass(frozen=True)
class Contract:
    """The fields of one workload's contract the notice path needs, and nothing else (ADR-15)."""

    workload: str
    version: str
    tier: str
    scheduler: str
    drain_budget_s: int
    drain_signal: str
    advisory_drain: bool
    checkpoint_mode: str
    framework: str | None
    checkpoint_interval_min: int | None
    restart: str
    requeue: bool
    max_unit_length_min: int | None

    @property
    def ref(self) -> str:
        return f"{self.workload}@{self.version}"

    @classmethod
    def from_entry(cls, ref: str, entry: dict[str, Any]) -> Contract:
        try:
            budget = int(entry["drain_budget_s"])
            interval = entry.get("checkpoint_interval_min")
            unit = entry.get("max_unit_length_min")
            return cls(
                workload=str(entry["workload"]), version=str(entry["version"]), tier=str(entry.get("tier", "")),
                scheduler=str(entry.get("scheduler", "")), drain_budget_s=budget,
                drain_signal=str(entry.get("drain_signal") or "SIGTERM"),
                advisory_drain=bool(entry.get("advisory_drain", False)),
                checkpoint_mode=str(entry.get("checkpoint_mode", "none")),
                framework=None if entry.get("framework") is None else str(entry["framework"]),
                checkpoint_interval_min=None if interval is None else int(interval),
                restart=str(entry.get("restart", "")), requeue=bool(entry.get("requeue", False)),
                max_unit_length_min=None if unit is None else int(unit),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AgentError(f"bundle workload {ref!r} lacks a usable field ({exc}); recompile the bundle "
                             "with `sco contracts compile`.") from None


@dataclass(frozen=True)
class Unit:
    """One piece of work on this node: a Slurm job or a Kubernetes pod."""

    unit_id: str
    contract_ref: str | None
    requeueable: bool = True
    namespace: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)


def parse_time(value: str) -> datetime:
    """ISO-8601 with ``Z`` or an offset; a naive time is refused."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise AgentError(f"time {value!r} has no timezone; write it as UTC with a trailing Z.")
    return parsed
