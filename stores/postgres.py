"""PostgreSQL access for fleet state (psycopg 3 with psycopg_pool). URLs are libpq URIs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import resolve_url

__all__ = ["connect", "pool"]


def pool(url: str | None = None, *, min_size: int = 1, max_size: int = 8, home: Path | None = None,
         component: str | None = None, **kwargs: Any) -> Any:
    """An open ``psycopg_pool.ConnectionPool`` for ``url`` (default: the configured PostgreSQL).

    Use it as ``with pool() as p, p.connection() as conn: ...``; close it when the process ends.
    """
    from psycopg_pool import ConnectionPool

    return ConnectionPool(resolve_url("postgres", url, home, component), min_size=min_size, max_size=max_size,
                          open=True, kwargs={"autocommit": False, **kwargs})


def connect(url: str | None = None, *, autocommit: bool = False, home: Path | None = None,
            component: str | None = None) -> Any:
    """One ``psycopg.Connection`` (for CLIs and migrations); ``component``: its own credential from the stack."""
    import psycopg

    return psycopg.connect(resolve_url("postgres", url, home, component), autocommit=autocommit)
