"""Provider adapters: OpenStack (openstacksdk), the simulated region's HTTP client, the provider-contract
feed client and the client-side token bucket for mutating calls. Heavy SDKs load only with their adapter."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "OpenStackProvider": "openstack", "KeystoneNodeCredentials": "node_credentials", "SimulatedProvider": "simulated",
    "FeedClient": "feeds", "RenewingConnection": "appcred", "KeystoneIssuer": "appcred",
    "TokenBucket": "budget", "MutatingHook": "budget",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'controllers.providers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"controllers.providers.{module}"), name)
