"""Who may fetch a bundle: HTTP Basic (``user:password``) or a bearer token, checked against digests.

The SHA-256 digests are checked in the same constant-time way as the ClickHouse front end
(``sco.stack.clickhouse_http.auth``). Agents (their own per-instance user, ``agent.<region>.<instance>``) read agent
bundles; controllers read both kinds and the metrics. No credential, no bundle: there is no anonymous path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["Authenticator", "PasswordTable", "Principal", "Role", "allowed", "digest"]

Role = Literal["agent", "controller"]
_DUMMY = hashlib.sha256(b"no such user").hexdigest()


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    ``scope``: for an agent, the partition (``region/cluster``) or region whose agent bundle alone it may read
    (None: unscoped).
    """

    name: str
    role: Role
    scope: str | None = None


class Authenticator(Protocol):
    """Answers who an ``Authorization`` header belongs to, or None."""

    def authenticate(self, authorization: str | None) -> Principal | None:
        """The caller, or None for a missing, malformed or wrong credential."""


def digest(secret: str) -> str:
    """The SHA-256 hex digest a table keeps instead of the secret."""
    return hashlib.sha256(secret.encode(errors="surrogateescape")).hexdigest()


class PasswordTable:
    """``Authenticator`` over ``{user: (sha256 hex of its password, role)}`` and bearer tokens.

    A bearer token is looked up among ``tokens`` (``{sha256 hex of the token: (name, role)}``). ``load`` re-reads the
    table (e.g. when new instances were minted) before each check when given.
    """

    def __init__(self, users: Mapping[str, tuple[str, Role]] | None = None,
                 tokens: Mapping[str, tuple[str, Role]] | None = None,
                 load: Callable[[], tuple[Mapping[str, tuple[str, Role]], Mapping[str, tuple[str, Role]]]]
                 | None = None, scopes: Callable[[], Mapping[str, str]] | None = None) -> None:
        """A fixed table, or one ``load`` supplies; ``scopes``: user -> the partition or region it may read."""
        self._users, self._tokens, self._load = dict(users or {}), dict(tokens or {}), load
        self._scopes = scopes

    def authenticate(self, authorization: str | None) -> Principal | None:
        """Basic or Bearer; None for anything else."""
        if self._load is not None:
            users, tokens = self._load()
            self._users, self._tokens = dict(users), dict(tokens)
        scheme, _, value = (authorization or "").strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            offered = digest(value.strip())
            for known, (name, role) in self._tokens.items():
                if hmac.compare_digest(offered, known):
                    return Principal(name, role)
            return None
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        entry = self._users.get(user)
        expected = entry[0] if entry is not None else _DUMMY
        if not sep or not hmac.compare_digest(digest(password), expected) or entry is None:  # same work either way
            return None
        return Principal(user, entry[1], (self._scopes() if self._scopes else {}).get(user))


def allowed(principal: Principal, kind: str, partition: str | None = None) -> bool:
    """Whether ``principal`` may read a ``kind`` bundle of ``partition``.

    Agents read agent bundles — a scoped agent only its own partition's (or region's); controllers read every
    bundle and the metrics (``kind == "metrics"``).
    """
    if principal.role == "controller":
        return True
    if kind != "agent":
        return False
    scope = principal.scope
    return scope is None or partition is None or partition == scope or partition.startswith(f"{scope}/")
