"""Scale-down of a drained node: poweroff pod, NotReady wait, grace, plug off, Node deleted after the pod."""

from __future__ import annotations

import time
from collections.abc import Callable

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from tests.controllers.plugpool.helpers import NS, Rig
from tests.support.wait import wait_for

DELETING, RUNNING = pb.InstanceStatus.instanceDeleting, pb.InstanceStatus.instanceRunning
POD = "plugpool-poweroff-worker-1"
# For the tests that make the node NotReady themselves: the rig's 1 s notReadyTimeout could pass while a loaded
# machine is still on the set-up steps, and the flow would go on without the NotReady they check for.
# test_a_node_that_never_goes_not_ready_... keeps the short one: the timeout firing is what it checks.
NOT_READY_BY_THE_TEST = "60s"


def _running(rig: Rig, name: str = "worker-1") -> None:
    rig.plugs.set_on(name, True)
    rig.register(name)
    rig.refresh()
    assert rig.instances()[name] == RUNNING


def test_a_drained_node_is_powered_off_by_a_privileged_pod_then_the_plug_goes_off_and_the_node_is_deleted(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory(notReadyTimeout=NOT_READY_BY_THE_TEST)
    _running(rig)
    rig.taint("worker-1")  # cluster-autoscaler taints, drains, then asks
    rig.delete_nodes("worker-1")
    assert rig.instances() == {"worker-1": DELETING} and rig.target() == 0

    wait_for(lambda: rig.kube.get_object("Pod", POD, NS) is not None)
    pod = rig.kube.get_object("Pod", POD, NS)
    assert pod is not None
    spec = pod["spec"]
    container = spec["containers"][0]
    assert spec["nodeName"] == "worker-1" and spec["hostPID"] is True and spec["restartPolicy"] == "Never"
    assert {"operator": "Exists"} in spec["tolerations"]
    assert container["securityContext"]["privileged"] is True and container["image"] == "busybox:1.37.0"
    assert container["command"][:2] == ["nsenter", "--target"] and container["command"][1:3] == ["--target", "1"]
    assert {"--mount", "--uts", "--ipc", "--net", "--pid"} <= set(container["command"])
    assert container["command"][-2:] == ["systemctl", "poweroff"]

    time.sleep(0.3)  # the machine is still up: nothing is switched while the node is Ready
    assert rig.plugs.is_on("worker-1") and rig.kube.get_object("Node", "worker-1") is not None
    not_ready_at = time.monotonic()
    rig.set_ready("worker-1", False)  # the kubelet stops reporting

    wait_for(lambda: rig.kube.get_object("Node", "worker-1") is None)
    [(action, off_at)] = rig.plugs.switch_times("worker-1")
    assert action == "turn_off" and off_at - not_ready_at >= 0.2  # powerOff.grace
    assert rig.kube.get_object("Pod", POD, NS) is None
    pod_delete = rig.kube.requests_matching("DELETE", f"/pods/{POD}$")
    node_delete = rig.kube.requests_matching("DELETE", "/nodes/worker-1$")
    assert pod_delete and node_delete and pod_delete[0].time <= node_delete[0].time
    wait_for(lambda: rig.instances() == {})
    rig.refresh()
    assert rig.instances() == {} and rig.target() == 0


def test_the_node_is_deleted_only_after_its_poweroff_pod_is_gone_and_meanwhile_is_not_used_for_scale_up(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory(notReadyTimeout=NOT_READY_BY_THE_TEST)
    _running(rig)
    rig.taint("worker-1")
    rig.delete_nodes("worker-1")
    wait_for(lambda: rig.kube.get_object("Pod", POD, NS) is not None)
    pod = rig.kube.get_object("Pod", POD, NS)
    assert pod is not None
    pod["metadata"]["finalizers"] = ["example.com/hold"]  # the pod lingers after its delete
    rig.kube.put_object("Pod", pod)
    rig.set_ready("worker-1", False)
    wait_for(lambda: not rig.plugs.is_on("worker-1"))
    time.sleep(0.3)
    assert rig.kube.get_object("Node", "worker-1") is not None  # pod still there: Node kept
    assert rig.instances() == {"worker-1": DELETING}
    rig.ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
    assert rig.plugs.switches("worker-1") == ["turn_off"]  # worker-2 was chosen, worker-1 stays off
    assert rig.plugs.switches("worker-2") == ["turn_on"]
    rig.kube.delete_object("Pod", POD, NS)  # the finalizer goes
    wait_for(lambda: rig.kube.get_object("Node", "worker-1") is None)


def test_a_node_that_never_goes_not_ready_is_switched_off_after_not_ready_timeout_and_grace(rig: Rig) -> None:
    _running(rig)
    rig.taint("worker-1")
    started = time.monotonic()
    rig.delete_nodes("worker-1")
    wait_for(lambda: rig.kube.get_object("Node", "worker-1") is None, timeout=30)
    [(action, off_at)] = rig.plugs.switch_times("worker-1")
    assert action == "turn_off" and off_at - started >= 1.0 + 0.2  # notReadyTimeout + grace


def test_a_dead_node_goes_through_the_same_steps_without_the_poweroff_pod(rig: Rig) -> None:
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1", ready=False, tainted=True)
    rig.refresh()
    started = time.monotonic()
    rig.delete_nodes("worker-1")
    wait_for(lambda: rig.kube.get_object("Node", "worker-1") is None)
    [(action, off_at)] = rig.plugs.switch_times("worker-1")
    assert action == "turn_off" and off_at - started >= 0.2  # still waits the grace
    assert rig.kube.requests_matching("POST", "/pods$") == []
