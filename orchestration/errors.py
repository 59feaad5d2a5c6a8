"""The errors the ``orchestration`` package defines. Standard library only.

    Exception
    └── OrchestrationError     base of every error ``orchestration`` raises on purpose
        └── StorageError       RGW did not answer, refused the identity, or answered something that is not
                               bucket stats (``storage``, ORC101)
    ValueError                 what it raises today for data it cannot use: an unknown pool in the usage
                               ledger or the backfill, negative usage hours, an unknown purpose, no events
                               or no pools in ClickHouse for the configured region

Dagster reports an asset's or a check's exception as the run's failure, so a message that names the value
and the fix is what an operator sees. A new error type of this package derives from ``OrchestrationError``
(and from ``ValueError`` when it replaces one of the raises above, so no caller breaks).
"""

from __future__ import annotations

__all__ = ["OrchestrationError", "StorageError"]


class OrchestrationError(Exception):
    """Base of every error the ``orchestration`` package raises on purpose."""


class StorageError(OrchestrationError):
    """RGW's bucket stats could not be read (``orchestration.storage``); the message names the URL and the fix."""

    code = "ORC101"
