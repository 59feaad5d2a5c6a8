"""Prometheus exposition for the control-plane processes (ADR-28), one HTTP endpoint per process.

A small thread-safe registry of counters, gauges and histograms, and the endpoint that serves it. The text
format (0.0.4) is ``prometheus_client``'s: the registry hands its series to the library as metric families at
every scrape (``Registry.render``), so escaping, number formatting and the histogram layout are the library's.
The endpoint authenticates every scrape with a bearer token (Prometheus: ``authorization: {credentials_file:
…}``); the only paths without one are the probes ``/healthz`` and ``/readyz``, which answer "ok"/"ready" and
nothing else.
Metric names carry their unit (``_seconds``, ``_eur``, ``_units``, ``_total``); the catalogue is in
docs/operations.md "## Metrics".
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from .errors import TelemetryError

__all__ = ["BUCKETS", "Labels", "MetricsServer", "Registry", "TelemetryError", "read_token", "serve"]

log = logging.getLogger(__name__)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
Labels = tuple[tuple[str, str], ...]
KINDS = frozenset({"counter", "gauge", "histogram"})
_LE = tuple(repr(b) for b in BUCKETS)  # the bucket bounds as the text format writes them
MIN_TOKEN_CHARS = 16
PROBES = ("/healthz", "/readyz")



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
        """Every described metric in the Prometheus text format (version 0.0.4), written by ``prometheus_client``."""
        for fn in self._collectors:
            try:
                fn(self)
            except Exception as exc:  # a broken source must not break the scrape
                log.warning("metrics collector %s failed: %s: %s", getattr(fn, "__name__", fn), type(exc).__name__,
                            exc)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Snapshot(self._families()))
        return generate_latest(registry).decode()

    def _families(self) -> list[Metric]:
        """The series as ``prometheus_client`` metric families (a consistent snapshot, under the lock)."""
        with self._lock:
            return [_histogram(name, meta.help, self._hist.get(name, {})) if meta.kind == "histogram"
                    else _plain(name, meta, self._values.get(name, {})) for name, meta in sorted(self._meta.items())]


def _label_names(series: Iterable[Labels]) -> list[str]:
    return sorted({k for labels in series for k, _ in labels})


def _histogram(name: str, help_text: str, series: dict[Labels, list[float]]) -> Metric:
    keys = _label_names(series)
    family = HistogramMetricFamily(name, help_text, labels=keys)
    for labels, h in sorted(series.items()):
        buckets = [(_LE[i], h[i]) for i in range(len(BUCKETS))] + [("+Inf", h[-2])]
        family.add_metric([dict(labels).get(k, "") for k in keys], buckets=buckets, sum_value=h[-1])
    return family


def _plain(name: str, meta: _Meta, series: dict[Labels, float]) -> Metric:
    keys = _label_names(series)
    family: CounterMetricFamily | GaugeMetricFamily | _Untyped
    if meta.kind == "counter" and name.endswith("_total"):
        family = CounterMetricFamily(name, meta.help, labels=keys)
    elif meta.kind == "gauge":
        family = GaugeMetricFamily(name, meta.help, labels=keys)
    else:  # a counter named without ``_total``: prometheus_client would rename it, so it keeps its own name
        family = _Untyped(name, meta.help, keys)
    for labels, value in sorted(series.items()):
        family.add_metric([dict(labels).get(k, "") for k in keys], value)
    return family


class _Untyped(Metric):
    """A counter whose name does not end in ``_total``, kept under its own name (typed ``counter``)."""

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        super().__init__(name, documentation, "counter")
        self._labelnames = labels

    def add_metric(self, labels: list[str], value: float) -> None:
        self.add_sample(self.name, dict(zip(self._labelnames, labels, strict=True)), value)


class _Snapshot:
    """A collector that yields families made before the scrape (``Registry.render``)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return iter(self._families)


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
