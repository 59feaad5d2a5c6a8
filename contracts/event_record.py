"""The lifecycle event as a plain dict — the standard-library form of :class:`contracts.events.Event`.

Components that must stay light (the node agent, the libraries a workload links) build, spool and publish
events with these functions and never import pydantic; the ingest validates what they send with
``Event.model_validate``. ``EVENT_FIELDS`` is exactly the field list of ``Event`` (a test holds them equal).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from .subjects import EventKind, event_subject

__all__ = ["EVENT_FIELDS", "AttrValue", "encode_event", "event_time", "make_event_record", "subject_of"]

EVENT_FIELDS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                "contract_version", "cause", "drill", "source", "attributes")

AttrValue = str | int | bool | None


def event_time(now: datetime) -> str:
    """ISO-8601 UTC with microseconds and a ``Z`` suffix, as the ingest and ClickHouse read it."""
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def make_event_record(kind: EventKind | str, *, now: datetime, region: str, cause: str, source: str,
                      partition: str | None = None, pool: str | None = None, instance: str | None = None,
                      workload: str | None = None, contract_version: str | None = None, drill: bool = False,
                      attributes: dict[str, Any] | None = None, event_id: str | None = None) -> dict[str, Any]:
    """One event as a dict with exactly ``EVENT_FIELDS``; attribute values that are not scalars become strings."""
    attrs: dict[str, AttrValue] = {}
    for key, value in (attributes or {}).items():
        attrs[key] = value if value is None or isinstance(value, str | int | bool) else str(value)
    return {
        "event_id": event_id or str(uuid.uuid4()),
        "kind": str(EventKind(kind)),
        "time": event_time(now),
        "region": region,
        "partition": partition,
        "pool": pool,
        "instance": instance,
        "workload": workload,
        "contract_version": contract_version,
        "cause": cause,
        "drill": drill,
        "source": source,
        "attributes": attrs,
    }


def encode_event(event: dict[str, Any]) -> bytes:
    """The wire form (compact JSON, UTF-8) of an event record."""
    return json.dumps(event, separators=(",", ":"), sort_keys=True).encode()


def subject_of(event: dict[str, Any]) -> str:
    """The NATS subject an event record is published on."""
    instance = event.get("instance")
    return event_subject(str(event["region"]), str(event["kind"]), str(instance) if instance else None)
