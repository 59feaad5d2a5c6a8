"""Bounds the server sets on its connections, whatever the client does.

- :class:`Deadlines`: a total deadline per phase of a request — the request line and headers, then the body —
  counted from the phase's start, not per read: a client that drips a header line every few seconds is cut when
  the phase's time is up (the socket is shut down, the handler's read ends). One thread serves every connection.
- :class:`Unauthenticated`: the connections that have not yet shown a valid password. Past the cap the oldest of
  them is cut to make room, so clients that hold connections open without authenticating cannot keep a new
  client out for longer than it takes to send one request.

Each cut is one log line on ``sco.clickhouse.security``: ``CHS009`` (a deadline) or ``CHS010`` (the cap).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["Deadlines", "Unauthenticated"]

log = logging.getLogger("sco.clickhouse.security")


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its handler
        sock.shutdown(socket.SHUT_RDWR)


class Deadlines:
    """Shut a socket down when its armed deadline passes (``arm`` … ``disarm``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, tuple[socket.socket, str, str, float]] = {}
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ch-deadlines", daemon=True)
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float, phase: str, peer: str) -> int:
        """Cut ``sock`` unless it is disarmed within ``seconds`` (``phase`` and ``peer`` go into the log line); returns
        the token ``disarm`` takes."""
        token = next(self._ids)
        with self._wake:
            self._armed[token] = (sock, phase, peer, seconds)
            heapq.heappush(self._heap, (self._clock() + seconds, token))
            self._wake.notify()
        return token

    def disarm(self, token: int | None) -> None:
        """Cancel the deadline of ``token`` (None, or one already passed: nothing to do)."""
        if token is not None:
            with self._wake:
                self._armed.pop(token, None)

    def close(self) -> None:
        """Stop the deadline thread; deadlines still armed are never cut."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while not self._closed:
                now = self._clock()
                while self._heap and self._heap[0][0] <= now:
                    _, token = heapq.heappop(self._heap)
                    armed = self._armed.pop(token, None)
                    if armed is not None:
                        sock, phase, peer, seconds = armed
                        log.warning("CHS009 peer=%s cut: the request %s did not arrive within %g s (a total, not per "
                                    "read)", peer, phase, seconds)
                        _cut(sock)
                wait = self._heap[0][0] - now if self._heap else None
                self._wake.wait(timeout=wait)


class Unauthenticated:
    """The connections not yet authenticated, at most ``cap``: a new one past it cuts the oldest."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._socks: OrderedDict[int, tuple[socket.socket, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._socks)

    def add(self, sock: socket.socket, peer: str) -> None:
        """Count a new connection as unauthenticated; past the cap, the oldest one is cut to make room."""
        with self._lock:
            oldest = self._socks.popitem(last=False) if len(self._socks) >= self._cap else None
            self._socks[id(sock)] = (sock, peer)
        if oldest is not None:
            log.warning("CHS010 peer=%s cut: %d connections had not authenticated; the oldest makes room",
                        oldest[1][1], self._cap)
            _cut(oldest[1][0])

    def done(self, sock: socket.socket) -> None:
        """``sock`` authenticated or closed: it no longer counts."""
        with self._lock:
            self._socks.pop(id(sock), None)
