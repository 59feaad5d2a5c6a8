"""The control plane's Prometheus exposition (stores.telemetry): the text a scrape gets parses strictly, and the
endpoint answers only a scrape that presents the bearer token."""

from __future__ import annotations

import math
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from stores.telemetry import MetricsServer, Registry, TelemetryError, serve
from tests.support.exposition import parse

TOKEN = "a-long-enough-metrics-token"


def _registry() -> Registry:
    r = Registry({"region": "r1"})
    r.describe_all([("sco_test_events_total", "counter", "Events."), ("sco_test_depth_rows", "gauge", "Rows."),
                    ("sco_test_pass_duration_seconds", "histogram", "Passes.")])
    return r


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[MetricsServer, Registry]]:
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "token").chmod(0o600)
    r = _registry()
    s = serve(r, "127.0.0.1", 0, tmp_path / "token")
    yield s, r
    s.close()


def _scrape(port: int, token: str | None) -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_counters_gauges_and_histograms_render_in_the_text_format_with_the_process_labels() -> None:
    r = _registry()
    r.inc("sco_test_events_total", 3, kind="notice")
    r.set("sco_test_depth_rows", math.inf)
    r.observe("sco_test_pass_duration_seconds", 0.2)
    r.observe("sco_test_pass_duration_seconds", 7.0)
    doc = parse(r.render())
    assert doc.types["sco_test_pass_duration_seconds"] == "histogram"
    assert doc.value("sco_test_events_total", kind="notice", region="r1") == 3
    assert doc.value("sco_test_depth_rows") == math.inf
    assert doc.value("sco_test_pass_duration_seconds_count") == 2
    assert doc.value("sco_test_pass_duration_seconds_bucket", le="0.25") == 1
    assert doc.value("sco_test_pass_duration_seconds_bucket", le="+Inf") == 2
    assert doc.value("sco_test_pass_duration_seconds_sum") == pytest.approx(7.2)


def test_replacing_a_gauges_series_drops_the_label_values_that_are_gone() -> None:
    r = _registry()
    r.replace("sco_test_depth_rows", {(("workload", "a"),): 1.0, (("workload", "b"),): 2.0})
    r.replace("sco_test_depth_rows", {(("workload", "b"),): 5.0})
    assert parse(r.render()).series("sco_test_depth_rows") == [{"region": "r1", "workload": "b"}]


def test_label_values_are_escaped_so_the_exposition_still_parses() -> None:
    r = _registry()
    r.set("sco_test_depth_rows", 1, reason='quote " backslash \\ newline \n')
    assert parse(r.render()).series("sco_test_depth_rows")[0]["reason"] == 'quote " backslash \\ newline \n'


def test_a_failing_collector_does_not_break_the_scrape() -> None:
    r = _registry()

    def broken(_: Registry) -> None:
        raise RuntimeError("database away")

    r.on_collect(broken)
    r.set("sco_test_depth_rows", 4)
    assert parse(r.render()).value("sco_test_depth_rows") == 4


def test_an_undescribed_metric_is_refused() -> None:
    with pytest.raises(KeyError, match="describe"):
        _registry().inc("sco_test_unknown_total")


def test_the_endpoint_answers_a_scrape_with_the_token_and_refuses_one_without(
        server: tuple[MetricsServer, Registry]) -> None:
    s, r = server
    r.set("sco_test_depth_rows", 7)
    assert _scrape(s.port, None)[0] == 401
    assert _scrape(s.port, "wrong-token-of-some-length")[0] == 401
    status, body = _scrape(s.port, TOKEN)
    assert status == 200 and parse(body).value("sco_test_depth_rows", region="r1") == 7


def test_a_short_or_missing_token_file_is_refused_with_its_code(tmp_path: Path) -> None:
    (tmp_path / "short").write_text("abc")
    (tmp_path / "short").chmod(0o600)
    with pytest.raises(TelemetryError, match=r"MET001.*at least 16"):
        serve(_registry(), "127.0.0.1", 0, tmp_path / "short")
    with pytest.raises(TelemetryError, match=r"MET001.*credentials_file"):
        serve(_registry(), "127.0.0.1", 0, tmp_path / "absent")


def test_a_token_file_other_users_can_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o644)
    with pytest.raises(TelemetryError, match=r"MET001.*chmod 600"):
        serve(_registry(), "127.0.0.1", 0, tmp_path / "token")


def test_a_token_file_its_group_may_read_is_accepted_as_a_pods_secret_volume_mounts_it(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o440)  # Kubernetes: defaultMode 0400 plus group read for the pod's fsGroup
    serve(_registry(), "127.0.0.1", 0, tmp_path / "token").close()
    (tmp_path / "token").chmod(0o460)
    with pytest.raises(TelemetryError, match=r"MET001.*chmod 600"):
        serve(_registry(), "127.0.0.1", 0, tmp_path / "token")


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_probes_answer_without_a_token_and_say_nothing_else(server: tuple[MetricsServer, Registry]) -> None:
    s, r = server
    r.set("sco_test_depth_rows", 7)
    assert _get(s.port, "/healthz") == (200, "ok\n")
    assert _get(s.port, "/readyz") == (200, "ready\n")
    assert _get(s.port, "/metrics")[0] == 401


def test_readiness_follows_the_process_and_a_failing_check_is_not_ready(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o600)
    state = {"ready": False}

    def ready() -> bool:
        if state.get("broken"):
            raise ConnectionError("postgres gone")
        return state["ready"]

    s = serve(_registry(), "127.0.0.1", 0, tmp_path / "token", ready)
    try:
        assert _get(s.port, "/readyz") == (503, "not ready\n")
        state["ready"] = True
        assert _get(s.port, "/readyz") == (200, "ready\n")
        state["broken"] = True
        assert _get(s.port, "/readyz") == (503, "not ready: ConnectionError: postgres gone\n")
        assert _get(s.port, "/healthz")[0] == 200
    finally:
        s.close()
