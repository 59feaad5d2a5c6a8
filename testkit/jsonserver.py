"""A tiny JSON/bytes HTTP server on a free loopback port, for the agent's tests and benches: the metadata
endpoint and the bundle distributor's agent files."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE

__all__ = ["JsonServer", "LoopbackHttp", "send_body"]


def send_body(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str | None = None) -> None:
    """Answer ``handler``'s request with ``status`` and ``body`` (its length, and ``content_type`` when given)."""
    handler.send_response(status)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackHttp:
    """A threading HTTP server for ``handler`` on a free loopback port, served from a daemon thread; ``url`` is its
    base URL, ``stop()`` shuts it down."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.server.shutdown()
        self.server.server_close()


class JsonServer(LoopbackHttp):
    """A tiny HTTP server: ``routes[path] = (status, bytes)``; used as the metadata endpoint and the
    bundle distributor (``serve_dir``)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes]] = {}
        self.hits: list[str] = []
        routes, hits = self.routes, self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                send_body(self, *routes.get(self.path, (404, b'{"message":"not found"}')))

            def log_message(self, format: str, *args: object) -> None:
                return

        super().__init__(Handler)

    def set_json(self, path: str, doc: Any, status: int = 200) -> None:
        self.routes[path] = (status, json.dumps(doc).encode())

    def serve_bundle(self, prefix: str, raw: bytes, sig: bytes) -> None:
        self.routes[f"{prefix}{AGENT_BUNDLE}"] = (200, raw)
        self.routes[f"{prefix}{AGENT_SIGNATURE}"] = (200, sig + b"\n")
