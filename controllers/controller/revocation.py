"""Credential revocation on termination (ADR-31), behind a Protocol that reports what it really did.

A revoker answers every ``revoke`` with a ``Revocation``: ``ok`` only when the credential authority confirmed
the revocation (or the credential was already gone), and a ``reason`` from a small set:

* ``revoked`` — the authority confirmed it (SPIRE ban + OpenBao leases, or Keystone's delete);
* ``already-gone`` — there was nothing left to revoke (the authority says so);
* ``not-configured`` — no authority is wired (``LoggingRevoker``, the default): nothing was revoked, ``ok: false``;
* ``failed`` — the authority refused or could not be reached (``detail`` says why; expiry is the backstop).

The ``credentials-revoked`` event carries ``ok``, ``reason`` and ``detail``, so a deployment without SPIRE,
OpenBao or Keystone revocation shows it instead of claiming success. The OpenStack revoker (Keystone
application credentials) is ``KeystoneRevoker`` over ``controllers.providers.openstack.KeystoneNodeCredentials``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["CredentialAuthority", "KeystoneRevoker", "LoggingRevoker", "RecordingRevoker", "Revocation", "Revoker",
           "spiffe_id"]

log = logging.getLogger(__name__)

REASONS = ("revoked", "already-gone", "not-configured", "failed")


def spiffe_id(trust_domain: str, region: str, instance_id: str) -> str:
    return f"spiffe://{trust_domain}/sco/{region}/node/{instance_id}"


@dataclass(frozen=True)
class Revocation:
    """What a revoker did for one instance: ``ok`` only when confirmed (or already gone)."""

    ok: bool
    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"revocation reason {self.reason!r} is not one of {REASONS}")
        if self.ok != (self.reason in ("revoked", "already-gone")):
            raise ValueError(f"revocation ok={self.ok} contradicts reason {self.reason!r}")


class Revoker(Protocol):
    def revoke(self, instance_id: str, spiffe: str) -> Revocation: ...


class LoggingRevoker:
    """No credential authority wired: logs the intent and says so (``ok: false, reason: not-configured``)."""

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        log.warning("revocation not configured: %s (%s) keeps its credentials until they expire", instance_id, spiffe)
        return Revocation(False, "not-configured", "no revoker configured; credentials of the node live until expiry")


class CredentialAuthority(Protocol):
    def revoke_instance(self, instance_id: str) -> str: ...


class KeystoneRevoker:
    """Deletes the instance's Keystone application credential (``KeystoneNodeCredentials``); ``ok`` only when
    Keystone confirmed the delete or has none. SPIRE and OpenBao are not covered: ``detail`` says so."""

    def __init__(self, authority: CredentialAuthority) -> None:
        """``authority``: the Keystone side (``controllers.providers.openstack.KeystoneNodeCredentials``)."""
        self.authority = authority

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        try:
            outcome = self.authority.revoke_instance(instance_id)
        except Exception as exc:
            log.warning("Keystone revocation for %s failed: %s", instance_id, exc)
            return Revocation(False, "failed", f"keystone: {type(exc).__name__}: {exc}"[:300])
        return Revocation(True, outcome, "keystone application credential; SPIRE/OpenBao not configured")


@dataclass
class RecordingRevoker:
    """Test double: remembers every call (SPIFFE ids banned, lease prefixes revoked) and confirms them."""

    banned: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        self.banned.append(spiffe)
        self.revoked.append(f"auth/sco/node/{instance_id}/")
        return Revocation(True, "revoked")
