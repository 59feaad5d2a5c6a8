"""The boundaries the drain engine acts through (ADR-14): the scheduler, the local actuator, credentials.

Production adapters: ``agent.drain.slurm`` (scontrol/squeue/scancel), ``agent.drain.kube`` (a few plain HTTPS calls),
``agent.drain.local`` (signal job processes; kubelet graceful shutdown behind a systemd inhibitor). Test doubles
sit beside them in ``agent.drain.local`` (``RecordingActuator``) and in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..model import Contract, Unit

__all__ = ["EVICT_BLOCKED", "EVICT_DONE", "EVICT_GONE", "Credentials", "LocalActuator", "LocalPlan",
           "SchedulerAdapter"]

EVICT_DONE = "evicted"  # the scheduler accepted the eviction / the signal was delivered
EVICT_GONE = "gone"  # the unit no longer exists
EVICT_BLOCKED = "blocked"  # refused for now (Kubernetes 429: a PodDisruptionBudget); retry until the budget


class SchedulerAdapter(Protocol):
    """Drain through the scheduler.

    Every call must answer within ``scheduler_timeout_s`` (800 ms) or the
    engine switches to the local path. An adapter may also offer an asyncio twin of any method, named with
    an ``a`` prefix (``amark_unschedulable``...); the engine then awaits it instead of using a thread.
    """

    name: str

    def mark_unschedulable(self, reason: str) -> None:
        """Kubernetes: taint + cordon. Slurm: ``scontrol update nodename=X state=drain reason=...``."""

    def mark_schedulable(self, reason: str) -> None:
        """Undo ``mark_unschedulable`` after an advisory that no reclaim followed (ADR-16).

        Kubernetes removes the reclaim taint and uncordons; Slurm resumes the node only when its drain reason
        is the advisory's.
        """

    def units(self) -> list[Unit]:
        """Contracted work still on this node (pods / jobs)."""

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        """Start the unit's eviction with grace period ``grace_s`` and signal its checkpoint.

        ``grace_s`` is the whole seconds left of the contract's drain budget, decided by the engine
        (``drain_plan.eviction_grace_s``). Kubernetes: Eviction API (429 -> EVICT_BLOCKED). Slurm: the contract's
        signal to the batch step.
        """

    def finish(self, unit: Unit, contract: Contract) -> None:
        """The budget is nearly spent and the unit is still here. Slurm: requeue if requeueable."""

    def set_ready(self, ready: bool, reason: str) -> None:
        """Without a valid contract the node must not take work (Kubernetes label+taint, Slurm drained)."""


@dataclass(frozen=True)
class LocalPlan:
    """One workload for the local actuator: its contract, its deadline and the units the scheduler listed."""

    contract: Contract
    deadline: float  # monotonic seconds
    units: tuple[Unit, ...] = ()  # empty when the scheduler never answered


class LocalActuator(Protocol):
    """Drain without the scheduler (ADR-14). Observable by tests without powering anything off."""

    name: str

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        """Begin the local drain: signal the job processes / start the kubelet's graceful shutdown."""

    def finish(self, plans: list[LocalPlan]) -> None:
        """Deadline reached: stop what is left (SIGTERM/SIGKILL job processes)."""

    def remaining(self) -> int | None:
        """Work units still running on this node, or None when the actuator cannot tell."""


class Credentials(Protocol):
    """What the node holds and gives up at the end of a hard notice's drain (ADR-31)."""

    def release_leases(self) -> int:
        """Release the work leases this node holds; return how many."""

    def revoke_tokens(self) -> list[str]:
        """Best-effort revocation of the node's own tokens (ADR-31); return what was revoked."""
