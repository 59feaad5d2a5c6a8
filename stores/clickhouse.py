"""ClickHouse access through clickhouse-connect: the embedded front end and a real server look the same.

URL forms: ``http://host:8123`` (optionally ``/?database=x`` or ``http://user:pass@host:port/db``),
``https://…``, or ``chdb:///path`` / ``chdb://memory`` for single-process unit tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .config import resolve_url

__all__ = ["client", "client_kwargs"]


def client_kwargs(url: str) -> dict[str, Any]:
    """The ``clickhouse_connect.get_client`` arguments for an ``http(s)://`` URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"ClickHouse URL {url!r}: scheme must be http or https (or chdb:// for tests)")
    query = parse_qs(parts.query)
    database = unquote(parts.path.strip("/")) or (query.get("database") or [""])[0]
    kwargs: dict[str, Any] = {"host": parts.hostname or "127.0.0.1", "interface": parts.scheme,
                              "port": parts.port or (8443 if parts.scheme == "https" else 8123)}
    if parts.username:
        kwargs["username"] = unquote(parts.username)
    if parts.password:
        kwargs["password"] = unquote(parts.password)
    if database:
        kwargs["database"] = database
    return kwargs


def client(url: str | None = None, *, home: Path | None = None, **kwargs: Any) -> Any:
    """A ``clickhouse_connect`` client for ``url`` (default: ``SCO_CLICKHOUSE_URL`` or the stack file).

    One client per thread: clickhouse-connect refuses concurrent queries on one session.
    """
    import clickhouse_connect

    resolved = resolve_url("clickhouse", url, home)
    if resolved.startswith("chdb:"):
        return clickhouse_connect.get_client(dsn=resolved, **kwargs)
    return clickhouse_connect.get_client(**{**client_kwargs(resolved), **kwargs})
