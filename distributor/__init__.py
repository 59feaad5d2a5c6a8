"""The bundle distributor: each partition's signed bundles over HTTP, with ETags, behind authentication.

``sco distributor serve``; the agents' refresh and the controllers read from it (ADR-15, ADR-32).
"""

from __future__ import annotations

from .auth import Authenticator, PasswordTable, Principal, Role, allowed, digest
from .catalog import AGENT_FILES, CONTROLLER_FILES, BundleFile, Catalog, etag_matches
from .client import AgentBundleFeed
from .controller_feed import ControllerBundleFeed, Polled, SignedBundle, accept
from .gates import ClickHouseGates, GateSource, figures_from_counts
from .releases import Releases, partition_generation, serving_dir
from .rollout import (
    Action,
    GateFigures,
    Hold,
    Promote,
    RollBack,
    RolloutObserved,
    StartCanary,
    gate_failure,
    gate_windows,
    plan_rollout,
)
from .server import Distributor

__all__ = ["AGENT_FILES", "CONTROLLER_FILES", "Action", "AgentBundleFeed", "Authenticator", "BundleFile", "Catalog",
           "ClickHouseGates", "ControllerBundleFeed", "Distributor", "GateFigures", "GateSource", "Hold",
           "PasswordTable", "Polled", "Principal", "Promote", "Releases", "Role", "RollBack", "RolloutObserved",
           "SignedBundle", "StartCanary", "accept", "allowed", "digest", "etag_matches", "figures_from_counts",
           "gate_failure", "gate_windows", "partition_generation", "plan_rollout", "serving_dir"]
