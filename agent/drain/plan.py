"""The drain, decided: pure functions from the notice, the contracts and the units to what to do (ADR-14).

Nothing here waits, calls a scheduler or reads a clock: the engine (``agent/drain/engine.py``) passes ``now`` (its
monotonic clock) and the outcome of each scheduler call, and executes the answer. What is decided here:

* the **deadlines**, once per drain: a workload's deadline is ``received + drain_budget_s``, never later than
  ``received + terminate_in_s`` (the provider's window) — ``plan_drain``;
* the **order**: workloads start longest budget first, ties by name — ``order_workloads``; work with no
  (known) contract is drained as ``uncontracted`` with the shortest budget held — ``fallback_contract``;
* the **decision table** after each scheduler call — ``decide``: an answer continues; a refusal (429) is
  retried every ``RETRY_S`` until the retry would end inside the finish margin, then the refused units go
  local; a call slower than ``SCHEDULER_TIMEOUT_S`` (800 ms) or a failed one sends the rest of the drain
  local (the 800 ms rule: the deadline is the agent's) — except an advisory drain, which is deferred;
* the eviction's **grace period** (``eviction_grace_s``), the **finish** time (``FINISH_MARGIN_S`` before the
  deadline) and, on the local path, when to **finish and escalate** (``local_step``);
* when **verification** stops (``verify_settled``) and whether the workload **overran** (``overran``).

Standard library only (and the agent's own dataclasses).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from ..model import Contract, Unit
from .adapters import LocalPlan

__all__ = ["DEFAULT_BUDGET_S", "FINISH_MARGIN_S", "POLL_S", "RETRY_S", "SCHEDULER_TIMEOUT_S", "Action", "DrainPlan",
           "LocalStep", "Outcome", "WorkloadPlan", "call_outcome", "decide", "drain_deadline", "drain_reason",
           "eviction_grace_s", "fallback_contract", "local_step", "order_workloads", "overran", "plan_drain",
           "verify_settled"]

SCHEDULER_TIMEOUT_S = 0.8  # a scheduler call slower than this -> local drain (ADR-14, DESIGN §7)
FINISH_MARGIN_S = 1.0  # finish (requeue / SIGTERM) this long before the deadline
POLL_S = 0.25  # wait and verify poll period
RETRY_S = 1.0  # eviction retry after a 429
DEFAULT_BUDGET_S = 30  # the uncontracted budget when no contract is held


class Outcome(StrEnum):
    """What a scheduler call (or a round of evictions) came back with."""

    ANSWERED = "answered"  # within the scheduler timeout, every unit accepted or gone
    REFUSED = "refused"  # answered, but some evictions were refused for now (Kubernetes 429: a PDB)
    SLOW = "slow"  # no answer within the scheduler timeout
    FAILED = "failed"  # the call raised: same answer as slow


class Action(StrEnum):
    """What the engine does next."""

    CONTINUE = "continue"  # go on through the scheduler
    RETRY = "retry"  # sleep RETRY_S, then evict the refused units again
    GO_LOCAL = "go-local"  # drain through the local actuator
    DEFER = "defer"  # an advisory drain is not taken locally: stop, the hard notice will drain


class LocalStep(StrEnum):
    """On the local path, what to do with a workload's remaining units at this moment."""

    WAIT = "wait"  # before the finish margin
    FINISH = "finish"  # the finish margin is reached: stop what is left (SIGTERM)
    ESCALATE = "escalate"  # the deadline is reached: stop again, harder (SIGKILL)
    DONE = "done"  # finished and escalated already: nothing more to send


