"""Per-instance Keystone application credentials (ADR-31): issued at launch, revoked on termination."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from openstack import exceptions as osexc

from contracts.provider_errors import ProviderError

__all__ = ["KeystoneNodeCredentials"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class KeystoneNodeCredentials:
    """One Keystone application credential per instance, named ``sco-node-<instance id>`` (ADR-31).

    ``issue`` creates it at launch with an expiry (the secret is not kept: by ADR-29 no node holds a provider
    credential, so nothing here hands it out); ``revoke_instance`` deletes it on termination and reads it back,
    so ``revoked`` means Keystone confirmed the delete and ``already-gone`` that Keystone has none. Keystone lets
    only an identity that is not itself a restricted application credential manage application credentials
    (the orchestrator's own credential gets 403), so ``identity`` is a separate connection: the credential
    issuer's (OpenBao's plugin in production, ADR-29), creating under its own user or deleting under ``user_id``.
    """

    PREFIX = "sco-node-"

    def __init__(self, identity: Any, *, user_id: str | None = None, ttl: timedelta = timedelta(hours=24),
                 roles: tuple[str, ...] = ("reader",), clock: Callable[[], datetime] = _utcnow) -> None:
        """``identity``: an openstacksdk connection; ``user_id``: whose credentials (default: its own user)."""
        self._conn, self._ttl, self._roles, self._clock = identity, ttl, roles, clock
        self.user_id: str = user_id or identity.current_user_id

    def name(self, instance_id: str) -> str:
        """The credential's name for ``instance_id``."""
        return f"{self.PREFIX}{instance_id}"

    def issue(self, instance_id: str) -> str:
        """Create the instance's credential, expiring after ``ttl``; return its id (the secret is dropped)."""
        expires = (self._clock() + self._ttl).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        made = self._conn.identity.create_application_credential(
            self.user_id, name=self.name(instance_id), expires_at=expires,
            roles=[{"name": r} for r in self._roles], description=f"SCO node {instance_id} (ADR-31)")
        return str(made.id)

    def find(self, instance_id: str) -> Any | None:
        """The instance's credential as Keystone lists it, or None."""
        name = self.name(instance_id)
        return next((c for c in self._conn.identity.application_credentials(self.user_id) if c.name == name), None)

    def revoke_instance(self, instance_id: str) -> str:
        """Delete the instance's credential: ``revoked`` once Keystone no longer has it, ``already-gone`` if it
        had none. Keystone's refusal (403, unreachable) propagates as openstacksdk's exception."""
        found = self.find(instance_id)
        if found is None:
            return "already-gone"
        try:
            self._conn.identity.delete_application_credential(self.user_id, found.id)
        except osexc.NotFoundException:
            return "already-gone"
        try:
            self._conn.identity.get_application_credential(self.user_id, found.id)
        except osexc.NotFoundException:
            return "revoked"
        raise ProviderError(f"Keystone still lists application credential {found.id} ({self.name(instance_id)}) "
                            "after deleting it")
