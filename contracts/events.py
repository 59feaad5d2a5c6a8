"""The lifecycle event model and the NATS subject names every process shares (DESIGN §2, ADR-25).

Events are published once, carry a UUID ``event_id`` (the JetStream ``Nats-Msg-Id`` and the ClickHouse
ReplacingMergeTree key), a ``cause`` and the ``drill`` flag. ``to_json``/``from_json`` use only the
standard library so the agent can build and spool events without pydantic; ``Event`` (pydantic) is the
validated form used by the ingest, the controller and the analytics.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .subjects import (
    EVENT_SUBJECT_PREFIX,
    EVENTS_STREAM,
    EventKind,
    advisory_subject,
    event_subject,
    notice_subject,
    quarantine_subject,
)

__all__ = [
    "EVENTS_STREAM",
    "EVENT_SUBJECT_PREFIX",
    "Event",
    "EventKind",
    "advisory_subject",
    "event_subject",
    "notice_subject",
    "quarantine_subject",
]


class Event(BaseModel):
    """One lifecycle event, as published on NATS and stored in ClickHouse (see ``contracts.subjects``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    kind: EventKind
    time: datetime
    region: str
    partition: str | None = None
    pool: str | None = None
    instance: str | None = None
    workload: str | None = None
    contract_version: str | None = None
    cause: str
    drill: bool = False
    source: str = "unknown"
    attributes: dict[str, str | int | bool | None] = Field(default_factory=dict)

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("time must carry a timezone (UTC)")
        return value.astimezone(UTC)

    @property
    def subject(self) -> str:
        """The NATS subject this event is published on."""
        return event_subject(self.region, self.kind, self.instance)

    def to_json(self) -> bytes:
        """The event as JSON bytes."""
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> Event:
        """Parse an event from JSON (raises pydantic ``ValidationError`` when invalid)."""
        return cls.model_validate_json(data)

    def row(self) -> dict[str, Any]:
        """A flat row for ClickHouse."""
        return {
            "event_id": str(self.event_id), "kind": str(self.kind), "time": self.time, "region": self.region,
            "partition": self.partition or "", "pool": self.pool or "", "instance": self.instance or "",
            "workload": self.workload or "", "contract_version": self.contract_version or "",
            "cause": self.cause, "drill": self.drill, "source": self.source,
            "attributes": json.dumps(self.attributes, sort_keys=True),
        }
