"""The chDB engine behind the front end: one chDB connection per request or per session, never shared.

chDB allows one process per data directory but any number of connections inside it, each with its own
query context (settings, current database, temporary tables) — the same split a ClickHouse server makes
between its sessions. So:

- a request without ``session_id`` runs on a clean connection from a small pool; anything that could leave
  state behind (URL settings, ``SET``, ``USE``, DDL, a failed query whose partial output chDB keeps for the
  next query) closes that connection afterwards instead of returning it, so the next request — from any
  client — sees nothing of it;
- a ``session_id`` owns its connection (its settings and temporary tables), is locked while one request
  runs on it (a second gets ``SESSION_IS_LOCKED``), and is closed ``session_timeout`` seconds after its
  last use; after a failed query its leftover output is drained before the next request;
- queries on different connections run concurrently, at most ``max_queries`` at once; a request that
  finds every slot taken for ``queue_timeout_s`` gets ``TOO_MANY_SIMULTANEOUS_QUERIES`` (HTTP 503).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from .external import drop_external, load_external
from .native import MIN_REVISION_WITH_TIME_ZONE, for_revision, zoned_columns
from .protocol import ClickHouseError, Request
from .running import STREAMABLE_FORMATS, Execution, ProgressCallback, kill_statement

__all__ = ["ChdbEngine", "Result"]

_FORMAT = re.compile(rb"\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$", re.I)
_ANY_FORMAT = re.compile(rb"\bFORMAT\b", re.I)
_USE = re.compile(rb"^\s*USE\s+`?([^`\s;]+)`?\s*;?\s*$", re.I)
_CHUNK = 4 << 20
_POOL_SIZE = 8
_READ_ONLY = 0  # chDB's query_class.READ_ONLY: the statement has a result set
_CONTROL = 3  # SET, USE, SYSTEM …: changes the connection's context


@dataclass
class Result:
    body: bytes
    fmt: str
    summary: dict[str, str]
    has_result: bool = True  # False for DDL, SET, INSERT: no ``X-ClickHouse-Format`` then


class _Conn:
    """One chDB connection and the context it holds (current database, settings beyond its defaults)."""

    def __init__(self, path: str) -> None:
        from chdb.state import sqlitelike

        self.handle = sqlitelike.connect(path)  # keep it: its __del__ closes the connection
        self.raw: Any = self.handle._conn
        self.database = "default"
        self.applied: dict[str, str] = {}
        self.dirty = False  # holds state a later request must not see: never returned to the pool

    def run(self, sql: str | bytes, fmt: str = "TabSeparated", params: dict[str, str] | None = None) -> Any:
        return self.raw.query(sql, fmt, params=params or {})

    def changed_settings(self) -> dict[str, str]:
        rows = bytes(self.run("SELECT name, value FROM system.settings WHERE changed AND name != 'database'"
                              ).bytes()).decode()
        return dict(line.split("\t", 1) for line in rows.splitlines() if "\t" in line)

    def drain(self) -> None:
        """Throw away the output chDB keeps from a query that failed part-way (it prefixes the next one)."""
        with contextlib.suppress(Exception):  # nothing to report: the drain itself only has to run
            self.run("SELECT 1").bytes()

    def close(self) -> None:
        self.handle.close()


@dataclass
class _Session:
    conn: _Conn
    timeout_s: float
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    settings: dict[str, str] = field(default_factory=dict)
    database: str | None = None


def _chunks(data: bytes | IO[bytes]) -> Iterator[bytes]:
    """An insert's rows in pieces of ``_CHUNK`` bytes (from memory, or from a spooled body's file)."""
    if isinstance(data, bytes):
        view = memoryview(data)
        for offset in range(0, len(view), _CHUNK):
            yield bytes(view[offset: offset + _CHUNK])
        return
    while chunk := data.read(_CHUNK):
        yield chunk


def _revision(request: Request) -> int:
    value = request.transport.get("client_protocol_version", "0")
    return int(value) if value.isdigit() else 0


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _bytes_literal(value: bytes) -> bytes:
    return b"'" + value.replace(b"\\", b"\\\\").replace(b"'", b"\\'") + b"'"


class ChdbEngine:
    """Runs :class:`Request` objects on chDB (``path`` None = in memory), isolated per request or session."""

    def __init__(self, path: str | None, max_queries: int = 16, queue_timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path or ":memory:"
        self._keeper = _Conn(self._path)  # holds the engine open while request connections come and go
        self._clock = clock
        self._lock = threading.Lock()  # guards the pool and the session table, never held during a query
        self._pool: list[_Conn] = []
        self._sessions: dict[str, _Session] = {}
        self._slots = threading.BoundedSemaphore(max_queries)
        self._queue_timeout_s = queue_timeout_s
        self._killer: _Conn | None = None  # runs KILL QUERY for a client that went away
        self._kill_lock = threading.Lock()
        self.running = 0
        self.version = bytes(self._keeper.run("SELECT version()").bytes()).decode().strip()
        self.timezone = bytes(self._keeper.run("SELECT timezone()").bytes()).decode().strip() or "UTC"

    def close(self) -> None:
        """Close every connection the engine holds, pooled, in a session or killing queries, and last the one that keeps
        it open."""
        with self._lock:
            conns = [*self._pool, *(s.conn for s in self._sessions.values())]
            self._pool.clear()
            self._sessions.clear()
        if self._killer is not None:
            conns.append(self._killer)
        for conn in conns:
            conn.close()
        self._keeper.close()

    # -- connections and sessions ---------------------------------------------------------------------------
    def _take(self) -> _Conn:
        with self._lock:
            if self._pool:
                return self._pool.pop()
        return _Conn(self._path)

    def _give_back(self, conn: _Conn) -> None:
        with self._lock:
            if len(self._pool) < _POOL_SIZE:
                self._pool.append(conn)
                return
        conn.close()

    def _expire(self, now: float) -> list[_Conn]:
        expired = [sid for sid, s in self._sessions.items()
                   if now - s.last_used > s.timeout_s and not s.lock.locked()]
        return [self._sessions.pop(sid).conn for sid in expired]

    def _open_session(self, request: Request) -> _Session:
        assert request.session_id is not None
        now = self._clock()
        with self._lock:
            expired = self._expire(now)
            session = self._sessions.get(request.session_id)
            if session is None and request.session_check:
                raise ClickHouseError.make(372, "SESSION_NOT_FOUND", f"Session {request.session_id} not found")
            if session is None:
                session = _Session(_Conn(self._path), request.session_timeout_s, now)
                self._sessions[request.session_id] = session
            if not session.lock.acquire(blocking=False):
                raise ClickHouseError.make(373, "SESSION_IS_LOCKED", f"Session {request.session_id} is locked "
                                           "by a concurrent client; send one request at a time per session_id")
            session.timeout_s = request.session_timeout_s
        for conn in expired:
            conn.close()
        return session

    def sessions(self) -> list[str]:
        """The live session ids (expired ones are dropped first)."""
        with self._lock:
            expired = self._expire(self._clock())
            live = sorted(self._sessions)
        for conn in expired:
            conn.close()
        return live

    def session_scope(self, session_id: str) -> tuple[str | None, frozenset[str]]:
        """A live session's current database and temporary tables (what its unqualified names resolve to)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None or not session.lock.acquire(blocking=False):
            return (session.database if session else None), frozenset()  # a locked session refuses the request
        try:
            rows = bytes(session.conn.run("SELECT name FROM system.tables WHERE is_temporary", "TSVRaw").bytes())
            return session.database, frozenset(rows.decode(errors="replace").splitlines())
        except Exception:
            return session.database, frozenset()
        finally:
            session.lock.release()

    # -- execution ------------------------------------------------------------------------------------------------
    def execute(self, request: Request) -> Result:
        """Run ``request`` to the end and return its whole output (the server streams with :meth:`open`)."""
        with self.open(request) as execution:
            body = b"".join(bytes(chunk) for chunk in execution.chunks())  # copied before chDB reuses it
            return Result(body, execution.fmt, execution.summary(), execution.has_result)

    @contextlib.contextmanager
    def open(self, request: Request, on_progress: ProgressCallback | None = None) -> Iterator[Execution]:
        """Start ``request`` and hold its slot and connection until the block ends.

        Read ``chunks()`` inside the block; leaving it early (the client went away) kills the statement and
        discards the rest of its output. ``on_progress`` gets the running totals while it executes.
        """
        if not self._slots.acquire(timeout=self._queue_timeout_s):
            raise ClickHouseError.make(202, "TOO_MANY_SIMULTANEOUS_QUERIES", "Too many simultaneous queries: "
                                       f"every engine slot stayed busy for {self._queue_timeout_s:g} s; retry")
        try:
            with self._lock:
                self.running += 1
            if request.session_id is None:
                with self._sessionless(request, on_progress) as execution:
                    yield execution
                return
            session = self._open_session(request)
            try:
                with self._on(session.conn, request, session, on_progress) as execution:
                    yield execution
            finally:
                session.last_used = self._clock()
                session.lock.release()
        finally:
            with self._lock:
                self.running -= 1
            self._slots.release()

    @contextlib.contextmanager
    def _sessionless(self, request: Request, on_progress: ProgressCallback | None) -> Iterator[Execution]:
        conn = self._take()
        clean = False
        try:
            with self._on(conn, request, None, on_progress) as execution:
                yield execution
            clean = not (request.settings or conn.dirty) and (execution.has_result or request.insert is not None)
        finally:
            if clean:
                self._give_back(conn)
            else:
                conn.close()

    def kill(self, tag: str) -> None:
        """Stop the statement tagged ``tag`` (any thread): ``KILL QUERY`` on a connection of its own."""
        with self._kill_lock:
            if self._killer is None:
                self._killer = _Conn(self._path)
            kill_statement(self._killer.raw, tag)

    def _switch(self, conn: _Conn, database: str, settings: dict[str, str]) -> None:
        changes = [f"{k} = {_literal(v)}" for k, v in settings.items() if conn.applied.get(k) != v]
        changes += [f"{k} = DEFAULT" for k in conn.applied if k not in settings]
        if changes:
            try:
                conn.run("SET " + ", ".join(changes))
                conn.applied = dict(settings)
            except Exception:
                self._switch_one_by_one(conn, changes)
        if database != conn.database:
            conn.run(f"USE `{database}`")
            conn.database = database

    @staticmethod
    def _switch_one_by_one(conn: _Conn, changes: list[str]) -> None:
        """Apply ``changes`` singly; a session in readonly mode keeps the settings it cannot change."""
        try:
            for change in changes:
                try:
                    conn.run("SET " + change)
                except Exception as exc:
                    if "(READONLY)" not in str(exc):
                        raise
        finally:
            conn.applied = conn.changed_settings()  # read back what holds

    @contextlib.contextmanager
    def _on(self, conn: _Conn, request: Request, session: _Session | None,
            on_progress: ProgressCallback | None) -> Iterator[Execution]:
        """Start ``request`` on ``conn``; afterwards leave the connection with nothing of it inside."""
        settings = {**(session.settings if session else {}), **request.settings}
        database = request.database or (session.database if session else None) or "default"
        try:
            self._switch(conn, database, settings)
            if request.external:
                conn.dirty = True  # a sessionless connection is closed afterwards; a session's drops them
                load_external(conn.raw, request.external)
            if request.insert is not None:
                execution = self._insert(conn, request)
            else:
                execution = self._query(conn, request, session, on_progress)
        except ClickHouseError:
            conn.drain()
            drop_external(conn.raw, request.external)
            raise
        except Exception as exc:
            conn.drain()
            drop_external(conn.raw, request.external)
            raise ClickHouseError.from_engine(exc) from exc
        try:
            yield execution
        except ClickHouseError:
            conn.drain()  # the statement failed part-way: its leftover output is discarded
            raise
        finally:
            if not execution.close():
                conn.dirty = True  # killed part-way: never handed to another request
                conn.drain()
            drop_external(conn.raw, request.external)

    def _bind(self, conn: _Conn, params: dict[str, bytes]) -> dict[str, str]:
        """Parameters for chDB; those that are not UTF-8 are bound with ``SET param_x`` (binary-safe)."""
        text: dict[str, str] = {}
        for name, value in params.items():
            try:
                text[name] = value.decode()
            except UnicodeDecodeError:
                conn.dirty = True
                conn.run(b"SET param_" + name.encode() + b" = " + _bytes_literal(value))
        return text

    def _query(self, conn: _Conn, request: Request, session: _Session | None,
               on_progress: ProgressCallback | None) -> Execution:
        sql = request.query
        info = conn.raw.classify_query(sql.decode(errors="replace"))
        if int(info["statement_count"]) > 1:
            raise ClickHouseError.make(62, "SYNTAX_ERROR", "Multi-statements are not allowed: send one statement "
                                       f"per request ({info['statement_count']} found)")
        kind = int(info["query_class"])
        match = _FORMAT.search(sql)
        fmt = match.group(1).decode() if match else request.default_format
        # a FORMAT clause the pattern did not find (``… FORMAT JSON SETTINGS …``): the format is not known
        streamable = fmt.lower() in STREAMABLE_FORMATS and (match is not None or _ANY_FORMAT.search(sql) is None)
        execution = Execution(conn.raw, self.kill, fmt, has_result=kind == _READ_ONLY,
                              read_only=kind == _READ_ONLY, on_progress=on_progress, streamable=streamable)
        if fmt == "Native" and kind == _READ_ONLY and _revision(request) > 0:
            execution.transform = self._native(request, conn.database, sql[: match.start()] if match else sql,
                                               one_block=streamable)
        try:
            execution.start(sql, request.default_format, self._bind(conn, request.params))
        except BaseException:
            execution.close()
            raise
        if kind == _CONTROL:
            self._after_control(conn, request, session)
        return execution

    def _native(self, request: Request, database: str, select: bytes, one_block: bool
                ) -> Callable[[bytes | memoryview], bytes | memoryview]:
        """A chunk transform to Native for the client's revision (see ``native``).

        The true types (for the zones) come from a ``DESCRIBE`` of the query on another connection, asked
        only when the first block has a column written as plain ``DateTime``; when that cannot be
        answered (a session's temporary table, say) the zones stay stripped.
        """
        revision = _revision(request)
        zones: list[str] | None = None
        asked = revision < MIN_REVISION_WITH_TIME_ZONE

        def transform(data: bytes | memoryview) -> bytes | memoryview:
            nonlocal zones, asked
            if not asked:
                asked = True
                if b"\x08DateTime" in bytes(data):
                    zones = self._describe(request, database, select) or None
            return for_revision(data, revision, zones if zones and zoned_columns(zones) else None, one_block)

        return transform

    def _describe(self, request: Request, database: str, select: bytes) -> list[str]:
        conn = self._take()
        try:
            self._switch(conn, database, request.settings)
            text = {k: v.decode(errors="replace") for k, v in request.params.items()}
            rows = bytes(conn.run(b"DESCRIBE TABLE (" + select.rstrip().rstrip(b";") + b")", "TSVRaw", text).bytes())
            types = [line.split("\t")[1] for line in rows.decode().splitlines()]
        except Exception:
            conn.close()
            return []
        if request.settings:
            conn.close()
        else:
            self._give_back(conn)
        return types

    @staticmethod
    def _after_control(conn: _Conn, request: Request, session: _Session | None) -> None:
        """After ``SET``/``USE``: a session keeps what it set; a sessionless connection is not reused."""
        if session is None:
            conn.database = ""  # unknown now: the connection is not reused anyway
            return
        now = conn.changed_settings()
        conn.applied = now
        session.settings = {k: v for k, v in now.items() if k not in request.settings}
        use = _USE.match(request.query)
        if use is not None:
            conn.database = session.database = use.group(1).decode()

    def _insert(self, conn: _Conn, request: Request) -> Execution:
        assert request.insert is not None
        head, fmt = request.insert
        execution = Execution(conn.raw, self.kill, fmt, has_result=False, read_only=False)
        handle = conn.raw.send_insert(head, fmt)
        try:
            for chunk in _chunks(request.data):
                conn.raw.insert_append(handle, chunk)
            done = conn.raw.insert_done(handle)
        except BaseException:
            conn.raw.insert_cancel(handle)
            raise
        finally:
            if not isinstance(request.data, bytes):
                request.data.close()  # a spooled body: its temporary file goes now
        execution.progress.update(written_rows=int(done.rows_written()), written_bytes=int(done.bytes_written()))
        return execution
