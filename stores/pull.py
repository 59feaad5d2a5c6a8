"""A batch pull from a durable JetStream consumer without nats-py's per-message work.

nats-py's ``PullSubscription.fetch`` awaits every message with ``asyncio.wait_for`` (a task and a timer
per message), and its connection turns every delivered message into a ``Msg``: the subject and reply
decoded, the headers parsed into a dict, a queue put and get — together the largest cost of the ingest
after validation (the profiles: ``_process_msg`` and its header parsing ~28 % of the ingest's
Python time). ``Puller`` sends the same pull requests (``$JS.API.CONSUMER.MSG.NEXT``) to its own inbox,
and the connection hands the inbox's messages to it raw (``route``: the subject, reply, payload and header
bytes as the protocol parser cut them); each becomes a :class:`Pulled`, which decodes its subject and
headers only when asked (a dead letter, never the hot path). Protocol as nats-py's: first a ``no_wait``
request (what is there now, then a 404), and when that finds nothing a lingering request with
``expires``; messages for an earlier request that arrive late are kept for the next fetch, status
messages (404, 408, 409, heartbeats) are never returned. A message fetched and then dropped is not lost:
it is unacknowledged and JetStream redelivers it after ``ack_wait``.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Pulled", "Puller", "ack_all", "route"]

_END = frozenset({"404", "408", "409"})  # no messages / request expired / consumer gone or limits hit
_STATUS_LINE = b"NATS/1.0 "  # an inline status: ``NATS/1.0 404 No Messages``
_HEADER_LINE = len(b"NATS/1.0\r\n")
_ROUTES = "_sco_pull_routes"
Raw = tuple[bytes, bytes, bytes, bytes | None]  # subject, reply, payload, header block


class Pulled:
    """One message pulled from JetStream, decoded lazily; acknowledges like nats-py's ``Msg``."""

    __slots__ = ("_ackd", "_headers", "_msg", "_nc", "_raw_headers", "_subject", "data", "reply_bytes")

    def __init__(self, nc: Any, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        self._nc, self._subject, self.reply_bytes, self.data = nc, subject, reply, data
        self._raw_headers, self._ackd = headers, False
        self._headers: dict[str, str] | None = None
        self._msg: Any = None

    @property
    def status(self) -> str | None:
        """The inline status code (``404``…) of a status message; ``None`` for a stream message."""
        raw = self._raw_headers
        if raw is None or not raw.startswith(_STATUS_LINE):
            return None
        return raw[len(_STATUS_LINE): len(_STATUS_LINE) + 3].decode("ascii", "replace")

    @property
    def subject(self) -> str:
        """The subject the event was published on."""
        return self._subject.decode()

    @property
    def reply(self) -> str:
        """The JetStream acknowledgement subject (``$JS.ACK.…``)."""
        return self.reply_bytes.decode()

    @property
    def headers(self) -> dict[str, str] | None:
        """The message's headers, parsed as nats-py parses them (``None`` when it has none)."""
        if self._headers is None and self._raw_headers and self.status is None:
            self._headers = self._nc._parse_header_lines(self._raw_headers[_HEADER_LINE:]) or None
        return self._headers

    def as_msg(self) -> Any:
        """The nats-py ``Msg`` for this message (built once, for the rare paths: nak, term, metadata)."""
        if self._msg is None:
            from nats.aio.msg import Msg

            self._msg = Msg(_client=self._nc, subject=self.subject, reply=self.reply, data=self.data,
                            headers=self.headers)
        self._msg._ackd = self._ackd
        return self._msg

    @property
    def metadata(self) -> Any:
        """JetStream metadata (stream and consumer sequence, deliveries) from the reply subject."""
        return self.as_msg().metadata

    async def ack(self) -> None:
        """Acknowledge this message alone (the ingest acknowledges a batch with :func:`ack_all`)."""
        await self.as_msg().ack()
        self._ackd = True

    async def nak(self, delay: float | None = None) -> None:
        """Ask for a redelivery, after ``delay`` seconds when given."""
        await self.as_msg().nak(delay=delay)
        self._ackd = True

    async def term(self) -> None:
        """Stop redeliveries (a dead-lettered message)."""
        await self.as_msg().term()
        self._ackd = True


def route(nc: Any, sid: int, sink: Callable[[Raw], None] | None) -> None:
    """Hand subscription ``sid``'s messages to ``sink`` raw instead of nats-py's ``Msg`` and queue.

    Wraps the connection's ``_process_msg`` (what its protocol parser calls for every MSG/HMSG) once; other
    subscriptions pass through untouched. ``sink=None`` removes the route.
    """
    routes: dict[int, Callable[[Raw], None]] | None = getattr(nc, _ROUTES, None)
    if routes is None:
        routes = {}
        inner = nc._process_msg
        stats = nc.stats

        async def process(sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
            sink = routes.get(sid)
            if sink is None:
                await inner(sid, subject, reply, data, headers)
                return
            stats["in_msgs"] += 1
            stats["in_bytes"] += len(data)
            sink((subject, reply, data, headers))

        setattr(nc, _ROUTES, routes)
        nc._process_msg = process
    if sink is None:
        routes.pop(sid, None)
    else:
        routes[sid] = sink


async def ack_all(nc: Any, messages: list[Any]) -> None:
    """Acknowledge ``messages`` in one write: ``PUB <reply> 0`` each, as ``Msg.ack`` sends one by one.

    Uses nats-py's command buffer (``_send_command``) when it has one, else ``Msg.ack``. Raises nats-py's
    ``ConnectionClosedError`` on a closed connection, as a publish would.
    """
    import nats.errors

    send = getattr(nc, "_send_command", None)
    if send is None:
        for msg in messages:
            await msg.ack()
        return
    if nc.is_closed:
        raise nats.errors.ConnectionClosedError
    await send(b"".join(b"PUB %s 0\r\n\r\n" % _reply(msg) for msg in messages))
    for msg in messages:
        msg._ackd = True


def _reply(msg: Any) -> bytes:
    raw: bytes | None = getattr(msg, "reply_bytes", None)
    return raw if raw is not None else bytes(msg.reply.encode())


class Puller:
    """Pulls batches from ``stream``/``durable`` over connection ``nc`` (bind after the consumer exists)."""

    def __init__(self, nc: Any, stream: str, durable: str) -> None:
        self.nc, self.stream, self.durable = nc, stream, durable
        self._sub: Any = None
        self._inbox = ""
        self._queue: collections.deque[Raw] = collections.deque()
        self._arrived = asyncio.Event()

    async def bind(self) -> None:
        """Subscribe to the inbox the server delivers pulled messages to, routed to this puller."""
        self._inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe(self._inbox)
        route(self.nc, self._sub._id, self._arrive)

    def _arrive(self, raw: Raw) -> None:
        self._queue.append(raw)
        self._arrived.set()

    async def _request(self, batch: int, *, no_wait: bool, expires_s: float | None = None) -> None:
        body: dict[str, Any] = {"batch": batch}
        if no_wait:
            body["no_wait"] = True
        if expires_s is not None:
            body["expires"] = int(expires_s * 1e9)
        await self.nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.durable}", json.dumps(body).encode(),
                              reply=self._inbox)

    def _take(self, out: list[Any], want: int) -> bool:
        """Move queued messages to ``out`` up to ``want``; True when a status ended the request."""
        queue, nc = self._queue, self.nc
        while len(out) < want and queue:
            subject, reply, data, headers = queue.popleft()
            if headers is None or not headers.startswith(_STATUS_LINE):
                out.append(Pulled(nc, subject, reply, data, headers))
            elif headers[9:12].decode("ascii", "replace") in _END:
                return True
        return False

    def _leftovers(self, out: list[Any], want: int) -> None:
        """Late arrivals for an earlier request; their status messages are stale and dropped."""
        queue, nc = self._queue, self.nc
        while len(out) < want and queue:
            subject, reply, data, headers = queue.popleft()
            if headers is None or not headers.startswith(_STATUS_LINE):
                out.append(Pulled(nc, subject, reply, data, headers))

    async def _collect(self, out: list[Any], want: int, deadline: float, *, first_only: bool) -> None:
        """Wait for messages until ``want``, an ending status, the deadline, or (``first_only``) any message."""
        while len(out) < want:
            if self._take(out, want) or (first_only and out) or len(out) >= want:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                return

    async def fetch(self, batch: int, timeout: float) -> list[Any]:
        """Up to ``batch`` messages; waits up to ``timeout`` seconds only when none are waiting."""
        started = time.monotonic()
        out: list[Any] = []
        self._leftovers(out, batch)
        if len(out) >= batch:
            return out
        await self._request(batch - len(out), no_wait=True)
        await self._collect(out, batch, started + timeout, first_only=False)
        if out:
            return out
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0.01:
            return out
        await self._request(batch, no_wait=False, expires_s=remaining)
        await self._collect(out, batch, started + timeout, first_only=True)
        return out

    def waiting(self) -> int:
        """Messages (and statuses) already delivered to the inbox and not yet fetched."""
        return len(self._queue)

    async def unbind(self) -> None:
        """Drop the inbox subscription (undelivered messages come back after ``ack_wait``)."""
        if self._sub is not None:
            route(self.nc, self._sub._id, None)
            await self._sub.unsubscribe()
            self._sub = None
