"""``sco clickhouse serve``: a ClickHouse HTTP-protocol server over one chDB engine (standard library only).

The process owns the chDB data directory (chDB refuses a second process), so clickhouse-connect,
dbt-clickhouse (``driver: http``) and any number of Dagster processes reach the data through it. No
authentication: it binds to loopback by default; production points ``SCO_CLICKHOUSE_URL`` at a real
ClickHouse instead.
"""

from __future__ import annotations

import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from urllib.parse import parse_qsl, urlsplit

from .engine import ChdbEngine, Result
from .protocol import ClickHouseError, http_status, parse_request

__all__ = ["ClickHouseHTTPServer", "serve"]

_MAX_BODY = 1 << 30
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall
    server: ClickHouseHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > _MAX_BODY:
                    raise ClickHouseError.make(307, "TOO_LARGE_SIZE_COMPRESSED", "request body over 1 GiB")
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            raise ClickHouseError.make(307, "TOO_LARGE_SIZE_COMPRESSED", "request body over 1 GiB")
        return self.rfile.read(length) if length else b""

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
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        if url.path in ("/ping", "/replicas_status") or (url.path == "/" and self.command in ("GET", "HEAD")
                                                           and "query" not in params):
            self._send(200, b"Ok.\n", {"Content-Type": "text/plain; charset=UTF-8"})
            return
        engine = self.server.engine
        query_id = params.get("query_id", "")
        try:
            body = self._read_body()  # always drained, so a refused request leaves the connection usable
            if url.path != "/":
                raise ClickHouseError.make(
                    1, "UNSUPPORTED_METHOD", f"There is no handle {url.path}. Use / or /ping")
            request = parse_request(params, {k.lower(): v for k, v in self.headers.items()}, body)
            query_id = request.query_id
            result: Result = engine.execute(request)
        except ClickHouseError as error:
            if error.name == "TOO_LARGE_SIZE_COMPRESSED":
                self.close_connection = True  # the body was not read: the connection cannot be reused
            message = f"{error}" if "(version" in str(error) else f"{error} (version {engine.version})"
            self._send(http_status(error), (message + "\n").encode(), {
                "Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": str(error.code),
                "X-ClickHouse-Query-Id": query_id, "X-ClickHouse-Server-Display-Name": "sco-chdb"})
            return
        self._send(200, result.body, {
            "Content-Type": _content_type(result.fmt), "X-ClickHouse-Format": result.fmt,
            "X-ClickHouse-Query-Id": request.query_id, "X-ClickHouse-Timezone": engine.timezone,
            "X-ClickHouse-Server-Display-Name": "sco-chdb", "X-ClickHouse-Summary": json.dumps(result.summary),
            **({"X-ClickHouse-Session-Id": request.session_id} if request.session_id else {})})

    do_GET = do_POST = do_HEAD = _handle


class ClickHouseHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, engine: ChdbEngine, verbose: bool = False) -> None:
        super().__init__((host, port), _Handler)
        self.engine = engine
        self.verbose = verbose

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


def serve(data_dir: str | None, host: str = "127.0.0.1", port: int = 8123, ready: threading.Event | None = None,
          verbose: bool = False) -> int:
    """Serve until SIGTERM/SIGINT; ``port`` 0 picks a free one (printed as the first line on stdout)."""
    engine = ChdbEngine(data_dir)
    server = ClickHouseHTTPServer(host, port, engine, verbose)

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
