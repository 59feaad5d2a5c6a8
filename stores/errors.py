"""The errors the ``stores`` package defines. Standard library only.

    Exception
    └── StoresError                the base of every error ``stores`` raises on purpose
        └── StoreNotConfigured     no URL for a store (also a RuntimeError)

The drivers' own errors (psycopg, clickhouse-connect, nats-py) pass through unwrapped: callers that retry
(the ingest, the outbox relay) catch them by driver type. A bad argument (a URL with the wrong scheme,
a connection without autocommit for migrations) is a ``ValueError``. ``stores.config`` re-exports
``StoreNotConfigured``.
"""

from __future__ import annotations

__all__ = ["StoreNotConfigured", "StoresError"]


class StoresError(Exception):
    """Base of every error the ``stores`` package raises on purpose."""


class StoreNotConfigured(StoresError, RuntimeError):
    """No URL for a store: neither given, nor in the environment, nor written by ``sco up``."""
