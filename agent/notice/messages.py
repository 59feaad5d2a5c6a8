"""Reclaim notices and advisories: the message format, parsing, and first-wins de-duplication.

The same JSON object arrives on the per-instance NATS subjects (``sco.notice.<region>.<instance>``,
``sco.advisory.<region>.<instance>``) and in the metadata endpoint's ``notices`` list (docs/agent.md). It
is the provider contract's ``Notice`` / ``Advisory`` (contracts/provider.py) as JSON::

    {"region": "r1", "instance_id": "i-1", "pool_id": "r1-h1-...", "hall": "h1",
     "issued_at": "2026-01-01T00:00:00Z", "terminate_at": "2026-01-01T00:02:00Z",
     "cause": "reclaim", "drill": false}

plus, optionally, ``notice_id`` and ``kind`` ("notice" | "advisory"; otherwise the subject decides).
``instance``/``pool`` are accepted for ``instance_id``/``pool_id``. Without a ``notice_id`` the id is
``<kind>:<instance>:<issued_at>`` — identical on both channels, so the first to arrive wins and later
copies are counted as duplicates and ignored.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..model import AgentError, parse_time

__all__ = ["Notice", "NoticeGate", "parse_metadata", "parse_notice"]

KINDS = ("notice", "advisory")


@dataclass(frozen=True, slots=True)
class Notice:
    """A reclaim notice or advisory for an instance, as received on one channel."""

    notice_id: str
    kind: str
    instance: str
    channel: str  # nats | metadata
    received: float  # monotonic seconds when the agent got it
    region: str | None = None
    pool: str | None = None
    issued_at: datetime | None = None
    terminate_at: datetime | None = None
    drill: bool = False
    cause: str = "reclaim"
    expected_at: datetime | None = None  # an advisory's forecast of the reclaim (the provider's clock)


def parse_notice(doc: Any, channel: str, received: float, default_kind: str = "notice") -> Notice:
    """Parse a notice document (JSON bytes, text or a dict), once: one JSON decode, one parse per time.

    Raises:
        AgentError: Not a JSON object, an unknown kind, a bad time, or no instance or id.
    """
    if isinstance(doc, bytes | str):
        try:
            doc = _decode(doc.decode() if isinstance(doc, bytes) else doc)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise AgentError(f"{channel} notice is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise AgentError(f"{channel} notice is not a JSON object")
    get = doc.get
    instance = get("instance_id") or get("instance")
    kind = get("kind") or default_kind
    if kind not in KINDS:
        raise AgentError(f"{channel} notice kind {str(kind)!r} is not one of {KINDS}")
    try:
        issued = _time(get("issued_at"))
        if kind == "advisory":  # an advisory's expected_at is a forecast, not a deadline
            terminate, expected = None, _time(get("expected_at"))
        else:
            terminate, expected = _time(get("terminate_at")), None
    except ValueError as exc:
        raise AgentError(f"{channel} notice for {instance}: bad time ({exc})") from exc
    notice_id = get("notice_id") or get("id")
    if not notice_id and instance and issued is not None:  # same on both channels, whatever the time format
        notice_id = f"{kind}:{instance}:{(issued if issued.tzinfo is UTC else issued.astimezone(UTC)).isoformat()}"
    if not notice_id or not instance:
        raise AgentError(f"{channel} notice lacks instance_id or issued_at/notice_id: {doc!r}")
    return Notice(str(notice_id), kind, str(instance), channel, received, get("region"),
                  get("pool_id") or get("pool"), issued, terminate, bool(get("drill", False)),
                  str(get("cause") or "reclaim"), expected)


_decode = json.JSONDecoder().decode


def _time(value: Any) -> datetime | None:
    """A time field: None when absent or empty, else ISO-8601 with a timezone (``model.parse_time``)."""
    if not value:
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)  # the provider's form (Python 3.11 reads a trailing Z too)
        except ValueError:
            return parse_time(value)  # surrounding blanks; a clear error otherwise
        if parsed.tzinfo is not None:
            return parsed
    return parse_time(str(value))


def parse_metadata(data: bytes, received: float) -> list[Notice]:
    """Parse the metadata endpoint's document into notices.

    ``{"instance_id": ..., "notices": [<notice or advisory>, ...]}`` (each item may carry ``kind``; default "notice").
    """
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AgentError(f"metadata document is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise AgentError("metadata document is not a JSON object")
    items = doc.get("notices")
    if items is None:
        items = [doc[k] for k in ("notice", "advisory") if isinstance(doc.get(k), dict)]
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and not (item.get("instance_id") or item.get("instance")):
            item["instance_id"] = doc.get("instance_id") or doc.get("instance")
        out.append(parse_notice(item, "metadata", received))
    return out


class NoticeGate:
    """First wins: admits each (kind, notice id) once. Remembers the last ``capacity`` ids."""

    def __init__(self, capacity: int = 4096) -> None:
        """Remember up to ``capacity`` (kind, notice id) pairs."""
        self._seen: set[tuple[str, str]] = set()
        self._order: deque[tuple[str, str]] = deque()
        self.capacity = capacity

    def admit(self, notice: Notice) -> bool:
        """True the first time a (kind, notice id) is seen, False after."""
        key = (notice.kind, notice.notice_id)
        if key in self._seen:
            return False
        self._seen.add(key)
        self._order.append(key)
        if len(self._order) > self.capacity:
            self._seen.discard(self._order.popleft())
        return True
