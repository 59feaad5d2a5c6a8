"""An in-process front end with chosen limits, for the tests that need a small timeout, pool or body limit.

It authenticates like every front end: its users file has the writer and the reader of
``tests.support.clickhouse``; ``server.url`` carries the writer's credentials (``plain_url`` none).
"""

from __future__ import annotations

import contextlib
import http.client
import secrets
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer
from sco.stack.clickhouse_http.auth import write_users_file
from testkit.clickhouse import READER, WRITER, authorized

__all__ = ["PASSWORDS", "SLOW_QUERY", "StreamedReply", "TestFrontend", "cancel_slow_query", "raw_exchange",
           "running_frontend", "slow_query_on_a_socket", "streamed", "users_file"]

PASSWORDS = {WRITER: secrets.token_urlsafe(18), READER: secrets.token_urlsafe(18)}
_USERS_DIR = tempfile.mkdtemp(prefix="sco-ch-users-")


def users_file() -> Path:
    """This process's users file for in-process front ends (writer: default profile, reader: readonly)."""
    return write_users_file(Path(_USERS_DIR) / "users.json", {
        WRITER: (PASSWORDS[WRITER], "default"), READER: (PASSWORDS[READER], "readonly")})


class TestFrontend(ClickHouseHTTPServer):
    """The server, with ``url`` carrying the writer's credentials."""

    __test__ = False  # not a test class for pytest

    @property
    def plain_url(self) -> str:
        return super().url

    @property
    def url(self) -> str:
        return self.url_for(WRITER)

    def url_for(self, user: str) -> str:
        return self.plain_url.replace("http://", f"http://{user}:{PASSWORDS[user]}@")


@contextmanager
def running_frontend(engine_options: dict[str, Any] | None = None, **server_options: Any,
                     ) -> Iterator[TestFrontend]:
    """A front end over an in-memory chDB on a free loopback port, shut down on exit."""
    engine = ChdbEngine(None, **(engine_options or {}))
    server_options.setdefault("users_file", users_file())
    server = TestFrontend("127.0.0.1", 0, engine, **server_options)
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
    """Send ``request`` bytes as they are on one connection and read until the server closes it.

    Credentials in ``url`` go in as an ``Authorization`` header after the request line.
    """
    plain, headers = authorized(url)
    if "Authorization" in headers and b"\r\n" in request:
        line, rest = request.split(b"\r\n", 1)
        request = line + b"\r\nAuthorization: " + headers["Authorization"].encode() + b"\r\n" + rest
    parts = urlsplit(plain)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
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
    """POST (or GET without ``body``) with http.client and read the reply, complete or cut short (credentials in
    ``url`` go in as an ``Authorization`` header)."""
    plain, auth = authorized(url)
    headers = {**auth, **(headers or {})}
    parts = urlsplit(plain)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        target = parts.path or "/"
        connection.request("POST" if body is not None else "GET", target + (f"?{parts.query}" if parts.query else ""),
                           body=body, headers=headers)
        response = connection.getresponse()
        try:
            return StreamedReply(response.status, response.headers, response.read(), True)
        except http.client.IncompleteRead as cut:
            return StreamedReply(response.status, response.headers, cut.partial, False)
    finally:
        connection.close()


# A read-only query that keeps its slot and writes nothing for 200 s: still running whenever a loaded machine gets to
# the request that must find it running. A test ends it (``cancel_slow_query``, or by closing its socket).
SLOW_QUERY = "SELECT sleepEachRow(0.2) FROM numbers(1000) SETTINGS max_block_size = 1 FORMAT Null"


def slow_query_on_a_socket(url: str, extra: str = "") -> socket.socket:
    """Send ``SLOW_QUERY`` (``extra``: more URL parameters, ``&session_id=...``) on a socket of its own, unread."""
    plain, headers = authorized(url)
    host, port = plain.removeprefix("http://").rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(f"GET /?query={quote(SLOW_QUERY)}{extra} HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: {headers['Authorization']}\r\n\r\n".encode())
    return sock


def cancel_slow_query(sock: socket.socket, timeout_s: float = 60.0) -> bytes:
    """Shut down the sending side of ``sock``: the front end cancels its read-only query (``DisconnectWatch``),
    answers and closes. Returns that answer, read to the end: the front end writes it once the query has left its
    slot and its session, so both are free when this returns."""
    with sock:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(timeout_s)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)
