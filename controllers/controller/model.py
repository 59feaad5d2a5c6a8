"""What the controller observes and decides, as frozen dataclasses (pure: no I/O here).

An **observed** instance is one the provider lists with our owner tags (ADR-11); its ``purpose`` (floor,
reclaimable, fallback) rides in the instance metadata. A **desired** slot count comes from the plan in force
(``controllers.planning``) plus the fallback arbiter. **Actions** carry stable keys so that a pass repeated
after a crash asks for the same thing, and the level-triggered diff against the provider's listing keeps a
launch from being repeated once its instances exist.

What a pass **observed** is here too (``Glance``, ``Market``, ``Observation``, ``InputsInForce``, and the
scheduler's ``WorkItem``, the workloads' ``Approval`` states and the approvers' unjudged ``Answer``): ``decide``
reads these types and nothing of ``observe`` or ``store``, which fill them (the import contract in pyproject).
The modules that work on them (``claims``, ``fallback``, ``approval_judge``) import them from here and name
them again, so this module needs none of theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contracts.approvals import SignedDecision
    from contracts.pools import Pool

__all__ = ["Answer", "Approval", "Glance", "Gone", "InputsInForce", "Launch", "Market", "Note", "Observation",
           "Observed", "OpenRequest", "Purpose", "SlotKey", "Terminate", "WorkItem"]


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

    # cached on the (immutable) instance: a pass asks each of them several times, and an observer keeps the
    # instances it saw while the provider lists them unchanged (``observe``)
    @cached_property
    def key(self) -> SlotKey:
        """The slot the instance fills: workload, pool and purpose."""
        return SlotKey(self.workload, self.pool, self.purpose)

    @cached_property
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
        """The workload the launch is for."""
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


@dataclass(frozen=True)
class InputsInForce:
    """Rankings, groups and exclusions in force. ``excluded``: pools being reclaimed (units move away); ``full``:
    pools excluded because launches were refused (closed to new units, held units stay; no probation after)."""

    scores: dict[str, float]
    groups: dict[str, str]
    excluded: set[str]
    probation: set[str]
    full: set[str] = field(default_factory=set)
    full_since: dict[str, datetime] = field(default_factory=dict)   # when each ``full`` pool was excluded
    depth: dict[str, tuple[float, float]] = field(default_factory=dict)   # the ranking's forward share, quota headroom
    # the ranking's reclaims and instance-hours over its window per pool: the baseline reclaim estimate's evidence
    exposure: dict[str, tuple[float, float]] = field(default_factory=dict)
    # P(reclaim within 1 h) the ranking forecasts per pool (``rankings_in_force.reclaim_p_1h``), where it does
    forecast: dict[str, float] = field(default_factory=dict)
    # the soonest an exclusion or its probation ends: the sets above change then with nothing else changing
    changes_at: datetime | None = None


@dataclass(frozen=True)
class Glance:
    """The first look of a pass: enough to start it (tenure, breaker) and to decide to hold (mass loss)."""

    tenure: int | None                      # the lease's generation: a change is a restart
    breaker_open: bool                      # the persisted termination breaker (an operator closes it)
    base_generation: int | None             # the newest plan generation in the database, when asked for
    instances: tuple[Observed, ...]
    rows: Mapping[str, Mapping[str, Any]]   # instance rows before this pass records the listing
    notices: Mapping[str, int] = field(default_factory=dict)   # per workload, in the breach window
    notices_age_at: datetime | None = None   # the soonest a notice leaves the breach window (``notices`` changes)


@dataclass(frozen=True)
class Market:
    """What the region offers this pass."""

    pools: Mapping[str, Pool]               # the catalogue
    free: Mapping[str, int]                 # rate card: free instances per pool
    reserved: Mapping[str, int]             # committed reservations: free instances per pool
    quota_free: int                         # guaranteed quota headroom (instances)
    inputs: InputsInForce                   # rankings, groups, exclusions, probation in force
    free_at: datetime | None = None         # when the rate card counted ``free`` (None: now)
    others_since_card: Mapping[str, int] = field(default_factory=dict)   # other partitions' launches since it


@dataclass(frozen=True)
class WorkItem:
    """A Slurm job or Kubernetes pod a scheduler lists (``claims``): its contract reference and its size."""

    source: str                  # slurm | kubernetes
    item_id: str                 # job id / pod namespace/name
    contract_ref: str | None     # "<name>@<version>" as declared, None when absent
    vcpu: float
    memory_gib: float
    state: str                   # pending | running
    node: str = ""               # where a running item runs (scheduler node name = instance name)


@dataclass(frozen=True)
class Approval:
    """The state of a workload's open or last approval request."""

    requested_at: datetime
    state: str                      # pending | granted | expired
    granted_eur: Decimal = Decimal(0)
    units: int = 0                  # what was asked for


@dataclass(frozen=True)
class OpenRequest:
    """An ``approval_requests`` row as the arbiter and the CLI read it."""

    request_id: str
    workload: str
    region: str
    approver: str | None            # named by the contract when the request was raised
    raised_by: str | None           # the identity that raised the spend (the controller's holder)
    requested_at: datetime
    state: str                      # pending | granted | denied | expired
    options: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class Answer:
    """A recorded answer not judged yet; ``signed`` is None when the stored record does not parse (``error``)."""

    decision_id: str
    request: OpenRequest
    signed: SignedDecision | None
    error: str = ""


@dataclass(frozen=True)
class Observation:
    """Everything a pass decides from."""

    glance: Glance
    rows: Mapping[str, Mapping[str, Any]]   # instance rows after recording the listing (idle counters fresh)
    gone: tuple[Gone, ...]                  # rows the listing no longer has (with the state they had)
    items: tuple[WorkItem, ...]             # the scheduler's pending and running work
    market: Market
    approvals: Mapping[str, Approval]
    committed_eur: Mapping[str, Decimal]    # per workload, held + consumed in the last 24 h
    fallback_launched_last_minute: int      # in the whole region (the 40/min stagger)
    answers: tuple[Answer, ...] = ()        # signed answers to approval requests the arbiter has not judged
    unrevoked: tuple[Gone, ...] = ()        # ended instances whose failed revocation is due again (ADR-31)

    @property
    def instances(self) -> tuple[Observed, ...]:
        """The partition's instances as the provider listed them this pass."""
        return self.glance.instances
