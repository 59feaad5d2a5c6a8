"""The run-failure sensor (ADR-28): a run that fails on a real Dagster instance is posted as an Alertmanager
webhook (version 4) to ``SCO_ALERT_WEBHOOK_URL`` — read here by a real HTTP receiver — and with the variable
unset the sensor posts nothing and logs a warning that says what to set."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An HTTP webhook receiver on a free loopback port; the bodies it got."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/alerts", got
    finally:
        server.shutdown()
        server.server_close()


def _failed_run_context() -> Any:
    """A job whose one op raises, run on an ephemeral instance; the sensor context of its failure."""
    from dagster import DagsterEventType, DagsterInstance, build_run_status_sensor_context, job, op

    @op
    def rank_pools() -> None:
        raise RuntimeError("ClickHouse refused the connection")

    @job(name="rankings_every_5_min")
    def rankings() -> None:
        rank_pools()

    instance = DagsterInstance.ephemeral()
    result = rankings.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type == DagsterEventType.RUN_FAILURE)
    return build_run_status_sensor_context(sensor_name="alert_on_run_failure", dagster_event=failure,
                                           dagster_instance=instance,
                                           dagster_run=result.dagster_run).for_run_failure(), result.run_id


def test_a_failed_run_is_posted_as_an_alertmanager_alert_naming_the_job_and_the_failed_step(
        receiver: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestration.defs.health.sensors import alert_on_run_failure

    url, got = receiver
    monkeypatch.setenv("SCO_ALERT_WEBHOOK_URL", url)
    monkeypatch.setenv("SCO_REGION", "r2")
    context, run_id = _failed_run_context()
    alert_on_run_failure(context)
    assert len(got) == 1
    body = got[0]
    assert body["version"] == "4" and body["status"] == "firing"
    (alert,) = body["alerts"]
    assert alert["labels"] == {"alertname": "SCODagsterRunFailed", "severity": "ticket", "team": "platform",
                               "owner": "platform", "region": "r2", "job": "rankings_every_5_min"}
    assert alert["annotations"]["run_id"] == run_id
    assert alert["annotations"]["failed_steps"] == "rank_pools"
    assert "rankings_every_5_min" in alert["annotations"]["description"]
    assert alert["annotations"]["runbook_url"].endswith("#dagster-asset-health")


def test_without_a_webhook_the_sensor_posts_nothing_and_says_what_to_set(
        receiver: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from orchestration.defs.health.sensors import alert_on_run_failure

    _, got = receiver
    monkeypatch.delenv("SCO_ALERT_WEBHOOK_URL", raising=False)
    context, run_id = _failed_run_context()
    context._logger = logging.getLogger("sco.test.alert_on_run_failure")  # the sensor's log, where pytest sees it
    with caplog.at_level(logging.WARNING):
        alert_on_run_failure(context)
    assert got == []
    assert any("SCO_ALERT_WEBHOOK_URL is not set" in r.getMessage() and run_id in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
