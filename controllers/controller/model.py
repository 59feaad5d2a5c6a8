"""What the controller observes and decides, as frozen dataclasses (pure: no I/O here).

An **observed** instance is one the provider lists with our owner tags (ADR-11); its ``purpose`` (floor,
reclaimable, fallback) rides in the instance metadata. A **desired** slot count comes from the plan in force
(``controllers.planning``) plus the fallback arbiter. **Actions** carry stable keys so that a pass repeated
after a crash asks for the same thing, and the level-triggered diff against the provider's listing keeps a
launch from being repeated once its instances exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = ["Gone", "Launch", "Note", "Observed", "Purpose", "SlotKey", "Terminate"]


class Purpose(StrEnum):
    FLOOR = "floor"
    RECLAIMABLE = "reclaimable"
    FALLBACK = "fallback"


@dataclass(frozen=True, order=True)
class SlotKey:
    """Instances of one workload in one pool for one purpose."""

    workload: str
    pool: str
    purpose: Purpose


@dataclass(frozen=True)
class Observed:
    instance_id: str
    name: str
    workload: str
    pool: str
    partition: str
    generation: int
    purpose: Purpose
    status: str                     # provider InstanceStatus value
    hall: str = ""
    launched_at: datetime | None = None
    tier: str = ""

    @property
    def key(self) -> SlotKey:
        return SlotKey(self.workload, self.pool, self.purpose)

    @property
    def live(self) -> bool:
        """Counts toward the plan: building or active. A notified instance is leaving (its replacement is
        launched while it drains, ADR-09); deleted and error ones are gone."""
        return self.status in ("building", "active")


@dataclass(frozen=True)
class Gone:
    """An instance row whose instance the provider's listing no longer has; ``was`` is the row's state
    before (``draining``: it had a notice; ``running``/``launching``: it vanished without one)."""

    instance_id: str
    workload: str
    pool: str
    was: str = "running"
    launched_at: datetime | None = None

    @property
    def without_notice(self) -> bool:
        """Lost with no notice seen: the no-notice share of reclaims (ADR-17), or a listing glitch."""
        return self.was in ("running", "launching")


@dataclass(frozen=True)
class Launch:
    key: SlotKey
    count: int
    partition: str
    generation: int
    tier: str = ""
    cause: str = "plan"
    launch_key: str = ""            # stable id: partition/workload/pool/purpose/generation/have

    @property
    def workload(self) -> str:
        return self.key.workload


@dataclass(frozen=True)
class Terminate:
    instance: Observed
    reason: str                     # surplus | orphan | return
    tier: str = ""
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Note:
    """A decision to publish as an event (through the outbox) with its cause."""

    kind: str                       # contracts.subjects.EventKind value
    cause: str
    workload: str | None = None
    pool: str | None = None
    instance: str | None = None
    attributes: dict[str, str | int | bool | None] = field(default_factory=dict)
