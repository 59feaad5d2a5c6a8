"""``sco clickhouse serve``: a ClickHouse HTTP-protocol server over one chDB engine (standard library only).

The process owns the chDB data directory (chDB refuses a second process), so clickhouse-connect,
dbt-clickhouse (``driver: http``) and any number of Dagster processes reach the data through it. Every
request is authenticated against the users file and its statement checked (:mod:`.gate`) before the engine
sees it; production points ``SCO_CLICKHOUSE_URL`` at a real ClickHouse instead.
"""

from __future__ import annotations

import contextlib
import io
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from .auth import load_users_file
from .compression import choose_encoding
from .deadlines import Deadlines, Unauthenticated
from .disconnect import DisconnectWatch
from .engine import ChdbEngine
from .errors import AuthConfigError
from .gate import make_gate
from .protocol import DEFAULT_MAX_BODY, ClickHouseError, Request, http_status
from .streaming import ResponseWriter

__all__ = ["ClickHouseHTTPServer", "serve"]

_BUSY_TEXT = b"Code: 202. DB::Exception: Too many simultaneous connections; retry later. " \
    b"(TOO_MANY_SIMULTANEOUS_QUERIES)\n"
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=UTF-8\r\n"
         b"X-ClickHouse-Exception-Code: 202\r\nConnection: close\r\n"
         b"Content-Length: %d\r\n\r\n%s" % (len(_BUSY_TEXT), _BUSY_TEXT))
_CONTENT_TYPES = {"json": "application/json; charset=UTF-8", "csv": "text/csv; charset=UTF-8",
                  "tabseparated": "text/tab-separated-values; charset=UTF-8",
                  "tsv": "text/tab-separated-values; charset=UTF-8"}


def _content_type(fmt: str) -> str:
    lower = fmt.lower()
    for prefix, ctype in _CONTENT_TYPES.items():
        if lower.startswith(prefix):
            return ctype
    if lower.startswith(("native", "rowbinary", "arrow", "parquet", "orc", "avro", "msgpack", "npy")):
        return "application/octet-stream"
    return "text/plain; charset=UTF-8"


def _with_version(error: ClickHouseError, engine: ChdbEngine) -> str:
    return f"{error}" if "(version" in str(error) else f"{error} (version {engine.version})"


def _on(options: dict[str, str], name: str) -> bool:
    return options.get(name, "0").strip().lower() not in ("0", "", "false")


def _milliseconds(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        raise ClickHouseError.make(27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED", f"http_headers_progress_interval_ms "
                                   f"{value[:40]!r} is not a number of milliseconds") from None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall
    server: ClickHouseHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    _deadline: int | None = None

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.read_timeout_s)  # every read; the phases have totals besides

    def _peer(self) -> str:
        return f"{self.client_address[0]}:{self.client_address[1]}" if self.client_address else "?"

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

    def _body_within_deadline(self) -> bytes:
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

    def _read_body(self) -> bytes:
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
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        url = urlsplit(self.path)
        params: dict[str, bytes] = {  # values as raw bytes: binary-safe SQL and parameters
            k.encode("latin-1").decode(errors="replace"): v.encode("latin-1")
            for k, v in parse_qsl(url.query, keep_blank_values=True, encoding="latin-1")}
        if url.path in ("/ping", "/replicas_status") or (url.path == "/" and self.command in ("GET", "HEAD")
                                                           and "query" not in params):
            self._send(200, b"Ok.\n", {"Content-Type": "text/plain; charset=UTF-8"})
            return
        engine = self.server.engine
        query_id = params.get("query_id", b"").decode(errors="replace")
        try:
            body = self._body_within_deadline()  # always drained: a refused request leaves the connection usable
            if url.path != "/":
                self._send(404, f"There is no handle {url.path}\n\nUse / or /ping for health checks.\n".encode(),
                           {"Content-Type": "text/plain; charset=UTF-8"})
                return
            try:
                request = self.server.gate.admit(params, {k.lower(): v for k, v in self.headers.items()}, body,
                                                 self.server.max_body_bytes)  # auth + guard + parse_request
            except ClickHouseError as error:
                if error.code != 516:  # authenticated, refused for another reason
                    self.server.unauthenticated.done(self.connection)
                raise
            self.server.unauthenticated.done(self.connection)
            query_id = request.query_id
            self._respond(request)
        except ClickHouseError as error:
            self._send(http_status(error), (_with_version(error, engine) + "\n").encode(), {
                "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": str(error.code),
                "X-ClickHouse-Query-Id": query_id, "X-ClickHouse-Server-Display-Name": "sco-chdb"})

    def _respond(self, request: Request) -> None:
        """Run ``request`` and stream its output (``ClickHouseError`` only while nothing was sent)."""
        engine, options = self.server.engine, request.transport
        writer = ResponseWriter(self, {
            "X-ClickHouse-Query-Id": request.query_id, "X-ClickHouse-Timezone": engine.timezone,
            "X-ClickHouse-Server-Display-Name": "sco-chdb",
            **({"X-ClickHouse-Session-Id": request.session_id} if request.session_id else {})},
            encoding=choose_encoding(self.headers.get("Accept-Encoding", "")) if _on(options, "enable_http_compression")
            else None, send_progress=_on(options, "send_progress_in_http_headers"),
            progress_interval_s=_milliseconds(options.get("http_headers_progress_interval_ms", "100")) / 1000,
            wait_end=_on(options, "wait_end_of_query"))
        summary: dict[str, str] = {}
        try:
            with engine.open(request, writer.progress) as execution:
                writer.set_body_headers({"Content-Type": _content_type(execution.fmt), "X-ClickHouse-Format":
                                         execution.fmt} if execution.has_result else
                                        {"Content-Type": "text/plain; charset=UTF-8"})
                watch = execution.read_only and options.get("cancel_http_readonly_queries_on_client_close") != "0"
                token = self.server.watch.watch(self.connection, execution.cancel) if watch else None
                try:
                    for chunk in execution.chunks():
                        writer.write(chunk, execution.summary)
                finally:
                    summary = execution.summary()
                    if token is not None:
                        self.server.watch.unwatch(token)
            writer.finish(summary)
        except ClickHouseError as error:
            if not writer.started:
                writer.discard()
                raise
            with contextlib.suppress(OSError):  # the client may be gone: nothing else to do
                writer.fail(error.code, _with_version(error, engine), summary)
            self.close_connection = True
        except OSError:
            self.close_connection = True  # the client went away or stopped reading: its query was stopped

    do_GET = do_POST = do_HEAD = _handle


class ClickHouseHTTPServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, at most ``max_connections`` (then 503), backlog 128.

    ``read_timeout_s`` bounds every wait for request bytes (a slow or idle client is disconnected);
    ``header_timeout_s`` and ``body_timeout_s`` are totals for a request's line and headers and for its body
    (:mod:`.deadlines`); at most ``max_unauthenticated`` connections wait to authenticate (the oldest is cut);
    ``max_body_bytes`` bounds the request body after decompression.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: a burst of connections waits instead of being reset

    def __init__(self, host: str, port: int, engine: ChdbEngine, verbose: bool = False, *,
                 read_timeout_s: float = 30.0, max_body_bytes: int = DEFAULT_MAX_BODY,
                 max_connections: int = 256, users_file: str | Path | None = None, no_auth: bool = False,
                 header_timeout_s: float = 30.0, body_timeout_s: float = 600.0, max_unauthenticated: int = 64,
                 ) -> None:
        self.gate = make_gate(engine, users_file, no_auth)  # before binding: a bad users file starts nothing
        super().__init__((host, port), _Handler)
        self.engine = engine
        self.verbose = verbose
        self.read_timeout_s = read_timeout_s
        self.max_body_bytes = max_body_bytes
        self._connections = threading.BoundedSemaphore(max_connections)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.deadlines = Deadlines()
        self.unauthenticated = Unauthenticated(max_unauthenticated)
        self.watch = DisconnectWatch()  # cancels the read-only query of a client that closed its connection

    def server_close(self) -> None:
        """Close the listening socket, then stop the disconnect watcher and the deadline thread."""
        super().server_close()
        self.watch.close()
        self.deadlines.close()

    @property
    def url(self) -> str:
        """The server's base URL, ``http://host:port``."""
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
        self.unauthenticated.add(request, f"{client_address[0]}:{client_address[1]}" if client_address else "?")
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


def serve(data_dir: str | None, host: str = "127.0.0.1", port: int = 8123, ready: threading.Event | None = None,
          verbose: bool = False, *, users_file: str | Path | None = None, no_auth: bool = False) -> int:
    """Serve until SIGTERM/SIGINT; ``port`` 0 picks a free one (printed as the first line on stdout).

    ``users_file``: the users and their profiles (see :mod:`.auth`); without it ``no_auth`` must be set.
    """
    if users_file is None and not no_auth:
        raise AuthConfigError()  # before the engine starts: nothing to undo
    if users_file is not None:
        load_users_file(users_file)  # a bad file is refused before the engine starts
    engine = ChdbEngine(data_dir)
    try:
        server = ClickHouseHTTPServer(host, port, engine, verbose, users_file=users_file, no_auth=no_auth)
    except BaseException:
        engine.close()
        raise

    def _stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    print(server.url, flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        engine.close()
    return 0
