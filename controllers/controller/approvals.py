"""Approval requests beyond a spend cap (ADR-23) go to the incident platform as an Alertmanager webhook
(version 4 body, built by ``loop.alertmanager_payload``): any receiver that takes Alertmanager's webhooks
(the incident platform, a chat bridge) can page the named approver with the priced options."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

__all__ = ["http_webhook"]


def http_webhook(url: str, timeout_s: float = 5.0) -> Callable[[dict[str, Any]], None]:
    def post(body: dict[str, Any]) -> None:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()

    return post
