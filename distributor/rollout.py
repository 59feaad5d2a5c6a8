"""The bundle rollout planner (ADR-32): canary first, then every partition, rolled back on a failed gate.

A staged release goes to the canary partition first, is promoted to every partition once its gates held for
the soak, and is rolled back as soon as one gate fails.

Pure: ``plan_rollout(observed, settings, now) -> list[Action]``; the distributor's ``releases`` module reads the
directory into ``RolloutObserved`` and applies the actions, ``gates`` reads the figures from the events.

The gates compare the canary partition since the candidate reached it with the same length of time before it
(the previous generation, on the same partition, capped at the soak): any ``bundle-refused`` fails, and so does
an overrun rate (overruns per drain), wasted work per drain, a shortfall count, a breach-alarm count or a count
of work lost without a drain above the previous generation's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from contracts.settings import CompilerSettings

__all__ = ["Action", "GateFigures", "Hold", "Promote", "RollBack", "RolloutObserved", "StartCanary",
           "gate_failure", "gate_windows", "plan_rollout"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GateFigures(_Frozen):
    """What the canary partition's events say over one window."""

    refused: int = Field(0, ge=0, description="bundle-refused events (agents and controller)")
    drains: int = Field(0, ge=0, description="finished drains: drained + overrun events")
    overruns: int = Field(0, ge=0, description="overrun events")
    shortfalls: int = Field(0, ge=0, description="shortfall events")
    breaches: int = Field(0, ge=0, description="contract-breach alarms")
    lost: int = Field(0, ge=0, description="lost and no-notice-loss events: work lost without a drain")
    wasted_s: float = Field(0.0, ge=0, description="wasted work the finished drains measured (wasted_s), seconds")

    @property
    def overrun_rate(self) -> Decimal:
        """Overruns per finished drain (0 without drains)."""
        return Decimal(self.overruns) / Decimal(self.drains) if self.drains else Decimal(0)

    @property
    def wasted_per_drain(self) -> float:
        """Seconds of wasted work per finished drain (0 without drains)."""
        return self.wasted_s / self.drains if self.drains else 0.0


class RolloutObserved(_Frozen):
    """The distributor's directory and the gates, as the planner sees them."""

    release: int | None = Field(None, description="the staged release (None: nothing staged)")
    partitions: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="partition -> (served generation, staged generation); 0: none")
    canary: str | None = Field(None, description="the partition the candidate is served to, once started")
    started_at: datetime | None = Field(None, description="when the candidate reached the canary partition")
    candidate: GateFigures | None = Field(None, description="the canary since started_at (None: unknown)")
    baseline: GateFigures | None = Field(None, description="the canary over the same time before it")


class StartCanary(_Frozen):
    """Serve the staged release to ``partition`` (only)."""

    release: int
    partition: str


class Hold(_Frozen):
    """Nothing to change yet; ``reason`` says why."""

    release: int
    reason: str


class Promote(_Frozen):
    """Serve the staged release to every partition; keep the previous generation for a manual rollback."""

    release: int


class RollBack(_Frozen):
    """Serve the previous generation to the canary again and quarantine the release with ``reason``."""

    release: int
    reason: str


Action = StartCanary | Hold | Promote | RollBack


def gate_windows(started_at: datetime, now: datetime, soak: timedelta) -> tuple[tuple[datetime, datetime],
                                                                              tuple[datetime, datetime]]:
    """(candidate window, baseline window): since ``started_at``, and as long before it (at most ``soak``)."""
    length = min(max(now - started_at, timedelta(0)), soak)
    return (started_at, now), (started_at - length, started_at)


def gate_failure(candidate: GateFigures, baseline: GateFigures) -> str | None:
    """Why the candidate fails its gates against the previous generation (None: they hold)."""
    if candidate.refused:
        return f"{candidate.refused} bundle-refused event(s) in the canary partition"
    if candidate.overrun_rate > baseline.overrun_rate:
        return (f"overrun rate {candidate.overrun_rate:.3f} ({candidate.overruns}/{candidate.drains} drains) above "
                f"the previous generation's {baseline.overrun_rate:.3f} ({baseline.overruns}/{baseline.drains})")
    if candidate.wasted_per_drain > baseline.wasted_per_drain:
        return (f"wasted work {candidate.wasted_per_drain:.1f} s per drain above the previous generation's "
                f"{baseline.wasted_per_drain:.1f} s")
    for name in ("shortfalls", "breaches", "lost"):
        got, before = getattr(candidate, name), getattr(baseline, name)
        if got > before:
            return f"{got} {name} in the canary partition, the previous generation had {before}"
    return None


def plan_rollout(observed: RolloutObserved, settings: CompilerSettings, now: datetime) -> list[Action]:
    """The next step of the staged release: start the canary, hold, promote or roll back (nothing staged: [])."""
    release = observed.release
    if release is None:
        return []
    canary = settings.canary_partition
    if canary is None:
        return [Hold(release=release, reason="CAN001: canary_partition is not set in compiler.yaml; name the "
                                             "<region>/<cluster> that receives new bundles first")]
    if canary not in observed.partitions:
        return [Hold(release=release, reason=f"CAN002: canary_partition {canary!r} is not in the staged release "
                                             f"({', '.join(sorted(observed.partitions)) or 'no partitions'}); "
                                             "set one of those in compiler.yaml")]
    if observed.started_at is None or observed.canary != canary:
        return [StartCanary(release=release, partition=canary)]
    if observed.candidate is None or observed.baseline is None:
        return [Hold(release=release, reason="CAN003: the gate figures could not be read; the canary keeps the "
                                             "candidate and nothing else moves until they can")]
    failure = gate_failure(observed.candidate, observed.baseline)
    if failure is not None:
        return [RollBack(release=release, reason=failure)]
    soak = timedelta(hours=float(settings.canary_soak_h))
    elapsed = now - observed.started_at
    if elapsed < soak:
        return [Hold(release=release, reason=f"soaking on {canary}: {elapsed.total_seconds() / 3600:.1f} h of "
                                             f"{settings.canary_soak_h} h, gates hold")]
    return [Promote(release=release)]
