"""The simulated private-cloud region (DESIGN §5): topology, demand and reclaim engine, reclaimer strategies,
the in-process ``Provider`` (``SimulatedRegion``), the NATS + HTTP service and the pool-history writer.
Deterministic from a seed, on an injected clock. Names load lazily (aiohttp and pyarrow only when used)."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RegionConfig": "config", "RegionEngine": "engine", "SimulatedRegion": "region", "RegionService": "service",
    "VirtualClock": "clock", "WallClock": "clock", "write_history": "history", "build_pools": "topology",
    "select_victims": "reclaimer", "assumptions": "economics", "price_factor": "economics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'controllers.simregion' has no attribute {name!r}")
    return getattr(importlib.import_module(f"controllers.simregion.{module}"), name)
