"""The controller's own provider credential: a project-scoped Keystone application credential with an expiry,
renewed before it lapses (ADR-29: "for one hour at a time").

Decide, then act: ``renewal_due`` is the pure rule (renew once less than ``lead`` is left, or when there is none);
``RenewingConnection`` applies it on every use of the provider's connection — it asks the issuer for a new
credential, connects with it, proves the connection authenticates, switches, and only then has the old credential
deleted, so no call ever runs on a credential that is about to lapse and none is left behind. When issuing fails
while the current credential still has time, the controller keeps working on it (logged, counted in
``failures``) and tries again on the next use; once it has lapsed, every use raises ``CredentialLapsed`` naming
the credential, its expiry and the fix.

The issuer is a boundary (``CredentialIssuer``): in production OpenBao's OpenStack plugin or a rotation job that
holds the orchestrator user's authority; ``KeystoneIssuer`` is that job on openstacksdk (the user's own identity
creates and deletes application credentials of its own user, as Keystone's policy allows).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..errors import CredentialLapsed

__all__ = ["AppCredential", "CredentialIssuer", "CredentialLapsed", "KeystoneIssuer", "RenewingConnection",
           "connect_sdk", "keystone_connector", "renewal_due"]

log = logging.getLogger(__name__)

TTL = timedelta(hours=1)           # ADR-29: one hour at a time
LEAD = timedelta(minutes=15)       # renew with a quarter of the lifetime left: three passes' worth of retries


@dataclass(frozen=True)
class AppCredential:
    """One application credential: what connects (id + secret) and when Keystone stops honouring it."""

    id: str
    secret: str
    expires_at: datetime

    def __repr__(self) -> str:  # never the secret in a log line or a traceback
        return f"AppCredential(id={self.id!r}, expires_at={self.expires_at.isoformat()})"



class CredentialIssuer(Protocol):
    """Issues and deletes the orchestrator's application credentials."""

    def issue(self, name: str, expires_at: datetime) -> AppCredential:
        """A new application credential named ``name`` expiring at ``expires_at``."""

    def delete(self, credential_id: str) -> None:
        """Delete the credential (one already gone is no error)."""


def renewal_due(current: AppCredential | None, now: datetime, lead: timedelta = LEAD) -> bool:
    """Whether to renew: there is no credential, or less than ``lead`` of its life is left."""
    return current is None or current.expires_at - now <= lead


class KeystoneIssuer:
    """``CredentialIssuer`` on Keystone: the orchestrator user's own identity manages its application
    credentials (``roles``: what the credential may do in the project; ``member`` launches and deletes)."""

    def __init__(self, identity: Any, *, roles: tuple[str, ...] = ("member",)) -> None:
        self._conn, self._roles = identity, roles
        self.user_id: str = identity.current_user_id

    def issue(self, name: str, expires_at: datetime) -> AppCredential:
        """Create an application credential of the user in Keystone, with its roles and expiry."""
        made = self._conn.identity.create_application_credential(
            self.user_id, name=name, expires_at=expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
            roles=[{"name": r} for r in self._roles], description="SCO controller credential (ADR-29)")
        return AppCredential(str(made.id), str(made.secret), expires_at.astimezone(UTC).replace(microsecond=0))

    def delete(self, credential_id: str) -> None:
        """Delete the application credential in Keystone (one already gone is no error)."""
        from openstack import exceptions as osexc

        with contextlib.suppress(osexc.NotFoundException):  # already gone: the goal
            self._conn.identity.delete_application_credential(self.user_id, credential_id)


Connect = Callable[[AppCredential], Any]


class RenewingConnection:
    """An openstacksdk connection on an application credential that is renewed before it lapses.

    ``connect(credential)`` builds a connection for a credential (``keystone_connector`` for the real one);
    ``current()`` returns the connection to use now, renewing first when ``renewal_due``.
    """

    def __init__(self, issuer: CredentialIssuer, connect: Connect, *, name: str,
                 clock: Callable[[], datetime], ttl: timedelta = TTL, lead: timedelta = LEAD) -> None:
        if lead >= ttl:
            raise ValueError(f"lead {lead} must be shorter than the credential's lifetime {ttl}")
        self._issuer, self._connect, self._name, self._clock = issuer, connect, name, clock
        self._ttl, self._lead = ttl, lead
        self.credential: AppCredential | None = None
        self._conn: Any = None
        self.renewals = 0
        self.failures = 0

    def current(self) -> Any:
        """The connection to use now (renewed first when due)."""
        now = self._clock()
        if renewal_due(self.credential, now, self._lead):
            self._renew(now)
        return self._conn

    def _renew(self, now: datetime) -> None:
        old = self.credential
        try:
            fresh = self._issuer.issue(f"{self._name}-{now.strftime('%Y%m%dT%H%M%S')}", now + self._ttl)
            conn = self._connect(fresh)
            conn.authorize()  # prove Keystone honours it before switching to it
        except Exception as exc:
            self.failures += 1
            if old is None or old.expires_at <= now:
                lapsed = old or AppCredential("(none)", "", now)
                raise CredentialLapsed(lapsed.id, lapsed.expires_at, now, f"{type(exc).__name__}: {exc}") from exc
            log.warning("renewing the controller's credential failed (%s: %s); %s stays in use until %s",
                        type(exc).__name__, exc, old.id, old.expires_at.isoformat())
            return
        self.credential, self._conn = fresh, conn
        self.renewals += 1
        log.info("controller credential renewed: %s until %s", fresh.id, fresh.expires_at.isoformat())
        if old is not None:
            try:
                self._issuer.delete(old.id)
            except Exception as exc:  # it expires on its own within the hour; say so, don't fail the pass
                log.warning("deleting the previous controller credential %s failed (%s: %s); it lapses at %s",
                            old.id, type(exc).__name__, exc, old.expires_at.isoformat())


def connect_sdk(**conf: Any) -> Any:
    """An openstacksdk connection for ``conf``, without the SDK's warnings about its own unused options."""
    import openstack

    with warnings.catch_warnings():  # openstacksdk warns about its own unused InfluxDB/statsd options
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return openstack.connect(**conf)


def keystone_connector(auth_url: str, **options: Any) -> Connect:
    """``connect`` for ``RenewingConnection``: an openstacksdk connection on an application credential."""

    def connect(credential: AppCredential) -> Any:
        return connect_sdk(auth_type="v3applicationcredential",
                        auth={"auth_url": auth_url, "application_credential_id": credential.id,
                              "application_credential_secret": credential.secret}, **options)

    return connect
