"""The platform checkpoint client (ADR-18/19/20).

Notice callback, multipart generations with the manifest written last, restore of the newest complete generation,
retention (3 generations / 7 days) with the bucket lifecycle rule, per-workload bucket and SSE key, periodic checkpoints
at the compiled interval, and a final write whose failure releases the lease and is reported.

Standalone: it needs only the standard library and boto3, and imports nothing else of ``sco``, so a
workload image installs it without the platform. See docs/checkpoint.md.
"""

from __future__ import annotations

from .client import MANIFEST_FORMAT, CheckpointClient, Generation, WriteResult, lifecycle_rules
from .config import client_from_env, encryption_from_env
from .errors import AccessDenied, CheckpointError, FinalWriteFailed, NotFound, StoreError
from .notice import Notice, NoticeListener, send_notice
from .periodic import Checkpointer, interval_from_agent_bundle, interval_from_env
from .report import AgentReporter, RecordingReporter, Reporter
from .store import Encryption, MemoryStore, ObjectInfo, ObjectStore, S3Store, s3_client

__all__ = [
    "MANIFEST_FORMAT",
    "AccessDenied",
    "AgentReporter",
    "CheckpointClient",
    "CheckpointError",
    "Checkpointer",
    "Encryption",
    "FinalWriteFailed",
    "Generation",
    "MemoryStore",
    "NotFound",
    "Notice",
    "NoticeListener",
    "ObjectInfo",
    "ObjectStore",
    "RecordingReporter",
    "Reporter",
    "S3Store",
    "StoreError",
    "WriteResult",
    "client_from_env",
    "encryption_from_env",
    "interval_from_agent_bundle",
    "interval_from_env",
    "lifecycle_rules",
    "s3_client",
    "send_notice",
]
