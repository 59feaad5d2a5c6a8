"""An in-process front end with chosen limits, for the tests that need a small timeout, pool or body limit."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer

__all__ = ["StreamedReply", "raw_exchange", "running_frontend", "streamed"]


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


@dataclass
class StreamedReply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    complete: bool  # False: the chunked body ended without its final 0-chunk (a mid-stream exception)


def streamed(url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             timeout_s: float = 60.0) -> StreamedReply:
    """POST (or GET without ``body``) with http.client and read the reply, complete or cut short."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        target = parts.path or "/"
        connection.request("POST" if body is not None else "GET", target + (f"?{parts.query}" if parts.query else ""),
                           body=body, headers=headers or {})
        response = connection.getresponse()
        try:
            return StreamedReply(response.status, response.headers, response.read(), True)
        except http.client.IncompleteRead as cut:
            return StreamedReply(response.status, response.headers, cut.partial, False)
    finally:
        connection.close()
