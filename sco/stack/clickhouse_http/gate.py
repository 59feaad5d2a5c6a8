"""The one place a request passes before the engine sees it: who is asking, and may they ask this.

:meth:`Gate.admit` authenticates (:mod:`.auth`), parses the request (:func:`.protocol.parse_request`), binds a
``session_id`` to the user who opened it, and reads the statement twice (:mod:`.guard`: the tokens, then chDB's
own ``EXPLAIN AST`` on a separate readonly connection). A refused request raises the ClickHouse error with
nothing executed, and one log line on the ``sco.clickhouse.security`` logger carries its stable code
(``CHS001``…, :data:`.errors.REFUSAL_CODES`) and the user name. A ``readonly`` user's requests also run with
chDB's own ``readonly=1``, so the engine refuses what the guard might have missed.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .auth import Credentials, User, Users, credentials, load_users_file
from .errors import AuthConfigError
from .guard import Refusal, check_ast, check_settings, check_statement
from .protocol import DEFAULT_MAX_BODY, ClickHouseError, Request, parse_request

__all__ = ["NO_AUTH_USER", "AstReader", "Gate", "make_gate"]

log = logging.getLogger("sco.clickhouse.security")
NO_AUTH_USER = User("default", "", "default")  # every client under --no-auth (tests and development only)
_MAX_OWNERS = 4096
_MAX_QUERY_SIZE = 262144  # ClickHouse's max_query_size default: EXPLAIN AST of more fails without a verdict


class AstReader:
    """``EXPLAIN AST`` on a chDB connection of its own (``readonly=1``): chDB's parse, nothing executed."""

    def __init__(self, path: str) -> None:
        from chdb.state import sqlitelike

        self._handle = sqlitelike.connect(path)
        self._raw: Any = self._handle._conn
        self._raw.query("SET readonly = 1", "TabSeparated")
        self._lock = threading.Lock()

    def __call__(self, sql: str) -> str | None:
        """The AST as text, or None when chDB cannot parse ``sql`` as one statement (the engine refuses it then)."""
        with self._lock:
            try:
                info = self._raw.classify_query(sql)
                if int(info["statement_count"]) != 1:
                    return None
                return bytes(self._raw.query("EXPLAIN AST " + sql, "TabSeparated").bytes()).decode(errors="replace")
            except Exception:  # a syntax error: the engine answers it with its own message
                return None

    def close(self) -> None:
        self._handle.close()


class Gate:
    """Authentication, session ownership and the statement guard, in front of the engine."""

    def __init__(self, users: Users | None, explain: Callable[[str], str | None] | None = None,
                 live_sessions: Callable[[], list[str]] | None = None) -> None:
        self.users = users
        self._explain = explain
        self._live_sessions = live_sessions or list
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def authenticate(self, params: Mapping[str, bytes], headers: Mapping[str, str]) -> User:
        if self.users is None:
            return NO_AUTH_USER
        given = Credentials("default", "", "none")
        try:
            given = credentials(params, headers)
            return self.users.authenticate(given)
        except ClickHouseError:
            log.warning("CHS001 user=%s refused: authentication failed (credentials from %s)", given.user[:64],
                        given.how)
            raise

    def admit(self, params: Mapping[str, bytes], headers: Mapping[str, str], body: bytes,
              max_body: int = DEFAULT_MAX_BODY) -> Request:
        """The engine's :class:`Request`, or the ClickHouse error that refuses it (nothing run)."""
        user = self.authenticate(params, headers)
        request = parse_request(params, headers, body, max_body)
        refusal = self._session(request, user) or self._statement(request, user)
        if refusal is not None:
            log.warning("%s user=%s refused: %s", refusal.log_code, user.name, refusal.message[:300])
            raise refusal.error()
        if user.readonly:
            request.settings = {**request.settings, "readonly": "1"}
        return request

    def _session(self, request: Request, user: User) -> Refusal | None:
        if request.session_id is None:
            return None
        with self._lock:
            owner = self._owners.get(request.session_id)
            if owner is not None and owner != user.name and request.session_id in self._live_sessions():
                return Refusal(497, "ACCESS_DENIED", "CHS005", f"{user.name}: Not enough privileges: session "
                               f"{request.session_id[:64]} belongs to another user; use a session_id of your own")
            if len(self._owners) >= _MAX_OWNERS and owner is None:
                live = set(self._live_sessions())
                self._owners = {sid: name for sid, name in self._owners.items() if sid in live}
            self._owners[request.session_id] = user.name
        return None

    def _statement(self, request: Request, user: User) -> Refusal | None:
        refusal = check_settings(request.settings, user.name, user.readonly)
        if refusal is not None:
            return refusal
        if request.insert is not None:
            sql = f"{request.insert[0]} FORMAT {request.insert[1]}"
        else:
            sql = request.query.decode(errors="replace")
        refusal = check_statement(sql, user.name, user.readonly)
        if refusal is not None or self._explain is None:
            return refusal
        if len(sql) > _MAX_QUERY_SIZE:  # chDB parses no more (its own limit): an INSERT's VALUES are data to it
            return None
        ast = self._explain(sql)
        return check_ast(ast, user.name) if ast is not None else None


def make_gate(engine: Any, users_file: str | Path | None, no_auth: bool) -> Gate:
    """The server's gate: the users file's users, or — only with ``no_auth`` — everyone as ``default``."""
    if users_file is not None:
        users: Users | None = load_users_file(users_file)
    elif no_auth:
        users = None
        log.warning("CHS000 --no-auth: the ClickHouse front end accepts EVERY local client as 'default' without a "
                    "password (tests and development only; statements reaching outside are still refused)")
        print("WARNING: sco clickhouse serve --no-auth: no authentication (tests and development only)",
              file=sys.stderr, flush=True)
    else:
        raise AuthConfigError()
    path = getattr(engine, "path", None) or getattr(engine, "_path", None) or ":memory:"
    return Gate(users, AstReader(str(path)), engine.sessions)
