"""A tiny Prometheus text-format registry and endpoint (no client library: the agent stays small)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from .httpwire import start_text_server

__all__ = ["Metrics", "serve_metrics"]

_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)
Labels = tuple[tuple[str, str], ...]


def _escape(text: str, quote: bool) -> str:
    """The text format's escapes: backslash and newline everywhere, the double quote inside a label value."""
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def _fmt_labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    items = labels + extra
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v, True)}"' for k, v in items) + "}"


class Metrics:
    """Counters, gauges (set or computed on scrape) and histograms. Thread-safe."""

    def __init__(self) -> None:
        """No series yet."""
        self._lock = threading.Lock()
        self._help: dict[str, tuple[str, str]] = {}
        self._values: dict[str, dict[Labels, float]] = {}
        self._gauges_fn: dict[str, Callable[[], float]] = {}
        self._hist: dict[str, dict[Labels, list[float]]] = {}

    def describe(self, name: str, kind: str, help_text: str) -> None:
        """Set a metric's type (counter, gauge, histogram) and help text."""
        self._help[name] = (kind, help_text)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Add ``amount`` to a counter series."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._values.setdefault(name, {})
            series[key] = series.get(key, 0.0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge series."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values.setdefault(name, {})[key] = value

    def gauge_fn(self, name: str, fn: Callable[[], float]) -> None:
        """A gauge computed by ``fn`` on every scrape."""
        self._gauges_fn[name] = fn

    def observe(self, name: str, value: float, **labels: str) -> None:
        """Add ``value`` to a histogram series."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            h = self._hist.setdefault(name, {}).setdefault(key, [0.0] * (len(_BUCKETS) + 2))
            for i, bound in enumerate(_BUCKETS):
                if value <= bound:
                    h[i] += 1
            h[-2] += 1  # count
            h[-1] += value  # sum

    def value(self, name: str, **labels: str) -> float:
        """A series' current value (a histogram's count)."""
        if name in self._gauges_fn:
            return self._gauges_fn[name]()
        key = tuple(sorted(labels.items()))
        with self._lock:
            if name in self._hist:
                return self._hist[name].get(key, [0.0] * (len(_BUCKETS) + 2))[-2]
            return self._values.get(name, {}).get(key, 0.0)

    def render(self) -> str:
        """Every metric in the Prometheus text format."""
        lines: list[str] = []
        names = sorted(set(self._help) | set(self._values) | set(self._gauges_fn) | set(self._hist))
        for name in names:
            kind, text = self._help.get(name, ("untyped", ""))
            lines.append(f"# HELP {name} {_escape(text, False)}")
            lines.append(f"# TYPE {name} {kind}")
            if name in self._gauges_fn:
                try:
                    lines.append(f"{name} {self._gauges_fn[name]():.6g}")
                except Exception:  # a broken gauge must not break the scrape
                    lines.append(f"{name} NaN")
                continue
            with self._lock:
                if name in self._hist:
                    for labels, h in sorted(self._hist[name].items()):
                        for i, bound in enumerate(_BUCKETS):
                            lines.append(f"{name}_bucket{_fmt_labels(labels, (('le', repr(float(bound))),))} {h[i]:g}")
                        lines.append(f"{name}_bucket{_fmt_labels(labels, (('le', '+Inf'),))} {h[-2]:g}")
                        lines.append(f"{name}_count{_fmt_labels(labels)} {h[-2]:g}")
                        lines.append(f"{name}_sum{_fmt_labels(labels)} {h[-1]:.6g}")
                    continue
                series = self._values.get(name, {})
                if not series and kind == "counter":
                    lines.append(f"{name} 0")
                for labels, value in sorted(series.items()):
                    lines.append(f"{name}{_fmt_labels(labels)} {value:.6g}")
        return "\n".join(lines) + "\n"


async def serve_metrics(metrics: Metrics, host: str, port: int) -> asyncio.Server:
    """Serve ``/metrics`` on ``host:port`` on the running event loop; ``close()`` the server to stop."""
    return await start_text_server(host, port, ("/metrics", "/"), metrics.render)
