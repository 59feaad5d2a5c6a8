"""Bounded actuation (ADR-12), pure: after any (re)start two read-only cycles, then at most 5 % of the
partition per 5 minutes, tier 1 first, until a pass holds nothing back; terminations never more than 2 % of
the partition per 10 minutes; an instance is terminated only when its scheduler reported it idle on three
observations and its provider tags and database row agree (ADR-11, ADR-29).

Terminations are *paced*, whatever their number: the pass terminates what the window still allows (2 % of the
partition per 10 minutes, a sliding window: each termination's token comes back 10 minutes after it was spent)
and holds the rest for the next windows (level-triggered: the surplus is still there next pass). A surplus after
a hall-wide reclaim or a wave of re-plans is still a surplus, drained at the bounded rate, with nobody called.

The breaker opens (no terminations at all, an alarm event raised, held until an operator resets it) only on the
anomaly ADR-12 names, a *mass termination*: a single pass wanting ``halt_share`` of the partition (50 % by
default) terminated at once, which no ordinary re-plan wants and a claim source gone empty or a plan gone wrong
does. (A mass *loss* — instances vanishing from the listing — fails static in ``decide._mass_loss``.) An
operator's reset acknowledges the surplus in hand, which is then paced; a later mass want trips again. Earlier
readings tripped on any want over the window's cap, then on 10 % at once: a month's replay tripped 6–12 times
on ordinary surplus and needed a scripted operator to reset each trip, or paid for every surplus instance for
the rest of the month.

``Safety`` is the state of one partition's leader. Its counters are in memory on purpose: a restart is exactly
when they must start again from zero (read-only, then gradual). The open breaker is persisted by the caller.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal

from .model import Launch, Note, Terminate

__all__ = ["Gated", "Safety", "SafetyConfig", "tier_rank"]


def tier_rank(tier: str) -> int:
    """The tier's number (``T1`` → 1); 9 for a tier that is not ``T<digit>``."""
    return int(tier[1:]) if len(tier) == 2 and tier[0] == "T" and tier[1].isdigit() else 9


@dataclass(frozen=True)
class SafetyConfig:
    read_only_cycles: int = 2
    recovery_share: Decimal = Decimal("0.05")
    recovery_window: timedelta = timedelta(minutes=5)
    trip_share: Decimal = Decimal("0.02")
    trip_window: timedelta = timedelta(minutes=10)
    halt_share: Decimal = Decimal("0.50")  # a pass wanting this share terminated at once: the anomaly that halts
    idle_observations: int = 3


@dataclass(frozen=True)
class Gated:
    launches: tuple[Launch, ...]
    terminations: tuple[Terminate, ...]
    held_launches: int
    held_terminations: int
    read_only: bool
    notes: tuple[Note, ...] = ()
    held_by_recovery: int = 0


@dataclass
class Safety:
    partition: str
    config: SafetyConfig = field(default_factory=SafetyConfig)
    cycles: int = 0
    recovering: bool = True
    tripped: bool = False
    trip_reason: str = ""
    acknowledged: bool = False  # an operator reset the breaker: the mass want in hand is paced, not tripped on
    _terminated: deque[datetime] = field(default_factory=deque)
    _acted: deque[tuple[datetime, int]] = field(default_factory=deque)

    def copy(self) -> Safety:
        """A copy whose changes leave this one alone: the windows' queues copied, the (frozen) config shared —
        ``copy.deepcopy`` copied the config and every datetime too, a pass's costliest copy."""
        return replace(self, _terminated=deque(self._terminated), _acted=deque(self._acted))

    @property
    def read_only(self) -> bool:
        """True during the first cycles after a start, when the controller only observes."""
        return self.cycles < self.config.read_only_cycles

    def _recent(self, now: datetime) -> tuple[int, int]:
        while self._terminated and self._terminated[0] <= now - self.config.trip_window:
            self._terminated.popleft()
        while self._acted and self._acted[0][0] <= now - self.config.recovery_window:
            self._acted.popleft()
        return len(self._terminated), sum(n for _, n in self._acted)

    def gate(self, launches: Sequence[Launch], candidates: Sequence[Terminate], *, fleet_size: int,
             idle: Mapping[str, int], agree: Mapping[str, bool], now: datetime) -> Gated:
        """What may be done this pass. Call ``done`` afterwards with what was actually done."""
        if self.read_only:
            return Gated((), (), sum(a.count for a in launches), len(candidates), True)
        notes: list[Note] = []
        terminated_recently, acted_recently = self._recent(now)
        eligible: list[Terminate] = []
        for t in candidates:
            iid = t.instance.instance_id
            if not agree.get(iid, False):
                continue  # tags and row disagree (or no row): never terminate (ADR-11)
            if idle.get(iid, 0) < self.config.idle_observations:
                continue
            eligible.append(t)
        eligible = self._termination_cap(eligible, fleet_size, terminated_recently, notes)
        allowed_launches = list(launches)
        held_l = 0
        held_t = len(candidates) - len(eligible)
        held_r = 0
        if self.recovering:
            cap = max(1, math.floor(Decimal(fleet_size) * self.config.recovery_share)) - acted_recently
            ordered: list[Launch | Terminate] = sorted(
                [*launches, *eligible], key=lambda a: (tier_rank(a.tier), isinstance(a, Terminate)))
            allowed_launches, eligible = [], []
            for a in ordered:
                n = a.count if isinstance(a, Launch) else 1
                take = max(0, min(n, cap))
                cap -= take
                if isinstance(a, Launch):
                    if take:
                        allowed_launches.append(replace(a, count=take))
                    held_l += n - take
                    held_r += n - take
                elif take:
                    eligible.append(a)
                else:
                    held_t += 1
                    held_r += 1
        return Gated(tuple(allowed_launches), tuple(eligible), held_l, held_t, False, tuple(notes), held_r)

    def _termination_cap(self, eligible: list[Terminate], fleet_size: int, terminated_recently: int,
                         notes: list[Note]) -> list[Terminate]:
        """What the 2 %/10 min cap lets through: as much of the surplus as the window still allows (the rest
        waits), nothing when the breaker is open or this pass wants a mass termination (which opens it)."""
        trip_cap = max(1, math.floor(Decimal(fleet_size) * self.config.trip_share))
        mass = max(trip_cap + 1, math.ceil(Decimal(fleet_size) * self.config.halt_share))
        if self.tripped:
            return []
        if len(eligible) < mass:
            self.acknowledged = False
        elif not self.acknowledged:
            self.tripped = True
            self.trip_reason = (f"{len(eligible)} termination(s) wanted at once, {self.config.halt_share:%} or more "
                                f"of {fleet_size}: a mass termination (the cap paces {trip_cap} per "
                                f"{self.config.trip_window}, {terminated_recently} done in it)")
            notes.append(Note("breaker-tripped", self.trip_reason, attributes={
                "partition": self.partition, "wanted": len(eligible), "cap": trip_cap, "fleet": fleet_size}))
            return []
        return eligible[:max(0, trip_cap - terminated_recently)]

    def done(self, gated: Gated, launched: int, terminated: int, now: datetime) -> None:
        """Record a finished pass: counts what was done against the windows, ends recovery when nothing was
        held back by the recovery cap."""
        self.cycles += 1
        if gated.read_only:
            return
        self._terminated.extend([now] * terminated)
        if self.recovering:
            self._acted.append((now, launched + terminated))
            if gated.held_by_recovery == 0:
                self.recovering = False

    def reset(self) -> None:
        """An operator closed the breaker: the surplus in hand is paced from now on."""
        self.tripped, self.trip_reason, self.acknowledged = False, "", True