def call_outcome(elapsed_s: float | None, failed: bool = False,
                 timeout_s: float = SCHEDULER_TIMEOUT_S) -> Outcome:
    """Classify a scheduler call.

    Args:
        elapsed_s: Seconds the call took, or None when it had not answered when the timeout fired.
        failed: The call raised.
        timeout_s: The scheduler timeout (``scheduler_timeout_s``, 800 ms).

    Returns:
        FAILED for a failure, SLOW for no answer within ``timeout_s``, else ANSWERED.
    """
    if failed:
        return Outcome.FAILED
    if elapsed_s is None or elapsed_s > timeout_s:
        return Outcome.SLOW
    return Outcome.ANSWERED


def decide(outcome: Outcome, *, advisory: bool, now: float, deadline: float = math.inf) -> Action:
    """The decision table: retry, go local or defer, given a call's outcome and the time.

    Args:
        outcome: What the scheduler call (or eviction round) came back with.
        advisory: The drain is an advisory one (never local).
        now: The engine's monotonic time.
        deadline: The workload's deadline on the same clock (only a refusal needs it).

    Returns:
        CONTINUE on an answer; RETRY on a refusal while a retry still ends before the finish margin;
        GO_LOCAL on a slow or failed call or a refusal that outlasts the budget — DEFER instead of
        GO_LOCAL for an advisory drain.
    """
    if outcome is Outcome.ANSWERED:
        return Action.CONTINUE
    if outcome is Outcome.REFUSED and now + RETRY_S <= deadline - FINISH_MARGIN_S:
        return Action.RETRY
    return Action.DEFER if advisory else Action.GO_LOCAL


def drain_deadline(received: float, budget_s: float, terminate_in_s: float | None) -> float:
    """``received + budget_s``, capped by ``received + terminate_in_s`` (a past window counts as 0)."""
    deadline = received + budget_s
    if terminate_in_s is not None:
        deadline = min(deadline, received + max(terminate_in_s, 0.0))
    return deadline


def eviction_grace_s(budget_s: int, deadline: float, now: float) -> int:
    """The grace period of an eviction sent at ``now``.

    The whole seconds left before the deadline (at least 1, at most the budget), so the kubelet's kill lands before
    the agent's deadline, not after it.
    """
    return min(budget_s, max(1, int(deadline - now)))


def local_step(stage: int, now: float, deadline: float) -> LocalStep:
    """Local path: what to send now, given ``stage`` finishes already sent (0, 1 or 2).

    Finish at the finish margin, escalate at
    the deadline, each once.
    """
    if stage == 0:
        return LocalStep.FINISH if now >= deadline - FINISH_MARGIN_S else LocalStep.WAIT
    if stage == 1:
        return LocalStep.ESCALATE if now >= deadline else LocalStep.WAIT
    return LocalStep.DONE


def verify_settled(remaining: int | None, now: float, deadline: float) -> bool:
    """Verification ends when no unit remains, the count is unknown (None), or the deadline is reached."""
    return remaining == 0 or remaining is None or now >= deadline


def overran(remaining: int | None) -> bool:
    """Units left at the end of verification: an overrun (an unknown count is not one)."""
    return bool(remaining)


def order_workloads(contracts: Iterable[Contract]) -> list[Contract]:
    """Start order: longest drain budget first, then by name (documented in docs/agent.md)."""
    return sorted(contracts, key=lambda c: (-c.drain_budget_s, c.workload, c.version))


def fallback_contract(known: Iterable[Contract]) -> Contract:
    """For work with no (known) contract: the shortest budget held, or 30 s, with SIGTERM."""
    budget = min((c.drain_budget_s for c in known), default=DEFAULT_BUDGET_S)
    return Contract(workload="uncontracted", version="0", tier="", scheduler="", drain_budget_s=budget,
                    drain_signal="SIGTERM", advisory_drain=False, checkpoint_mode="none", framework=None,
                    checkpoint_interval_min=None, restart="", requeue=True, max_unit_length_min=None)


@dataclass(frozen=True)
class WorkloadPlan:
    """One workload's part of the drain: its contract, its units and its deadline."""

    contract: Contract
    units: tuple[Unit, ...]
    deadline: float  # monotonic seconds

    @property
    def finish_at(self) -> float:
        """When to stop waiting for the units and finish what is left (requeue)."""
        return self.deadline - FINISH_MARGIN_S


