"""One machine's scale-down as a small state machine: ``plan(flow, observed, now)`` is pure and says what to
do next; :class:`~controllers.plugpool.pool.PlugPool` applies it.

    SHUTDOWN ─ poweroff pod ─▶ WAIT_NOT_READY (≤ notReadyTimeout) ─▶ GRACE ─▶ PLUG_OFF ─▶ REMOVE_POD ─▶
    DELETE_NODE ─▶ DONE

A dead node (NotReady when the flow starts) skips the pod; an instance with no Node (never registered) goes
straight to PLUG_OFF. Before the shutdown and before every plug-off attempt, a registered Node without the
ToBeDeletedByClusterAutoscaler taint aborts the flow: the machine keeps its power.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from .nodes import has_delete_taint, is_ready

__all__ = ["Action", "Flow", "Observed", "Phase", "plan"]


class Phase(enum.Enum):
    SHUTDOWN = "shutdown"
    WAIT_NOT_READY = "wait-not-ready"
    GRACE = "grace"
    PLUG_OFF = "plug-off"
    REMOVE_POD = "remove-pod"
    DELETE_NODE = "delete-node"
    DONE = "done"
    ABORTED = "aborted"


class Action(enum.Enum):
    WAIT = "wait"
    CREATE_POD = "create-pod"
    SWITCH_OFF = "switch-off"
    DELETE_POD = "delete-pod"
    DELETE_NODE = "delete-node"
    NONE = "none"  # a pure phase change


@dataclass(frozen=True)
class Flow:
    machine: str
    phase: Phase
    since: float  # when the current phase began
    started: float
    with_pod: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Observed:
    node: dict[str, Any] | None  # the machine's registered Node, read just now
    pod_exists: bool


def start(machine: str, node: dict[str, Any] | None, now: float) -> Flow:
    """A new scale-down flow: a shutdown first when the node is registered, else the plug off."""
    return Flow(machine, Phase.SHUTDOWN if node is not None else Phase.PLUG_OFF, now, now)


def plan(flow: Flow, seen: Observed, not_ready_timeout: float, grace: float, now: float) -> tuple[Action, Flow]:
    """The next action and the flow as it will be once that action has succeeded."""
    node = seen.node
    if flow.phase in (Phase.SHUTDOWN, Phase.WAIT_NOT_READY, Phase.GRACE, Phase.PLUG_OFF) and (
        node is not None and not has_delete_taint(node)
    ):
        why = f"node {flow.machine} is registered without the ToBeDeletedByClusterAutoscaler taint; keeping power"
        return Action.NONE, replace(flow, phase=Phase.ABORTED, since=now, reason=why)
    if flow.phase is Phase.SHUTDOWN:
        if node is None:
            return Action.NONE, replace(flow, phase=Phase.PLUG_OFF, since=now)
        if not is_ready(node):  # already dead: the same steps without the poweroff pod
            return Action.NONE, replace(flow, phase=Phase.GRACE, since=now, reason="node already NotReady")
        return Action.CREATE_POD, replace(flow, phase=Phase.WAIT_NOT_READY, since=now, with_pod=True)
    if flow.phase is Phase.WAIT_NOT_READY:
        if node is None or not is_ready(node):
            return Action.NONE, replace(flow, phase=Phase.GRACE, since=now)
        if now - flow.since >= not_ready_timeout:
            return Action.NONE, replace(flow, phase=Phase.GRACE, since=now, reason="notReadyTimeout passed")
        return Action.WAIT, flow
    if flow.phase is Phase.GRACE:
        if now - flow.since >= grace:
            return Action.NONE, replace(flow, phase=Phase.PLUG_OFF, since=now)
        return Action.WAIT, flow
    if flow.phase is Phase.PLUG_OFF:
        return Action.SWITCH_OFF, replace(flow, phase=Phase.REMOVE_POD, since=now)
    if flow.phase is Phase.REMOVE_POD:
        if seen.pod_exists:
            return Action.DELETE_POD, flow  # stays until the pod is really gone
        return Action.NONE, replace(flow, phase=Phase.DELETE_NODE, since=now)
    if flow.phase is Phase.DELETE_NODE:
        if node is not None:
            return Action.DELETE_NODE, replace(flow, phase=Phase.DONE, since=now)
        return Action.NONE, replace(flow, phase=Phase.DONE, since=now)
    return Action.WAIT, flow
