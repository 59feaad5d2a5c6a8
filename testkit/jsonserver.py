"""A tiny JSON/bytes HTTP server on a free loopback port, for the agent's tests and benches: the metadata
endpoint and the bundle distributor's agent files."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE

__all__ = ["JsonServer"]


class JsonServer:
    """A tiny HTTP server: ``routes[path] = (status, bytes)``; used as the metadata endpoint and the
    bundle distributor (``serve_dir``)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes]] = {}
        self.hits: list[str] = []
        routes, hits = self.routes, self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                status, body = routes.get(self.path, (404, b'{"message":"not found"}'))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def set_json(self, path: str, doc: Any, status: int = 200) -> None:
        self.routes[path] = (status, json.dumps(doc).encode())

    def serve_bundle(self, prefix: str, raw: bytes, sig: bytes) -> None:
        self.routes[f"{prefix}{AGENT_BUNDLE}"] = (200, raw)
        self.routes[f"{prefix}{AGENT_SIGNATURE}"] = (200, sig + b"\n")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
