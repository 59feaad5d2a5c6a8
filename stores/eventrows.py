"""Event payloads to ClickHouse rows, a batch at a time, with the time window checked.

Two validators that agree: a fast one (``orjson`` and hand-written type checks, ~1.5 µs an event) that
accepts only the canonical shape every publisher of ours writes — a JSON object with exactly the
``Event`` fields, a lower-case hyphenated UUID, a known kind, an RFC 3339 UTC time (``Z`` or ``+00:00``,
up to 6 fractional digits), strings where strings belong, a real ``bool``, flat attributes of
``str``/``int``/``bool``/``null`` — and the pydantic ``contracts.events.Event`` (``model_validate_json``,
~6 µs, plus ~4 µs for the row) for everything else. The fast path never refuses: what it does not accept
goes to pydantic, which accepts it with its own coercions or refuses it with its own reason. So a payload
is refused exactly when pydantic refuses it, and a payload the fast path accepts gives the row pydantic's
``Event.row()`` would (``tests/stores/test_eventrows.py`` holds both to it over every poison kind and
payload shape). The per-event pydantic validation was half of the ingest's Python time.

Rows are *wire rows*: ``EVENT_COLUMNS`` order, ``time`` as ClickHouse text (``YYYY-MM-DD hh:mm:ss.ffffff``,
UTC; the column keeps milliseconds), ready for :func:`encode_rows` — one ``JSONCompactColumns`` body that
ClickHouse parses in C++, instead of clickhouse-connect's Native serialisation in Python (and its import
of pandas on the first insert). Then the time window: before 2000-01-01 or more than an hour ahead of
``now`` is a dead letter, not a row the 400-day TTL would drop without a trace.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from contracts.subjects import EventKind

if TYPE_CHECKING:
    from contracts.events import Event

__all__ = ["EARLIEST", "EVENT_COLUMNS", "EVENT_FIELDS", "FUTURE_SLACK", "INSERT_FORMAT", "Parsed", "encode_rows",
           "fast_row", "parse_events", "reason", "row_of", "time_problem", "time_text"]

EVENT_COLUMNS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                 "contract_version", "cause", "drill", "source", "attributes")
INSERT_FORMAT = "JSONCompactColumns"  # what :func:`encode_rows` writes
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(hours=1)


def _sorted_json() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True)`` with the json module's C encoder built once.

    ``JSONEncoder.encode`` builds that encoder again on every call, which costs more than encoding an event's
    few attributes (~5.7 -> 2.4 us an event here; the ingest does it for every event).
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder as it is
        return json.JSONEncoder(sort_keys=True).encode
    # markers None: no check for circular references (attributes are flat); otherwise json.dumps' arguments
    encoder = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", True,
                   False, True)
    return lambda value: "".join(encoder(value, 0))


_ATTRIBUTES = _sorted_json()  # = json.dumps(..., sort_keys=True)
# ``Event``'s fields, spelled out so that the fast path needs no pydantic: the ingest process imports pydantic
# only for the first payload that is not canonical (the import was a second of a restart under
# load). tests/stores/test_eventrows.py checks it against ``Event.model_fields``.
EVENT_FIELDS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                "contract_version", "cause", "drill", "source", "attributes")
_FIELDS = frozenset(EVENT_FIELDS)
_FAST_REQUIRED = frozenset({"event_id", "kind", "time", "region", "cause"})  # event_id: pydantic would make one
_KINDS = frozenset(kind.value for kind in EventKind)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.ASCII)
_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,6}))?(?:Z|\+00:00)",
                   re.ASCII)
_ATTRIBUTE_TYPES = (str, int, bool, type(None))
_ABSENT: Any = object()


@dataclass
class Parsed:
    """Wire rows in ``EVENT_COLUMNS`` order with the index of the payload behind each, and the rejects."""

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


def time_text(time: dt.datetime) -> str:
    """A UTC datetime as the ClickHouse text the wire rows carry: ``YYYY-MM-DD hh:mm:ss.ffffff``."""
    return time.astimezone(dt.UTC).isoformat(sep=" ", timespec="microseconds")[:26]


def row_of(event: Event) -> list[Any]:
    """``event.row()`` in ``EVENT_COLUMNS`` order as a wire row (``time`` as :func:`time_text`)."""
    return [str(event.event_id), event.kind.value, time_text(event.time), event.region, event.partition or "",
            event.pool or "", event.instance or "", event.workload or "", event.contract_version or "",
            event.cause, event.drill, event.source, _ATTRIBUTES(event.attributes)]


def _attributes_text(value: Any) -> str | None:
    """The attributes column for a fast-path value; ``None`` when pydantic must look at it."""
    if value is _ABSENT:
        return "{}"
    if type(value) is not dict:
        return None
    for item in value.values():
        if type(item) not in _ATTRIBUTE_TYPES:
            return None
    return _ATTRIBUTES(value) if value else "{}"


def fast_row(data: bytes) -> tuple[list[Any], dt.datetime] | None:
    """The wire row and time of a canonical event payload; ``None``: not canonical, ask pydantic."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(body) is not dict or not _FAST_REQUIRED <= body.keys() <= _FIELDS:
        return None
    get = body.get
    event_id, kind, time, region, cause = body["event_id"], body["kind"], body["time"], body["region"], body["cause"]
    drill, source = get("drill", False), get("source", "unknown")
    partition, pool, instance = get("partition"), get("pool"), get("instance")  # str or null
    workload, version = get("workload"), get("contract_version")
    if (type(event_id) is not str or type(kind) is not str or type(time) is not str or type(region) is not str
            or type(cause) is not str or type(drill) is not bool or type(source) is not str
            or (partition is not None and type(partition) is not str) or (pool is not None and type(pool) is not str)
            or (instance is not None and type(instance) is not str)
            or (workload is not None and type(workload) is not str)
            or (version is not None and type(version) is not str)
            or kind not in _KINDS or _UUID.fullmatch(event_id) is None):
        return None
    match = _TIME.fullmatch(time)
    attributes = _attributes_text(get("attributes", _ABSENT))
    if match is None or attributes is None:
        return None
    try:
        when = dt.datetime.fromisoformat(time)
    except ValueError:  # 2026-02-30, 24:00:00 and the like: pydantic gives the reason
        return None
    date, clock, fraction = match.groups()
    text = f"{date} {clock}.{(fraction or '').ljust(6, '0')}"
    return [event_id, kind, text, region, partition or "", pool or "", instance or "", workload or "", version or "",
            cause, drill, source, attributes], when


