"""The agent's lifecycle events: ``contracts.event_record`` dicts stamped with the node's identity.

``tests/agent/test_events_model.py`` validates every kind the agent emits with ``Event.model_validate``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contracts.event_record import EVENT_FIELDS, AttrValue, event_time, make_event_record, subject_of
from contracts.subjects import EventKind

from .model import NodeIdentity

__all__ = ["EVENT_FIELDS", "event_time", "make_event", "subject_of"]


def make_event(kind: EventKind, *, now: datetime, node: NodeIdentity, cause: str,
               workload: str | None = None, contract_version: str | None = None, drill: bool = False,
               attributes: dict[str, AttrValue] | None = None, event_id: str | None = None) -> dict[str, Any]:
    """An event from this node: its region, partition, pool and instance, with node and scheduler attributes."""
    attrs: dict[str, Any] = {"node": node.node_name, "scheduler": node.scheduler, **(attributes or {})}
    return make_event_record(kind, now=now, region=node.region, partition=node.partition, pool=node.pool,
                             instance=node.instance, workload=workload, contract_version=contract_version,
                             cause=cause, drill=drill, source="agent", attributes=attrs, event_id=event_id)
