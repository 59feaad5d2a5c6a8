"""The exclusion reflex (ADR-07), pure: a pool is excluded on three reclamation waves within 30 minutes, or
on acquisition thrash (three failed launches, or launches reclaimed within 10 minutes of starting, within 10
minutes); a two-hour cool-off that doubles on each repeat, then an hour of probation during which the
planner caps the pool at 5 % of any workload. The streaming consumer (``exclusion_stream``) feeds events in
and writes each decision to PostgreSQL with its evidence; this module decides.

Each exclusion carries its **cause**. ``reclaim``: reclamation waves, or launches reclaimed young —
the pool is being reclaimed, so the planner moves units away (the pool is ineligible). ``full``: launches
refused and nothing else — the pool has no room, but the instances running there are as safe as before, so
the planner keeps the units it holds there and places no new ones (``decide.pool_states_for``). Moving them
turned every workload's units in the top pools into surplus at once, which tripped the mass-termination
breaker (the replay through the controller). A reclaim trip during a ``full`` exclusion replaces it.

A **wave** is a run of reclamation starts (``contracts.subjects.is_reclaim``: notices and losses without
notice, never drills) in one pool with gaps under ``wave_gap``: one guaranteed request displacing four
instances is one wave, not four.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from contracts.scoring import FULL, RECLAIM
from contracts.subjects import is_reclaim

__all__ = ["FULL", "RECLAIM", "Exclusion", "ExclusionConfig", "ExclusionWatcher", "Signal", "pool_status"]

THRASH_KINDS = frozenset({"launch-failed"})


@dataclass(frozen=True)
class ExclusionConfig:
    waves: int = 3
    window: timedelta = timedelta(minutes=30)
    wave_gap: timedelta = timedelta(seconds=60)
    thrash_events: int = 3
    thrash_window: timedelta = timedelta(minutes=10)
    young: timedelta = timedelta(minutes=10)     # an instance reclaimed younger than this counts as thrash
    cool_off: timedelta = timedelta(hours=2)
    probation: timedelta = timedelta(hours=1)


@dataclass(frozen=True)
class Signal:
    """The fields of a lifecycle event the watcher reads."""

    kind: str
    pool: str
    time: datetime
    event_id: str
    instance: str = ""
    age_s: float | None = None
    drill: bool = False


@dataclass(frozen=True)
class Exclusion:
    pool: str
    reason: str
    excluded_at: datetime
    until: datetime
    probation_until: datetime
    offences: int
    evidence: tuple[str, ...]
    cause: str = RECLAIM


def pool_status(ex: Exclusion | None, now: datetime) -> str:
    """``excluded``, ``probation`` or ``ok``."""
    if ex is None or now >= ex.probation_until:
        return "ok"
    return "excluded" if now < ex.until else "probation"


@dataclass
class _Wave:
    start: datetime
    last: datetime
    evidence: list[str]


@dataclass
class ExclusionWatcher:
    config: ExclusionConfig = field(default_factory=ExclusionConfig)
    offences: dict[str, int] = field(default_factory=dict)     # previous exclusions per pool (from the DB)
    active: dict[str, Exclusion] = field(default_factory=dict)
    _waves: dict[str, deque[_Wave]] = field(default_factory=lambda: defaultdict(deque))
    _thrash: dict[str, deque[tuple[datetime, str, bool]]] = field(default_factory=lambda: defaultdict(deque))
    _seen: set[str] = field(default_factory=set)

    @classmethod
    def from_store(cls, config: ExclusionConfig, offences: Mapping[str, int],
                   active: Mapping[str, Exclusion]) -> ExclusionWatcher:
        """A watcher resumed from the stored offences and exclusions in force."""
        return cls(config, dict(offences), dict(active))

    def open_waves(self) -> dict[str, int]:
        """Reclamation waves per pool inside the window, not yet an exclusion (a copy: safe from another thread)."""
        return {pool: len(waves) for pool, waves in list(self._waves.items()) if waves}

    def observe(self, s: Signal) -> Exclusion | None:
        """Feed one event; returns a new exclusion when this event trips the pool."""
        if not s.pool or s.event_id in self._seen:
            return None
        self._seen.add(s.event_id)
        if is_reclaim(s.kind, s.drill):
            waves = self._waves[s.pool]
            if waves and s.time - waves[-1].last < self.config.wave_gap:
                waves[-1].last = max(waves[-1].last, s.time)
                waves[-1].evidence.append(s.event_id)
            else:
                waves.append(_Wave(s.time, s.time, [s.event_id]))
            while waves and waves[0].start <= s.time - self.config.window:
                waves.popleft()
            if s.age_s is not None and s.age_s < self.config.young.total_seconds():
                self._push_thrash(s)
            if len(waves) >= self.config.waves:
                evidence = tuple(e for w in waves for e in w.evidence)
                return self._trip(s.pool, f"{len(waves)} reclamation waves within {self.config.window}",
                                  s.time, evidence, RECLAIM)
        if s.kind in THRASH_KINDS:
            self._push_thrash(s)
        thrash = self._thrash[s.pool]
        while thrash and thrash[0][0] <= s.time - self.config.thrash_window:
            thrash.popleft()
        if len(thrash) >= self.config.thrash_events:
            refused = all(failed for _, _, failed in thrash)
            what = "failed launches" if refused else "failed or short-lived acquisitions"
            return self._trip(s.pool, f"acquisition thrash: {len(thrash)} {what} within {self.config.thrash_window}",
                              s.time, tuple(e for _, e, _ in thrash), FULL if refused else RECLAIM)
        return None

    def _push_thrash(self, s: Signal) -> None:
        q = self._thrash[s.pool]
        if not q or q[-1][1] != s.event_id:
            q.append((s.time, s.event_id, s.kind in THRASH_KINDS))

    def _trip(self, pool: str, reason: str, now: datetime, evidence: tuple[str, ...], cause: str) -> Exclusion | None:
        current = self.active.get(pool)
        if pool_status(current, now) == "excluded" and not (current and current.cause == FULL and cause == RECLAIM):
            return None
        n = self.offences.get(pool, 0)
        until = now + self.config.cool_off * (2 ** n)
        ex = Exclusion(pool, reason, now, until, until + self.config.probation, n + 1, evidence, cause)
        self.offences[pool] = n + 1
        self.active[pool] = ex
        self._waves.pop(pool, None)
        self._thrash.pop(pool, None)
        return ex
