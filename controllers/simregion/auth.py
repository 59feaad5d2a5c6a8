"""Who may call the simulated region's HTTP API, and what each may do.

Identities, each a bearer token (``Authorization: Bearer <token>``) from the stack's ``credentials.json``
(section ``region``, written by ``sco up``; ``SCO_REGION_TOKEN`` in a client's environment overrides it):

* ``controller`` — the controller's provider adapter: every path (launch, terminate, list, user-data, reclaim);
* ``drill`` — ``sco drill`` and the demo's game days: reads, and reclaims (drill or not) — never a launch;
* an instance — ``i.<instance id>.<HMAC-SHA256(instance_key, instance id)>``, minted by whoever holds the
  instance key (the region, the controller that launched it): its own user-data and nothing else.

``/healthz``, the metadata mirror (``/metadata/{id}``: notices and advisories, no secret; what a real cloud
serves on the link-local address to the instance) and the published feed documents (catalogue, rate card,
reservations, forward capacity, quota: what the analytics read) stay open, for GET only. Every refusal is
logged with its stable code: ``SIM001`` no or an unknown credential (401), ``SIM002`` a known identity
asking for what it may not (403).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from dataclasses import dataclass

__all__ = ["OPEN_PATHS", "Refusal", "RegionAuth", "instance_token"]

log = logging.getLogger(__name__)
# no instance, no user-data, no action: the health check, the metadata mirror, and the provider's published feed
# documents the analytics read without a region credential (ProviderFeedResource)
OPEN_PATHS = re.compile(r"^/(healthz|metadata/[^/]+(/notice)?|v1/(catalogue|rate-card|reservations|forward-capacity"
                        r"|quota))$")
_USER_DATA = re.compile(r"^/v1/instances/([^/]+)/user-data$")
_RECLAIM = re.compile(r"^/v1/(reclaim|halls/[^/]+/reclaim)$")


def instance_token(instance_key: str, instance_id: str) -> str:
    """The bearer token of one instance's identity."""
    mac = hmac.new(instance_key.encode(), instance_id.encode(), hashlib.sha256).hexdigest()
    return f"i.{instance_id}.{mac}"


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str


@dataclass(frozen=True)
class RegionAuth:
    """The region's secrets: the controller's and the drill identity's tokens, and the instance key."""

    controller: str
    drill: str
    instance_key: str

    def identity(self, authorization: str | None) -> str | None:
        """``controller``, ``drill``, ``instance:<id>``, or None (no or an unknown credential)."""
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[len("Bearer "):].strip()
        found = None
        for name, secret in (("controller", self.controller), ("drill", self.drill)):
            if hmac.compare_digest(token.encode(), secret.encode()):
                found = name
        if found is None and token.startswith("i.") and token.count(".") >= 2:
            iid = token[2:].rsplit(".", 1)[0]
            if hmac.compare_digest(token.encode(), instance_token(self.instance_key, iid).encode()):
                found = f"instance:{iid}"
        return found

    def check(self, method: str, path: str, authorization: str | None) -> Refusal | None:
        """None when the call may go on, else the refusal (logged)."""
        if method in ("GET", "HEAD") and OPEN_PATHS.match(path):
            return None
        who = self.identity(authorization)
        refusal = _refusal(who, method, path)
        if refusal is not None:
            log.warning("%s %s %s by %s: %s", refusal.code, method, path, who or "an unauthenticated caller",
                        refusal.message)
        return refusal


def _refusal(who: str | None, method: str, path: str) -> Refusal | None:
    if who is None:
        return Refusal(401, "SIM001", "the simulated region needs a credential: `Authorization: Bearer <token>` "
                       "from the stack's credentials.json (region section) or SCO_REGION_TOKEN")
    if who == "controller":
        return None
    user_data = _USER_DATA.match(path)
    if user_data is not None:
        if who == f"instance:{user_data.group(1)}":
            return None
        return Refusal(403, "SIM002", f"{who} may not read the user-data of {user_data.group(1)}: only that "
                       "instance's own identity or the controller")
    if who == "drill" and (method == "GET" or (method == "POST" and _RECLAIM.match(path))):
        return None
    return Refusal(403, "SIM002", f"{who} may not {method} {path}: launches, terminations and reclaims are the "
                   "controller's (reclaims also the drill identity's)")
