"""Bounds the server keeps, whatever a client does: a total deadline per connection and a cap on open ones.

aiohttp bounds the size of a request line and its headers but not the time they take: a client that sends a
header line every few seconds holds its connection (and, 256 of them, the server) for as long as it likes. So
every connection passes a ``Guard`` (an asyncio protocol in front of aiohttp's): past ``max_connections`` open
ones a new connection gets ``503`` at once and is closed (``DST002``), and each admitted one is closed
``deadline_s`` after it was accepted, whatever state its request is in (``DST001``) — headers and body
included, so drip-feeding defeats nothing. A bundle is a few KiB, served in milliseconds; an agent polls with
a fresh connection or keeps one alive for less than the deadline. Both refusals are logged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

__all__ = ["Gate", "Guard", "Limits"]

log = logging.getLogger(__name__)
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
         b"Content-Length: 58\r\n\r\nDST002 too many connections to the distributor; retry later\n")


@dataclass(frozen=True)
class Limits:
    """``deadline_s``: the longest a connection stays open; ``max_connections``: how many at once."""

    deadline_s: float = 30.0
    max_connections: int = 128


class Gate:
    """The open connections of one server, against its ``Limits``."""

    def __init__(self, limits: Limits) -> None:
        """No connection open yet."""
        self.limits = limits
        self.open = 0
        self.refused = 0
        self.expired = 0

    def admit(self) -> bool:
        """Count one more open connection; False (and counted as refused) when the cap is reached."""
        if self.open >= self.limits.max_connections:
            self.refused += 1
            return False
        self.open += 1
        return True

    def release(self) -> None:
        """One admitted connection closed."""
        self.open -= 1


class Guard(asyncio.Protocol):
    """One connection: admitted by the ``Gate`` and closed at its deadline, else handed to ``inner``."""

    def __init__(self, inner: Any, gate: Gate) -> None:
        """Front ``inner`` (aiohttp's protocol for this connection) with ``gate``."""
        self.inner, self.gate = inner, gate
        self.admitted = False
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit the connection and start its deadline, or answer 503 and close it."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if not self.gate.admit():
            log.warning("DST002 connection from %s refused: %d open, at most %d", peer, self.gate.open,
                        self.gate.limits.max_connections)
            transport.write(_BUSY)
            transport.close()
            return
        self.admitted = True
        self.timer = asyncio.get_running_loop().call_later(self.gate.limits.deadline_s, self._expire, peer)
        self.inner.connection_made(transport)

    def _expire(self, peer: object) -> None:
        self.gate.expired += 1
        log.warning("DST001 connection from %s closed: open longer than the %.0f s deadline", peer,
                    self.gate.limits.deadline_s)
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        """Hand the bytes to aiohttp (an admitted connection only)."""
        if self.admitted:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        """Hand the end of input to aiohttp."""
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        """Pass flow control on to aiohttp."""
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        """Pass flow control on to aiohttp."""
        if self.admitted:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        """Cancel the deadline, free the slot, tell aiohttp."""
        if self.timer is not None:
            self.timer.cancel()
        if self.admitted:
            self.gate.release()
            self.inner.connection_lost(exc)
