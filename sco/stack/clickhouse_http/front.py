"""The part of an HTTP front end that touches a client's bytes before anyone knows who sent them.

:class:`FrontServer` owns the listening socket: one thread per connection, at most ``max_connections`` (then an
immediate 503), the header and body deadlines (:mod:`.deadlines`), the cap on connections waiting to
authenticate and the read timeout. :class:`FrontHandler` reads a request's body (``Content-Length`` or chunked,
bounded by ``max_body_bytes``) within the body deadline and answers a ClickHouse error the way a server does.
Both the guard (:mod:`.frontdoor`, on TCP) and the engine's server (:mod:`.server`, on a Unix socket behind the
guard, or on TCP in tests) are made of them; neither this module nor anything it imports loads chDB.
"""

from __future__ import annotations

import io
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any, cast
from urllib.parse import parse_qsl, urlsplit

from .bodies import SPOOL_BYTES, spool
from .deadlines import Deadlines, Unauthenticated
from .protocol import DEFAULT_MAX_BODY, ClickHouseError, http_status

__all__ = ["DISPLAY_NAME", "PEER_HEADER", "FrontHandler", "FrontServer", "with_version"]

DISPLAY_NAME = "sco-chdb"
PEER_HEADER = "X-SCO-Client-Peer"  # the client's address, from the guard; trusted on the engine's Unix socket only
_BUSY_TEXT = b"Code: 202. DB::Exception: Too many simultaneous connections; retry later. " \
    b"(TOO_MANY_SIMULTANEOUS_QUERIES)\n"
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=UTF-8\r\n"
         b"X-ClickHouse-Exception-Code: 202\r\nConnection: close\r\n"
         b"Content-Length: %d\r\n\r\n%s" % (len(_BUSY_TEXT), _BUSY_TEXT))


def with_version(error: ClickHouseError, version: str) -> str:
    """The error's text as a server sends it, ending with the engine's version."""
    return f"{error}" if "(version" in str(error) else f"{error} (version {version})"


