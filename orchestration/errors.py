"""The errors the ``orchestration`` package defines. Standard library only.

    Exception
    └── OrchestrationError     base of every error ``orchestration`` raises on purpose
        ├── StorageError       RGW did not answer, refused the identity, or answered something that is not
        │                      bucket stats (``storage``, ORC101)
        ├── DocsError          ``dbt docs generate`` failed for the finance docs site (``finance_docs``, ORC102)
        ├── BakeoffError       a bake-off partition's run failed or printed no record (``bakeoff``, BAK010/BAK011)
        └── ArchiveError       the monthly finance archive (``archive``, ``archive_targets``)
            ├── ArchiveRefused        a re-run would change a month already archived (ARC001)
            ├── ArchiveBucketUnlocked the S3 bucket is missing or has no Object Lock (ARC002)
            ├── ArchiveStoreError     the S3 API refused or failed a read or a write (ARC003)
            └── ArchiveConfigError    ``archive_url`` or ``archive_correction`` is not usable (ARC004;
                                      also a ``ValueError``)
    ValueError                 what it raises today for data it cannot use: an unknown pool in the usage
                               ledger or the backfill, negative usage hours, an unknown purpose, no events
                               or no pools in ClickHouse for the configured region

Dagster reports an asset's or a check's exception as the run's failure, so a message that names the value
and the fix is what an operator sees. A new error type of this package derives from ``OrchestrationError``
(and from ``ValueError`` when it replaces one of the raises above, so no caller breaks).
"""

from __future__ import annotations

__all__ = ["ArchiveBucketUnlocked", "ArchiveConfigError", "ArchiveError", "ArchiveRefused", "ArchiveStoreError",
           "BakeoffError", "DocsError", "OrchestrationError", "StorageError"]


class OrchestrationError(Exception):
    """Base of every error the ``orchestration`` package raises on purpose."""


class StorageError(OrchestrationError):
    """RGW's bucket stats could not be read (``orchestration.storage``); the message names the URL and the fix."""

    code = "ORC101"


class DocsError(OrchestrationError):
    """dbt could not generate the finance docs site; the message carries dbt's last lines and the fix."""

    code = "ORC102"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code} {message}")


class BakeoffError(OrchestrationError):
    """A bake-off partition could not be measured; ``code`` is the first word of the message."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code} {message}")


class ArchiveError(OrchestrationError):
    """Base of the finance archive's errors; each subclass carries a stable ``code``, which starts its message."""

    code = "ARC000"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code} {message}")


class ArchiveRefused(ArchiveError):
    """The month is archived (its manifest exists) and the new export differs: nothing was written. The
    message names the month, the location, the files that differ and the fix (a correction archive)."""

    code = "ARC001"


class ArchiveBucketUnlocked(ArchiveError):
    """The archive bucket does not exist (and may not be created) or was created without Object Lock."""

    code = "ARC002"


class ArchiveStoreError(ArchiveError):
    """The S3 API refused or failed a call (credentials, permissions, endpoint); names bucket, key and code."""

    code = "ARC003"


class ArchiveConfigError(ArchiveError, ValueError):
    """``AnalyticsSettings.archive_url`` (or the correction name) cannot be used; names the value and the fix."""

    code = "ARC004"
