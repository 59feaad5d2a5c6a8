"""Credential revocation on termination (ADR-31): ban the node's SPIRE agent and revoke OpenBao leases issued
to its identities by prefix. Behind a Protocol; the default adapter only logs what it would revoke, so a
deployment without SPIRE/OpenBao still records the intent (a ``credentials-revoked`` event per instance)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["LoggingRevoker", "RecordingRevoker", "Revoker", "spiffe_id"]

log = logging.getLogger(__name__)


def spiffe_id(trust_domain: str, region: str, instance_id: str) -> str:
    return f"spiffe://{trust_domain}/sco/{region}/node/{instance_id}"


class Revoker(Protocol):
    def ban_agent(self, spiffe: str) -> None: ...

    def revoke_leases(self, prefix: str) -> None: ...


class LoggingRevoker:
    def ban_agent(self, spiffe: str) -> None:
        log.info("revocation (log-only): would ban SPIRE agent %s", spiffe)

    def revoke_leases(self, prefix: str) -> None:
        log.info("revocation (log-only): would revoke OpenBao leases under %s", prefix)


@dataclass
class RecordingRevoker:
    """Test double: remembers every call."""

    banned: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)

    def ban_agent(self, spiffe: str) -> None:
        self.banned.append(spiffe)

    def revoke_leases(self, prefix: str) -> None:
        self.revoked.append(prefix)
