"""Lifecycle events as plain dicts with exactly the fields of ``contracts.events.Event`` (no pydantic here).

``tests/agent/test_events.py`` validates every kind the agent emits with ``Event.model_validate``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from contracts.subjects import EventKind, event_subject

from .model import NodeIdentity

__all__ = ["EVENT_FIELDS", "event_time", "make_event", "subject_of"]

EVENT_FIELDS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                "contract_version", "cause", "drill", "source", "attributes")

AttrValue = str | int | bool | None


def event_time(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def make_event(kind: EventKind, *, now: datetime, node: NodeIdentity, cause: str,
               workload: str | None = None, contract_version: str | None = None, drill: bool = False,
               attributes: dict[str, AttrValue] | None = None, event_id: str | None = None) -> dict[str, Any]:
    attrs: dict[str, AttrValue] = {"node": node.node_name, "scheduler": node.scheduler}
    for key, value in (attributes or {}).items():
        attrs[key] = value if value is None or isinstance(value, str | int | bool) else str(value)
    return {
        "event_id": event_id or str(uuid.uuid4()),
        "kind": str(EventKind(kind)),
        "time": event_time(now),
        "region": node.region,
        "partition": node.partition,
        "pool": node.pool,
        "instance": node.instance,
        "workload": workload,
        "contract_version": contract_version,
        "cause": cause,
        "drill": drill,
        "source": "agent",
        "attributes": attrs,
    }


def subject_of(event: dict[str, Any]) -> str:
    return event_subject(str(event["region"]), str(event["kind"]))
