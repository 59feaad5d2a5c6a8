"""The orchestrator's own footprint, sampled in each of its processes (ADR-26).

The orchestrator's cost is a line of every workload's ledger. ``start`` runs a daemon thread that writes this
process's cumulative CPU seconds and resident memory to PostgreSQL (``process_usage``) every ``interval_s``;
the ``orchestrator_usage`` asset (``orchestration.footprint``) turns an hour of samples into the hour's cost.
Sampling never stops the process: a failed write is logged and retried on the next tick.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["Sample", "Sampler", "own_usage", "record", "start", "start_for"]

log = logging.getLogger(__name__)
INTERVAL_S = 60.0


@dataclass(frozen=True)
class Sample:
    """One process's cumulative CPU seconds and resident memory at a time."""

    cpu_s: float
    rss_bytes: int


def own_usage() -> Sample:
    """This process's user + system CPU seconds and resident set size (``/proc/self/statm``; else the peak)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/self/statm") as statm:
            rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        rss = ru.ru_maxrss * 1024
    return Sample(ru.ru_utime + ru.ru_stime, rss)


def record(conn: Any, region: str, component: str, process: str, at: datetime, sample: Sample) -> None:
    """Write one sample (autocommit connection)."""
    conn.execute("INSERT INTO process_usage (region, component, process, sampled_at, cpu_s, rss_bytes) "
                 "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                 (region, component, process, at, sample.cpu_s, sample.rss_bytes))


class Sampler:
    """Samples this process into ``process_usage`` on a daemon thread until ``stop``."""

    def __init__(self, connect: Callable[[], Any], region: str, component: str, interval_s: float = INTERVAL_S,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 usage: Callable[[], Sample] = own_usage) -> None:
        """``connect`` opens an autocommit PostgreSQL connection (called on the thread)."""
        self.connect, self.region, self.component, self.interval_s = connect, region, component, interval_s
        self.now, self.usage = now, usage
        self.process = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"
        self.samples = 0
        self._conn: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sco-footprint-{component}", daemon=True)

    def start(self) -> Sampler:
        """Start sampling (a sample at once, then every ``interval_s``)."""
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after a last sample."""
        self._stop.set()
        self._thread.join(timeout)

    def sample(self) -> bool:
        """Write one sample now; False (and a warning) when it could not be written."""
        try:
            self._conn = self._conn or self.connect()
            record(self._conn, self.region, self.component, self.process, self.now(), self.usage())
        except Exception as exc:  # the footprint is accounting, never a reason to stop the process
            log.warning("footprint sample of %s not written: %s", self.component, exc)
            self._conn = None
            return False
        self.samples += 1
        return True

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval_s):
                break
        self.sample()  # the last one: the process's CPU up to its stop
        self.close()

    def close(self) -> None:
        """Close the sampling connection (a later sample opens a new one)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def start(postgres_url: str, region: str, component: str, interval_s: float = INTERVAL_S) -> Sampler:
    """Sample this process into ``process_usage`` at ``postgres_url`` (what each orchestrator command calls)."""
    from .postgres import connect

    return Sampler(lambda: connect(postgres_url, autocommit=True), region, component, interval_s).start()


def start_for(postgres_url: str | None, region: str | None, component: str) -> Sampler | None:
    """``start`` for a long-running orchestrator command.

    The URL is resolved like every SCO process's (flag, ``SCO_POSTGRES_URL``, the stack file) and the region
    comes from ``SCO_REGION`` when not given; None (and a warning) when no PostgreSQL is configured — the
    process runs, its footprint goes unrecorded.
    """
    from .config import resolve_url

    try:
        url = resolve_url("postgres", postgres_url)
    except Exception as exc:
        log.warning("the %s footprint is not recorded: no PostgreSQL (%s)", component, exc)
        return None
    return start(url, region or os.environ.get("SCO_REGION", "r1"), component)
