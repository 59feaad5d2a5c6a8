"""The simulated region's records: an instance, a lifecycle record and the running statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.subjects import EventKind

__all__ = ["Inst", "SimEvent", "Stats", "no_notice_cause", "owner_of", "terminated"]


@dataclass(slots=True, eq=False)  # identity: two instances are never "equal"
class Inst:
    id: str
    pool: int
    vcpu: int
    launched: float
    owned: bool
    name: str = ""
    tags: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    user_data: str | None = None  # as the launch sent it (one string shared by a multi-create's instances)
    advisory_at: float | None = None
    notice_at: float | None = None
    terminate_at: float | None = None
    cause: str = ""
    drill: bool = False
    doomed: bool = False
    reserved: bool = False  # chosen by an advisory: kept for the reclaim that was forecast


@dataclass(slots=True)
class SimEvent:
    """A lifecycle record; ``RegionEngine.to_event`` turns it into ``contracts.events.Event``."""

    kind: EventKind
    time: float
    pool: str
    instance: str
    cause: str
    drill: bool = False
    workload: str = ""
    partition: str = ""
    attributes: dict[str, str | int | bool | None] = field(default_factory=dict)


@dataclass(slots=True)
class Stats:
    reclaimed: int = 0
    no_notice: int = 0
    advised: int = 0
    hall_reclaimed: int = 0
    instance_seconds: float = 0.0  # reclaimable instances integrated over time
    advisory_leads: list[float] = field(default_factory=list)

    @property
    def reclaim_rate_pct_h(self) -> float:
        """Reclaims per 100 instance-hours."""
        return 100.0 * self.reclaimed / (self.instance_seconds / 3600.0) if self.instance_seconds else 0.0


def owner_of(inst: Inst) -> tuple[str, str]:
    """(workload, partition) from an instance's owner tags; empty for other tenants' instances."""
    from contracts.provider import OwnerTags

    if not inst.tags:
        return "", ""
    found = OwnerTags.parse(inst.tags)
    return found.get("workload", ""), found.get("partition", "")


def no_notice_cause(cause: str) -> str:
    """The human-readable cause of a reclaim that came without notice (``reclaimed-no-notice``,
    ``hall-reclaim-no-notice``); other causes are kept as they are."""
    if cause.startswith("reclaim"):
        return "reclaimed-no-notice"
    return "hall-reclaim-no-notice" if cause == "hall-reclaim" else cause


def terminated(inst: Inst, pool_id: str, now: float) -> SimEvent:
    """The ``TERMINATED`` event of ``inst`` deleted at ``now``: its notice's cause, or the no-notice cause."""
    cause = inst.cause if inst.notice_at is not None else no_notice_cause(inst.cause)
    return SimEvent(EventKind.TERMINATED, now, pool_id, inst.id, cause, inst.drill, *owner_of(inst),
                    attributes={"notice_ms": None if inst.notice_at is None
                                else round((now - inst.notice_at) * 1000), "owned": inst.owned})
