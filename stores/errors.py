"""The errors the ``stores`` package defines. Standard library only.

    Exception
    └── StoresError                the base of every error ``stores`` raises on purpose
        ├── StoreNotConfigured     no URL for a store (also a RuntimeError)
        ├── TelemetryError         MET001: a metrics endpoint that cannot start as configured
        ├── ClusterRenderError     a migration statement with no ClickHouse-cluster form (also a ValueError)
        └── IngestError            the ingest cannot go on safely (a stable ``code``, ING0xx)
            ├── IngestDisconnected     ING001: NATS closed the connection and reconnecting failed
            └── InsertNotConfirmed     ING002: ClickHouse confirmed fewer rows than the ingest sent

The drivers' own errors (psycopg, clickhouse-connect, nats-py) pass through unwrapped: callers that retry
(the ingest, the outbox relay) catch them by driver type. A bad argument (a URL with the wrong scheme,
a connection without autocommit for migrations) is a ``ValueError``. ``stores.config`` re-exports
``StoreNotConfigured``.
"""

from __future__ import annotations

__all__ = ["ClusterRenderError", "IngestDisconnected", "IngestError", "InsertNotConfirmed", "StoreNotConfigured",
           "StoresError", "TelemetryError"]


class StoresError(Exception):
    """Base of every error the ``stores`` package raises on purpose."""


class StoreNotConfigured(StoresError, RuntimeError):
    """No URL for a store: neither given, nor in the environment, nor written by ``sco up``."""


class IngestError(StoresError):
    """The ingest cannot go on safely; ``code`` is stable (``ING0xx``) and leads the message."""

    code = "ING000"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")


class IngestDisconnected(IngestError):
    """NATS closed the ingest's connection for good and reconnecting did not help: exit for the supervisor."""

    code = "ING001"


class InsertNotConfirmed(IngestError):
    """ClickHouse answered an insert without confirming every row: the batch is not acknowledged."""

    code = "ING002"


class TelemetryError(StoresError):
    """A metrics endpoint that cannot start as configured; the message leads with the stable code ``MET001``."""

    code = "MET001"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")


class ClusterRenderError(StoresError, ValueError):
    """A migration statement the cluster renderer does not know how to distribute (names the statement)."""
