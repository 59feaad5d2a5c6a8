"""Reading one HTTP/1.1 request off a raw socket, for the tests' canned servers (a fake engine behind the
ClickHouse guard, a fake API behind the agent's HTTP client): the head up to its blank line, then a body of its
``Content-Length`` (none without one)."""

from __future__ import annotations

import socket

__all__ = ["read_request"]


def read_request(conn: socket.socket, chunk: int = 65536) -> bytes | None:
    """One request, head and body, as it came; None when the peer closed before a whole one arrived."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(chunk)
        if not more:
            return None
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        more = conn.recv(chunk)
        if not more:
            return None
        body += more
    return head + b"\r\n\r\n" + body
