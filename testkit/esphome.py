"""ESPHome smart plugs double: one real HTTP server that plays any number of plugs.

Each plug is served under its own base path ``/<plug>`` (so ``plug.url = f"{double.url}/worker-1"``) with the
ESPHome web_server REST API: ``GET /switch/<id>`` answers ``{"id": "switch-<id>", "value": bool,
"state": "ON"|"OFF"}``; ``POST /switch/<id>/turn_on`` and ``/turn_off`` switch the relay. Basic auth is
required when credentials are given (401 otherwise). Unknown plug or switch: 404.

Knobs per plug: ``slow(plug, seconds)`` delays its answers, ``fail(plug, status)`` answers that status (0 =
drop the connection without an answer) until ``heal(plug)``. ``log`` records (method, plug, action, time)
of the requests answered normally, ``failed`` those answered by an injected failure; ``max_in_flight`` is the
most requests that were inside a delay at once (parallel reads show it above 1, whatever the machine's load).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

__all__ = ["EspHomeDouble"]


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many clients connect at once (parallel reads); the default backlog is 5
    daemon_threads = True


@dataclass
class _Plug:
    switch: str
    on: bool = False
    delay: float = 0.0
    failure: int | None = None
    switches: list[tuple[str, float]] = field(default_factory=list)


class EspHomeDouble:
    def __init__(self, username: str | None = "admin", password: str | None = "secret") -> None:
        self._auth = None
        if username is not None:
            self._auth = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        self._plugs: dict[str, _Plug] = {}
        self._lock = threading.Lock()
        self.log: list[tuple[str, str, str, float]] = []  # requests answered normally
        self.failed: list[tuple[str, str, str, float]] = []  # requests answered by an injected failure
        self.in_flight = 0
        self.max_in_flight = 0
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> EspHomeDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ test hooks
    def add_plug(self, name: str, switch: str = "relay", on: bool = False) -> str:
        """Add a plug; returns its base URL for the config."""
        with self._lock:
            self._plugs[name] = _Plug(switch=switch, on=on)
        return f"{self.url}/{name}"

    def has_plug(self, name: str) -> bool:
        with self._lock:
            return name in self._plugs

    def is_on(self, name: str) -> bool:
        with self._lock:
            return self._plugs[name].on

    def set_on(self, name: str, on: bool) -> None:
        with self._lock:
            self._plugs[name].on = on

    def switches(self, name: str) -> list[str]:
        """The turn_on / turn_off requests the plug obeyed, in order."""
        with self._lock:
            return [a for a, _ in self._plugs[name].switches]

    def switch_times(self, name: str) -> list[tuple[str, float]]:
        with self._lock:
            return list(self._plugs[name].switches)

    def slow(self, name: str, seconds: float) -> None:
        with self._lock:
            self._plugs[name].delay = seconds

    def fail(self, name: str, status: int = 500) -> None:
        with self._lock:
            self._plugs[name].failure = status

    def heal(self, name: str) -> None:
        with self._lock:
            self._plugs[name].failure = None
            self._plugs[name].delay = 0.0

    # ------------------------------------------------------------------ HTTP
    def _serve(self, method: str, path: str, auth: str | None) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if self._auth is not None and auth != self._auth:
            return 401, None
        with self._lock:
            plug = self._plugs.get(parts[0]) if parts else None
        if plug is None or len(parts) < 3 or parts[1] != "switch" or parts[2] != plug.switch:
            return 404, None
        if plug.delay:
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(plug.delay)
            with self._lock:
                self.in_flight -= 1
        if plug.failure is not None:
            with self._lock:
                self.failed.append((method, parts[0], "/".join(parts[3:]), time.time()))
            return plug.failure, None
        with self._lock:
            self.log.append((method, parts[0], "/".join(parts[3:]), time.time()))
            if method == "POST" and len(parts) == 4 and parts[3] in ("turn_on", "turn_off", "toggle"):
                plug.on = {"turn_on": True, "turn_off": False}.get(parts[3], not plug.on)
                plug.switches.append((parts[3], time.monotonic()))
                return 200, None
            if method == "GET" and len(parts) == 3:
                state = "ON" if plug.on else "OFF"
                return 200, {"id": f"switch-{plug.switch}", "value": plug.on, "state": state}
        return 404, None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _do(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, body = double._serve(self.command, self.path.split("?")[0], self.headers.get("Authorization"))
                if status == 0:  # drop the connection: a plug that is off the network
                    self.close_connection = True
                    return
                data = json.dumps(body).encode() if body is not None else b""
                try:
                    self.send_response(status)
                    if status == 401:
                        self.send_header("WWW-Authenticate", 'Basic realm="Login Required"')
                    self.send_header("Content-Type", "application/json" if body is not None else "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up on a slow plug
                    self.close_connection = True

            do_GET = do_POST = _do

        return Handler
