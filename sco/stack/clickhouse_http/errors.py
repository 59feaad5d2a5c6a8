"""Errors of the front end's security layer, with stable codes.

- ``UsersFileError`` (``CHA001``–``CHA004``): the users file (``--users-file``) cannot be used; the front end
  refuses to start, naming the file, the field and the next step.
- ``AuthConfigError`` (``CHA005``): neither a users file nor ``--no-auth`` was given.

What a client sees when it is refused is a :class:`~sco.errors.ClickHouseError` in ClickHouse's own shape;
the log line that goes with it carries one of the ``REFUSAL_CODES`` and the user name.
"""

from __future__ import annotations

from sco.errors import AuthConfigError, UsersFileError  # defined with the package's other errors

__all__ = ["REFUSAL_CODES", "AuthConfigError", "UsersFileError"]

# Stable codes of the log lines written when a request is refused (``sco.clickhouse.security`` logger).
REFUSAL_CODES = {
    "CHS000": "started with --no-auth: every local client is 'default' without a password (tests/dev only)",
    "CHS001": "authentication failed (wrong or missing user/password)",
    "CHS002": "a source privilege (FILE, URL, S3, REMOTE …): a path, table function, engine or dictionary source "
              "that reaches outside the database",
    "CHS003": "a write, DDL or SET by a readonly user",
    "CHS004": "a setting outside the profile's constraints (const, min, max)",
    "CHS005": "a session of another user",
    "CHS006": "access management (users, roles, grants, profiles)",
    "CHS007": "a privilege the user's grants in users.xml do not hold on that object",
    "CHS008": "a statement the engine's parse could not place (unknown class, engine, source): refused",
    "CHS009": "a connection cut: its request line and headers, or its body, missed their total deadline",
    "CHS010": "a connection cut: more connections than the cap were waiting to authenticate (the oldest goes)",
}
