"""The shared vocabulary of SCO.

The interruption contract, tiers, compiler and feasibility rules, signed bundles and the agent's record in
them, the pool catalogue, the lifecycle event model, NATS subjects and what counts as a reclaim, and the
composite pool score.

Imports nothing else of ours. Names are loaded lazily so that the agent, which needs only
``contracts.bundle_verify``, ``contracts.signing``, ``contracts.canonical``, ``contracts.agent_record`` and
``contracts.subjects`` (among the standard-library-only modules), does not pay for pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Contract": "schema", "ContractSpec": "schema", "TierName": "schema", "Scheduler": "schema",
    "CheckpointMode": "schema", "RestartSemantics": "schema", "FallbackPolicy": "schema",
    "TIERS": "tiers", "resolve": "tiers",
    "Finding": "findings", "Severity": "findings",
    "CompilerSettings": "settings",
    "Pool": "pools", "PoolCatalogue": "pools", "PurchaseModel": "pools", "load_catalogue": "pools",
    "CompileResult": "compiler", "CompiledWorkload": "compiler", "check_repo": "compiler", "check_text": "compiler",
    "publish": "bundle", "GovernanceError": "bundle",
    "verify_bundle": "bundle_verify", "verify_bundle_bytes": "bundle_verify", "BundleError": "bundle_verify",
    "canonical_bytes": "canonical", "digest": "canonical",
    "sign_blob": "signing", "verify_blob": "signing", "generate_keypair": "signing",
    "Event": "events", "EventKind": "subjects", "event_subject": "subjects", "notice_subject": "subjects",
    "advisory_subject": "subjects", "EVENTS_STREAM": "subjects",
    "RECLAIM_KINDS": "subjects", "is_reclaim": "subjects",
    "composite_score": "scoring",
    "AgentRecord": "agent_record", "AgentRecordError": "agent_record",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'contracts' has no attribute {name!r}")
    return getattr(importlib.import_module(f"contracts.{module}"), name)
