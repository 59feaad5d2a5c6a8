"""Wire compatibility with cluster-autoscaler's externalgrpc.proto, and the optional RPCs."""

from __future__ import annotations

import grpc
import pytest

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import k8s_core_v1_pb2 as core
from tests.controllers.plugpool.helpers import Rig

SERVICE = "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"

# (message, field, number) as published in kubernetes/autoscaler externalgrpc.proto (cluster-autoscaler 1.36+)
UPSTREAM_FIELDS = [
    ("NodeGroup", "id", 1),
    ("NodeGroup", "minSize", 2),
    ("NodeGroup", "maxSize", 3),
    ("NodeGroup", "debug", 4),
    ("ExternalGrpcNode", "providerID", 1),
    ("ExternalGrpcNode", "name", 2),
    ("ExternalGrpcNode", "labels", 3),
    ("ExternalGrpcNode", "annotations", 4),
    ("NodeGroupsResponse", "nodeGroups", 1),
    ("NodeGroupForNodeRequest", "node", 1),
    ("NodeGroupForNodeResponse", "nodeGroup", 1),
    ("PricingNodePriceRequest", "node", 1),
    ("PricingNodePriceRequest", "startTimestamp", 4),
    ("PricingNodePriceRequest", "endTimestamp", 5),
    ("PricingPodPriceRequest", "pod_bytes", 4),
    ("PricingPodPriceRequest", "startTimestamp", 5),
    ("PricingPodPriceRequest", "endTimestamp", 6),
    ("GPULabelResponse", "label", 1),
    ("GetAvailableGPUTypesResponse", "gpuTypes", 1),
    ("NodeGroupTargetSizeRequest", "id", 1),
    ("NodeGroupTargetSizeResponse", "targetSize", 1),
    ("NodeGroupIncreaseSizeRequest", "delta", 1),
    ("NodeGroupIncreaseSizeRequest", "id", 2),
    ("NodeGroupDeleteNodesRequest", "nodes", 1),
    ("NodeGroupDeleteNodesRequest", "id", 2),
    ("NodeGroupDecreaseTargetSizeRequest", "delta", 1),
    ("NodeGroupDecreaseTargetSizeRequest", "id", 2),
    ("NodeGroupNodesRequest", "id", 1),
    ("NodeGroupNodesResponse", "instances", 1),
    ("Instance", "id", 1),
    ("Instance", "status", 2),
    ("InstanceStatus", "instanceState", 1),
    ("InstanceStatus", "errorInfo", 2),
    ("InstanceErrorInfo", "errorCode", 1),
    ("InstanceErrorInfo", "errorMessage", 2),
    ("InstanceErrorInfo", "instanceErrorClass", 3),
    ("NodeGroupTemplateNodeInfoRequest", "id", 1),
    ("NodeGroupTemplateNodeInfoResponse", "nodeBytes", 2),
    ("NodeGroupTemplateNodeInfoResponse", "resourceSliceBytes", 3),
    ("NodeGroupAutoscalingOptions", "scaleDownUtilizationThreshold", 1),
    ("NodeGroupAutoscalingOptions", "scaleDownGpuUtilizationThreshold", 2),
    ("NodeGroupAutoscalingOptions", "zeroOrMaxNodeScaling", 6),
    ("NodeGroupAutoscalingOptions", "ignoreDaemonSetsUtilization", 7),
    ("NodeGroupAutoscalingOptions", "scaleDownUnneededDuration", 8),
    ("NodeGroupAutoscalingOptions", "scaleDownUnreadyDuration", 9),
    ("NodeGroupAutoscalingOptions", "MaxNodeProvisionDuration", 10),
    ("NodeGroupAutoscalingOptions", "maxNodeStartupDuration", 11),
    ("NodeGroupAutoscalingOptions", "allowNonAtomicScaleUpToMax", 12),
    ("NodeGroupAutoscalingOptionsRequest", "id", 1),
    ("NodeGroupAutoscalingOptionsRequest", "defaults", 2),
    ("NodeGroupAutoscalingOptionsResponse", "nodeGroupAutoscalingOptions", 1),
]
RPCS = [
    "NodeGroups",
    "NodeGroupForNode",
    "PricingNodePrice",
    "PricingPodPrice",
    "GPULabel",
    "GetAvailableGPUTypes",
    "Cleanup",
    "Refresh",
    "NodeGroupTargetSize",
    "NodeGroupIncreaseSize",
    "NodeGroupDeleteNodes",
    "NodeGroupDecreaseTargetSize",
    "NodeGroupNodes",
    "NodeGroupTemplateNodeInfo",
    "NodeGroupGetOptions",
]


