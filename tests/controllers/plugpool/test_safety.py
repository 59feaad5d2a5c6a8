"""Each safety rule of the spec, one test each."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import grpc
import pytest

from controllers.plugpool.config import ConfigError, parse_config
from controllers.plugpool.plugs import PlugError
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from tests.controllers.plugpool.helpers import NS, Rig, config_dict
from tests.support.wait import wait_for

POD = "plugpool-poweroff-worker-1"


def test_plugpool_switches_only_the_plugs_in_its_configuration(rig: Rig) -> None:
    rig.plugs.add_plug("stranger", on=True)  # on the same device double, not configured
    rig.refresh()
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2), timeout=30)
    with pytest.raises(grpc.RpcError):
        rig.delete_nodes("stranger")
    with pytest.raises(PlugError, match="not a configured node"):
        rig.pool.board.switch("stranger", False)
    assert rig.plugs.switches("stranger") == [] and rig.plugs.is_on("stranger")
    assert {p for _, p, _, _ in rig.plugs.log} == {"worker-1", "worker-2"}


def test_a_configuration_with_two_nodes_on_one_plug_is_rejected() -> None:
    data = config_dict({"worker-1": "http://plug.example", "worker-2": "http://plug.example/"})
    with pytest.raises(ConfigError, match=r"'worker-1' and 'worker-2' share the plug http://plug\.example"):
        parse_config(data)


def test_a_registered_node_without_the_taint_is_never_shut_down_whatever_the_request(rig: Rig) -> None:
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1")  # no ToBeDeletedByClusterAutoscaler taint
    rig.refresh()
    with pytest.raises(grpc.RpcError) as exc:
        rig.delete_nodes("worker-1")
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "ToBeDeletedByClusterAutoscaler" in str(exc.value.details())
    with pytest.raises(grpc.RpcError):
        rig.ca.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1), timeout=30)
    time.sleep(0.2)
    assert rig.kube.requests_matching("POST", "/pods$") == []
    assert rig.plugs.switches("worker-1") == [] and rig.plugs.is_on("worker-1")


def test_a_taint_removed_during_the_scale_down_keeps_the_power_on_at_the_plug_off_check(rig: Rig) -> None:
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1", tainted=True)
    rig.refresh()
    rig.delete_nodes("worker-1")
    wait_for(lambda: rig.kube.get_object("Pod", POD, NS) is not None)
    rig.taint("worker-1", on=False)  # cluster-autoscaler cancelled the scale-down
    rig.set_ready("worker-1", False)
    wait_for(lambda: rig.pool.flow("worker-1") is None)
    time.sleep(0.3)
    assert rig.plugs.switches("worker-1") == [] and rig.kube.get_object("Node", "worker-1") is not None
    assert rig.instances() == {"worker-1": pb.InstanceStatus.instanceRunning}


def test_the_taint_is_checked_again_before_every_plug_off_attempt(rig: Rig) -> None:
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1", ready=False, tainted=True)  # dead: straight to grace and plug off
    rig.refresh()
    rig.plugs.fail("worker-1", 503)  # the first plug-off attempts fail
    rig.delete_nodes("worker-1")
    wait_for(lambda: len([e for e in rig.plugs.failed if e[2] == "turn_off"]) >= 2)  # attempts, retried
    rig.taint("worker-1", on=False)  # the machine came back and was untainted before the retry
    rig.plugs.heal("worker-1")
    wait_for(lambda: rig.pool.flow("worker-1") is None)
    time.sleep(0.2)
    assert rig.plugs.switches("worker-1") == [] and rig.plugs.is_on("worker-1")
    assert rig.kube.get_object("Node", "worker-1") is not None


def test_a_machine_that_registers_before_the_target_is_lowered_keeps_its_power(rig: Rig) -> None:
    rig.refresh()
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    rig.register("worker-1")  # registered, but plugpool has not refreshed yet
    with pytest.raises(grpc.RpcError) as exc:
        rig.ca.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1), timeout=30)
    assert "registered meanwhile and keeps its power" in str(exc.value.details())
    assert rig.plugs.switches("worker-1") == ["turn_on"] and rig.plugs.is_on("worker-1")


def test_a_node_matches_by_provider_id_and_by_name_only_without_one(
    rig_factory: Callable[..., Rig], caplog: pytest.LogCaptureFixture
) -> None:
    rig = rig_factory(nodes=3)
    for name in ("worker-1", "worker-2", "worker-3"):
        rig.plugs.set_on(name, True)
    rig.register("worker-1")  # k3s://worker-1
    rig.register("worker-2", provider_id="")  # no providerID: by name
    rig.register("worker-3", provider_id="aws:///eu-west-1a/i-0abc")  # another form: a configuration error
    rig.register("elsewhere", provider_id="k3s://worker-3")  # matches worker-3 by providerID
    with caplog.at_level(logging.ERROR, logger="plugpool"):
        rig.refresh()
    assert "configuration error: node worker-3 has spec.providerID 'aws:///eu-west-1a/i-0abc'" in caplog.text

    def group_of(provider_id: str, name: str) -> str:
        node = pb.ExternalGrpcNode(providerID=provider_id, name=name)
        return str(rig.ca.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=node), timeout=30).nodeGroup.id)

    assert group_of("k3s://worker-1", "worker-1") == "workers"
    assert group_of("", "worker-2") == "workers"
    assert group_of("aws:///eu-west-1a/i-0abc", "worker-3") == ""
    assert group_of("k3s://worker-3", "elsewhere") == "workers"
    assert group_of("k3s://other", "other") == ""
    running = pb.InstanceStatus.instanceRunning
    assert rig.instances() == {"worker-1": running, "worker-2": running, "worker-3": running}
