"""Scale-up from zero, driven through the gRPC API as cluster-autoscaler drives it."""

from __future__ import annotations

import grpc
import pytest

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import k8s_core_v1_pb2 as core
from tests.controllers.plugpool.helpers import Rig

CREATING, RUNNING = pb.InstanceStatus.instanceCreating, pb.InstanceStatus.instanceRunning


def test_scale_up_from_zero_switches_on_the_first_machine_that_is_off_and_it_is_creating_until_it_registers(
    rig: Rig,
) -> None:
    groups = rig.ca.NodeGroups(pb.NodeGroupsRequest(), timeout=30).nodeGroups
    assert [(g.id, g.minSize, g.maxSize) for g in groups] == [("workers", 0, 2)]
    rig.refresh()
    assert rig.target() == 0 and rig.instances() == {}

    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)

    assert rig.plugs.switches("worker-1") == ["turn_on"] and rig.plugs.switches("worker-2") == []
    assert rig.target() == 1 and rig.instances() == {"worker-1": CREATING}
    rig.refresh()
    assert rig.instances() == {"worker-1": CREATING}  # the plug is on, the Node has not registered
    rig.register("worker-1")
    rig.refresh()
    assert rig.instances() == {"worker-1": RUNNING} and rig.target() == 1
    node = pb.ExternalGrpcNode(providerID="k3s://worker-1", name="worker-1")
    group = rig.ca.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=node), timeout=30).nodeGroup
    assert group.id == "workers"


def test_an_increase_above_max_size_is_refused_and_switches_nothing(rig: Rig) -> None:
    rig.refresh()
    with pytest.raises(grpc.RpcError) as exc:
        rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=3), timeout=30)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "maxSize 2" in str(exc.value.details())
    assert rig.plugs.switches("worker-1") == rig.plugs.switches("worker-2") == []


def test_a_plug_that_fails_on_scale_up_is_skipped_for_the_next_machine(rig: Rig) -> None:
    rig.refresh()
    rig.plugs.fail("worker-1", 500)
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    assert rig.plugs.is_on("worker-2") and not rig.plugs.is_on("worker-1")
    assert rig.instances() == {"worker-2": CREATING}


def test_a_plug_never_read_is_not_used_for_scale_up(rig: Rig) -> None:
    rig.plugs.fail("worker-1", 0)  # unreachable from the start: never read
    rig.refresh()
    rig.plugs.heal("worker-1")  # reachable again, but plugpool has not read it yet
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    assert rig.plugs.switches("worker-1") == [] and rig.plugs.switches("worker-2") == ["turn_on"]
    with pytest.raises(grpc.RpcError) as exc:
        rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    assert exc.value.code() == grpc.StatusCode.UNAVAILABLE
    assert rig.plugs.switches("worker-1") == []


def test_the_template_node_is_the_group_template_as_a_proto_serialised_node(rig: Rig) -> None:
    res = rig.ca.NodeGroupTemplateNodeInfo(pb.NodeGroupTemplateNodeInfoRequest(id="workers"), timeout=30)
    node = core.Node.FromString(res.nodeBytes)
    assert node.metadata.labels["example.com/pool"] == "workers"
    assert {k: v.string for k, v in node.status.allocatable.items()} == {"cpu": "24", "memory": "64Gi", "pods": "110"}
    assert node.status.conditions[0].type == "Ready" and node.status.conditions[0].status == "True"
    assert res.nodeInfo == node  # field 1, for cluster-autoscaler before 1.35
    assert list(res.resourceSliceBytes) == []
