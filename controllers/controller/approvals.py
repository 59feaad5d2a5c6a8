"""Approval requests beyond a spend cap (ADR-23) go to the incident platform as an Alertmanager webhook
(version 4 body, built by ``alertmanager_payload``): any receiver that takes Alertmanager's webhooks
(the incident platform, a chat bridge) can page the named approver with the priced options."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .settings import ControllerSettings

__all__ = ["alertmanager_payload", "http_webhook"]


def http_webhook(url: str, timeout_s: float = 5.0) -> Callable[[dict[str, Any]], None]:
    """A notifier that POSTs each approval request as JSON to ``url``."""
    def post(body: dict[str, Any]) -> None:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()

    return post


def alertmanager_payload(s: ControllerSettings, workload: str, approver: str | None,
                         options: Sequence[Mapping[str, str]], cause: str, now: datetime) -> dict[str, Any]:
    """An Alertmanager webhook (version 4) body: one firing alert with the priced options as annotations."""
    labels = {"alertname": "SCOFallbackApproval", "severity": "page", "region": s.region, "partition": s.partition,
              "workload": workload, "approver": approver or ""}
    alert = {"status": "firing", "labels": labels, "annotations": {
        "summary": f"{workload}: fallback beyond the 24 h spend cap needs approval", "description": cause,
        "options": json.dumps(list(options))}, "startsAt": now.isoformat(), "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "", "fingerprint": hashlib.sha256(f"{s.region}/{workload}".encode()).hexdigest()[:16]}
    return {"version": "4", "groupKey": f"{{}}:{{workload=\"{workload}\"}}", "truncatedAlerts": 0, "status": "firing",
            "receiver": "sco-approvers", "groupLabels": {"workload": workload}, "commonLabels": labels,
            "commonAnnotations": alert["annotations"], "externalURL": "", "alerts": [alert]}
