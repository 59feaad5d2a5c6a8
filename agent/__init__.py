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
    "BundleStore": "bundle", "HeldBundle": "bundle",
    "DrainEngine": "drain", "DrainReport": "drain", "order_workloads": "drain_plan", "DrainPlan": "drain_plan",
    "plan_drain": "drain_plan",
    "SchedulerAdapter": "adapters", "LocalActuator": "adapters", "LocalPlan": "adapters", "Credentials": "adapters",
    "SlurmAdapter": "slurm", "KubeAdapter": "kube",
    "SlurmProcessActuator": "local", "KubeletShutdownActuator": "local", "RecordingActuator": "local",
    "NodeCredentials": "credentials", "Spool": "spool", "Metrics": "metrics", "make_event": "events",
    "Notice": "notices", "parse_notice": "notices", "NoticeIntake": "intake", "Refusal": "notice_check",
    "check_notice": "notice_check", "check_raw": "notice_check", "Contract": "model", "NodeIdentity": "model",
    "Unit": "model", "AgentError": "model",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent.{module}"), name)
