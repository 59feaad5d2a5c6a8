"""The agent writes the Prometheus text format itself (prometheus_client's import costs the 2 MiB the agent's
40 MiB budget does not have; docs/benchmarks.md), so the reference library judges what it writes: every series
the agent exports parses with prometheus_client's parser into the very samples prometheus_client renders for
the same values, label values that need escaping included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.instruments import SERIES, describe
from agent.metrics import _BUCKETS, Metrics

AWKWARD = 'a "quoted" back\\slash\nnew line'
Sample = tuple[str, tuple[tuple[str, str], ...], float]


def _samples(text: str) -> set[Sample]:
    return {(s.name, tuple(sorted(s.labels.items())), s.value)
            for family in text_string_to_metric_families(text) for s in family.samples
            if not s.name.endswith("_created")}


def _families(text: str) -> dict[str, str]:
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def _both() -> tuple[Metrics, CollectorRegistry]:
    ours, ref = Metrics(), CollectorRegistry()
    describe(ours)
    for name, kind, text in SERIES:
        if kind == "counter":
            metric = Counter(name.removesuffix("_total"), text, ["channel"], registry=ref)
            for channel, amount in (("nats", 3.0), (AWKWARD, 1.0)):
                ours.inc(name, amount, channel=channel)
                metric.labels(channel=channel).inc(amount)
        elif kind == "histogram":
            hist = Histogram(name, text, ["workload"], buckets=_BUCKETS, registry=ref)
            for value in (0.004, 0.3, 7.0, 500.0):
                ours.observe(name, value, workload=AWKWARD)
                hist.labels(workload=AWKWARD).observe(value)
        else:
            gauge = Gauge(name, text, registry=ref)
            ours.set(name, 42.5)
            gauge.set(42.5)
    return ours, ref


@pytest.fixture(autouse=True)
def _no_created_samples() -> Iterator[None]:
    import prometheus_client

    prometheus_client.disable_created_metrics()
    yield
    prometheus_client.enable_created_metrics()


def test_every_series_the_agent_exports_parses_into_the_samples_prometheus_client_renders() -> None:
    ours, ref = _both()
    text, reference = ours.render(), generate_latest(ref).decode()
    assert _samples(text) == _samples(reference)
    assert _families(text) == _families(reference)
    assert len(_families(text)) == len(SERIES)


def test_a_label_value_with_a_newline_stays_on_its_own_line() -> None:
    ours = Metrics()
    ours.describe("sco_agent_overruns_total", "counter", "Help with a\nnewline and a back\\slash.")
    ours.inc("sco_agent_overruns_total", contract_ref="x\ny")
    (family,) = text_string_to_metric_families(ours.render())
    assert family.documentation == "Help with a\nnewline and a back\\slash."
    assert [(s.labels, s.value) for s in family.samples] == [({"contract_ref": "x\ny"}, 1.0)]
