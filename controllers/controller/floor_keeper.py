"""The floor keeper (ADR-22), pure: notices a hall being lost (most of our instances in it notified or gone),
takes that hall's pools out of planning while it lends nothing, forces a re-plan of every workload with an
allocation there (the planner then draws the floor from committed capacity in the other halls), and reports
each workload's floor restored — with how long it took against the 15-minute promise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controllers.planning import Purpose as PlanPurpose
from controllers.planning import WorkloadPlan

from .model import Note, Observed, Purpose

__all__ = ["FloorConfig", "FloorKeeper", "lost_halls"]


@dataclass(frozen=True)
class FloorConfig:
    hall_lost_share: float = 0.5        # share of our instances in a hall under notice that means "hall lost"
    hall_lost_min: int = 10             # ... and at least this many
    hall_memory: timedelta = timedelta(hours=2)
    restore_within: timedelta = timedelta(minutes=15)


def lost_halls(observed: Sequence[Observed], config: FloorConfig) -> set[str]:
    """The halls where enough of our instances are leaving (notified, deleted, in error) to count as lost."""
    total: dict[str, int] = defaultdict(int)
    leaving: dict[str, int] = defaultdict(int)
    for o in observed:
        if not o.hall:
            continue
        total[o.hall] += 1
        if o.status in ("notified", "deleted", "error"):
            leaving[o.hall] += 1
    return {h for h, n in leaving.items() if n >= config.hall_lost_min and n >= total[h] * config.hall_lost_share}


@dataclass
class FloorKeeper:
    config: FloorConfig = field(default_factory=FloorConfig)
    lost: dict[str, datetime] = field(default_factory=dict)          # hall -> since
    short_since: dict[str, datetime] = field(default_factory=dict)   # workload -> floor below plan since
    held: set[str] = field(default_factory=set)                      # workloads that have had their floor

    def copy(self) -> FloorKeeper:
        """A copy whose changes leave this one alone (the frozen config shared)."""
        return FloorKeeper(self.config, dict(self.lost), dict(self.short_since), set(self.held))

    def update(self, observed: Sequence[Observed], now: datetime) -> list[Note]:
        """Note the halls lost and recovered since the last pass."""
        notes = []
        for hall in lost_halls(observed, self.config):
            if hall not in self.lost:
                self.lost[hall] = now
                for o in observed:  # every workload with floor there is below its floor from now
                    if o.hall == hall and o.purpose is Purpose.FLOOR:
                        self.short_since.setdefault(o.workload, now)
                notes.append(Note("contract-breach", f"hall {hall} lost: most instances there under notice",
                                  attributes={"hall": hall, "floor_keeper": True}))
        for hall, since in list(self.lost.items()):
            if now - since >= self.config.hall_memory:
                del self.lost[hall]
        return notes

    def lost_pools(self, pool_halls: Mapping[str, str]) -> set[str]:
        """The pools in a hall that is lost."""
        return {pid for pid, hall in pool_halls.items() if hall in self.lost}

    def check(self, plans: Mapping[str, WorkloadPlan], observed: Sequence[Observed], now: datetime) -> list[Note]:
        """Floor instances live versus planned; a workload back at its floor gets a floor-restored note."""
        live: dict[str, int] = defaultdict(int)
        for o in observed:
            if o.purpose is Purpose.FLOOR and o.live and o.hall not in self.lost:
                live[o.workload] += 1
        notes = []
        for w, p in plans.items():
            wanted = sum(a.instances for a in p.allocations if a.purpose is PlanPurpose.FLOOR)
            if wanted and live[w] < wanted:
                if w in self.held:
                    self.short_since.setdefault(w, now)
                continue
            self.held.add(w)
            if w in self.short_since:
                since = self.short_since.pop(w)
                took = now - since
                notes.append(Note("floor-restored", f"floor of {wanted} instance(s) restored in "
                                  f"{int(took.total_seconds())} s", workload=w, attributes={
                                      "seconds": int(took.total_seconds()), "instances": wanted,
                                      "within_promise": took <= self.config.restore_within}))
        return notes
