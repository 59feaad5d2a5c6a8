"""The node's own view: who it is and the interruption-critical contract fields it holds (ADR-15).

Plain dataclasses (no pydantic): the agent must stay small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.agent_record import AgentRecord, AgentRecordError

from .errors import AgentError

__all__ = ["STARTED_AT", "AgentError", "Contract", "NodeIdentity", "Unit", "contract_from_entry", "format_time",
           "parse_time", "time_or_none"]

# Unit.attributes key: when the unit started running, ISO-8601 UTC with a trailing Z (``format_time``)
STARTED_AT = "started_at"


@dataclass(frozen=True)
class NodeIdentity:
    """Who this node is. From the user-data written at launch (docs/agent.md)."""

    region: str
    partition: str
    instance: str
    node_name: str
    pool: str | None = None
    scheduler: str = "slurm"


# The fields of one workload's contract the notice path needs (ADR-15): the bundle record both sides share.
Contract = AgentRecord


def contract_from_entry(ref: str, entry: Any) -> Contract:
    """The bundle entry ``ref`` as a :class:`Contract`; an unusable entry is an :class:`AgentError`."""
    try:
        return AgentRecord.from_entry(ref, entry)
    except AgentRecordError as exc:
        raise AgentError(f"{exc}; recompile the bundle with `sco contracts compile`.") from exc


@dataclass(frozen=True)
class Unit:
    """One piece of work on this node: a Slurm job or a Kubernetes pod.

    ``attributes`` are what the adapter read with the unit: ``state`` (Slurm) and ``started_at`` (``STARTED_AT``)
    — when the unit started running, ISO-8601 UTC with a trailing ``Z`` (``2026-01-01T00:00:00Z``; Slurm's
    ``StartTime``, the pod's ``status.startTime``). Absent when the scheduler did not say; such a unit counts
    no lost work (agent/drain/waste.py).
    """

    unit_id: str
    contract_ref: str | None
    requeueable: bool = True
    namespace: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    def started_at(self) -> datetime | None:
        """The unit's start (``STARTED_AT``), or None when absent or not a time with a timezone."""
        return time_or_none(self.attributes.get(STARTED_AT))


def time_or_none(value: object) -> datetime | None:
    """``parse_time`` for values a scheduler may leave empty or malformed: None instead of an error."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_time(value)
    except (AgentError, ValueError):
        return None


def format_time(value: datetime) -> str:
    """ISO-8601 UTC to the second with a trailing ``Z``: the form of ``Unit.attributes["started_at"]``."""
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """ISO-8601 with ``Z`` or an offset; a naive time is refused."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise AgentError(f"time {value!r} has no timezone; write it as UTC with a trailing Z.")
    return parsed
