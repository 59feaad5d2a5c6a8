"""The one chDB engine behind the front end, shared by every HTTP client.

chDB runs one query at a time per connection and one process per data directory, so every request takes
the engine lock: concurrent clients are served one query after another (serialised onto the engine).
Per-request state that a ClickHouse server keeps per query or per session — the current database,
URL settings, ``SET`` settings of a ``session_id`` — is switched onto the shared connection before each
query and only changed when it differs from what the previous query left behind.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .protocol import ClickHouseError, Request

__all__ = ["ChdbEngine", "Result"]

_FORMAT = re.compile(r"\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$", re.I)
_SET = re.compile(r"^\s*SET\s+(?!ROLE\b)", re.I)
_USE = re.compile(r"^\s*USE\s+`?([^`\s;]+)`?\s*;?\s*$", re.I)
_CHUNK = 4 << 20


@dataclass
class Result:
    body: bytes
    fmt: str
    summary: dict[str, str]


@dataclass
class _Session:
    database: str | None = None
    settings: dict[str, str] = field(default_factory=dict)
    last_used: float = 0.0


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class ChdbEngine:
    """Owns the chDB connection (``path`` None = in memory) and runs :class:`Request` objects on it."""

    def __init__(self, path: str | None, session_ttl_s: float = 3600.0) -> None:
        from chdb.state import sqlitelike

        self._connection = sqlitelike.connect(path or ":memory:")  # keep it: its __del__ closes the engine
        self._conn: Any = self._connection._conn
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._session_ttl_s = session_ttl_s
        self._baseline = self._changed_settings()
        self._applied: dict[str, str] = dict(self._baseline)
        self._database = "default"
        self.version = self._run("SELECT version()").strip()
        self.timezone = self._run("SELECT timezone()").strip() or "UTC"

    # -- the raw connection -------------------------------------------------------------------------------
    def _run(self, sql: str, fmt: str = "TabSeparated", params: dict[str, str] | None = None) -> str:
        return bytes(self._conn.query(sql, fmt, params=params or {}).bytes()).decode()

    def _changed_settings(self) -> dict[str, str]:
        # ``database`` is a setting too, but it is switched with USE and tracked separately.
        rows = self._run("SELECT name, value FROM system.settings WHERE changed AND name != 'database'")
        return dict(line.split("\t", 1) for line in rows.splitlines() if "\t" in line)

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    # -- per-request state ----------------------------------------------------------------------------------
    def _session(self, session_id: str | None, now: float) -> _Session:
        if session_id is None:
            return _Session()
        for sid in [s for s, v in self._sessions.items() if now - v.last_used > self._session_ttl_s]:
            del self._sessions[sid]
        session = self._sessions.setdefault(session_id, _Session())
        session.last_used = now
        return session

    def _switch(self, database: str, settings: dict[str, str]) -> None:
        desired = {**self._baseline, **settings}
        changes = [f"{k} = {_literal(v)}" for k, v in desired.items() if self._applied.get(k) != v]
        changes += [f"{k} = DEFAULT" for k in self._applied if k not in desired]
        if changes:
            try:
                self._run("SET " + ", ".join(changes))
            except BaseException:
                self._applied = self._changed_settings()  # partly applied: read back what holds
                raise
            self._applied = desired
        if database != self._database:
            self._run(f"USE `{database}`")
            self._database = database

    # -- execution --------------------------------------------------------------------------------------------
    def execute(self, request: Request) -> Result:
        started = time.monotonic()
        with self._lock:
            session = self._session(request.session_id, time.time())
            database = request.database or session.database or "default"
            try:
                self._switch(database, {**session.settings, **request.settings})
                if request.insert is not None:
                    return self._insert(request, started)
                sql = request.query.decode()
                match = _FORMAT.search(sql)
                fmt = match.group(1) if match else request.default_format
                result = self._conn.query(sql, request.default_format, params=request.params)
                if _SET.match(sql) and request.session_id is not None:
                    now = self._changed_settings()
                    self._applied = now
                    session.settings = {k: v for k, v in now.items()
                                        if self._baseline.get(k) != v and k not in request.settings}
                use = _USE.match(sql)
                if use is not None:
                    self._database = use.group(1)
                    if request.session_id is not None:
                        session.database = use.group(1)
            except ClickHouseError:
                raise
            except Exception as exc:
                raise ClickHouseError.from_engine(exc) from exc
        body = bytes(result.bytes())
        summary = {"read_rows": str(result.rows_read()), "read_bytes": str(result.bytes_read()),
                   "written_rows": str(result.rows_written()), "written_bytes": str(result.bytes_written()),
                   "total_rows_to_read": str(result.rows_read()), "result_rows": "0",
                   "result_bytes": str(len(body)), "elapsed_ns": str(int((time.monotonic() - started) * 1e9))}
        return Result(body, fmt, summary)

    def _insert(self, request: Request, started: float) -> Result:
        assert request.insert is not None
        head, fmt = request.insert
        handle = self._conn.send_insert(head, fmt)
        try:
            view = memoryview(request.data)
            for offset in range(0, len(view), _CHUNK):
                self._conn.insert_append(handle, bytes(view[offset: offset + _CHUNK]))
            done = self._conn.insert_done(handle)
        except BaseException:
            self._conn.insert_cancel(handle)
            raise
        summary = {"read_rows": "0", "read_bytes": "0", "written_rows": str(done.rows_written()),
                   "written_bytes": str(done.bytes_written()), "total_rows_to_read": "0", "result_rows": "0",
                   "result_bytes": "0", "elapsed_ns": str(int((time.monotonic() - started) * 1e9))}
        return Result(b"", fmt, summary)
