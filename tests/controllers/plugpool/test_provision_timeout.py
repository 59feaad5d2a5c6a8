"""A machine that does not register within cluster-autoscaler's --max-node-provision-time."""

from __future__ import annotations

import time

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from tests.controllers.plugpool.helpers import Rig
from tests.support.wait import wait_for

CREATING = pb.InstanceStatus.instanceCreating


def test_a_machine_that_never_registers_is_switched_off_when_cluster_autoscaler_lowers_the_target(rig: Rig) -> None:
    rig.refresh()
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    rig.refresh()
    assert rig.instances() == {"worker-1": CREATING}
    time.sleep(0.2)  # cluster-autoscaler's max-node-provision-time passes, no Node appears
    rig.ca.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1), timeout=30)
    assert rig.plugs.switches("worker-1") == ["turn_on", "turn_off"]
    assert rig.target() == 0 and rig.instances() == {}
    assert rig.kube.requests_matching("GET", "/api/v1/nodes$")  # checked for a registration just before


def test_a_never_registered_instance_cluster_autoscaler_deletes_is_switched_off_without_a_pod(rig: Rig) -> None:
    rig.refresh()
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    rig.delete_nodes("worker-1")  # cluster-autoscaler deletes the long-unregistered instance
    wait_for(lambda: rig.instances() == {})
    assert rig.plugs.switches("worker-1") == ["turn_on", "turn_off"]
    assert rig.kube.requests_matching("POST", "/pods$") == []


def test_lowering_the_target_below_the_unregistered_instances_is_refused(rig: Rig) -> None:
    import grpc
    import pytest

    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1")
    rig.refresh()
    with pytest.raises(grpc.RpcError) as exc:
        rig.ca.NodeGroupDecreaseTargetSize(pb.NodeGroupDecreaseTargetSizeRequest(id="workers", delta=-1), timeout=30)
    assert "attempt to delete existing nodes" in str(exc.value.details())
    assert rig.plugs.switches("worker-1") == []
