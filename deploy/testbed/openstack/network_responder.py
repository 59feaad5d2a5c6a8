"""A tiny stand-in for the `network` (Neutron) endpoint of the OpenStack test bed.

Nova calls the network service even for servers booted with networks='none' (server show lists ports, the
compute host refreshes its cache). This answers every ``GET /v2.0/<resource>`` list with an empty list and
every single-resource GET with 404, which is what Neutron says for a server with no ports. Standard library
only; HTTP/1.1 with keep-alive (keystoneauth reuses connections).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, status: int, body: object) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        parts = [p for p in path.split("/") if p]
        if not parts:
            self._send(200, {"versions": [{"id": "v2.0", "status": "CURRENT",
                                           "links": [{"rel": "self", "href": "http://127.0.0.1:9696/v2.0/"}]}]})
        elif parts == ["v2.0"]:
            self._send(200, {"resources": []})
        elif len(parts) == 2:
            name = parts[1].removesuffix(".json")
            self._send(200, {name: []})
        else:
            self._send(404, {"NeutronError": {"type": "NotFound", "message": f"{path} not found", "detail": ""}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self._send(400, {"NeutronError": {"type": "BadRequest", "message": "test bed: no networks", "detail": ""}})

    do_PUT = do_POST
    do_DELETE = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 9696), Handler).serve_forever()