class FrontHandler(BaseHTTPRequestHandler):
    """Deadlines on the request line, headers and body; the body read whole (bounded); errors answered."""

    protocol_version = "HTTP/1.1"
    server: FrontServer

    def log_message(self, format: str, *args: object) -> None:
        """Log a request on stderr only when the server is ``verbose``."""
        if self.server.verbose:
            super().log_message(format, *args)

    def address_string(self) -> str:
        """The client's address for the request log (``?`` on a Unix socket without the guard's word)."""
        return self._peer()

    _deadline: int | None = None

    def setup(self) -> None:
        """Bound every read by ``read_timeout_s``; on TCP, send small writes at once (no Nagle delay)."""
        super().setup()
        if self.server.address_family != socket.AF_UNIX:  # headers and body go out as two writes: no 40 ms stall
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.connection.settimeout(self.server.read_timeout_s)  # every read; the phases have totals besides

    def _peer(self) -> str:
        address = self.client_address
        return f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else "?"

    def _target(self) -> tuple[str, dict[str, bytes]]:
        """The request's path and URL parameters, the values as raw bytes (binary-safe SQL and parameters)."""
        url = urlsplit(self.path)
        return url.path, {k.encode("latin-1").decode(errors="replace"): v.encode("latin-1")
                          for k, v in parse_qsl(url.query, keep_blank_values=True, encoding="latin-1")}

    def _health_check(self, path: str, params: dict[str, bytes]) -> bool:
        """``/ping``, ``/replicas_status`` and a bare ``GET /``: answered ``Ok.`` without credentials."""
        return path in ("/ping", "/replicas_status") or (path == "/" and self.command in ("GET", "HEAD")
                                                         and "query" not in params)

    def handle_one_request(self) -> None:
        """Wait (idle) for a request's first byte, then give its line and headers a total deadline."""
        try:
            if not cast(io.BufferedReader, self.rfile).peek(1):
                self.close_connection = True
                return
        except (TimeoutError, OSError):  # idle past read_timeout_s, or gone
            self.close_connection = True
            return
        self._deadline = self.server.deadlines.arm(self.connection, self.server.header_timeout_s,
                                                   "line and headers", self._peer())
        try:
            super().handle_one_request()
        finally:
            self.server.deadlines.disarm(self._deadline)
            self._deadline = None

    def _body_within_deadline(self) -> bytes | IO[bytes]:
        self.server.deadlines.disarm(self._deadline)
        self._deadline = self.server.deadlines.arm(self.connection, self.server.body_timeout_s, "body",
                                                   self._peer())
        try:
            return self._read_body()
        finally:
            self.server.deadlines.disarm(self._deadline)
            self._deadline = None

    def _truncated(self, detail: str) -> ClickHouseError:
        self.close_connection = True
        return ClickHouseError.make(33, "CANNOT_READ_ALL_DATA", f"request body incomplete: {detail}; nothing "
                                    "was executed — send the whole body (chunked bodies end with a 0-chunk)")

    def _read_chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            if not line.endswith(b"\n"):
                raise self._truncated("the connection closed before the final 0-chunk")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise self._truncated(f"bad chunk size line {line[:40]!r}") from None
            if size == 0:
                while (trailer := self.rfile.readline(8192)) not in (b"\r\n", b"\n"):
                    if not trailer:
                        raise self._truncated("the connection closed inside the chunked trailer")
                return b"".join(parts)
            total += size
            if total > limit:
                self.close_connection = True  # the rest of the body is not read
                raise ClickHouseError.make(307, "TOO_LARGE_SIZE_COMPRESSED", f"request body over {limit} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) < size or self.rfile.readline(2) not in (b"\r\n", b"\n"):
                raise self._truncated(f"a chunk of {size} bytes ended early")
            parts.append(chunk)

    def _read_body(self) -> bytes | IO[bytes]:
        """The request's body: bytes, or past ``SPOOL_BYTES`` of ``Content-Length`` a spooled file (the caller
        closes it)."""
        limit = self.server.max_body_bytes
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                return self._read_chunked(limit)
            declared = self.headers.get("Content-Length") or "0"
            if not declared.strip().isdigit():
                self.close_connection = True
                raise ClickHouseError.make(27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
                                           f"Content-Length {declared[:40]!r} is not a byte count")
            length = int(declared)
            if length > limit:
                self.close_connection = True  # the body is not read: the connection cannot be reused
                raise ClickHouseError.make(307, "TOO_LARGE_SIZE_COMPRESSED", f"request body over {limit} bytes")
            if length > SPOOL_BYTES:  # kept out of memory past SPOOL_BYTES, as a decompressed body is
                large = spool(self.rfile.read, length)
                got = large.seek(0, os.SEEK_END)
                large.seek(0)
                if got < length:
                    large.close()
                    raise self._truncated(f"{got} of the {length} bytes of Content-Length arrived")
                return large
            body = self.rfile.read(length) if length > 0 else b""
        except TimeoutError:
            self.close_connection = True
            raise ClickHouseError.make(209, "SOCKET_TIMEOUT", "no request body data for "
                                       f"{self.server.read_timeout_s:g} s; nothing was executed") from None
        if len(body) < length:
            raise self._truncated(f"{len(body)} of the {length} bytes of Content-Length arrived")
        return body

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if self.close_connection:  # said, so a client does not send its next request into a closing connection
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error(self, error: ClickHouseError, query_id: str) -> None:
        """Answer ``error`` as a ClickHouse server does before any output: its status, code and text."""
        self._send(http_status(error), (with_version(error, self.server.version) + "\n").encode(), {
            "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": str(error.code),
            "X-ClickHouse-Query-Id": query_id, "X-ClickHouse-Server-Display-Name": DISPLAY_NAME})


class FrontServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, at most ``max_connections`` (then 503), backlog 128.

    ``read_timeout_s`` bounds every wait for request bytes (a slow or idle client is disconnected);
    ``header_timeout_s`` and ``body_timeout_s`` are totals for a request's line and headers and for its body
    (:mod:`.deadlines`); at most ``max_unauthenticated`` connections wait to authenticate (the oldest is cut);
    ``max_body_bytes`` bounds the request body after decompression. ``unix_socket``: listen there instead of on
    ``host:port``.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: a burst of connections waits instead of being reset
    version = "?"  # the engine's version, for error texts

    def __init__(self, host: str, port: int, handler: type[FrontHandler], verbose: bool = False, *,
                 read_timeout_s: float = 30.0, max_body_bytes: int = DEFAULT_MAX_BODY,
                 max_connections: int = 256, header_timeout_s: float = 30.0, body_timeout_s: float = 600.0,
                 max_unauthenticated: int = 64, unix_socket: str | None = None) -> None:
        if unix_socket is not None:
            self.address_family = socket.AF_UNIX
        super().__init__(cast(Any, unix_socket if unix_socket is not None else (host, port)), handler)
        self.verbose = verbose
        self.read_timeout_s = read_timeout_s
        self.max_body_bytes = max_body_bytes
        self._connections = threading.BoundedSemaphore(max_connections)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.deadlines = Deadlines()
        self.unauthenticated = Unauthenticated(max_unauthenticated)

    def server_bind(self) -> None:
        """Bind the socket: ``host:port``, or the Unix socket's path (no host-name lookup for it)."""
        if self.address_family == socket.AF_UNIX:  # HTTPServer's own would look the path up as a host name
            self.socket.bind(self.server_address)
            self.server_address = self.socket.getsockname()
            self.server_name, self.server_port = "localhost", 0
            return
        super().server_bind()

    def server_close(self) -> None:
        """Close the listening socket, then stop the deadline thread."""
        super().server_close()
        self.deadlines.close()

    @property
    def url(self) -> str:
        """The server's base URL, ``http://host:port`` (``unix:PATH`` on a Unix socket)."""
        if self.address_family == socket.AF_UNIX:
            return f"unix:{self.server_address}"
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a thread of its own, counted as unauthenticated until it proves who it is; with every
        worker busy, answer at once that the server is busy and close."""
        if not self._connections.acquire(blocking=False):
            try:  # every worker is busy: say so at once instead of queueing the client without a bound
                request.sendall(_BUSY)
                request.shutdown(socket.SHUT_WR)
                request.setblocking(False)
                request.recv(65536)  # what already arrived: closing with unread bytes would reset the reply
            except OSError:
                pass
            request.close()
            return
        peer = f"{client_address[0]}:{client_address[1]}" if isinstance(client_address, tuple) else "?"
        self.unauthenticated.add(request, peer)
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Report a handler's error with its traceback, except a client that went away (unless ``verbose``)."""
        if self.verbose or not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away
            super().handle_error(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Handle the connection, then free its worker slot and its place among the unauthenticated."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.unauthenticated.done(request)
            self._connections.release()
