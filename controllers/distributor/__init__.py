"""The bundle distributor (``sco distributor serve``): each partition's signed bundles over HTTP, with ETags,
behind authentication; the agents' refresh and the controllers read from it (ADR-15, ADR-32)."""

from __future__ import annotations

from .auth import Authenticator, PasswordTable, Principal, Role, allowed, digest
from .catalog import AGENT_FILES, CONTROLLER_FILES, BundleFile, Catalog, etag_matches
from .client import AgentBundleFeed
from .controller_feed import ControllerBundleFeed, Polled, SignedBundle, accept
from .server import Distributor

__all__ = ["AGENT_FILES", "CONTROLLER_FILES", "AgentBundleFeed", "Authenticator", "BundleFile", "Catalog",
           "ControllerBundleFeed", "Distributor", "PasswordTable", "Polled", "Principal", "Role", "SignedBundle",
           "accept", "allowed", "digest", "etag_matches"]
