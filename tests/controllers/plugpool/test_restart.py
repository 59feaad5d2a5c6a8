"""State comes from the plugs and the Nodes: a restart loses only a scale-down in progress."""

from __future__ import annotations

import time
from collections.abc import Callable

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from tests.controllers.plugpool.helpers import NS, Rig
from tests.support.wait import wait_for

RUNNING, CREATING = pb.InstanceStatus.instanceRunning, pb.InstanceStatus.instanceCreating
POD = "plugpool-poweroff-worker-1"


def test_a_restart_rebuilds_running_and_creating_instances_from_plugs_and_nodes(
    rig_factory: Callable[..., Rig],
) -> None:
    first = rig_factory(nodes=3)
    first.refresh()
    first.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2), timeout=30)
    first.register("worker-1")
    first.stop()

    second = rig_factory(nodes=3)
    second.refresh()
    assert second.instances() == {"worker-1": RUNNING, "worker-2": CREATING} and second.target() == 2


def test_a_restart_in_the_middle_of_a_scale_down_drops_it_and_a_new_delete_request_completes_it(
    rig_factory: Callable[..., Rig],
) -> None:
    first = rig_factory(notReadyTimeout="30s")
    first.plugs.set_on("worker-1", True)
    first.register("worker-1", tainted=True)
    first.refresh()
    first.delete_nodes("worker-1")
    wait_for(lambda: first.kube.get_object("Pod", POD, NS) is not None)
    first.stop()  # plugpool restarts while waiting for NotReady
    first.set_ready("worker-1", False)  # the machine powered itself off meanwhile

    second = rig_factory()
    second.refresh()
    assert second.instances() == {"worker-1": RUNNING}  # an unready registered node, nothing resumed
    time.sleep(0.3)
    assert second.plugs.switches("worker-1") == [] and second.kube.get_object("Node", "worker-1") is not None
    assert second.kube.get_object("Pod", POD, NS) is not None  # the old pod: the machine is not scaled up
    second.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    assert second.plugs.switches("worker-1") == [] and second.plugs.switches("worker-2") == ["turn_on"]

    second.delete_nodes("worker-1")  # cluster-autoscaler deletes the unready node again later
    wait_for(lambda: second.kube.get_object("Node", "worker-1") is None)
    assert second.plugs.switches("worker-1") == ["turn_off"]
    assert second.kube.get_object("Pod", POD, NS) is None
