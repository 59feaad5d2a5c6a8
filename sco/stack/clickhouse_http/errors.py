"""Errors of the front end's security layer, with stable codes.

- ``UsersFileError`` (``CHA001``–``CHA004``): the users file (``--users-file``) cannot be used; the front end
  refuses to start, naming the file, the field and the next step.
- ``AuthConfigError`` (``CHA005``): neither a users file nor ``--no-auth`` was given.

What a client sees when it is refused is a :class:`~sco.errors.ClickHouseError` in ClickHouse's own shape;
the log line that goes with it carries one of the ``REFUSAL_CODES`` and the user name.
"""

from __future__ import annotations

__all__ = ["REFUSAL_CODES", "AuthConfigError", "UsersFileError"]

# Stable codes of the log lines written when a request is refused (``sco.clickhouse.security`` logger).
REFUSAL_CODES = {
    "CHS000": "started with --no-auth: every local client is 'default' without a password (tests/dev only)",
    "CHS001": "authentication failed (wrong or missing user/password)",
    "CHS002": "a statement, table function, engine or setting that reaches outside the database",
    "CHS003": "a write, DDL or SET by a readonly user",
    "CHS004": "a setting that is fixed by the profile (readonly, limits, paths)",
    "CHS005": "a session of another user",
    "CHS006": "access management (users, roles, grants, profiles)",
}


class UsersFileError(ValueError):
    """The users file is missing, readable by others, or not the documented shape."""

    def __init__(self, code: str, path: str, field: str, problem: str, next_step: str) -> None:
        super().__init__(f"{code} users file {path}: {field}: {problem}; {next_step}")
        self.code, self.path, self.field = code, path, field


class AuthConfigError(ValueError):
    """The front end was asked to start without a users file and without ``--no-auth``."""

    code = "CHA005"

    def __init__(self) -> None:
        super().__init__("CHA005 the ClickHouse front end needs --users-file PATH (JSON, mode 0600: "
                         '{"users": [{"name": ..., "password_sha256_hex": ..., "profile": "default"|"readonly"}]}); '
                         "--no-auth (tests and development only) serves every local user without a password")
