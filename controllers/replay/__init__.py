"""The replay simulator (ADR-03): virtual time over a reclaim trace with the real planner."""

from .claims import SizedClaim, size_claims
from .compare import TARGETS, StrategySummary, summarise, verdicts
from .engine import PoolHistory, ReplayConfig, WorkloadOutcome, replay
from .trace import Reclaim, Trace

__all__ = [
    "TARGETS",
    "PoolHistory",
    "Reclaim",
    "ReplayConfig",
    "SizedClaim",
    "StrategySummary",
    "Trace",
    "WorkloadOutcome",
    "replay",
    "size_claims",
    "summarise",
    "verdicts",
]
