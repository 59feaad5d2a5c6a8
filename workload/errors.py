"""The errors a workload's libraries raise, in one place.

    Exception
    ├── CheckpointError          every checkpoint-client error (``workload.checkpoint``)
    │   ├── StoreError           the object store refused or failed a request
    │   │   ├── AccessDenied     this identity may not touch that bucket or object (ADR-19)
    │   │   └── NotFound         no such bucket, object or configuration
    │   └── FinalWriteFailed     the final checkpoint on a notice did not complete
    └── Quarantined              a unit whose four attempts were all ended by a reclaim (output commit, ADR-21)

The checkpoint client stands alone (standard library and boto3, nothing else of ours: an import-linter
contract holds it), so its errors are defined in ``workload.checkpoint.errors`` and only re-exported here;
for the same reason they have no common base with ``Quarantined``, which is defined here and re-exported by
``workload.outputcommit``.
"""

from __future__ import annotations

from workload.checkpoint.errors import AccessDenied, CheckpointError, FinalWriteFailed, NotFound, StoreError

__all__ = ["AccessDenied", "CheckpointError", "FinalWriteFailed", "NotFound", "Quarantined", "StoreError"]


class Quarantined(Exception):
    """The unit needed four attempts that were all ended by a reclaim: it is not run a fifth time."""
