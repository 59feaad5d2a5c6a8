"""One request from the guard to the engine over its Unix socket, and the engine's response back as it comes.

:func:`request_head` writes the request the engine sees: the client's request line and headers, without the
hop-by-hop ones and the encoding the guard already undid, with the decoded body's ``Content-Length``,
``Connection: close`` and the client's address in :data:`.front.PEER_HEADER` (a client's own is dropped).
:class:`ResponseFraming` follows the response's framing as its bytes pass (``Content-Length``, chunked, or up to
the close), so the guard relays every byte as soon as it arrives, stops at the response's end and knows whether
the response was complete: only then may the client's connection carry another request.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

from .front import PEER_HEADER

__all__ = ["ResponseFraming", "relay_response", "request_head"]

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                         "upgrade", "expect", "content-length", "content-encoding", PEER_HEADER.lower()})
_PIECE = 256 << 10
_MAX_LINE = 65536


def request_head(command: str, target: str, version: str, headers: Iterable[tuple[str, str]], length: int,
                 peer: str) -> bytes:
    """The request line and headers the engine receives for a decoded body of ``length`` bytes."""
    lines = [f"{command} {target} {version}"]
    lines += [f"{name}: {value}" for name, value in headers if name.lower() not in _HOP_BY_HOP]
    lines += [f"Content-Length: {length}", "Connection: close", f"{PEER_HEADER}: {peer}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class ResponseFraming:
    """Where a response ends, from its bytes as they pass: :meth:`feed` says how many of them belong to it.

    ``done`` once the response is whole; ``reusable`` when, besides, it said where it ends (``Content-Length`` or a
    chunked body with its final 0-chunk) and did not ask to close the connection.
    """

    def __init__(self, head_only: bool = False) -> None:
        self._head_only = head_only
        self._state = "status"  # status, headers, fixed, size, data, trailer, eof, done
        self._line = bytearray()
        self._status = 0
        self._length: int | None = None
        self._chunked = False
        self._close = False
        self._left = 0
        self.started = False  # some of the response went to the client

    @property
    def done(self) -> bool:
        """The whole response passed."""
        return self._state == "done"

    @property
    def reusable(self) -> bool:
        """The response is whole and framed: the client's connection can take another request."""
        return self.done and not self._close

    def feed(self, data: bytes | memoryview) -> int:
        """Follow ``data`` (the next bytes from the engine); returns how many of them belong to the response."""
        view = memoryview(data)
        used = 0
        while used < len(view) and self._state != "done":
            if self._state in ("fixed", "data"):
                step = min(self._left, len(view) - used)
                self._left -= step
                used += step
                if self._left == 0:
                    self._state = "done" if self._state == "fixed" else "size"
            elif self._state == "eof":
                used = len(view)
            else:
                end = bytes(view[used:used + _MAX_LINE]).find(b"\n")
                if end < 0:
                    self._line += view[used:]
                    used = len(view)
                    if len(self._line) > _MAX_LINE:
                        raise ValueError("a response line from the engine is too long")
                else:
                    self._line += view[used:used + end + 1]
                    used += end + 1
                    line, self._line = bytes(self._line), bytearray()
                    try:
                        self._on_line(line.rstrip(b"\r\n"))
                    except (ValueError, IndexError):  # not HTTP framing: passed on up to the close, never reused
                        self._state, self._close = "eof", True
        return used

    def _on_line(self, line: bytes) -> None:
        if self._state == "status":
            self._status = int(line.split()[1])
            self._state = "headers"
        elif self._state == "headers":
            if line:
                name, _, value = line.partition(b":")
                key, value = name.strip().lower(), value.strip().lower()
                if key == b"content-length":
                    self._length = int(value)
                elif key == b"transfer-encoding":
                    self._chunked = b"chunked" in value
                elif key == b"connection":
                    self._close = self._close or b"close" in value
            else:
                self._body()
        elif self._state == "size":
            size = int(line.split(b";", 1)[0].strip(), 16)
            self._state, self._left = ("trailer", 0) if size == 0 else ("data", size + 2)  # the data and its CRLF
        elif self._state == "trailer" and not line:
            self._state = "done"

    def _body(self) -> None:
        if self._head_only or self._status in (204, 304) or 100 <= self._status < 200:
            self._state = "done"
        elif self._chunked:
            self._state = "size"
        elif self._length is not None:
            self._state, self._left = ("fixed", self._length) if self._length else ("done", 0)
        else:
            self._state, self._close = "eof", True  # the body ends where the connection does


def relay_response(engine: socket.socket, client: socket.socket, head_only: bool = False) -> ResponseFraming:
    """Pass the engine's response to the client as it arrives, up to its end or the engine's close.

    An ``OSError`` from writing to the client propagates (the client went away); the caller closes both.
    """
    framing = ResponseFraming(head_only)
    while not framing.done:
        try:
            data = engine.recv(_PIECE)
        except OSError:  # the engine's connection broke: what passed is all there is
            break
        if not data:
            break
        used = framing.feed(data)
        client.sendall(memoryview(data)[:used])
        framing.started = True
    return framing