def test_package_service_rpcs_and_field_numbers_match_the_published_protocol() -> None:
    service = pb.DESCRIPTOR.services_by_name["CloudProvider"]
    assert service.full_name == SERVICE
    assert sorted(m.name for m in service.methods) == sorted(RPCS)
    for message, field, number in UPSTREAM_FIELDS:
        assert pb.DESCRIPTOR.message_types_by_name[message].fields_by_name[field].number == number, (message, field)
    states = pb.InstanceStatus.InstanceState
    assert [states.Value(n) for n in ("unspecified", "instanceRunning", "instanceCreating", "instanceDeleting")] == [
        0,
        1,
        2,
        3,
    ]


def test_the_node_message_has_the_kubernetes_field_numbers() -> None:
    node = core.Node.DESCRIPTOR
    assert node.full_name == "k8s.io.api.core.v1.Node"
    assert [node.fields_by_name[f].number for f in ("metadata", "spec", "status")] == [1, 2, 3]
    spec, status = core.NodeSpec.DESCRIPTOR, core.NodeStatus.DESCRIPTOR
    assert spec.fields_by_name["providerID"].number == 3 and spec.fields_by_name["taints"].number == 5
    assert status.fields_by_name["capacity"].number == 1 and status.fields_by_name["allocatable"].number == 2
    assert status.fields_by_name["conditions"].number == 4


def test_hand_encoded_go_style_bytes_reach_the_service_on_the_upstream_method_path(rig: Rig) -> None:
    rig.refresh()
    call = rig.channel.unary_unary(f"/{SERVICE}/NodeGroupIncreaseSize")  # raw bytes in and out
    call(b"\x08\x01" + b"\x12\x07workers", timeout=30)  # delta=1 (field 1, varint), id="workers" (field 2)
    raw = rig.channel.unary_unary(f"/{SERVICE}/NodeGroupTargetSize")(b"\x0a\x07workers", timeout=30)
    assert raw == b"\x08\x01"  # targetSize=1


def test_pricing_answers_unimplemented_and_the_other_optional_rpcs_answer(rig: Rig) -> None:
    for call, request in (
        (rig.ca.PricingNodePrice, pb.PricingNodePriceRequest()),
        (rig.ca.PricingPodPrice, pb.PricingPodPriceRequest()),
    ):
        with pytest.raises(grpc.RpcError) as exc:
            call(request, timeout=30)
        assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert rig.ca.GPULabel(pb.GPULabelRequest(), timeout=30).label
    assert dict(rig.ca.GetAvailableGPUTypes(pb.GetAvailableGPUTypesRequest(), timeout=30).gpuTypes) == {}
    rig.ca.Cleanup(pb.CleanupRequest(), timeout=30)
    defaults = pb.NodeGroupAutoscalingOptions(scaleDownUtilizationThreshold=0.5)
    got = rig.ca.NodeGroupGetOptions(pb.NodeGroupAutoscalingOptionsRequest(id="workers", defaults=defaults), timeout=30)
    assert got.nodeGroupAutoscalingOptions.scaleDownUtilizationThreshold == 0.5
    with pytest.raises(grpc.RpcError) as exc:
        rig.ca.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="nope"), timeout=30)
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    node = pb.ExternalGrpcNode(providerID="k3s://control-plane", name="control-plane")
    assert rig.ca.NodeGroupForNode(pb.NodeGroupForNodeRequest(node=node), timeout=30).nodeGroup.id == ""
