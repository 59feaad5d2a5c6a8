"""The engine's side of ``sco clickhouse serve``: a ClickHouse HTTP-protocol server over one chDB engine
(standard library only).

The process owns the chDB data directory (chDB refuses a second process), so clickhouse-connect,
dbt-clickhouse (``driver: http``) and any number of Dagster processes reach the data through it. Every
request is authenticated against the users file and its statement checked (:mod:`.gate`) before the engine
sees it; production points ``SCO_CLICKHOUSE_URL`` at a real ClickHouse instead. Started as a process, it runs
behind the guard (:mod:`.frontdoor`) on a private Unix socket; tests also run it in-process on TCP.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
from pathlib import Path
from types import FrameType
from typing import IO, Any

from .auth import load_users_file
from .compression import choose_encoding
from .disconnect import DisconnectWatch
from .engine import ChdbEngine
from .errors import AuthConfigError
from .front import DISPLAY_NAME, PEER_HEADER, FrontHandler, FrontServer, with_version
from .gate import make_gate
from .protocol import ClickHouseError, Request
from .streaming import ResponseWriter

__all__ = ["ClickHouseHTTPServer", "serve"]

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


def _on(options: dict[str, str], name: str) -> bool:
    return options.get(name, "0").strip().lower() not in ("0", "", "false")


def _milliseconds(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        raise ClickHouseError.make(27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED", f"http_headers_progress_interval_ms "
                                   f"{value[:40]!r} is not a number of milliseconds") from None


class _Handler(FrontHandler):
    server: ClickHouseHTTPServer

    def _peer(self) -> str:
        """The client's address; behind the guard (on the Unix socket only) the one the guard names."""
        forwarded = self.headers.get(PEER_HEADER) if self.server.behind_guard and hasattr(self, "headers") else None
        return forwarded[:64] if forwarded else super()._peer()

    def _handle(self) -> None:
        path, params = self._target()
        if self._health_check(path, params):
            self._send(200, b"Ok.\n", {"Content-Type": "text/plain; charset=UTF-8"})
            return
        query_id = params.get("query_id", b"").decode(errors="replace")
        body: bytes | IO[bytes] = b""
        try:
            body = self._body_within_deadline()  # always drained: a refused request leaves the connection usable
            if path != "/":
                self._send(404, f"There is no handle {path}\n\nUse / or /ping for health checks.\n".encode(),
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
            self._send_error(error, query_id)
        finally:
            if not isinstance(body, bytes):
                body.close()  # a large body's spooled file, whatever became of the request

    def _respond(self, request: Request) -> None:
        """Run ``request`` and stream its output (``ClickHouseError`` only while nothing was sent)."""
        engine, options = self.server.engine, request.transport
        writer = ResponseWriter(self, {
            "X-ClickHouse-Query-Id": request.query_id, "X-ClickHouse-Timezone": engine.timezone,
            "X-ClickHouse-Server-Display-Name": DISPLAY_NAME,
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
                writer.fail(error.code, with_version(error, engine.version), summary)
            self.close_connection = True
        except OSError:
            self.close_connection = True  # the client went away or stopped reading: its query was stopped

    do_GET = do_POST = do_HEAD = _handle


class ClickHouseHTTPServer(FrontServer):
    """The engine's HTTP server (:class:`.front.FrontServer` and its bounds) over one :class:`ChdbEngine`.

    ``unix_socket``: listen there (behind the guard, :mod:`.frontdoor`) instead of on ``host:port``; only there
    is the client's address taken from the guard's ``X-SCO-Client-Peer`` header.
    """

    def __init__(self, host: str, port: int, engine: ChdbEngine, verbose: bool = False, *,
                 users_file: str | Path | None = None, no_auth: bool = False, **bounds: Any) -> None:
        self.gate = make_gate(engine, users_file, no_auth)  # before binding: a bad users file starts nothing
        super().__init__(host, port, _Handler, verbose, **bounds)
        self.engine = engine
        self.version = engine.version
        self.behind_guard = self.address_family == socket.AF_UNIX
        self.watch = DisconnectWatch()  # cancels the read-only query of a client that closed its connection

    def server_close(self) -> None:
        """Close the listening socket, then stop the disconnect watcher and the deadline thread."""
        super().server_close()
        self.watch.close()


def serve(data_dir: str | None, host: str = "127.0.0.1", port: int = 8123, ready: threading.Event | None = None,
          verbose: bool = False, *, users_file: str | Path | None = None, no_auth: bool = False,
          unix_socket: str | None = None) -> int:
    """Serve until SIGTERM/SIGINT; ``port`` 0 picks a free one (printed as the first line on stdout).

    ``users_file``: the users and their profiles (see :mod:`.auth`); without it ``no_auth`` must be set.
    ``unix_socket``: the engine behind the guard (:mod:`.frontdoor`) — listen on that path, and print
    ``{"url": "unix:PATH", "version": …}`` as the first line instead of the URL.
    """
    if users_file is None and not no_auth:
        raise AuthConfigError()  # before the engine starts: nothing to undo
    if users_file is not None:
        load_users_file(users_file)  # a bad file is refused before the engine starts
    engine = ChdbEngine(data_dir)
    try:
        # behind the guard every connection is the guard's, its client authenticated there: no cap but the connections'
        bounds: dict[str, Any] = {"unix_socket": unix_socket, "max_unauthenticated": 256} if unix_socket else {}
        server = ClickHouseHTTPServer(host, port, engine, verbose, users_file=users_file, no_auth=no_auth, **bounds)
    except BaseException:
        engine.close()
        raise

    def _stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    print(json.dumps({"url": server.url, "version": engine.version}) if unix_socket else server.url, flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        engine.close()
    return 0
