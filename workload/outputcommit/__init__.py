"""Output commit (ADR-21).

Staging keyed by unit and attempt, publish by copy then completion marker, attempt ledger, quarantine after four
attempts ended by reclaim (event + owner notification).
"""

from __future__ import annotations

from .committer import MARKER, Attempt, OutputCommitter, Published, Quarantined, UnitOwner
from .notify import (
    EventPublisher,
    NatsPublisher,
    OwnerNotifier,
    RecordingNotifier,
    RecordingPublisher,
    SmtpNotifier,
)

__all__ = [
    "MARKER",
    "Attempt",
    "EventPublisher",
    "NatsPublisher",
    "OutputCommitter",
    "OwnerNotifier",
    "Published",
    "Quarantined",
    "RecordingNotifier",
    "RecordingPublisher",
    "SmtpNotifier",
    "UnitOwner",
]
