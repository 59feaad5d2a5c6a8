"""One workload's entry in the agent bundle (ADR-15): the interruption-critical fields.

Written by the compiler (``contracts.bundle``) and read back by the node agent (``agent.model.Contract``).

Standard library only: the agent imports this module and must not pay for pydantic. Every key is required
and no other key is allowed, so a bundle from a compiler that disagrees with this agent is refused with the
key's name instead of being read with a guessed default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Self

from .errors import AgentRecordError

__all__ = ["AGENT_RECORD_KEYS", "AgentRecord", "AgentRecordError"]


def _int(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise AgentRecordError(f"{key} is {value!r}; it must be an integer")
    try:
        return int(value)
    except ValueError:
        raise AgentRecordError(f"{key} is {value!r}; it must be an integer") from None


def _opt_int(key: str, value: object) -> int | None:
    return None if value is None else _int(key, value)


def _str(key: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise AgentRecordError(f"{key} is {value!r}; it must be a string")
    return str(value)


def _opt_str(key: str, value: object) -> str | None:
    return None if value is None else _str(key, value)


def _bool(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise AgentRecordError(f"{key} is {value!r}; it must be true or false")
    return value


@dataclass(frozen=True)
class AgentRecord:
    """The fields of one workload's contract the notice path needs, and nothing else (ADR-15).

    ``version`` is text on the node (it names the contract in ``ref`` and in events) and an integer on the
    wire, as the contract schema declares it.
    """

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
        """``<workload>@<version>``: the key of this entry in the bundle's ``workloads`` object."""
        return f"{self.workload}@{self.version}"

    def to_entry(self) -> dict[str, Any]:
        """The bundle entry: every field under its own name, ``version`` as an integer when it is one."""
        entry: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.version.isdigit():
            entry["version"] = int(self.version)
        return entry

    @classmethod
    def from_entry(cls, ref: str, entry: Mapping[str, Any]) -> Self:
        """Read back the bundle entry kept under ``ref`` (``<workload>@<version>``, named in errors).

        Raises:
            AgentRecordError: a key is missing, an unknown key is present, or a value has the wrong type.
        """
        try:
            return cls._read(entry)
        except AgentRecordError as exc:
            raise AgentRecordError(f"bundle workload {ref!r}: {exc}") from None

    @classmethod
    def _read(cls, entry: Mapping[str, Any]) -> Self:
        if not isinstance(entry, Mapping):
            raise AgentRecordError(f"the entry is {type(entry).__name__}, not a JSON object")
        missing = [k for k in AGENT_RECORD_KEYS if k not in entry]
        unknown = sorted(k for k in entry if k not in AGENT_RECORD_KEYS)
        if missing or unknown:
            parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unknown {', '.join(map(str, unknown))}"] if unknown else [])
            raise AgentRecordError("; ".join(parts))
        return cls(
            workload=_str("workload", entry["workload"]), version=_str("version", entry["version"]),
            tier=_str("tier", entry["tier"]), scheduler=_str("scheduler", entry["scheduler"]),
            drain_budget_s=_int("drain_budget_s", entry["drain_budget_s"]),
            drain_signal=_str("drain_signal", entry["drain_signal"]),
            advisory_drain=_bool("advisory_drain", entry["advisory_drain"]),
            checkpoint_mode=_str("checkpoint_mode", entry["checkpoint_mode"]),
            framework=_opt_str("framework", entry["framework"]),
            checkpoint_interval_min=_opt_int("checkpoint_interval_min", entry["checkpoint_interval_min"]),
            restart=_str("restart", entry["restart"]), requeue=_bool("requeue", entry["requeue"]),
            max_unit_length_min=_opt_int("max_unit_length_min", entry["max_unit_length_min"]),
        )


AGENT_RECORD_KEYS = tuple(f.name for f in fields(AgentRecord))
