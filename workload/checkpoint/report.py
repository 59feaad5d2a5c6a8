"""Reporting checkpoint outcomes and releasing the lease (ADR-19/20: a failed final write is never silent).

The workload holds a *lease* on its unit for as long as it runs: the node agent waits for the drain to end
and the scheduler keeps the unit. When the final write on a notice fails, the client releases the lease at
once (so the agent does not wait the rest of the drain budget for a checkpoint that will not come, and the
unit is requeued from the previous generation) and reports a ``checkpoint-failed`` record. Reports are JSON
lines whose ``kind`` values are :class:`contracts.subjects.EventKind` names (the agent turns them into
lifecycle events); they go to the agent's local socket, or to a spool file when no agent answers.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

__all__ = ["AgentReporter", "RecordingReporter", "Reporter"]

CHECKPOINT_WRITTEN = "checkpoint-written"  # contracts.subjects.EventKind.CHECKPOINT_WRITTEN
CHECKPOINT_FAILED = "checkpoint-failed"  # contracts.subjects.EventKind.CHECKPOINT_FAILED
LEASE_RELEASED = "lease-released"


class Reporter(Protocol):
    """Where checkpoint events and the lease release go."""

    def report(self, kind: str, **fields: Any) -> None:
        """Report one checkpoint event of ``kind`` with its fields."""
    def release_lease(self, outcome: str, detail: str) -> None:
        """Release the unit's work lease with the attempt's outcome."""


@dataclass
class RecordingReporter:
    """Test double: keeps every record."""

    records: list[dict[str, Any]] = field(default_factory=list)
    released: list[tuple[str, str]] = field(default_factory=list)

    def report(self, kind: str, **fields: Any) -> None:
        """Keep the record."""
        self.records.append({"kind": kind, **fields})

    def release_lease(self, outcome: str, detail: str) -> None:
        """Keep the release, and a lease-released record."""
        self.released.append((outcome, detail))
        self.records.append({"kind": LEASE_RELEASED, "outcome": outcome, "detail": detail})


class AgentReporter:
    """Production adapter: JSON lines to the agent's unix socket, else a spool file.

    The spool is for when the agent is not there (the agent, or an operator, reads the spool later); always a line on
    stderr for the job's log.
    """

    def __init__(self, workload: str, socket_path: Path | None, spool: Path | None = None,
                 unit: str | None = None) -> None:
        self.workload, self.socket_path, self.spool, self.unit = workload, socket_path, spool, unit
        self._lock = threading.Lock()

    def _send(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, default=str) + "\n"
        print(f"sco-checkpoint: {line.strip()}", file=sys.stderr, flush=True)
        delivered = False
        if self.socket_path is not None:
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(2.0)
                sock.connect(str(self.socket_path))
                sock.sendall(line.encode())
                delivered = True
        if not delivered and self.spool is not None:
            with self._lock, self.spool.open("a", encoding="utf-8") as fh:
                fh.write(line)

    def report(self, kind: str, **fields: Any) -> None:
        """Send the record, stamped with the workload, unit and time, to the agent (or the spool)."""
        self._send({"kind": kind, "workload": self.workload, "unit": self.unit,
                    "time": datetime.now(UTC).isoformat(), **fields})

    def release_lease(self, outcome: str, detail: str) -> None:
        """Report the lease released with the attempt's outcome."""
        self.report(LEASE_RELEASED, outcome=outcome, detail=detail)