@dataclass(frozen=True)
class DrainPlan:
    """A notice's drain, decided once: the contracts in scope, the fallback, each one's deadline."""

    notice_id: str
    received: float  # monotonic seconds
    reason: str  # the unschedulable reason the scheduler records
    contracts: tuple[Contract, ...]  # in scope: all, or the advisory's opted-in ones
    selected: frozenset[str] | None  # the advisory's opted-in refs; None: a hard notice (everything)
    fallback: Contract
    deadlines: Mapping[str, float]  # contract ref -> monotonic deadline (scope and fallback)

    @property
    def advisory(self) -> bool:
        """An advisory drain: only the opted-in workloads, never the local path, never the credentials."""
        return self.selected is not None

    def deadline(self, contract: Contract) -> float:
        """The contract's deadline (computed by ``plan_drain``)."""
        return self.deadlines[contract.ref]

    def workloads(self, units: Iterable[Unit]) -> tuple[WorkloadPlan, ...]:
        """Group the listed units by contract (unknown ones under the fallback), in start order.

        An advisory drain keeps only its own workloads' units.
        """
        by_ref = {c.ref: c for c in self.contracts}
        groups: dict[str, tuple[Contract, list[Unit]]] = {}
        for unit in units:
            contract = by_ref.get(unit.contract_ref or "", self.fallback)
            if self.selected is not None and contract.ref not in self.selected:
                continue
            groups.setdefault(contract.ref, (contract, []))[1].append(unit)
        return tuple(WorkloadPlan(c, tuple(groups[c.ref][1]), self.deadline(c))
                     for c in order_workloads(c for c, _ in groups.values()))

    def local_scope(self) -> list[Contract]:
        """The workloads the local path covers when no unit list says otherwise, in start order."""
        return order_workloads(self.contracts or (self.fallback,))

    def local_plans(self, units: Iterable[Unit], only: Contract | None,
                    started: frozenset[str] | set[str]) -> list[LocalPlan]:
        """What the local actuator is to start, each workload with its deadline, in start order.

        ``only`` (one workload's refused units) or every workload in scope, less those already started locally.
        With ``only``, every given unit is that workload's; otherwise a unit goes to the contract it names.
        """
        targets = [only] if only is not None else list(self.contracts or (self.fallback,))
        listed = tuple(units)
        return [LocalPlan(c, self.deadline(c),
                          tuple(u for u in listed if only is not None or (u.contract_ref or "") == c.ref))
                for c in order_workloads(t for t in targets if t.ref not in started)]


def drain_reason(notice_id: str, advisory: bool) -> str:
    """The unschedulable reason the scheduler records for a notice's drain."""
    return f"sco advisory {notice_id}" if advisory else f"sco reclaim notice {notice_id}"


def plan_drain(notice_id: str, received: float, contracts: Iterable[Contract], terminate_in_s: float | None,
               selected: set[str] | None = None) -> DrainPlan:
    """Decide a notice's drain.

    Args:
        notice_id: The notice being drained.
        received: Its receipt on the engine's monotonic clock.
        contracts: The contracts the node holds.
        terminate_in_s: The provider's window (``terminate_at - issued_at``), or None.
        selected: An advisory's opted-in contract refs; None for a hard notice (everything).

    Returns:
        The plan: scope, fallback, every deadline computed once.
    """
    held = list(contracts)
    scope = tuple(c for c in held if c.ref in selected) if selected is not None else tuple(held)
    fallback = fallback_contract(scope)
    deadlines = {c.ref: drain_deadline(received, c.drain_budget_s, terminate_in_s) for c in (*scope, fallback)}
    return DrainPlan(notice_id, received, drain_reason(notice_id, selected is not None), scope,
                     None if selected is None else frozenset(selected), fallback, deadlines)
