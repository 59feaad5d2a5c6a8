"""HTTP client for the provider-contract feeds Nova does not have: rate card, reservations, forward capacity,
the reclaim API (ADR-05) and the metadata mirror of notices (ADR-17). The simulated region serves the same
paths, so the OpenStack adapter can take its feeds from it, and ``SimulatedProvider`` is this client plus
acquisition. Errors come back as ``{"error": <type>, "args": {...}}`` and are raised as the typed errors.
Standard library HTTP (urllib): no extra dependency in the controller.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter

from contracts import provider_errors as errors
from contracts.provider import ForwardCapacity, Notice, RateCard, ReclaimReceipt, Reservation

__all__ = ["FeedClient", "raise_typed"]

_ERRORS: dict[str, type[errors.ProviderError]] = {
    "CapacityUnavailable": errors.CapacityUnavailable, "QuotaExceeded": errors.QuotaExceeded,
    "Throttled": errors.Throttled, "NotFound": errors.NotFound, "NotOwned": errors.NotOwned,
    "InvalidRequest": errors.InvalidRequest,
}


def raise_typed(body: dict[str, Any]) -> None:
    """Raise the provider contract's error an error body names (a ``ProviderError`` when unknown)."""
    kind, args = body.get("error"), body.get("args") or {}
    cls = _ERRORS.get(str(kind))
    if cls is None:
        raise errors.ProviderError(str(body.get("message") or body))
    for key in ("known", "missing_tags", "tags"):
        if key in args:
            args[key] = tuple(args[key])
    raise cls(**args)


class FeedClient:
    """The provider feeds over HTTP; ``token``: the bearer token the simulated region asks for
    (``controllers.simregion.auth``; None: no ``Authorization`` header)."""

    def __init__(self, base_url: str, *, timeout_s: float = 5.0, token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._token = token

    def call(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        """One JSON request to the feed; the decoded answer (an error body raised as its typed error)."""
        url = self.base_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise errors.ProviderError(f"{method} {url}: HTTP {exc.code}: {raw[:200]!r}") from None
            raise_typed(parsed)
            raise  # unreachable: raise_typed always raises
        except urllib.error.URLError as exc:
            raise errors.ProviderError(f"{method} {url}: {exc.reason}; is the provider feed running?") from exc
        return json.loads(raw) if raw else None

    def rate_card(self) -> RateCard:
        """The current rate card (one entry per pool, refreshed every five minutes)."""
        return RateCard.model_validate(self.call("GET", "/v1/rate-card"))

    def reservations(self, business_unit: str | None = None) -> tuple[Reservation, ...]:
        """Committed capacity, of one business unit or of all when ``business_unit`` is None."""
        query = {"business_unit": business_unit} if business_unit else None
        return TypeAdapter(tuple[Reservation, ...]).validate_python(self.call("GET", "/v1/reservations", query=query))

    def forward_capacity(self, horizon: timedelta) -> tuple[ForwardCapacity, ...]:
        """Expected free reclaimable capacity per pool over the next ``horizon``."""
        raw = self.call("GET", "/v1/forward-capacity", query={"horizon_s": str(int(horizon.total_seconds()))})
        return TypeAdapter(tuple[ForwardCapacity, ...]).validate_python(raw)

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """The provider's reclaim path, for drills (ADR-33): notices now, deletion after the notice window."""
        raw = self.call("POST", "/v1/reclaim", {"instances": list(instance_ids), "drill": drill})
        return ReclaimReceipt.model_validate(raw)

    def notice(self, instance_id: str) -> Notice | None:
        """The metadata mirror of the hard notice (the agent's five-second poll), or None."""
        try:
            raw = self.call("GET", f"/metadata/{urllib.parse.quote(instance_id)}/notice")
        except errors.NotFound:
            return None
        return Notice.model_validate(raw)
