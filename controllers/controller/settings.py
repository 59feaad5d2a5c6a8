"""One partition controller's settings and the report of one pass (plain frozen dataclasses, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from controllers.planning import PlannerConfig

from .agent_versions import AgentRollout
from .breaker import SafetyConfig
from .fallback import FallbackConfig
from .floor_keeper import FloorConfig

__all__ = ["ControllerSettings", "PassReport"]


@dataclass(frozen=True)
class ControllerSettings:
    region: str
    partition: str                       # "<region>/<cluster>"
    holder: str = "controller"
    lease_ttl: timedelta = timedelta(seconds=15)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    fallback: FallbackConfig = field(default_factory=FallbackConfig)
    floor: FloorConfig = field(default_factory=FloorConfig)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    breach_window: timedelta = timedelta(hours=1)
    mass_loss_share: float = 0.10        # running instances vanishing unannounced in one pass that mean "stop"
    mass_loss_min: int = 5
    trust_domain: str = "sco.internal"
    nats_urls: tuple[str, ...] = ()       # the agents' relay (without credentials: each instance gets its own)
    metadata_url: str | None = None       # the agents' metadata endpoint; "{instance}" is the instance's id
    distributor_url: str | None = None    # the bundle distributor's base URL (docs/agent.md)
    operator: str | None = None          # who operates this controller: it raises spend, so it may not approve it
    approver_keys: tuple[tuple[str, bytes], ...] = ()   # (approver e-mail, PEM public key): whose answers verify
    agent: AgentRollout | None = None     # the agent images new launches boot (ADR-32); None: the provider's image


@dataclass(frozen=True)
class PassReport:
    leader: bool
    read_only: bool = False
    generation: int = 0
    launched: int = 0
    terminated: int = 0
    held: int = 0
    throttled: bool = False
    events: tuple[str, ...] = ()
    requeue_after: timedelta | None = None   # advisory: the soonest a timed rule can change the decision
    quiet: bool = False   # decided nothing, recorded nothing (``Decision.quiet``) and did nothing
