"""What a plausible notice does to the node, decided from what the agent already knows (pure).

A flood of notices for the node's own instance coalesces: the first hard notice drains, and every later one
changes nothing. A copy of a notice already seen (same kind and id, on either channel) is only counted
(``sco_agent_notices_duplicate_total``); a distinct notice that changes nothing gets one event
(``already-draining`` / ``recorded``) while fewer than ``bound`` such events were recorded, and after that only
a counter (``sco_agent_notices_coalesced_total``). So 10,000 notices give one drain, at most ``bound`` + 1
notice events, and counters for the rest. The agent (``agent.runtime``) applies the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .check import MAX_RECORDED_NOTICES

__all__ = ["Coalesced", "NoticeState", "Verdict", "coalesce"]


class Verdict(StrEnum):
    """What the agent does with one plausible notice."""

    DRAIN = "drain"  # start a drain (a hard notice, or an advisory for opted-in workloads)
    DUPLICATE = "duplicate"  # seen before: counted, nothing else
    RECORD = "record"  # changes nothing: one event (within the bound)
    COALESCE = "coalesce"  # changes nothing, the bound is reached: counted only


@dataclass(frozen=True, slots=True)
class NoticeState:
    """What the agent knows when a plausible notice arrives."""

    seen: bool  # this (kind, notice id) was admitted before
    draining: bool  # a hard notice's drain is under way (or done: the node is going away)
    advisory_running: bool  # an advisory drain is in progress
    advisory_workloads: bool  # the held bundle opts at least one workload into advisory drains
    recorded: int  # events already recorded for notices that changed nothing


@dataclass(frozen=True)
class Coalesced:
    """The decision: a verdict and, for RECORD/COALESCE, the action named on the event (or counted)."""

    verdict: Verdict
    action: str = ""  # already-draining | recorded


_DRAIN = Coalesced(Verdict.DRAIN)
_DUPLICATE = Coalesced(Verdict.DUPLICATE)


def coalesce(kind: str, state: NoticeState, bound: int = MAX_RECORDED_NOTICES) -> Coalesced:
    """The verdict for one plausible notice of ``kind`` ("notice" | "advisory") given ``state``."""
    if state.seen:
        return _DUPLICATE
    if kind == "advisory":
        if state.draining or state.advisory_running:  # the drain in progress already covers everything it would
            action = "already-draining"
        elif not state.advisory_workloads:
            action = "recorded"
        else:
            return _DRAIN
    elif state.draining:  # a second hard notice: the drain in progress continues
        action = "already-draining"
    else:
        return _DRAIN
    return Coalesced(Verdict.RECORD if state.recorded < bound else Verdict.COALESCE, action)
