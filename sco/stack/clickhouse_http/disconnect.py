"""Noticing clients that went away while their query runs, so the query can be cancelled.

A query with no output yet (an aggregation over a large table, ``sleepEachRow``) never writes to the
socket, so a closed connection would go unnoticed until the query ends. The watcher polls the sockets of
the running queries every ``interval_s`` for the peer's close (``POLLRDHUP``/``POLLHUP``/``POLLERR``;
plain ``POLLIN`` is a pipelined request, not a close) and calls the query's ``on_close`` once.

A ClickHouse server does the same for read-only queries when ``cancel_http_readonly_queries_on_client_close``
is 1 (clickhouse-connect sets it); the front end does it unless that setting is given as 0.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import threading
from collections.abc import Callable

__all__ = ["DisconnectWatch"]

_CLOSED = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)


class DisconnectWatch:
    """One daemon thread watching the sockets registered with :meth:`watch`."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[socket.socket, Callable[[], None]]] = {}
        self._ids = itertools.count()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clickhouse-disconnect-watch", daemon=True)
        self._thread.start()

    def watch(self, sock: socket.socket, on_close: Callable[[], None]) -> int:
        """Call ``on_close`` (from the watcher thread) if the peer of ``sock`` closes; returns a token."""
        with self._lock:
            token = next(self._ids)
            self._watched[token] = (sock, on_close)
        self._wake.set()
        return token

    def unwatch(self, token: int) -> None:
        """Stop watching the socket of ``token`` (its request is over); an unknown token is ignored."""
        with self._lock:
            self._watched.pop(token, None)

    def close(self) -> None:
        """Stop the watcher thread, waiting up to 5 s for it."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def _closed(self) -> list[int]:
        with self._lock:
            watched = {token: sock.fileno() for token, (sock, _) in self._watched.items()}
        poller = select.poll()
        by_fd: dict[int, list[int]] = {}
        for token, fd in watched.items():
            if fd < 0:
                continue
            by_fd.setdefault(fd, []).append(token)
            poller.register(fd, select.POLLIN | _CLOSED)
        closed: list[int] = []
        for fd, events in poller.poll(0):
            if events & _CLOSED:
                closed += by_fd.get(fd, [])
        return closed

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                idle = not self._watched
            if idle:
                self._wake.wait()
                self._wake.clear()
                continue
            for token in self._closed():
                with self._lock:
                    entry = self._watched.pop(token, None)
                if entry is not None:
                    with contextlib.suppress(Exception):  # a failed cancel must not stop the watcher
                        entry[1]()
            self._stop.wait(self._interval_s)
