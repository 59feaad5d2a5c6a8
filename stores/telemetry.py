"""Prometheus exposition for the control-plane processes (ADR-28), one HTTP endpoint per process.

A small thread-safe registry of counters, gauges and histograms in the text format 0.0.4, and the endpoint that
serves it.

No client library (``prometheus_client`` is not a dependency of SCO); the agent keeps its own even smaller one
(``agent.metrics``) because it must not import ``stores``. The endpoint authenticates every scrape with a bearer
token (Prometheus: ``authorization: {credentials_file: …}``); the only paths without one are the probes
``/healthz`` and ``/readyz``, which answer "ok"/"ready" and nothing else.
Metric names carry their unit (``_seconds``, ``_eur``, ``_units``, ``_total``); the catalogue is in
docs/operations.md "## Metrics".
"""

from __future__ import annotations

import hmac
import logging
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .errors import TelemetryError

__all__ = ["BUCKETS", "Labels", "MetricsServer", "Registry", "TelemetryError", "read_token", "serve"]

log = logging.getLogger(__name__)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
Labels = tuple[tuple[str, str], ...]
KINDS = frozenset({"counter", "gauge", "histogram"})
MIN_TOKEN_CHARS = 16
PROBES = ("/healthz", "/readyz")



def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}" if labels else ""


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass(frozen=True)
class _Meta:
    kind: str
    help: str