def reason(exc: ValueError) -> str:
    """``field: problem; …`` for a validation error, the first line otherwise."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0][:300]
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg', '')}" for e in errors()]
    return "; ".join(parts)[:500]


def _slow_row(data: bytes) -> tuple[list[Any], dt.datetime] | str:
    """The wire row and time pydantic gives, or why it refuses the payload."""
    from contracts.events import Event

    try:
        event = Event.model_validate_json(data)
    except ValueError as exc:  # pydantic.ValidationError and JSON errors are ValueErrors
        return f"not a valid event: {reason(exc)}"
    return row_of(event), event.time


def parse_events(payloads: Sequence[bytes], now: dt.datetime) -> Parsed:
    """Wire rows for the payloads that are valid events inside the time window; the others with their reason."""
    parsed = Parsed()
    for index, data in enumerate(payloads):
        found = fast_row(data) or _slow_row(data)
        if isinstance(found, str):
            parsed.rejected.append((index, found))
            continue
        row, when = found
        problem = time_problem(when, now)
        if problem is not None:
            parsed.rejected.append((index, problem))
            continue
        parsed.rows.append(row)
        parsed.indexes.append(index)
    return parsed


def encode_rows(rows: Sequence[list[Any]]) -> bytes:
    """Wire rows as one ``INSERT_FORMAT`` body: ``JSONCompactColumns``, a JSON array of the columns.

    Columns, because one ``orjson.dumps`` call for the whole batch is ~10x cheaper than one a row.
    """
    return orjson.dumps(list(zip(*rows, strict=True)))
