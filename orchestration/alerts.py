"""What the analytics tell SRE when something goes wrong (ADR-28), in the Alertmanager webhook format
(version 4) any receiver of Alertmanager's webhooks takes: a failed Dagster run. No Dagster import: the
run-failure sensor in ``orchestration.defs.health`` builds the alert here and posts it with ``post_alert``.

The receiver is configured by ``SCO_ALERT_WEBHOOK_URL`` (unset: the sensor logs a warning and posts nothing)."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["ALERT_WEBHOOK_ENV", "FailedRun", "post_alert", "run_failure_alert"]

ALERT_WEBHOOK_ENV = "SCO_ALERT_WEBHOOK_URL"


@dataclass(frozen=True)
class FailedRun:
    """What the alert says about a failed run: its job, id, the failure message and the failed steps."""

    job: str
    run_id: str
    message: str
    steps: Sequence[str] = ()
    assets: Sequence[str] = ()


def run_failure_alert(run: FailedRun, region: str, now: datetime, ui_url: str = "") -> dict[str, Any]:
    """One firing ``SCODagsterRunFailed`` alert for the platform team (the analytics are the platform's)."""
    labels = {"alertname": "SCODagsterRunFailed", "severity": "ticket", "team": "platform", "owner": "platform",
              "region": region, "job": run.job}
    annotations = {
        "summary": f"Dagster run of {run.job} failed in {region}",
        "description": run.message[:2000],
        "failed_steps": ", ".join(run.steps) or "-",
        "assets": ", ".join(run.assets) or "-",
        "run_id": run.run_id,
        "runbook_url": "docs/operations.md#dagster-asset-health",
    }
    alert = {"status": "firing", "labels": labels, "annotations": annotations, "startsAt": now.isoformat(),
             "endsAt": "0001-01-01T00:00:00Z",
             "generatorURL": f"{ui_url.rstrip('/')}/runs/{run.run_id}" if ui_url else "",
             "fingerprint": hashlib.sha256(f"{region}/{run.job}/{run.run_id}".encode()).hexdigest()[:16]}
    return {"version": "4", "groupKey": f'{{}}:{{alertname="SCODagsterRunFailed", job="{run.job}"}}',
            "truncatedAlerts": 0, "status": "firing", "receiver": "sco-platform",
            "groupLabels": {"alertname": "SCODagsterRunFailed", "job": run.job}, "commonLabels": labels,
            "commonAnnotations": annotations, "externalURL": ui_url, "alerts": [alert]}


def post_alert(url: str, body: dict[str, Any], timeout_s: float = 5.0) -> int:
    """POST ``body`` as JSON to the webhook ``url``; returns the HTTP status (raises on an HTTP error)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        response.read()
        return int(response.status)
