"""A bounded on-disk event spool: every event is written here first, then shipped to JetStream.

One file per event (``<sequence>.json``, written to a temporary name, fsynced and renamed), so a crash
leaves either the whole event or nothing. Files are deleted only after JetStream acknowledged the publish;
the publish carries ``Nats-Msg-Id = event_id`` so a crash between the acknowledgement and the delete gives
a duplicate the stream discards. Bound: ``max_events`` files and ``max_bytes`` bytes (defaults 10,000 and
16 MiB — weeks of an idle node's events, hundreds of drains). When an append would exceed the bound the
*oldest* events are deleted and counted (``dropped``, persisted in ``dropped.count`` and exported as
``sco_agent_spool_dropped_total``): the newest events — the drain in progress — are the ones worth keeping.

Two locks, so appends and shipping never wait for each other's disk work (shipping starved behind
fsync'd appends): ``_append_lock`` keeps appends in sequence order and is held across the write and fsync;
``_lock`` guards only the in-memory index and is held for microseconds, so ``head`` and ``ack`` from the
shipper's thread proceed while an append is fsyncing, and an append never waits for a ship.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Spool", "SpoolEntry"]

_SUFFIX = ".json"


@dataclass(frozen=True)
class SpoolEntry:
    """One spooled event: its sequence number, file and size."""

    seq: int
    path: Path
    size: int

    def read(self) -> dict[str, Any]:
        """The event."""
        loaded: dict[str, Any] = json.loads(self.path.read_bytes())
        return loaded


class Spool:
    """The bounded on-disk event spool (module docstring)."""

    def __init__(self, directory: Path, max_events: int = 10_000, max_bytes: int = 16 * 1024 * 1024,
                 fsync: bool = True) -> None:
        """Open (or create) the spool in ``directory`` and reload the events left there.

        Raises:
            ValueError: A bound below 1 event or 1024 bytes.
        """
        if max_events < 1 or max_bytes < 1024:
            raise ValueError(f"spool bound max_events={max_events}, max_bytes={max_bytes} is too small; "
                             "use at least 1 event and 1024 bytes.")
        self.directory = directory
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.fsync = fsync
        self._lock = threading.Lock()  # the index: _entries, _bytes (held briefly)
        self._append_lock = threading.Lock()  # appends in sequence order (held across write and fsync)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.tmp"):
            stale.unlink(missing_ok=True)
        entries = []
        for path in directory.glob("*" + _SUFFIX):
            try:
                entries.append(SpoolEntry(int(path.stem), path, path.stat().st_size))
            except (ValueError, OSError):
                continue
        entries.sort(key=lambda e: e.seq)
        self._entries: deque[SpoolEntry] = deque(entries)
        self._bytes = sum(e.size for e in entries)
        self._next = (entries[-1].seq + 1) if entries else 1
        self._dropped_file = directory / "dropped.count"
        try:
            self.dropped = int(self._dropped_file.read_text().strip() or 0)
        except (OSError, ValueError):
            self.dropped = 0
        self.appended = 0

    @property
    def depth(self) -> int:
        """Events spooled, not yet acknowledged."""
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """Bytes spooled."""
        return self._bytes

    def append(self, event: dict[str, Any]) -> SpoolEntry:
        """Write an event durably, dropping the oldest ones first when the bound would be exceeded."""
        data = json.dumps(event, separators=(",", ":"), sort_keys=True).encode()
        with self._append_lock:
            with self._lock:
                gone = self._make_room(len(data))
                seq = self._next
                self._next += 1
            for old in gone:
                old.path.unlink(missing_ok=True)
            path = self.directory / f"{seq:016d}{_SUFFIX}"
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, data)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            entry = SpoolEntry(seq, path, len(data))
            with self._lock:
                self._entries.append(entry)
                self._bytes += len(data)
                self.appended += 1
            if gone:
                self.dropped += len(gone)
                self._dropped_file.write_text(str(self.dropped))
            return entry

    def _make_room(self, size: int) -> list[SpoolEntry]:
        """Take the oldest entries off the index until one more of ``size`` bytes fits (``_lock`` held)."""
        gone = []
        while self._entries and (len(self._entries) + 1 > self.max_events or self._bytes + size > self.max_bytes):
            old = self._entries.popleft()
            self._bytes -= old.size
            gone.append(old)
        return gone

    def head(self, limit: int = 256) -> list[SpoolEntry]:
        """The oldest ``limit`` events, in order."""
        with self._lock:
            return [self._entries[i] for i in range(min(limit, len(self._entries)))]

    def ack(self, entry: SpoolEntry) -> None:
        """Delete a shipped event (JetStream acknowledged it)."""
        with self._lock:
            try:
                self._entries.remove(entry)
            except ValueError:
                return  # already dropped by the bound
            self._bytes -= entry.size
        entry.path.unlink(missing_ok=True)
