"""The pure scale-down step function and the unit parsers, without servers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from controllers.plugpool.scaledown import Action, Flow, Observed, Phase, plan, start
from controllers.plugpool.units import parse_duration, parse_quantity

TAINT = {"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}


def _node(ready: bool = True, tainted: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1"},
        "spec": {"taints": [TAINT] if tainted else []},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_the_flow_walks_every_step_in_order_with_the_timeouts() -> None:
    flow = start("n1", _node(), now=0.0)
    action, flow = plan(flow, Observed(_node(), False), 300, 120, now=0.0)
    assert (action, flow.phase) == (Action.CREATE_POD, Phase.WAIT_NOT_READY)
    action, same = plan(flow, Observed(_node(), True), 300, 120, now=299.0)
    assert action is Action.WAIT and same == flow
    action, flow = plan(flow, Observed(_node(), True), 300, 120, now=300.0)  # notReadyTimeout
    assert (action, flow.phase, flow.reason) == (Action.NONE, Phase.GRACE, "notReadyTimeout passed")
    assert plan(flow, Observed(_node(ready=False), True), 300, 120, now=419.0)[0] is Action.WAIT
    action, flow = plan(flow, Observed(_node(ready=False), True), 300, 120, now=420.0)
    assert flow.phase is Phase.PLUG_OFF
    action, flow = plan(flow, Observed(_node(ready=False), True), 300, 120, now=420.0)
    assert (action, flow.phase) == (Action.SWITCH_OFF, Phase.REMOVE_POD)
    action, flow = plan(flow, Observed(_node(ready=False), True), 300, 120, now=421.0)
    assert (action, flow.phase) == (Action.DELETE_POD, Phase.REMOVE_POD)
    action, flow = plan(flow, Observed(_node(ready=False), False), 300, 120, now=422.0)
    assert flow.phase is Phase.DELETE_NODE
    action, flow = plan(flow, Observed(_node(ready=False), False), 300, 120, now=422.0)
    assert (action, flow.phase) == (Action.DELETE_NODE, Phase.DONE)


def test_a_missing_taint_aborts_before_the_shutdown_and_before_the_plug_off() -> None:
    for phase in (Phase.SHUTDOWN, Phase.WAIT_NOT_READY, Phase.GRACE, Phase.PLUG_OFF):
        flow = Flow("n1", phase, since=0.0, started=0.0)
        action, after = plan(flow, Observed(_node(tainted=False), False), 300, 120, now=1000.0)
        assert (action, after.phase) == (Action.NONE, Phase.ABORTED), phase


def test_a_dead_node_skips_the_pod_and_an_unregistered_instance_goes_to_plug_off() -> None:
    action, flow = plan(start("n1", _node(ready=False), 0.0), Observed(_node(ready=False), False), 300, 120, 0.0)
    assert (action, flow.phase) == (Action.NONE, Phase.GRACE)
    assert start("n1", None, 0.0).phase is Phase.PLUG_OFF


def test_quantities_and_durations_parse_like_kubernetes_and_go() -> None:
    assert parse_quantity("64Gi") == Decimal(64 * 2**30) and parse_quantity("500m") == Decimal("0.5")
    assert parse_quantity("1e3") == Decimal(1000) and parse_quantity("24") == 24
    assert parse_duration("5m") == 300 and parse_duration("1m30s") == 90 and parse_duration("500ms") == 0.5
    assert parse_duration(2) == 2.0
    for bad in ("64GB", "", "1.2.3", "Gi"):
        with pytest.raises(ValueError):
            parse_quantity(bad)
    for bad_duration in ("5 minutes", "m", "-1s", ""):
        with pytest.raises(ValueError):
            parse_duration(bad_duration)
