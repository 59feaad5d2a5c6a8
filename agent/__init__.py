"""The SCO node agent: acts on a reclaim notice within 2 s from what the node already holds.

ADR-09, ADR-13..17, ADR-31. Imports only the light ``contracts`` modules (stdlib + cryptography) and nats-py.
Names are loaded lazily: ``sco-agent check`` does not load the runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "runtime", "Clock": "runtime", "SystemClock": "runtime", "EventShipper": "shipping",
    "AgentConfig": "config", "UserData": "config", "load_userdata": "config", "userdata_document": "config",
    "BundleStore": "bundle", "HeldBundle": "bundle", "DrainEngine": "drain.engine", "DrainReport": "drain.engine",
    "order_workloads": "drain.plan", "DrainPlan": "drain.plan", "plan_drain": "drain.plan",
    "SchedulerAdapter": "drain.adapters", "LocalActuator": "drain.adapters", "LocalPlan": "drain.adapters",
    "Credentials": "drain.adapters", "SlurmAdapter": "drain.slurm", "KubeAdapter": "drain.kube",
    "SlurmProcessActuator": "drain.local", "KubeletShutdownActuator": "drain.local",
    "RecordingActuator": "drain.local", "NodeCredentials": "drain.credentials", "Spool": "spool", "Metrics": "metrics",
    "make_event": "events", "Notice": "notice.messages", "parse_notice": "notice.messages",
    "NoticeIntake": "notice.intake", "Refusal": "notice.check", "check_notice": "notice.check",
    "check_raw": "notice.check", "Contract": "model", "NodeIdentity": "model", "Unit": "model", "AgentError": "model",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent.{module}"), name)
