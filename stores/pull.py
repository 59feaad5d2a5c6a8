"""A batch pull from a durable JetStream consumer without nats-py's per-message wait.

nats-py's ``PullSubscription.fetch`` awaits every message with ``asyncio.wait_for`` (a task and a timer
per message), which made the fetch the ingest's largest cost after parsing (issue 15). ``Puller`` sends the
same pull requests (``$JS.API.CONSUMER.MSG.NEXT``) to its own inbox and takes whatever has arrived off the
subscription's queue in one go, waiting only when the queue is empty. Protocol as nats-py's: first a
``no_wait`` request (what is there now, then a 404), and when that finds nothing a lingering request with
``expires``; messages for an earlier request that arrive late are kept for the next fetch, status messages
(404, 408, 409, heartbeats) are never returned. A message fetched and then dropped is not lost: it is
unacknowledged and JetStream redelivers it after ``ack_wait``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

__all__ = ["Puller", "ack_all"]

_END = frozenset({"404", "408", "409"})  # no messages / request expired / consumer gone or limits hit


def _status(msg: Any) -> str | None:
    headers = msg.headers
    return None if headers is None else headers.get("Status")


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
    await send(b"".join(b"PUB %s 0\r\n\r\n" % msg.reply.encode() for msg in messages))
    for msg in messages:
        msg._ackd = True


class Puller:
    """Pulls batches from ``stream``/``durable`` over connection ``nc`` (bind after the consumer exists)."""

    def __init__(self, nc: Any, stream: str, durable: str) -> None:
        self.nc, self.stream, self.durable = nc, stream, durable
        self._sub: Any = None
        self._inbox = ""

    async def bind(self) -> None:
        """Subscribe to the inbox the server delivers pulled messages to."""
        self._inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe(self._inbox)

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
        while len(out) < want and (msg := self._pop()) is not None:
            status = _status(msg)
            if status is None:
                out.append(msg)
            elif status in _END:
                return True
        return False

    def _pop(self) -> Any | None:
        """The next queued message, taken the way the subscription's own iterator takes it; None when empty."""
        queue = self._sub._pending_queue
        if queue.empty():
            return None
        msg = queue.get_nowait()
        queue.task_done()
        self._sub._pending_size -= len(msg.data)
        return msg

    def _leftovers(self, out: list[Any], want: int) -> None:
        """Late arrivals for an earlier request; their status messages are stale and dropped."""
        while len(out) < want and (msg := self._pop()) is not None:
            if _status(msg) is None:
                out.append(msg)

    async def _collect(self, out: list[Any], want: int, deadline: float, *, first_only: bool) -> None:
        """Wait for messages until ``want``, an ending status, the deadline, or (``first_only``) any message."""
        queue = self._sub._pending_queue
        while len(out) < want:
            if self._take(out, want) or (first_only and out) or len(out) >= want:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                msg = await asyncio.wait_for(queue.get(), remaining)
            except TimeoutError:
                return
            queue.task_done()
            self._sub._pending_size -= len(msg.data)
            status = _status(msg)
            if status is None:
                out.append(msg)
            elif status in _END:
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
        return 0 if self._sub is None else int(self._sub._pending_queue.qsize())

    async def unbind(self) -> None:
        """Drop the inbox subscription (undelivered messages come back after ``ack_wait``)."""
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
