"""Event payloads to ClickHouse rows, a batch at a time, with the time window checked.

Each payload is validated by the pydantic ``contracts.events.Event`` (``model_validate_json``, the Rust
parser: ~6 µs an event) and turned into its row by :func:`row_of`, which builds ``Event.row()``'s values
straight into a list (~4 µs instead of ~6). Measured for issue 15: a stdlib fast path (``json`` plus type
checks) was no faster than pydantic, and one ``TypeAdapter(list[Event])`` over the joined payloads saved
little and lets a crafted pair of payloads parse as one event, so neither is used. Then the time window:
before 2000-01-01 or more than an hour ahead of ``now`` is a dead letter, not a row the 400-day TTL would
drop without a trace.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.events import Event

__all__ = ["EARLIEST", "EVENT_COLUMNS", "FUTURE_SLACK", "Parsed", "parse_events", "reason", "row_of", "time_problem"]

EVENT_COLUMNS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                 "contract_version", "cause", "drill", "source", "attributes")
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(hours=1)

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


def row_of(event: Event) -> list[Any]:
    """``event.row()`` in ``EVENT_COLUMNS`` order, built directly (a third of the time of the dict's)."""
    return [str(event.event_id), event.kind.value, event.time, event.region, event.partition or "",
            event.pool or "", event.instance or "", event.workload or "", event.contract_version or "",
            event.cause, event.drill, event.source, _ATTRIBUTES(event.attributes)]


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
    validate = Event.model_validate_json
    for index, data in enumerate(payloads):
        try:
            row = row_of(validate(data))
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
