"""The replay simulator (ADR-03): virtual time over a reclaim trace with the real planner."""

from .claims import SizedClaim, size_claims
from .compare import TARGETS, StrategySummary, explain_step, summarise, verdicts, workload_verdicts
from .engine import PoolHistory, ReplayConfig, StepLoss, WorkloadOutcome, replay
from .trace import Reclaim, Trace

__all__ = [
    "TARGETS",
    "PoolHistory",
    "Reclaim",
    "ReplayConfig",
    "SizedClaim",
    "StepLoss",
    "StrategySummary",
    "Trace",
    "WorkloadOutcome",
    "explain_step",
    "replay",
    "size_claims",
    "summarise",
    "verdicts",
    "workload_verdicts",
]
