"""The one place a request passes before the engine sees it: who is asking, and may they ask this.

:meth:`Gate.admit` authenticates (:mod:`.auth`), parses the request (:func:`.protocol.parse_request`), binds a
``session_id`` to the user who opened it, and decides with ClickHouse's access model (:mod:`.guard`, the
policy of ``users.xml``) on what chDB's own parser says the statement does (:mod:`.statements`: ``EXPLAIN AST``
and ``formatQuerySingleLine`` on a separate connection — nothing executed). A refused request raises
the ClickHouse error with nothing executed, and one log line on the ``sco.clickhouse.security`` logger names
the stable code (``CHS001``…, :data:`.errors.REFUSAL_CODES`), the user, the statement class, the object and the
reason. A ``readonly`` user's requests also run with chDB's own ``readonly=1`` (no write or setting, whatever the
gate missed); the settings the profile lets a reader change (``changeable_in_readonly``, checked by the gate)
are set on the connection first, so chDB sees them unchanged by the statement.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .access import OVERLAY_DATABASE, Access, names_a_path, overlay_source
from .auth import NO_AUTH_USER, User, Users, authenticate, load_users_file
from .errors import AuthConfigError
from .guard import Refusal, check_settings, decide
from .policy import Policy, load_policy
from .protocol import DEFAULT_MAX_BODY, ClickHouseError, Request, parse_request
from .statements import analyse
from .values import literal_rows, rows_as_select, values_rows

__all__ = ["NO_AUTH_USER", "AstReader", "Gate", "Parsed", "make_gate"]

log = logging.getLogger("sco.clickhouse.security")
_MAX_OWNERS = 4096
_MAX_QUERY_SIZE = 262144  # ClickHouse's max_query_size default: EXPLAIN AST of more fails without a verdict


@dataclass(frozen=True)
class Parsed:
    """chDB's parse of one statement: its ``EXPLAIN AST`` and its canonical text."""

    ast: str
    canonical: str


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class AstReader:
    """chDB's parser on a connection of its own: ``EXPLAIN AST``, ``formatQuerySingleLine`` and the table
    lookup the overlay database needs — none of them runs the statement. (Not ``readonly``: ``EXPLAIN AST``
    applies a ``SETTINGS`` clause, and a readonly connection would answer a setting before the policy could.)"""

    def __init__(self, path: str) -> None:
        from chdb.state import sqlitelike

        self._handle = sqlitelike.connect(path)
        self._raw: Any = self._handle._conn
        self._lock = threading.Lock()

    def _text(self, sql: str, params: Mapping[str, str] | None = None) -> str:
        return bytes(self._raw.query(sql, "TSVRaw", params=dict(params or {})).bytes()).decode(errors="replace")

    def parse(self, sql: str, params: Mapping[str, str] | None = None) -> Parsed:
        """The parse of ``sql`` (``params``: its ``{name:Type}`` values), or the engine's own error for it."""
        with self._lock:
            try:
                info = self._raw.classify_query(sql)
                if int(info["statement_count"]) != 1:
                    raise ClickHouseError.make(62, "SYNTAX_ERROR", "Multi-statements are not allowed: send one "
                                               f"statement per request ({info['statement_count']} found)")
                return Parsed(self._text("EXPLAIN AST " + sql, params), self._text(
                    f"SELECT formatQuerySingleLine({_literal(sql)})").strip())
            except ClickHouseError:
                raise
            except Exception as exc:
                raise ClickHouseError.from_engine(exc) from exc

    def __call__(self, sql: str) -> str | None:
        """The AST as text, or None when chDB cannot parse ``sql`` as one statement."""
        try:
            return self.parse(sql).ast
        except ClickHouseError:
            return None

    def exists(self, database: str, table: str) -> bool:
        """True when ``database.table`` exists, so a name in the overlay database can be told from a path."""
        with self._lock:
            rows = self._raw.query("SELECT count() FROM system.tables WHERE database = {d:String} AND name = "
                                   "{t:String}", "TSVRaw", params={"d": database, "t": table})
            return bytes(rows.bytes()).strip() != b"0"

    def close(self) -> None:
        """Close the parser's own connection."""
        self._handle.close()


SessionScope = Callable[[str], tuple[str | None, frozenset[str]]]


