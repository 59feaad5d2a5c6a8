"""The agent's metrics: every series it exports (name, kind, help text) and the gauges read on each scrape.

The counters and histograms are bumped where things happen (notice intake, drains, shipping); the gauges here
read the agent's state when Prometheus scrapes: the held bundle, the spool and the NATS connection.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from .bundle import BundleStore
from .metrics import Metrics
from .spool import Spool

__all__ = ["SERIES", "describe", "watch"]

SERIES: tuple[tuple[str, str, str], ...] = (
    ("sco_agent_notices_total", "counter", "Notices and advisories admitted, by kind and first channel."),
    ("sco_agent_notices_duplicate_total", "counter", "Copies ignored because another channel won."),
    ("sco_agent_notices_refused_total", "counter",
     "Notices refused, not acted on, by channel and reason (agent.notice.check.REASONS)."),
    ("sco_agent_notices_coalesced_total", "counter",
     "Notices admitted that changed nothing, past the bound of recorded ones: counted, no event."),
    ("sco_agent_first_action_seconds", "histogram", "Notice receipt to the first drain action."),
    ("sco_agent_drain_seconds", "histogram", "Notice receipt to verified drain, per workload."),
    ("sco_agent_overruns_total", "counter", "Workloads not drained within their drain budget, by contract ref."),
    ("sco_agent_local_drains_total", "counter", "Drains that took the local path (scheduler > 800 ms)."),
    ("sco_agent_bundle_age_seconds", "gauge", "Age of the held bundle (now - issued_at); never enforced."),
    ("sco_agent_bundle_generation", "gauge", "Generation of the held bundle (0: none)."),
    ("sco_agent_bundle_refused_total", "counter", "Bundles refused (signature, partition, format, older generation)."),
    ("sco_agent_bundle_refresh_failures_total", "counter", "Distributor fetches that failed."),
    ("sco_agent_ready", "gauge", "Valid contract bundle held (1) or not (0: node reported not ready)."),
    ("sco_agent_spool_depth", "gauge", "Events spooled on disk, not yet acknowledged by JetStream."),
    ("sco_agent_spool_bytes", "gauge", "Bytes in the spool."),
    ("sco_agent_spool_dropped_total", "gauge", "Events deleted because the spool bound was reached."),
    ("sco_agent_events_shipped_total", "counter", "Events acknowledged by JetStream."),
    ("sco_agent_nats_dropped_total", "counter",
     "Messages NATS dropped at the client: past a subscription's pending bound (a flood)."),
    ("sco_agent_nats_connected", "gauge", "Notice subscriptions live on the NATS relay (1) or not (0)."),
)


def describe(m: Metrics) -> None:
    """Give every series of ``SERIES`` its type and help text."""
    for name, kind, text in SERIES:
        m.describe(name, kind, text)


def watch(m: Metrics, bundles: BundleStore, spool: Spool, now: Callable[[], datetime],
          nats_connected: Callable[[], bool]) -> None:
    """Register the gauges computed on scrape from the held bundle, the spool and the NATS connection."""
    m.gauge_fn("sco_agent_bundle_age_seconds", lambda: bundles.age_seconds(now()))
    m.gauge_fn("sco_agent_bundle_generation", lambda: float(bundles.current.generation if bundles.current else 0))
    m.gauge_fn("sco_agent_bundle_refused_total", lambda: float(bundles.refused))
    m.gauge_fn("sco_agent_ready", lambda: 1.0 if bundles.current else 0.0)
    m.gauge_fn("sco_agent_spool_depth", lambda: float(spool.depth))
    m.gauge_fn("sco_agent_spool_bytes", lambda: float(spool.bytes))
    m.gauge_fn("sco_agent_spool_dropped_total", lambda: float(spool.dropped))
    m.gauge_fn("sco_agent_nats_connected", lambda: 1.0 if nats_connected() else 0.0)
