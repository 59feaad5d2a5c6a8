"""Who is asking: the users file and the credentials a ClickHouse server accepts over HTTP.

The users file (``--users-file PATH``, JSON, mode 0600, written by ``sco up``)::

    {"users": [{"name": "ingest", "password_sha256_hex": "<sha256 hex of the password>", "profile": "default"}]}

Profiles: ``default`` reads and writes inside the database; ``readonly`` has ClickHouse's ``readonly=1``
(SELECT, SHOW, DESCRIBE, EXISTS, EXPLAIN only; no SET). Credentials are taken the ways a ClickHouse server
takes them (https://clickhouse.com/docs/interfaces/http): HTTP Basic, the ``X-ClickHouse-User`` /
``X-ClickHouse-Key`` headers, or the ``user`` / ``password`` URL parameters — one way per request; none means
the user ``default`` with an empty password. A wrong or missing password is ``AUTHENTICATION_FAILED`` (516,
HTTP 401); the comparison takes the same time whether the user exists or not.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import UsersFileError
from .protocol import ClickHouseError

__all__ = ["NO_AUTH_USER", "PROFILES", "Credentials", "User", "Users", "authenticate", "credentials", "hash_password",
           "load_users_file", "write_users_file"]

log = logging.getLogger("sco.clickhouse.security")

Profile = Literal["default", "readonly"]
PROFILES: tuple[Profile, ...] = ("default", "readonly")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_HEX = re.compile(r"[0-9a-f]{64}")
_FIELDS = {"name", "password_sha256_hex", "profile"}
_DUMMY = hashlib.sha256(b"no such user").hexdigest()


@dataclass(frozen=True)
class User:
    name: str
    password_sha256_hex: str
    profile: Profile

    @property
    def readonly(self) -> bool:
        """True for a user of the ``readonly`` profile, whose statements may only read."""
        return self.profile == "readonly"


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str
    how: str  # "basic", "headers", "params" or "none": for the log line


NO_AUTH_USER = User("default", "", "default")  # every client under --no-auth (tests and development only)


def hash_password(password: str) -> str:
    """The SHA-256 hex digest of ``password``, as the users file records it."""
    return hashlib.sha256(password.encode()).hexdigest()


def _fail(path: Path, field: str, problem: str, code: str = "CHA003") -> UsersFileError:
    return UsersFileError(code, str(path), field, problem, "write it as "
                          '{"users": [{"name": "NAME", "password_sha256_hex": "<64 hex>", '
                          '"profile": "default"|"readonly"}]} (sco up generates it)')


def _user(path: Path, index: int, entry: Any) -> User:
    where = f"users[{index}]"
    if not isinstance(entry, dict):
        raise _fail(path, where, f"is {type(entry).__name__}, not an object")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise _fail(path, f"{where}.{unknown[0]}", "is not a known field (name, password_sha256_hex, profile)")
    name, digest, profile = entry.get("name"), entry.get("password_sha256_hex"), entry.get("profile", "default")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail(path, f"{where}.name", "must be 1-64 characters of letters, digits, _ . - "
                    "(not starting with . or -)")
    if not isinstance(digest, str) or not _HEX.fullmatch(digest.lower()):
        raise _fail(path, f"{where}.password_sha256_hex", "must be the 64 hex digits of sha256(password)")
    if profile not in PROFILES:
        raise _fail(path, f"{where}.profile", f"{str(profile)[:20]!r} is not one of default, readonly")
    return User(name, digest.lower(), profile)


def load_users_file(path: Path | str) -> Users:
    """Read and check the users file; refuse one that others can read or that has the wrong shape."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise UsersFileError("CHA001", str(path), "path", f"cannot be read ({exc.strerror})",
                             "give the file sco up wrote (SCO_HOME/clickhouse/users.json)") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsersFileError("CHA001", str(path), "path", "is not a regular file", "give the users JSON file")
    if info.st_mode & 0o077:
        raise UsersFileError("CHA002", str(path), "mode", f"is {stat.S_IMODE(info.st_mode):04o}: readable or "
                             "writable by group/others", f"chmod 600 {path}")
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, "(file)", f"is not JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) != {"users"}:
        raise _fail(path, "(top level)", "must be an object with exactly one field, users")
    entries = data["users"]
    if not isinstance(entries, list) or not entries:
        raise _fail(path, "users", "must be a non-empty list")
    users = [_user(path, i, entry) for i, entry in enumerate(entries)]
    names = [u.name for u in users]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise _fail(path, f"users[{i}].name", f"{name!r} appears twice", "CHA004")
    return Users({u.name: u for u in users})


