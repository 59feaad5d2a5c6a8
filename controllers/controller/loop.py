"""The level-triggered controller for one partition (ADR-10): each pass re-reads the truth — the provider's
instances with our tags, the scheduler's work, the inputs in force — decides, and acts within the bounds
(ADR-12). Messages (notices, losses) only wake it early. Every decision is an event with a cause through the
outbox. The clock is injected; ``step`` is synchronous and testable.

A pass is observe → decide → apply: ``observe.Observer`` reads (and records what it saw), ``decide.begin`` and
``decide.decide`` are pure, ``apply.Actuator`` executes the decision under the token budget and records the pass.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from contracts.provider import Clock, Provider
from contracts.schema import Contract
from controllers.planning import PlanSet

from .apply import Actuator
from .approvals import alertmanager_payload
from .breaker import Safety
from .claims import ClaimSource
from .decide import begin, decide
from .decision import Decision, Desired, Memory
from .floor_keeper import FloorKeeper
from .metrics import PassMetrics, PassView
from .model import Observation
from .observe import Observer, observe
from .pgbatch import pipelined
from .revocation import LoggingRevoker, Revoker
from .settings import ControllerSettings, PassReport
from .store import Store
from .userdata import AgentCredentials

__all__ = ["Controller", "ControllerSettings", "PassReport", "alertmanager_payload", "observe", "quiet_until"]


class Controller:
    def __init__(self, settings: ControllerSettings, provider: Provider, conn: Any, source: ClaimSource,
                 contracts: Mapping[str, Contract], clock: Clock, *, revoker: Revoker | None = None,
                 webhook: Callable[[dict[str, Any]], None] | None = None,
                 agent_bundle: tuple[bytes, bytes] | None = None,
                 agent_credentials: AgentCredentials | None = None,
                 lease: Callable[[Any, str, str, str, datetime, timedelta], Any] | None = None,
                 metrics: Callable[[Desired], PassMetrics] | None = None) -> None:
        from . import lease as lease_mod

        self.s = settings
        self.store = Store(conn, settings.region, settings.partition, actor=settings.holder,
                           operator=settings.operator)
        self.conn = conn
        self.contracts = {k: c for k, c in contracts.items() if c.partition == settings.partition}
        self.clock = clock
        self.desired = Desired(settings, self.contracts)
        self.memory = Memory.fresh(settings)
        self.observer = Observer(provider, self.store, conn, source, settings.safety.idle_observations)
        self.actuator = Actuator(self.desired, provider, self.store, conn, revoker or LoggingRevoker(),
                                 webhook=webhook, agent_bundle=agent_bundle,
                                 agent_credentials=agent_credentials)
        self._lease = lease or lease_mod.acquire
        self.last: Decision | None = None
        self.metrics = metrics(self.desired) if metrics is not None else None
        self._quiet_until: datetime | None = None   # after a quiet pass: when a timed rule may change the decision

    # --- what it talks to (replaceable, e.g. by a test) ---------------------------------------------
    @property
    def provider(self) -> Provider:
        """The cloud provider the observer lists and the actuator launches and terminates with."""
        return self.observer.provider

    @provider.setter
    def provider(self, provider: Provider) -> None:
        """Swap the provider of both the observer and the actuator, so a pass never reads from one and acts on
        another."""
        self.observer.provider = self.actuator.provider = provider

    @property
    def source(self) -> ClaimSource:
        """The scheduler the observer reads claims and idle nodes from."""
        return self.observer.source

    @source.setter
    def source(self, source: ClaimSource) -> None:
        """Swap the scheduler the next pass reads claims from."""
        self.observer.source = source

    # --- what the leader remembers (read-only views) ------------------------------------------------
    @property
    def safety(self) -> Safety:
        """The safety rules' state as of the last pass (read-only cycles, gradual ramp)."""
        return self.memory.safety

    @property
    def floor(self) -> FloorKeeper:
        """The floor keeper's state as of the last pass."""
        return self.memory.floor

    @property
    def previous(self) -> PlanSet | None:
        """The plans in force after the last pass; None before the first plan."""
        return self.memory.previous

    @property
    def notices(self) -> dict[str, deque[datetime]]:
        """Interruption notice times per workload, oldest first: what the breach rate counts."""
        return self.observer.notices

    def use(self, contracts: Mapping[str, Contract]) -> None:
        """Plan the next pass with ``contracts`` (a refreshed, verified bundle's). Call it between passes only:
        a pass decides and applies with one desired state (level-triggered, ADR-10)."""
        self.contracts = {k: c for k, c in contracts.items() if c.partition == self.s.partition}
        self.desired = Desired(self.s, self.contracts)
        self._quiet_until = None
        self.actuator.desired = self.desired
        if self.metrics is not None:
            self.metrics.use(self.desired)

    # --- inputs --------------------------------------------------------------------------------------
    def record_notice(self, workload: str, at: datetime) -> None:
        """Fed by the waker from lifecycle events: the breach-rate signal."""
        self.observer.record_notice(workload, at)
        self._quiet_until = None

    def due(self, now: datetime, woken: bool) -> bool:
        """Whether a pass at ``now`` can decide anything the last pass did not (ADR-10: the cost of evaluation
        follows change). Not after a quiet pass (``PassReport.quiet``: it decided, recorded and did nothing) unless
        ``woken`` — the caller saw an input change: the provider's listing or rate card, the rankings or exclusions
        in force, the claims — or a timed rule's deadline came (``requeue_after``: fallback, hall memory, an
        exclusion's end, a notice leaving the breach window), or half the lease's term passed (the lease is renewed
        by passes). A caller that cannot tell when its inputs change passes every interval, as the live loop does."""
        return woken or self._quiet_until is None or now >= self._quiet_until

    # --- one pass ------------------------------------------------------------------------------------
    def step(self) -> PassReport:
        """One pass: lease, observe, decide, apply (and its metrics, when the controller has them)."""
        started = time.perf_counter()
        try:
            with pipelined(self.conn):   # a pass's statements sent together: a few round trips, not one each
                view = self._step()
        except Exception:
            if self.metrics is not None:
                self.metrics.failed()
            raise
        if self.metrics is not None:
            self.metrics.record(replace(view, seconds=time.perf_counter() - started))
        self._quiet_until = quiet_until(view.report, view.now, self.s.lease_ttl)
        return view.report

    def _step(self) -> PassView:
        now = self.clock.now()
        lease = self._lease(self.conn, self.s.region, self.s.partition, self.s.holder, now, self.s.lease_ttl)
        if lease is None:
            return PassView(PassReport(leader=False), 0.0, now)
        glance = self.observer.glance(getattr(lease, "generation", None), now, breach_window=self.s.breach_window,
                                      want_generation=self.memory.previous is None)
        memory, hold = begin(glance, self.desired, self.memory, now)
        seen: Observation | None = None
        if hold is not None:
            decision = hold
        else:
            seen = self.observer.look(glance, now)
            decision = decide(seen, self.desired, memory, now)
        self.memory = decision.memory
        self.last = decision
        return PassView(self.actuator.apply(decision, now), 0.0, now, decision, seen)


def quiet_until(report: PassReport, now: datetime, lease_ttl: timedelta) -> datetime | None:
    """After a pass at ``now``: until when another pass on unchanged inputs would decide the same — the soonest
    timed rule (``requeue_after``), at most half the lease's term (a pass renews it); None after a pass that was
    not quiet (the next pass is due whatever changed)."""
    if not report.quiet:
        return None
    renew = lease_ttl / 2
    return now + min(report.requeue_after or renew, renew)
