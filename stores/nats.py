"""NATS and JetStream: connecting, the event stream, the dead-letter stream and idempotent publishing.

The lifecycle events ride one stream, ``SCO_EVENTS`` on ``sco.events.>`` (file storage, 7 days). Every
event is published with ``Nats-Msg-Id`` = its ``event_id``, so a republish within the duplicate window
(24 h, longer than the agent's 12 h stand-alone spool) is dropped by the server; anything older is
removed by the ReplacingMergeTree on ``event_id`` in ClickHouse. Messages the ingest cannot parse go to
``SCO_DEADLETTER`` on ``sco.deadletter.>`` with the reason in the ``Sco-Dead-Letter-Reason`` header.
Notices and advisories are plain (core NATS) subjects and never touch JetStream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from contracts.subjects import EVENT_SUBJECT_PREFIX, EVENTS_STREAM, user_inbox_prefix

from .config import resolve_url

__all__ = [
    "DEADLETTER_PREFIX",
    "DEADLETTER_STREAM",
    "DUPLICATE_WINDOW_S",
    "EVENTS_MAX_AGE_S",
    "REASON_HEADER",
    "connect",
    "ensure_deadletter_stream",
    "ensure_events_stream",
    "inbox_user",
    "publish_event",
    "publish_raw",
]

DUPLICATE_WINDOW_S = 24 * 3600
EVENTS_MAX_AGE_S = 7 * 24 * 3600
DEADLETTER_STREAM = "SCO_DEADLETTER"
DEADLETTER_PREFIX = "sco.deadletter"
REASON_HEADER = "Sco-Dead-Letter-Reason"


async def connect(url: str | None = None, *, home: Path | None = None, name: str = "sco",
                  component: str | None = None, **kwargs: Any) -> Any:
    """A connected ``nats.aio.client.Client`` that reconnects forever (NATS restarts are routine).

    ``component``: its own credential from the stack file when ``url`` is not given. A URL with a user name
    gets that user's reply inbox (``_INBOX_<user>``): the stack's users may subscribe to their own replies only.
    """
    import nats

    resolved = resolve_url("nats", url, home, component)
    options: dict[str, Any] = {"name": name, "max_reconnect_attempts": -1, "reconnect_time_wait": 0.25,
                               "connect_timeout": 2, "allow_reconnect": True, **kwargs}
    user = inbox_user(resolved)
    if user is not None:
        options.setdefault("inbox_prefix", user_inbox_prefix(user))
    return await nats.connect(resolved, **options)


def inbox_user(url: str) -> str | None:
    """The user name in a NATS URL (None without one, or for the administrator, who may use ``_INBOX``)."""
    user = urlsplit(url.split(",")[0]).username
    return None if not user or unquote(user) == "admin" else unquote(user)


async def _ensure(js: Any, config: Any) -> Any:
    from nats.js.errors import NotFoundError

    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        return await js.add_stream(config)
    if _same(info.config, config):
        return info  # no update: a component's NATS user may read a stream's configuration, not change it
    return await js.update_stream(config)


_COMPARED = ("subjects", "retention", "storage", "max_age", "duplicate_window", "discard", "num_replicas")


def _same(have: Any, want: Any) -> bool:
    """Whether the stream's configuration already has every field ``want`` sets (to something other than 0)."""
    for name in _COMPARED:
        wanted, got = getattr(want, name, None), getattr(have, name, None)
        if not wanted:  # not set (None, 0): the server's default stands, and is no difference
            continue
        if isinstance(wanted, float) or isinstance(got, float):
            if got is None or abs(float(wanted) - float(got)) > 1e-3:
                return False
        elif (list(got or []) != list(wanted)) if name == "subjects" else got != wanted:
            return False
    return True


async def ensure_events_stream(js: Any, *, duplicate_window_s: float = DUPLICATE_WINDOW_S,
                               max_age_s: float = EVENTS_MAX_AGE_S, replicas: int = 1) -> Any:
    """Create or update ``SCO_EVENTS`` (idempotent)."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

    return await _ensure(js, StreamConfig(
        name=EVENTS_STREAM, subjects=[f"{EVENT_SUBJECT_PREFIX}.>"], retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE, max_age=max_age_s, duplicate_window=duplicate_window_s,
        discard=DiscardPolicy.OLD, num_replicas=replicas))


async def ensure_deadletter_stream(js: Any, *, max_age_s: float = 30 * 24 * 3600) -> Any:
    """Create or update the dead-letter stream (``sco.deadletter.>``), keeping messages ``max_age_s`` seconds."""
    from nats.js.api import RetentionPolicy, StorageType, StreamConfig

    return await _ensure(js, StreamConfig(
        name=DEADLETTER_STREAM, subjects=[f"{DEADLETTER_PREFIX}.>"], retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE, max_age=max_age_s))


async def publish_raw(js: Any, subject: str, payload: bytes, msg_id: str, *, timeout: float = 5.0) -> Any:
    """Publish with ``Nats-Msg-Id``; returns the ``PubAck`` (``.duplicate`` is True for a republish)."""
    return await js.publish(subject, payload, timeout=timeout, headers={"Nats-Msg-Id": msg_id})


async def publish_event(js: Any, event: Any, *, timeout: float = 5.0) -> Any:
    """Publish a ``contracts.events.Event`` on its subject, deduplicated by ``event_id``."""
    return await publish_raw(js, event.subject, event.to_json(), str(event.event_id), timeout=timeout)
