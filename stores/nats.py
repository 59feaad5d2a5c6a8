"""NATS and JetStream: connecting, the event stream, the dead-letter stream and idempotent publishing.

The lifecycle events ride one stream, ``SCO_EVENTS`` on ``sco.events.>`` (file storage, 7 days). Every
event is published with ``Nats-Msg-Id`` = its ``event_id``, so a republish within the duplicate window
(24 h, longer than the agent's 12 h stand-alone spool) is dropped by the server; anything older is
removed by the ReplacingMergeTree on ``event_id`` in ClickHouse. Messages the ingest cannot parse go to
``SCO_DEADLETTER`` on ``sco.deadletter.>`` with the reason in the ``Sco-Dead-Letter-Reason`` header.
Notices and advisories are plain (core NATS) subjects and never touch JetStream.

A NATS cluster is given as every server's URL, comma-separated (``SCO_NATS_URL``, the stack file) or as a
list: ``connect`` hands nats-py the list (it fails over between them) and, when every URL carries the same
credential, gives it to nats-py once, so that a server learnt from the cluster's gossip is logged in to as
well. Streams are created with 3 replicas when the connected server is in a cluster of three or more
(``stream_replicas``); an existing stream's replica count is left as it is unless asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

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
    "server_list",
    "stream_replicas",
]

DUPLICATE_WINDOW_S = 24 * 3600
EVENTS_MAX_AGE_S = 7 * 24 * 3600
DEADLETTER_STREAM = "SCO_DEADLETTER"
DEADLETTER_PREFIX = "sco.deadletter"
REASON_HEADER = "Sco-Dead-Letter-Reason"


async def connect(url: str | Sequence[str] | None = None, *, home: Path | None = None, name: str = "sco",
                  component: str | None = None, **kwargs: Any) -> Any:
    """A connected ``nats.aio.client.Client`` that reconnects forever (NATS restarts are routine).

    ``url``: one server, or every server of a cluster (a list, or comma-separated); nats-py fails over between
    them. ``component``: its own credential from the stack file when ``url`` is not given. A URL with a user
    name gets that user's reply inbox (``_INBOX_<user>``): the stack's users may subscribe to their own replies.
    """
    import nats

    given = ",".join(url) if url is not None and not isinstance(url, str) else url
    resolved = resolve_url("nats", given, home, component)
    options: dict[str, Any] = {"name": name, "max_reconnect_attempts": -1, "reconnect_time_wait": 0.25,
                               "connect_timeout": 2, "allow_reconnect": True, **kwargs}
    user = inbox_user(resolved)
    if user is not None:
        options.setdefault("inbox_prefix", user_inbox_prefix(user))
    servers, credential = _lift_credential(server_list(resolved))
    for key, value in credential.items():
        options.setdefault(key, value)
    return await nats.connect(servers if len(servers) > 1 else servers[0], **options)


def server_list(url: str) -> list[str]:
    """The servers of a comma-separated NATS URL list (one URL: a list of one)."""
    return [part.strip() for part in url.split(",") if part.strip()]


def _lift_credential(servers: list[str]) -> tuple[list[str], dict[str, str]]:
    """Several URLs with one and the same ``user:password``: the URLs without it, and it as options.

    nats-py logs in to a server the cluster announced with the ``user``/``password`` options; with the
    credential only in the URLs it would try that server without any. Anything else: unchanged.
    """
    parts = [urlsplit(s) for s in servers]
    creds = {(p.username, p.password) for p in parts}
    if len(servers) < 2 or len(creds) != 1:
        return servers, {}
    username, password = creds.pop()
    if username is None or password is None:
        return servers, {}
    bare = [urlunsplit(p._replace(netloc=p.netloc.rsplit("@", 1)[1])) for p in parts]
    return bare, {"user": unquote(username), "password": unquote(password)}


def inbox_user(url: str) -> str | None:
    """The user name in a NATS URL (None without one, or for the administrator, who may use ``_INBOX``)."""
    user = urlsplit(url.split(",")[0]).username
    return None if not user or unquote(user) == "admin" else unquote(user)


def stream_replicas(nc: Any) -> int:
    """The replicas a new stream gets on the server ``nc`` is connected to: 3 in a cluster of 3+, else 1.

    The cluster's size is the larger of the servers it announces in its ``INFO`` (itself included; the gossip
    may not have them all yet just after a start) and the servers the client was given. nats-py keeps the
    ``INFO`` in ``_server_info`` and has no public accessor for the cluster.
    """
    info = getattr(nc, "_server_info", None) or {}
    known = max(len(info.get("connect_urls") or []), len({(u.hostname, u.port) for u in nc.servers}))
    return 3 if info.get("cluster") and known >= 3 else 1


async def _ensure(js: Any, config: Any, replicas: int | None) -> Any:
    """Create the stream, or update it where it differs from ``config``.

    A new stream gets ``replicas``, or ``stream_replicas``; an existing one's replica count changes only when
    ``replicas`` is given (a component's default never shrinks a replicated stream).
    """
    from dataclasses import replace

    from nats.js.errors import NotFoundError

    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        return await _create(js, replace(config, num_replicas=replicas or stream_replicas(js._nc)))
    if replicas is None:
        config = replace(config, num_replicas=info.config.num_replicas)
    else:
        config = replace(config, num_replicas=replicas)
    if _same(info.config, config):
        return info  # no update: a component's NATS user may read a stream's configuration, not change it
    return await js.update_stream(config)


PLACEMENT_WAIT_S = 30.0  # a cluster that just started may not know its peers yet ("no suitable peers")


async def _create(js: Any, config: Any) -> Any:
    """``add_stream``, retried for a while when a replicated stream cannot be placed yet.

    Right after a cluster starts, its meta leader answers before it knows every peer (``no suitable peers for
    placement``, err 10005) or answers 503.
    """
    import asyncio

    from nats.js.errors import BadRequestError, ServiceUnavailableError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + PLACEMENT_WAIT_S
    while True:
        try:
            return await js.add_stream(config)
        except (BadRequestError, ServiceUnavailableError) as exc:
            placement = isinstance(exc, ServiceUnavailableError) or getattr(exc, "err_code", None) == 10005
            if not placement or config.num_replicas in (None, 1) or loop.time() >= deadline:
                raise
            await asyncio.sleep(0.25)


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
                               max_age_s: float = EVENTS_MAX_AGE_S, replicas: int | None = None) -> Any:
    """Create or update ``SCO_EVENTS`` (idempotent); ``replicas``: see ``_ensure``."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

    return await _ensure(js, StreamConfig(
        name=EVENTS_STREAM, subjects=[f"{EVENT_SUBJECT_PREFIX}.>"], retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE, max_age=max_age_s, duplicate_window=duplicate_window_s,
        discard=DiscardPolicy.OLD), replicas)


async def ensure_deadletter_stream(js: Any, *, max_age_s: float = 30 * 24 * 3600, replicas: int | None = None) -> Any:
    """Create or update the dead-letter stream (``sco.deadletter.>``), keeping messages ``max_age_s`` seconds.

    ``replicas``: see ``_ensure``.
    """
    from nats.js.api import RetentionPolicy, StorageType, StreamConfig

    return await _ensure(js, StreamConfig(
        name=DEADLETTER_STREAM, subjects=[f"{DEADLETTER_PREFIX}.>"], retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE, max_age=max_age_s), replicas)


async def publish_raw(js: Any, subject: str, payload: bytes, msg_id: str, *, timeout: float = 5.0) -> Any:
    """Publish with ``Nats-Msg-Id``; returns the ``PubAck`` (``.duplicate`` is True for a republish)."""
    return await js.publish(subject, payload, timeout=timeout, headers={"Nats-Msg-Id": msg_id})


async def publish_event(js: Any, event: Any, *, timeout: float = 5.0) -> Any:
    """Publish a ``contracts.events.Event`` on its subject, deduplicated by ``event_id``."""
    return await publish_raw(js, event.subject, event.to_json(), str(event.event_id), timeout=timeout)
