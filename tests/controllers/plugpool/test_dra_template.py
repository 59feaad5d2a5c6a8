"""DRA ResourceSlices in the template: recorded while a machine is up, kept in a ConfigMap across power-offs."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import k8s_resource_v1_pb2 as resource
from controllers.plugpool.slices import CONFIG_MAP
from tests.controllers.plugpool.helpers import NS, Rig


def _slice(node: str, product: str = "A100", uuid: str = "GPU-1") -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-gpu.example.com-x7k2", "uid": "u-1", "ownerReferences": [{"name": node}]},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {"productName": {"string": product}, "uuid": {"string": uuid}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            ],
        },
    }


def _template_slices(rig: Rig) -> list[Any]:
    res = rig.ca.NodeGroupTemplateNodeInfo(pb.NodeGroupTemplateNodeInfoRequest(id="workers"), timeout=30)
    return [resource.ResourceSlice.FromString(raw) for raw in res.resourceSliceBytes]


def test_slices_of_a_running_machine_are_kept_across_power_off_and_restart_and_renamed_to_the_template(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory()
    assert _template_slices(rig) == []
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1")
    rig.kube.put_object("ResourceSlice", _slice("worker-1"))
    rig.refresh()
    cm = rig.kube.get_object("ConfigMap", CONFIG_MAP, NS)
    assert cm is not None and json.loads(cm["data"]["worker-1"])[0]["spec"]["driver"] == "gpu.example.com"

    rig.kube.delete_object("ResourceSlice", "worker-1-gpu.example.com-x7k2")  # the machine powers off
    rig.set_ready("worker-1", False)
    rig.refresh()  # an empty set is not recorded: the last non-empty one stays
    rig.stop()

    again = rig_factory()
    again.refresh()
    [got] = _template_slices(again)
    assert got.spec.nodeName == "plugpool-template-workers" and got.spec.pool.name == "plugpool-template-workers"
    assert got.metadata.name.startswith("plugpool-template-workers") and not got.metadata.ownerReferences
    assert got.spec.devices[0].attributes["productName"].string == "A100"
    assert got.spec.devices[0].capacity["memory"].value.string == "80Gi"


def test_the_template_uses_the_first_machine_with_a_snapshot_and_warns_when_devices_differ(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    for name, product in (("worker-1", "A100"), ("worker-2", "H100")):
        rig.plugs.set_on(name, True)
        rig.register(name)
        rig.kube.put_object("ResourceSlice", _slice(name, product, uuid=f"GPU-{name}"))
    rig.refresh()
    with caplog.at_level(logging.WARNING, logger="plugpool"):
        [got] = _template_slices(rig)
    assert got.spec.devices[0].attributes["productName"].string == "A100"
    assert "publish different DRA devices" in caplog.text


def test_machines_with_the_same_devices_but_different_gpu_uuids_do_not_warn(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("worker-1", "worker-2"):
        rig.plugs.set_on(name, True)
        rig.register(name)
        rig.kube.put_object("ResourceSlice", _slice(name, uuid=f"GPU-{name}"))
    rig.refresh()
    with caplog.at_level(logging.WARNING, logger="plugpool"):
        _template_slices(rig)
    assert "different DRA devices" not in caplog.text
