"""What a pass decides, as data: the controller's memory between passes, the desired state, the actions and
the ``Decision`` that carries them (no I/O here).

Actions carry stable keys — a launch its ``launch_key``, a termination its instance id — so that ``apply`` can
execute a decision idempotently, and a pass repeated after a crash asks for the same thing. A ``Publish`` is a
decided event; ``apply`` adds the events of what it did (placed, terminated, fallback-started, …) in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TypeVar

from contracts.schema import Contract
from controllers.planning import PlanSet, WorkloadPlan

from .approval_judge import Answer, Verdict
from .breaker import Gated, Safety
from .claims import WorkMemo
from .fallback import ApprovalRequest, FallbackLaunch
from .floor_keeper import FloorKeeper
from .model import Launch, Note, Terminate
from .pool_view import PoolMemo
from .settings import ControllerSettings

__all__ = ["Action", "AskApproval", "Decision", "Desired", "Memory", "OpenBreaker", "Place", "Publish",
           "RecordShortfall", "RecordVerdict", "Revoke", "StartFallback", "WriteClaims", "WritePlans"]


@dataclass(frozen=True)
class Desired:
    """What the partition should look like: its settings and the contracts in force there."""

    settings: ControllerSettings
    contracts: Mapping[str, Contract]       # by ref, this partition's only

    def contract(self, workload: str) -> Contract | None:
        """The newest version of ``workload``'s contract in force in the partition; None when it has none here."""
        found = [c for c in self.contracts.values() if c.workload == workload]
        return max(found, key=lambda c: c.version) if found else None


@dataclass
class Memory:
    """What the leader remembers between passes. In memory on purpose: a restart starts it afresh (read-only
    cycles, then gradual). ``decide`` never changes the memory it is given; it returns the next one."""

    safety: Safety
    floor: FloorKeeper
    previous: PlanSet | None = None
    short_since: dict[str, datetime] = field(default_factory=dict)     # fallback: shortfall since
    healthy_since: dict[str, datetime] = field(default_factory=dict)   # fallback: interruption below half since
    last_return: dict[str, datetime] = field(default_factory=dict)     # fallback: last return
    refused: set[str] = field(default_factory=set)                     # work items already reported refused
    tenure: int | None = None                                          # the lease generation held
    mass_alarm: bool = False
    refused_pools: dict[str, datetime] = field(default_factory=dict)   # capacity refusal: pool -> when (apply)
    # what passes derived from inputs a later pass may see again unchanged, by their values: a memo (emptying it
    # changes no decision), shared by the copies of a memory
    pools: PoolMemo = field(default_factory=PoolMemo)
    work: WorkMemo = field(default_factory=WorkMemo)
    # fallback: the instances being returned, per workload: no longer counted as doing the claim's work, so the
    # plan places their units on reclaimable capacity before they go (make before break)
    returning: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def fresh(cls, settings: ControllerSettings) -> Memory:
        """The memory of a leader that has just taken over: safety and floor afresh, nothing remembered from before."""
        return cls(Safety(settings.partition, settings.safety), FloorKeeper(settings.floor))

    def copy(self) -> Memory:
        """A copy ``decide`` may change without touching this one; the memos are shared (they only speed passes up)."""
        return Memory(self.safety.copy(), self.floor.copy(), self.previous, dict(self.short_since),
                      dict(self.healthy_since), dict(self.last_return), set(self.refused), self.tenure,
                      self.mass_alarm, dict(self.refused_pools), self.pools, self.work, dict(self.returning))


@dataclass(frozen=True)
class Publish:
    note: Note


@dataclass(frozen=True)
class Revoke:
    """Ban the node's workload identity and revoke its leases now, not at expiry (ADR-31)."""

    instance_id: str
    workload: str | None
    pool: str | None
    cause: str


@dataclass(frozen=True)
class WritePlans:
    plans: Mapping[str, WorkloadPlan]
    generation: int
    replanned: tuple[str, ...]


@dataclass(frozen=True)
class WriteClaims:
    claims: tuple[tuple[str, str, int, str], ...]        # (workload, source, units, pending|placed)
    refused: tuple[tuple[str, str, str, str], ...]       # (item, source, contract ref, reason)


@dataclass(frozen=True)
class StartFallback:
    """Reserve the cost in the ledger, then launch; consume the reservation or release it."""

    launch: FallbackLaunch
    cap_eur: Decimal
    approver: str | None
    generation: int


@dataclass(frozen=True)
class AskApproval:
    request: ApprovalRequest


@dataclass(frozen=True)
class RecordShortfall:
    workload: str
    units: int
    cause: str


@dataclass(frozen=True)
class RecordVerdict:
    """The arbiter's verdict on a signed answer to an approval request (before any reservation that counts it)."""

    answer: Answer
    verdict: Verdict


@dataclass(frozen=True)
class OpenBreaker:
    reason: str


@dataclass(frozen=True)
class Place:
    """A multi-create for one slot; ``replacing`` names the notified instances it stands in for."""

    launch: Launch
    replacing: tuple[str, ...] = ()


Action = (Publish | Revoke | WritePlans | WriteClaims | StartFallback | AskApproval | RecordShortfall | RecordVerdict
          | OpenBreaker | Place | Terminate)

A = TypeVar("A")


@dataclass(frozen=True)
class Decision:
    """One pass's decision, in the order ``apply`` executes it."""

    actions: tuple[Action, ...]
    memory: Memory                     # the memory after this pass (``apply`` records what it did in it)
    read_only: bool
    generation: int
    held: int                          # launches and terminations held back by the safety rules
    gated: Gated | None = None         # what the safety gate allowed; None when the pass holds everything
    requeue_after: timedelta | None = None
    # nothing to do and nothing recorded: another pass on the same inputs before ``requeue_after`` decides the same
    quiet: bool = False

    @property
    def notes(self) -> tuple[Note, ...]:
        """The notes the pass publishes, in the order it publishes them."""
        return tuple(a.note for a in self.actions if isinstance(a, Publish))

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of the notes the pass publishes, in order: a quick look at what a pass decided."""
        return tuple(n.kind for n in self.notes)

    def of(self, kind: type[A]) -> list[A]:
        """The actions of one type, in order."""
        return [a for a in self.actions if isinstance(a, kind)]
