"""A minimal blocking HTTP/1.1 client and an asyncio metrics server, on sockets only.

``http.client``/``urllib.request`` and ``http.server`` pull in the ``email`` package and friends (1.1 MiB of
the agent's measured RSS; up to 4 MiB over a bare asyncio interpreter) for a handful of plain requests:
metadata polls, bundle fetches, a few Kubernetes calls, a lease release. One request per connection
(``Connection: close``); responses with ``Content-Length``, chunked encoding or read-to-close.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from urllib.parse import urlsplit

from .errors import HttpError

__all__ = ["HttpError", "exchange", "get_body", "request", "start_text_server"]

MAX_BODY = 64 * 1024 * 1024


def _read_until(sock: socket.socket, buf: bytearray, marker: bytes) -> int:
    while True:
        at = buf.find(marker)
        if at >= 0:
            return at
        chunk = sock.recv(65536)
        if not chunk:
            raise HttpError("connection closed before the response headers ended")
        buf += chunk
        if len(buf) > MAX_BODY:
            raise HttpError("response too large")


def _read_exact(sock: socket.socket, buf: bytearray, n: int) -> bytes:
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise HttpError("connection closed inside the response body")
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


def request(method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
            timeout: float = 5.0, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    """Send one request; return (status, body). Raises ``HttpError`` (an ``OSError``) on transport errors."""
    status, _, data = exchange(method, url, body, headers, timeout, context)
    return status, data


def exchange(method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             timeout: float = 5.0, context: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    """Send one request; return (status, response headers with lower-case names, body).

    Raises:
        HttpError: a transport error (it is an ``OSError``).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpError(f"unsupported URL {url!r}: use http:// or https://")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close", "Accept-Encoding: identity",
             "User-Agent: sco-agent"]
    for key, value in (headers or {}).items():
        lines.append(f"{key}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    payload = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    try:
        raw = socket.create_connection((parts.hostname, port), timeout=timeout)
    except OSError as exc:
        raise HttpError(f"{method} {url}: {exc}") from exc
    try:
        sock: socket.socket = raw
        if parts.scheme == "https":
            sock = (context or ssl.create_default_context()).wrap_socket(raw, server_hostname=parts.hostname)
        sock.settimeout(timeout)
        sock.sendall(payload)
        buf = bytearray()
        end = _read_until(sock, buf, b"\r\n\r\n")
        head = bytes(buf[:end]).decode("latin-1").split("\r\n")
        del buf[:end + 4]
        try:
            status = int(head[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise HttpError(f"{method} {url}: not an HTTP response: {head[0][:80]!r}") from None
        fields: dict[str, str] = {}
        for line in head[1:]:
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return status, fields, b""
        if "chunked" in fields.get("transfer-encoding", "").lower():
            out = bytearray()
            while True:
                at = _read_until(sock, buf, b"\r\n")
                size = int(bytes(buf[:at]).split(b";")[0].strip() or b"0", 16)
                del buf[:at + 2]
                if size == 0:
                    return status, fields, bytes(out)
                out += _read_exact(sock, buf, size + 2)[:-2]
                if len(out) > MAX_BODY:
                    raise HttpError("response too large")
        if "content-length" in fields:
            return status, fields, _read_exact(sock, buf, int(fields["content-length"]))
        while True:  # read to close
            chunk = sock.recv(65536)
            if not chunk:
                return status, fields, bytes(buf)
            buf += chunk
            if len(buf) > MAX_BODY:
                raise HttpError("response too large")
    except (OSError, ValueError) as exc:
        if isinstance(exc, HttpError):
            raise
        raise HttpError(f"{method} {url}: {exc}") from exc
    finally:
        raw.close()


async def start_text_server(host: str, port: int, paths: tuple[str, ...],
                            render: Callable[[], str]) -> asyncio.Server:
    """Serve ``GET <path>`` for ``paths`` with ``render()`` as Prometheus text, on the running loop."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = line[1].split("?")[0] if len(line) > 1 else ""
            if line[0] == "GET" and path in paths:
                status, body = "200 OK", render().encode()
            else:
                status, body = "404 Not Found", b"only /metrics is served\n"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)


def get_body(url: str, timeout: float) -> bytes:
    """The body of a 200 answer to GET ``url``; anything else is an ``AgentError`` naming the URL."""
    from .model import AgentError

    try:
        status, body = request("GET", url, timeout=timeout)
    except OSError as exc:
        raise AgentError(f"GET {url}: {exc}") from exc
    if status != 200:
        raise AgentError(f"GET {url} answered {status}")
    return body
