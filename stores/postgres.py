"""PostgreSQL access for fleet state (psycopg 3 with psycopg_pool). URLs are libpq URIs.

A URL may name several hosts — ``postgresql://u:p@10.0.0.1:5432,10.0.0.2:5432/sco?target_session_attrs=read-write``
(a Patroni pair) — and libpq connects to the first that takes writes. ``connect(..., reconnect=True)`` returns a
``Reconnecting`` connection for the long-running processes (the controller, the outbox relay): when the server it
was on goes away (a failover: the primary killed, demoted or restarted), the statement running fails and the
error reaches the caller — a controller pass or a relay batch fails cleanly — and the connection's *next* use
opens a new one with the same URL, so it lands on the new primary. Nothing is retried inside a transaction.

Stable log codes: ``PG001`` the connection was lost (or the server turned read-only) and is dropped, ``PG002``
reconnected (to which host and port), ``PG003`` no host of the URL took a read-write connection (the use fails;
the next one tries again).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .config import resolve_url

__all__ = ["LOST", "NO_PRIMARY", "RECONNECTED", "Reconnecting", "connect", "failure_code", "pool"]

log = logging.getLogger(__name__)
LOST, RECONNECTED, NO_PRIMARY = "PG001", "PG002", "PG003"


def pool(url: str | None = None, *, min_size: int = 1, max_size: int = 8, home: Path | None = None,
         component: str | None = None, **kwargs: Any) -> Any:
    """An open ``psycopg_pool.ConnectionPool`` for ``url`` (default: the configured PostgreSQL).

    Use it as ``with pool() as p, p.connection() as conn: ...``; close it when the process ends. The pool checks
    a connection before lending it (``check``), so one left broken by a failover is replaced, not lent.
    """
    from psycopg_pool import ConnectionPool

    return ConnectionPool(resolve_url("postgres", url, home, component), min_size=min_size, max_size=max_size,
                          open=True, check=ConnectionPool.check_connection,
                          kwargs={"autocommit": False, **kwargs})


def connect(url: str | None = None, *, autocommit: bool = False, home: Path | None = None,
            component: str | None = None, reconnect: bool = False, connect_timeout: int = 5) -> Any:
    """One ``psycopg.Connection`` (for CLIs and migrations); ``component``: its own credential from the stack.

    ``reconnect``: a ``Reconnecting`` connection instead, which opens a new connection on its next use after the
    server went away (for processes that outlive a failover). ``connect_timeout``: seconds per host tried.
    """
    resolved = resolve_url("postgres", url, home, component)
    if reconnect:
        return Reconnecting(resolved, autocommit=autocommit, connect_timeout=connect_timeout)
    import psycopg

    return psycopg.connect(resolved, autocommit=autocommit, connect_timeout=connect_timeout)


def failure_code(exc: BaseException) -> str | None:
    """``PG001`` when ``exc`` is PostgreSQL gone or no longer writable (a failover under way), else None."""
    import psycopg

    if isinstance(exc, psycopg.OperationalError | psycopg.errors.ReadOnlySqlTransaction):
        return LOST
    return None


class Reconnecting:
    """A psycopg connection replaced on its next use once it is lost or on a server that no longer takes writes.

    Lost: broken or closed by the server; no longer writable: a demoted primary. Everything else is the current
    connection's:
    ``execute``, ``transaction``, ``pipeline`` and ``cursor`` are forwarded, as is any other attribute.

    ``reconnects`` counts the replacements; ``host``/``port`` name the server in use.
    """

    def __init__(self, url: str, *, autocommit: bool = False, connect_timeout: int = 5) -> None:
        self.url, self.autocommit_mode, self.connect_timeout = url, autocommit, connect_timeout
        self.reconnects = 0
        self._stale = False
        self._closed = False
        self._conn: Any = self._open()

    # --- the connection in use ------------------------------------------------------------------------
    def _open(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(self.url, autocommit=self.autocommit_mode, connect_timeout=self.connect_timeout)
        except psycopg.OperationalError as exc:
            log.warning("%s no read-write PostgreSQL answered: %s", NO_PRIMARY, str(exc).strip().splitlines()[-1:])
            raise

    @property
    def current(self) -> Any:
        """The live connection, opened anew when the last one was lost (raises when no primary answers)."""
        if self._closed:
            return self._conn  # closed by its owner: psycopg says so on use
        conn = self._conn
        if not (self._stale or conn.closed or conn.broken):
            return conn
        log.warning("%s PostgreSQL connection to %s:%s lost%s; reconnecting", LOST, _host(conn), _port(conn),
                    " (server read-only)" if self._stale else "")
        with contextlib.suppress(Exception):
            conn.close()
        self._conn = self._open()
        self._stale = False
        self.reconnects += 1
        log.warning("%s reconnected to PostgreSQL at %s:%s", RECONNECTED, self.host, self.port)
        return self._conn

    @property
    def host(self) -> str:
        """The host of the server in use."""
        return _host(self._conn)

    @property
    def port(self) -> str:
        """The port of the server in use."""
        return _port(self._conn)

    # --- forwarded --------------------------------------------------------------------------------------
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        """``Connection.execute`` on the current connection."""
        try:
            return self.current.execute(query, params, **kwargs)
        except Exception as exc:
            self._note(exc)
            raise

    @contextlib.contextmanager
    def transaction(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """``Connection.transaction`` on the current connection (a read-only refusal marks it for replacement)."""
        try:
            with self.current.transaction(*args, **kwargs) as tx:
                yield tx
        except Exception as exc:
            self._note(exc)
            raise

    @contextlib.contextmanager
    def pipeline(self) -> Iterator[Any]:
        """``Connection.pipeline`` on the current connection (a read-only refusal marks it for replacement).

        A statement's error comes out of a later read or of the block's end, not of ``execute``.
        """
        try:
            with self.current.pipeline() as p:
                yield p
        except Exception as exc:
            self._note(exc)
            raise

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        """``Connection.cursor`` on the current connection."""
        return self.current.cursor(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def _note(self, exc: BaseException) -> None:
        import psycopg

        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            self._stale = True  # connected, but to a standby now: the next use finds the primary

    # --- lifetime ---------------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Closed by its owner (a connection lost to a failover is not: it is replaced)."""
        return self._closed

    @property
    def broken(self) -> bool:
        """The current connection is broken (the next use replaces it)."""
        return bool(self._conn.broken)

    def close(self) -> None:
        """Close for good."""
        self._closed = True
        self._conn.close()

    def __enter__(self) -> Reconnecting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _host(conn: Any) -> str:
    with contextlib.suppress(Exception):
        return str(conn.pgconn.host.decode())
    return "?"


def _port(conn: Any) -> str:
    with contextlib.suppress(Exception):
        return str(conn.pgconn.port.decode())
    return "?"