def write_users_file(path: Path | str, users: Mapping[str, tuple[str, Profile]]) -> Path:
    """Write ``{name: (password, profile)}`` as a users file, mode 0600 from the start (tests, ``sco up``)."""
    path = Path(path)
    text = json.dumps({"users": [{"name": name, "password_sha256_hex": hash_password(password), "profile": profile}
                                 for name, (password, profile) in users.items()]}, indent=2) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o600)  # an existing tmp file keeps its mode through O_CREAT
    tmp.replace(path)
    return path


def _denied(user: str, reason: str = "password is incorrect, or there is no user with such name") -> ClickHouseError:
    return ClickHouseError.make(516, "AUTHENTICATION_FAILED", f"{user}: Authentication failed: {reason}")


def credentials(params: Mapping[str, bytes], headers: Mapping[str, str]) -> Credentials:
    """The user and password of a request (``headers`` with lower-case names), the ways ClickHouse reads them."""
    basic = headers.get("authorization", "")
    header_user, header_key = headers.get("x-clickhouse-user"), headers.get("x-clickhouse-key")
    param_user, param_password = params.get("user"), params.get("password")
    ways = [basic != "", header_user is not None or header_key is not None,
            param_user is not None or param_password is not None]
    if sum(ways) > 1:
        raise _denied("default", "Invalid authentication: it is not allowed to use more than one of the "
                      "Authorization header, the X-ClickHouse-User/Key headers and the user/password parameters")
    if basic:
        scheme, _, token = basic.partition(" ")
        if scheme.lower() != "basic":
            raise _denied("default", f"Invalid authentication: unsupported Authorization scheme {scheme[:20]!r}")
        try:
            user, _, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise _denied("default", "Invalid authentication: malformed Basic credentials") from None
        return Credentials(user or "default", password, "basic")
    if ways[1]:
        return Credentials(header_user or "default", header_key or "", "headers")
    if ways[2]:
        return Credentials((param_user or b"").decode(errors="replace") or "default",
                           (param_password or b"").decode(errors="replace"), "params")
    return Credentials("default", "", "none")


class Users:
    """The known users; :meth:`authenticate` answers with the user or ``AUTHENTICATION_FAILED``."""

    def __init__(self, users: Mapping[str, User]) -> None:
        self._users = dict(users)

    def __len__(self) -> int:
        return len(self._users)

    def get(self, name: str) -> User | None:
        """The user called ``name``; None when there is none."""
        return self._users.get(name)

    def authenticate(self, given: Credentials) -> User:
        """The user the credentials prove; raises ``AUTHENTICATION_FAILED`` otherwise, after the same work whether or
        not the user exists (no timing tells which)."""
        user = self._users.get(given.user)
        offered = hashlib.sha256(given.password.encode(errors="surrogateescape")).hexdigest()
        expected = user.password_sha256_hex if user is not None else _DUMMY
        if not hmac.compare_digest(offered, expected) or user is None:  # same work for unknown users
            raise _denied(given.user[:64])
        return user


def authenticate(users: Users | None, params: Mapping[str, bytes], headers: Mapping[str, str]) -> User:
    """The user a request's credentials prove (``headers`` with lower-case names; everyone is the no-auth user when
    ``users`` is None); a failure is logged (``CHS001``) and raised as ClickHouse's ``AUTHENTICATION_FAILED``."""
    if users is None:
        return NO_AUTH_USER
    given = Credentials("default", "", "none")
    try:
        given = credentials(params, headers)
        return users.authenticate(given)
    except ClickHouseError:
        log.warning("CHS001 user=%s refused: authentication failed (credentials from %s)", given.user[:64], given.how)
        raise
