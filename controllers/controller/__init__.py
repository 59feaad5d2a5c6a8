"""The thin controller: claims → plan (``controllers.planning``) → bounded reconcile against the
provider's tagged instances, with the floor keeper, the fallback arbiter, the exclusion reflex, leases,
budgets and breakers. A pass is observe (``observe``) → decide (``decide``, ``fallback_pass``, pure; the
actions and memory in ``decision``) → apply (``apply``), driven by ``loop.Controller.step``. Pure decision
modules (``decide``, ``fallback_pass``, ``reconcile``, ``breaker``, ``exclusion``, ``fallback``, ``floor_keeper``,
``claims``) are separate from the I/O (``observe``, ``apply``, ``store``, ``ledger``, ``lease``, ``loop``,
``exclusion_stream``, ``rebuild``). Revocation on termination is ``revocation`` (revokers report ``ok``/``reason``;
Keystone's, the NATS user's, both composed); the bundle chain (older generation / other partition refused) is
``bundle_guard``, and the refresh of the controller's own bundle between passes is ``bundle_refresh``; which agent
image a launch boots (ADR-32's share of new launches) is ``agent_versions``."""

from .agent_versions import AgentImage, AgentRollout, choose_agent, parse_agent_image
from .breaker import Safety, SafetyConfig
from .bundle_guard import BundleGuard, Refusal, judge
from .bundle_refresh import BundleRefresh, Refreshed, contracts_of
from .claims import ClaimSource, WorkItem, normalise
from .exclusion import Exclusion, ExclusionConfig, ExclusionWatcher, Signal
from .fallback import FallbackConfig, Need, arbitrate
from .floor_keeper import FloorConfig, FloorKeeper
from .model import Launch, Note, Observed, Purpose, SlotKey, Terminate
from .reconcile import Diff, desired_slots, diff
from .revocation import CompositeRevoker, KeystoneRevoker, LoggingRevoker, NatsUserRevoker, Revocation, Revoker

__all__ = ["AgentImage", "AgentRollout", "BundleGuard", "BundleRefresh", "ClaimSource", "CompositeRevoker", "Diff",
           "Exclusion", "ExclusionConfig", "ExclusionWatcher", "FallbackConfig", "FloorConfig", "FloorKeeper",
           "KeystoneRevoker", "Launch", "LoggingRevoker", "NatsUserRevoker", "Need", "Note", "Observed", "Purpose",
           "Refreshed", "Refusal", "Revocation", "Revoker", "Safety", "SafetyConfig", "Signal", "SlotKey", "Terminate",
           "WorkItem", "arbitrate", "choose_agent", "contracts_of", "desired_slots", "diff", "judge", "normalise",
           "parse_agent_image"]