class Registry:
    """Named series with fixed labels per call; ``collect`` callbacks refresh gauges at scrape time."""

    def __init__(self, const: dict[str, str] | None = None) -> None:
        """``const``: labels added to every series (e.g. ``region``, ``partition``)."""
        self._lock = threading.Lock()
        self._meta: dict[str, _Meta] = {}
        self._values: dict[str, dict[Labels, float]] = {}
        self._hist: dict[str, dict[Labels, list[float]]] = {}
        self._collectors: list[Callable[[Registry], None]] = []
        self._const = tuple(sorted((const or {}).items()))

    def describe(self, name: str, kind: str, help_text: str) -> None:
        """Declare a metric (``counter``, ``gauge`` or ``histogram``) and its help text."""
        if kind not in KINDS:
            raise ValueError(f"metric {name}: kind {kind!r} is not one of {sorted(KINDS)}")
        self._meta[name] = _Meta(kind, help_text)

    def describe_all(self, series: Iterable[tuple[str, str, str]]) -> None:
        """``describe`` each ``(name, kind, help)``."""
        for name, kind, text in series:
            self.describe(name, kind, text)

    def _key(self, name: str, labels: dict[str, str]) -> Labels:
        if name not in self._meta:
            raise KeyError(f"metric {name} is not described: call Registry.describe first")
        return tuple(sorted({**dict(self._const), **labels}.items()))

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` (≥ 0) to a counter series."""
        key = self._key(name, labels)
        with self._lock:
            series = self._values.setdefault(name, {})
            series[key] = series.get(key, 0.0) + max(0.0, amount)

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge series (or a counter read from a cumulative source)."""
        key = self._key(name, labels)
        with self._lock:
            self._values.setdefault(name, {})[key] = float(value)

    def replace(self, name: str, series: dict[Labels, float]) -> None:
        """Replace every series of a gauge at once: a label value that is gone disappears (e.g. a workload)."""
        fresh = {self._key(name, dict(labels)): float(v) for labels, v in series.items()}
        with self._lock:
            self._values[name] = fresh

    def observe(self, name: str, value: float, **labels: str) -> None:
        """Add one observation to a histogram series."""
        key = self._key(name, labels)
        with self._lock:
            h = self._hist.setdefault(name, {}).setdefault(key, [0.0] * (len(BUCKETS) + 2))
            for i, bound in enumerate(BUCKETS):
                if value <= bound:
                    h[i] += 1
            h[-2] += 1
            h[-1] += value

    def on_collect(self, fn: Callable[[Registry], None]) -> None:
        """Call ``fn(registry)`` before every scrape (a failure is logged, the scrape goes on)."""
        self._collectors.append(fn)

    def value(self, name: str, **labels: str) -> float:
        """One series' current value (a histogram's count); 0 when absent."""
        key = self._key(name, labels)
        with self._lock:
            if name in self._hist:
                return self._hist[name].get(key, [0.0] * (len(BUCKETS) + 2))[-2]
            return self._values.get(name, {}).get(key, 0.0)

    def render(self) -> str:
        """Every described metric in the Prometheus text format (version 0.0.4)."""
        for fn in self._collectors:
            try:
                fn(self)
            except Exception as exc:  # a broken source must not break the scrape
                log.warning("metrics collector %s failed: %s: %s", getattr(fn, "__name__", fn), type(exc).__name__,
                            exc)
        lines: list[str] = []
        with self._lock:
            for name in sorted(self._meta):
                meta = self._meta[name]
                lines += [f"# HELP {name} {meta.help}", f"# TYPE {name} {meta.kind}"]
                if meta.kind == "histogram":
                    lines += self._render_hist(name)
                    continue
                for labels, value in sorted(self._values.get(name, {}).items()):
                    lines.append(f"{name}{_labels(labels)} {_num(value)}")
        return "\n".join(lines) + "\n"

    def _render_hist(self, name: str) -> list[str]:
        out = []
        for labels, h in sorted(self._hist.get(name, {}).items()):
            for i, bound in enumerate(BUCKETS):
                out.append(f"{name}_bucket{_labels((*labels, ('le', repr(bound))))} {_num(h[i])}")
            out.append(f"{name}_bucket{_labels((*labels, ('le', '+Inf')))} {_num(h[-2])}")
            out.append(f"{name}_count{_labels(labels)} {_num(h[-2])}")
            out.append(f"{name}_sum{_labels(labels)} {_num(h[-1])}")
        return out


def read_token(path: Path) -> str:
    """The bearer token in ``path`` (stripped); ``TelemetryError`` naming the file and the fix otherwise."""
    try:
        mode = path.stat().st_mode & 0o777
        token = path.read_text().strip()
    except OSError as exc:
        raise TelemetryError(f"metrics token file {path}: {exc.strerror or exc}; write a random token of at least "
                             f"{MIN_TOKEN_CHARS} characters there (mode 0600) and give Prometheus the same file "
                             "as authorization.credentials_file") from None
    # group read is the process's own group: a Kubernetes secret volume with the pod's fsGroup is mode 0440
    if mode & 0o037:
        raise TelemetryError(f"metrics token file {path}: mode {mode:o} lets other users read the token; "
                             f"`chmod 600 {path}` (readable by the process and Prometheus only)")
    if len(token) < MIN_TOKEN_CHARS:
        raise TelemetryError(f"metrics token file {path}: the token has {len(token)} characters, at least "
                             f"{MIN_TOKEN_CHARS} are required (e.g. `openssl rand -hex 24 > {path}`)")
    return token


class MetricsServer:
    """A running endpoint: ``port`` (the one bound, also when 0 was asked) and ``close()``."""

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self._httpd, self._thread = httpd, thread
        self.port: int = int(httpd.server_address[1])

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def _handler(registry: Registry, token: str, ready: Callable[[], bool]) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in PROBES:  # the kubelet's probes: no credential, and they tell nothing but up/ready
                self._probe(path)
                return
            given = (self.headers.get("Authorization") or "").encode()
            if not hmac.compare_digest(given, expected):
                self._reply(401, b"a bearer token is required\n", {"WWW-Authenticate": 'Bearer realm="sco-metrics"'})
            elif self.path.split("?", 1)[0] not in ("/metrics", "/"):
                self._reply(404, b"not found: the metrics are at /metrics\n")
            else:
                self._reply(200, registry.render().encode())

        def _probe(self, path: str) -> None:
            if path == "/healthz":
                self._reply(200, b"ok\n")
                return
            try:
                ok = ready()
            except Exception as exc:  # a probe that cannot tell is "not ready", with the reason in the body
                self._reply(503, f"not ready: {type(exc).__name__}: {exc}\n".encode())
                return
            self._reply(200, b"ready\n") if ok else self._reply(503, b"not ready\n")

        def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


def serve(registry: Registry, host: str, port: int, token_file: Path,
          ready: Callable[[], bool] | None = None) -> MetricsServer:
    """Serve ``registry`` at ``http://host:port/metrics`` on a daemon thread, bearer token from ``token_file``.

    ``/healthz`` (liveness: the process answers) and ``/readyz`` (``ready()``, default always) need no token.
    """
    token = read_token(token_file)
    try:
        httpd = ThreadingHTTPServer((host, port), _handler(registry, token, ready or (lambda: True)))
    except OSError as exc:
        raise TelemetryError(f"metrics endpoint {host}:{port}: {exc.strerror or exc}; pick a free port "
                             "(--metrics-port) or another address (--metrics-host)") from None
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="sco-metrics", daemon=True)
    thread.start()
    return MetricsServer(httpd, thread)