class Gate:
    """Authentication, session ownership and the access decision, in front of the engine."""

    def __init__(self, users: Users | None, explain: AstReader, live_sessions: Callable[[], list[str]] | None = None,
                 policy: Policy | None = None, session_scope: SessionScope | None = None) -> None:
        self.users = users
        self.policy = policy or load_policy()
        self._explain = explain
        self._live_sessions = live_sessions or list
        self._session_scope = session_scope or (lambda sid: (None, frozenset()))
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def authenticate(self, params: Mapping[str, bytes], headers: Mapping[str, str]) -> User:
        """The user the request's credentials prove (:func:`.auth.authenticate`)."""
        return authenticate(self.users, params, headers)

    def admit(self, params: Mapping[str, bytes], headers: Mapping[str, str], body: bytes | IO[bytes],
              max_body: int = DEFAULT_MAX_BODY) -> Request:
        """The engine's :class:`Request`, or the ClickHouse error that refuses it (nothing run)."""
        user = self.authenticate(params, headers)
        request = parse_request(params, headers, body, max_body)
        refusal = self._session(request, user)
        access: Access | None = None
        if refusal is None:
            refusal, access = self._statement(request, user)
        if refusal is not None:
            log.warning("%s user=%s class=%s object=%s refused: %s", refusal.log_code, user.name,
                        refusal.kind or "-", (refusal.object or "-")[:120], refusal.message[:300])
            raise refusal.error()
        if user.readonly:  # chDB's own readonly=1 too; what the profile lets a reader change is set before it
            constraints = self.policy.for_profile(user.profile).profile.constraints
            lifted = {name: value.strip("'") for name, value in (access.settings if access else [])
                      if name in constraints and constraints[name].changeable_in_readonly}
            request.settings = {**request.settings, **lifted, "readonly": "1"}
        return request

    def _session(self, request: Request, user: User) -> Refusal | None:
        if request.session_id is None:
            return None
        with self._lock:
            owner = self._owners.get(request.session_id)
            if owner is not None and owner != user.name and request.session_id in self._live_sessions():
                return Refusal(497, "ACCESS_DENIED", "CHS005", f"{user.name}: Not enough privileges: session "
                               f"{request.session_id[:64]} belongs to another user; use a session_id of your own",
                               "SESSION", request.session_id[:64])
            if len(self._owners) >= _MAX_OWNERS and owner is None:
                live = set(self._live_sessions())
                self._owners = {sid: name for sid, name in self._owners.items() if sid in live}
            self._owners[request.session_id] = user.name
        return None

    def access(self, request: Request, sql: str) -> Access:
        """What ``sql`` of ``request`` reads, writes and sets (the engine's error when it cannot be parsed)."""
        database, temporary = self._session_scope(request.session_id) if request.session_id else (None, frozenset())
        current = request.database or database or OVERLAY_DATABASE
        parsed = self._explain.parse(sql, {k: v.decode(errors="replace") for k, v in request.params.items()})
        access = analyse(parsed.ast, parsed.canonical, current)
        local = temporary | {t.name for t in request.external}
        targets = [n.table for n in access.needs if n.database == OVERLAY_DATABASE and n.table is not None]
        for name in dict.fromkeys([*access.overlay, *targets]):  # read or written: a path unless a table
            if name not in local and names_a_path(name) and not self._explain.exists(OVERLAY_DATABASE, name):
                access.need(overlay_source(name), None, None, f"{name!r} (no table of the database "
                            f"{OVERLAY_DATABASE}: chDB reads it as a path)")
        return access

    def _statement(self, request: Request, user: User) -> tuple[Refusal | None, Access | None]:
        policy = self.policy.for_profile(user.profile)
        refusal = check_settings(request.settings.items(), user.name, policy)
        if refusal is not None:
            return refusal, None
        rows: str | None = None
        if request.insert is not None:
            sql = f"{request.insert[0]} FORMAT {request.insert[1]}"
            if request.insert[1].lower() == "values":  # the Values format evaluates expressions: rows checked
                rows = self._values_data(request)
        else:
            sql = request.query.decode(errors="replace")
            found = values_rows(sql) if "values" in sql[:4096].lower() else None
            if found is not None:
                sql, rows = sql[: found[0]], found[1]
        if len(sql) > _MAX_QUERY_SIZE:
            raise ClickHouseError.make(62, "SYNTAX_ERROR", f"Max query size exceeded ({len(sql)} bytes over "
                                       f"{_MAX_QUERY_SIZE}): send the rows as data (INSERT … FORMAT)")
        access = self.access(request, sql)
        if rows is not None and not literal_rows(rows):
            self._check_rows(request, rows, access)
        return decide(user.name, policy, access), access

    def _values_data(self, request: Request) -> str:
        if not isinstance(request.data, bytes):  # spooled past 8 MiB: only row formats are taken that large
            raise ClickHouseError.make(62, "SYNTAX_ERROR", "An INSERT … FORMAT Values over 8 MiB is refused: "
                                       "send large inserts in a row format (CSV, TSV, JSONEachRow, Native …)")
        return request.data.decode(errors="replace")

    def _check_rows(self, request: Request, rows: str, access: Access) -> None:
        """Rows that are more than literals: parsed by chDB as a SELECT's expressions, their needs added."""
        if len(rows) > _MAX_QUERY_SIZE:
            access.problem = f"VALUES rows of {len(rows)} bytes that are not literals only"
            return
        try:
            inner = self.access(request, rows_as_select(rows))
        except ClickHouseError:
            access.problem = "VALUES rows that chDB cannot read as expressions"
            return
        access.needs += inner.needs
        access.problem = access.problem or inner.problem


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
    return Gate(users, AstReader(str(path)), engine.sessions, load_policy(),
                getattr(engine, "session_scope", None))
