"""Event payloads to ClickHouse rows, a batch at a time: a stdlib fast path, pydantic for everything else.

The ingest is bound by per-message parsing (issue 15), so a payload in the shape every publisher of ours
writes (``Event.to_json``: a JSON object with exactly typed fields, a canonical UUID, an ISO time with an
offset) is checked with ``json`` and a few type tests and turned into a row directly. Anything else — an
unknown key, a coercion pydantic would make, a malformed time — goes through ``contracts.events.Event``,
so the result (row or reason) is the same as validating every message with pydantic. Both paths then
check the time window: before 2000-01-01 or more than an hour ahead of ``now`` is a dead letter, not a row
the 400-day TTL would drop without a trace.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.events import Event, EventKind

__all__ = ["EARLIEST", "EVENT_COLUMNS", "FUTURE_SLACK", "Parsed", "parse_events", "time_problem"]

EVENT_COLUMNS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                 "contract_version", "cause", "drill", "source", "attributes")
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(hours=1)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})\Z")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # json accepts lone surrogates, pydantic refuses them
_KINDS = frozenset(k.value for k in EventKind)
_REQUIRED = frozenset({"kind", "time", "region", "cause"})
_OPTIONAL_STR = ("partition", "pool", "instance", "workload", "contract_version")
_FIELDS = frozenset(Event.model_fields)
_ATTRIBUTES = json.JSONEncoder(sort_keys=True).encode  # = json.dumps(..., sort_keys=True), one encoder for all


@dataclass
class Parsed:
    """Rows in ``EVENT_COLUMNS`` order with the index of the payload behind each, and the rejects."""

    rows: list[list[Any]] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (payload index, reason)


def time_problem(time: dt.datetime, now: dt.datetime) -> str | None:
    """Why an event time is outside the sane window, or ``None`` when it is inside."""
    if time < EARLIEST:
        return f"time outside the sane window: {time.isoformat()} is before 2000-01-01"
    if time > now + FUTURE_SLACK:
        return f"time outside the sane window: {time.isoformat()} is more than 1 h after now ({now.isoformat()})"
    return None


def _fast_row(data: bytes) -> list[Any] | None:
    """The row for a payload in the canonical shape, or ``None`` to let pydantic decide."""
    if _SURROGATE.search(data):
        return None
    try:
        obj = json.loads(data.decode())  # strict UTF-8, as pydantic (json.loads(bytes) would guess UTF-16)
    except ValueError:
        return None
    if type(obj) is not dict or not obj.keys() <= _FIELDS or not obj.keys() >= _REQUIRED:
        return None
    event_id, kind, time, region, cause = (obj.get("event_id"), obj["kind"], obj["time"], obj["region"],
                                           obj["cause"])
    if (type(event_id) is not str or not _UUID.match(event_id) or type(kind) is not str or kind not in _KINDS
            or type(time) is not str or not _TIME.match(time) or type(region) is not str
            or type(cause) is not str):
        return None
    drill, source, attributes = obj.get("drill", False), obj.get("source", "unknown"), obj.get("attributes", {})
    if type(drill) is not bool or type(source) is not str or type(attributes) is not dict:
        return None
    for value in attributes.values():
        if value is not None and type(value) not in (str, int, bool):
            return None
    optional = []
    for name in _OPTIONAL_STR:
        value = obj.get(name)
        if value is not None and type(value) is not str:
            return None
        optional.append(value or "")
    when = dt.datetime.fromisoformat(time).astimezone(dt.UTC)
    return [event_id, kind, when, region, *optional, cause, drill, source, _ATTRIBUTES(attributes)]


def _slow_row(data: bytes) -> list[Any]:
    """The row through the pydantic model (raises ``ValueError`` with pydantic's reason)."""
    row = Event.from_json(data).row()
    return [row[c] for c in EVENT_COLUMNS]


def reason(exc: ValueError) -> str:
    """``field: problem; …`` for a validation error, the first line otherwise."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0][:300]
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg', '')}" for e in errors()]
    return "; ".join(parts)[:500]


def parse_events(payloads: Sequence[bytes], now: dt.datetime) -> Parsed:
    """Rows for the payloads that are valid events inside the time window; the others with their reason."""
    parsed = Parsed()
    for index, data in enumerate(payloads):
        row = _fast_row(data)
        if row is None:
            try:
                row = _slow_row(data)
            except ValueError as exc:  # pydantic.ValidationError and JSON errors are ValueErrors
                parsed.rejected.append((index, f"not a valid event: {reason(exc)}"))
                continue
        problem = time_problem(row[2], now)
        if problem is not None:
            parsed.rejected.append((index, problem))
            continue
        parsed.rows.append(row)
        parsed.indexes.append(index)
    return parsed
