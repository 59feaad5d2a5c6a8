"""Credential revocation on termination (ADR-31), behind a Protocol that reports what it really did.

A revoker answers every ``revoke`` with a ``Revocation``: ``ok`` only when the credential authority confirmed
the revocation (or the credential was already gone), and a ``reason`` from a small set:

* ``revoked`` — the authority confirmed it (SPIRE ban + OpenBao leases, Keystone's delete, the NATS user gone);
* ``already-gone`` — there was nothing left to revoke (the authority says so);
* ``not-configured`` — no authority is wired (``LoggingRevoker``, the default): nothing was revoked, ``ok: false``;
* ``failed`` — the authority refused or could not be reached (``detail`` says why; expiry is the backstop).

The ``credentials-revoked`` event carries ``ok``, ``reason`` and ``detail``, so a deployment without SPIRE,
OpenBao or Keystone revocation shows it instead of claiming success. The OpenStack revoker (Keystone
application credentials) is ``KeystoneRevoker`` over ``controllers.providers.node_credentials.KeystoneNodeCredentials``;
``NatsUserRevoker`` removes the instance's own NATS user ``agent.<region>.<instance>`` that
``AgentCredentials.mint`` added at launch; ``CompositeRevoker`` asks several and is ``ok`` only when all are.
A ``failed`` revocation is tried again on a later pass (``Store.revocation_failed``, backing off).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["AgentUsers", "CompositeRevoker", "CredentialAuthority", "KeystoneRevoker", "LoggingRevoker",
           "NatsUserRevoker", "RecordingRevoker", "Revocation", "Revoker", "spiffe_id"]

log = logging.getLogger(__name__)

REASONS = ("revoked", "already-gone", "not-configured", "failed")


def spiffe_id(trust_domain: str, region: str, instance_id: str) -> str:
    """The node's SPIFFE id in the trust domain."""
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
    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Revoke what the terminated instance held; the outcome."""


class LoggingRevoker:
    """No credential authority wired: logs the intent and says so (``ok: false, reason: not-configured``)."""

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Revoke nothing, and say so (no revoker configured)."""
        log.warning("revocation not configured: %s (%s) keeps its credentials until they expire", instance_id, spiffe)
        return Revocation(False, "not-configured", "no revoker configured; credentials of the node live until expiry")


class CredentialAuthority(Protocol):
    def revoke_instance(self, instance_id: str) -> str:
        """Revoke the instance's credentials at the authority; the outcome's name."""


class KeystoneRevoker:
    """Deletes the instance's Keystone application credential (``KeystoneNodeCredentials``); ``ok`` only when
    Keystone confirmed the delete or has none. SPIRE and OpenBao are not covered: ``detail`` says so."""

    def __init__(self, authority: CredentialAuthority) -> None:
        """``authority``: the Keystone side (``controllers.providers.node_credentials.KeystoneNodeCredentials``)."""
        self.authority = authority

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Revoke the instance's Keystone application credential."""
        try:
            outcome = self.authority.revoke_instance(instance_id)
        except Exception as exc:
            log.warning("Keystone revocation for %s failed: %s", instance_id, exc)
            return Revocation(False, "failed", f"keystone: {type(exc).__name__}: {exc}"[:300])
        return Revocation(True, outcome, "keystone application credential; SPIRE/OpenBao not configured")


class AgentUsers(Protocol):
    """The side of ``userdata.AgentCredentials`` that removes an instance's NATS user."""

    def forget(self, region: str, instance_id: str) -> bool:
        """Remove ``agent.<region>.<instance_id>``; True when it existed."""


class NatsUserRevoker:
    """Removes ``agent.<region>.<instance>`` from the agents' NATS (``AgentCredentials.forget``): the
    terminated instance's password no longer logs in, its siblings' still do. ``already-gone`` when there was
    no such user (never minted, or removed by an earlier attempt)."""

    def __init__(self, users: AgentUsers, region: str) -> None:
        """``users``: the controller's ``AgentCredentials`` (e.g. ``sco.stack.manager.StackAgentCredentials``)."""
        self.users, self.region = users, region

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Remove the instance's NATS user."""
        user = f"agent.{self.region}.{instance_id}"
        try:
            existed = self.users.forget(self.region, instance_id)
        except Exception as exc:
            log.warning("removing NATS user %s failed: %s", user, exc)
            return Revocation(False, "failed", f"nats {user}: {type(exc).__name__}: {exc}"[:300])
        return Revocation(True, "revoked" if existed else "already-gone",
                          f"nats user {user} removed" if existed else f"nats user {user}: none left")


class CompositeRevoker:
    """Asks every revoker (e.g. Keystone's and the NATS one); ``ok`` only when every one is. The reason is the
    worst: ``failed`` (retried next pass) before ``not-configured`` before ``revoked`` before ``already-gone``;
    ``detail`` joins theirs."""

    def __init__(self, parts: Sequence[Revoker]) -> None:
        """``parts``: the revokers, asked in order; one raising counts as ``failed``."""
        self.parts = tuple(parts)

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Run every revoker; the worst outcome (failed, not configured, revoked, already gone), details joined."""
        done = []
        for part in self.parts:
            try:
                done.append(part.revoke(instance_id, spiffe))
            except Exception as exc:
                done.append(Revocation(False, "failed", f"{type(exc).__name__}: {exc}"[:300]))
        detail = "; ".join(d.detail for d in done if d.detail)[:500]
        for reason in ("failed", "not-configured", "revoked"):
            if any(d.reason == reason for d in done):
                return Revocation(reason == "revoked", reason, detail)
        return Revocation(True, "already-gone", detail)


@dataclass
class RecordingRevoker:
    """Test double: remembers every call (SPIFFE ids banned, lease prefixes revoked) and confirms them."""

    banned: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)

    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        """Record the revocation (a test double)."""
        self.banned.append(spiffe)
        self.revoked.append(f"auth/sco/node/{instance_id}/")
        return Revocation(True, "revoked")
