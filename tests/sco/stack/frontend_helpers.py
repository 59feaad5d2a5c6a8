"""An in-process front end with chosen limits, for the tests that need a small timeout, pool or body limit."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer

__all__ = ["raw_exchange", "running_frontend"]


@contextmanager
def running_frontend(engine_options: dict[str, Any] | None = None, **server_options: Any,
                     ) -> Iterator[ClickHouseHTTPServer]:
    """A front end over an in-memory chDB on a free loopback port, shut down on exit."""
    engine = ChdbEngine(None, **(engine_options or {}))
    server = ClickHouseHTTPServer("127.0.0.1", 0, engine, **server_options)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
        engine.close()


def raw_exchange(url: str, request: bytes, close_write: bool = True, timeout_s: float = 30.0) -> bytes:
    """Send ``request`` bytes as they are on one connection and read until the server closes it."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(request)
        if close_write:
            with contextlib.suppress(OSError):  # the server answered and hung up already
                sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)
