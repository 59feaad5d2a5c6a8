"""The externalgrpc ``CloudProvider`` gRPC service over a :class:`PlugPool`, and ``serve()``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any, TypeVar

import grpc

from .config import TlsConfig
from .pool import InstanceState, PlugPool, ProviderError
from .proto import externalgrpc_pb2 as pb
from .proto import externalgrpc_pb2_grpc as pb_grpc

__all__ = ["GPU_LABEL", "CloudProviderService", "server_credentials", "start_server"]

log = logging.getLogger("plugpool.grpc")
GPU_LABEL = "nvidia.com/gpu.product"
T = TypeVar("T")
_STATES = {
    InstanceState.RUNNING: pb.InstanceStatus.instanceRunning,
    InstanceState.CREATING: pb.InstanceStatus.instanceCreating,
    InstanceState.DELETING: pb.InstanceStatus.instanceDeleting,
}


def _guard(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except ProviderError as exc:
        log.warning("%s", exc)
        context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
        raise  # unreachable: abort raises


class CloudProviderService(pb_grpc.CloudProviderServicer):
    def __init__(self, pool: PlugPool) -> None:
        self.pool = pool

    def _group_msg(self, group_id: str) -> pb.NodeGroup:
        g = self.pool.config.node_groups[[x.id for x in self.pool.config.node_groups].index(group_id)]
        debug = f"plugpool group {g.id}: {len(g.nodes)} machine(s) on ESPHome plugs"
        return pb.NodeGroup(id=g.id, minSize=g.min_size, maxSize=g.max_size, debug=debug)

    def NodeGroups(self, request: Any, context: Any) -> pb.NodeGroupsResponse:
        """Every node group of the configuration."""
        return pb.NodeGroupsResponse(nodeGroups=[self._group_msg(g.id) for g in self.pool.config.node_groups])

    def NodeGroupForNode(self, request: Any, context: Any) -> pb.NodeGroupForNodeResponse:
        """The node group a node belongs to (empty id for a node not ours)."""
        group_id = self.pool.group_for_node(request.node.providerID, request.node.name)
        if not group_id:
            return pb.NodeGroupForNodeResponse(nodeGroup=pb.NodeGroup(id=""))
        return pb.NodeGroupForNodeResponse(nodeGroup=self._group_msg(group_id))

    def PricingNodePrice(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED: plugpool has no pricing."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "plugpool has no pricing")

    def PricingPodPrice(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED: plugpool has no pricing."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "plugpool has no pricing")

    def GPULabel(self, request: Any, context: Any) -> pb.GPULabelResponse:
        """The node label that marks GPU nodes."""
        return pb.GPULabelResponse(label=GPU_LABEL)

    def GetAvailableGPUTypes(self, request: Any, context: Any) -> pb.GetAvailableGPUTypesResponse:
        """No GPU types (none are offered)."""
        return pb.GetAvailableGPUTypesResponse()

    def Cleanup(self, request: Any, context: Any) -> pb.CleanupResponse:
        """Nothing to clean up."""
        return pb.CleanupResponse()

    def Refresh(self, request: Any, context: Any) -> pb.RefreshResponse:
        """Re-read the plugs and nodes (a failure is logged; the last state stands)."""
        try:  # a failed Refresh stops cluster-autoscaler entirely: log and answer with the last known state
            self.pool.refresh()
        except Exception:
            log.exception("refresh failed; keeping the last known state")
        return pb.RefreshResponse()

    def NodeGroupTargetSize(self, request: Any, context: Any) -> pb.NodeGroupTargetSizeResponse:
        """The group's target size."""
        size = _guard(context, lambda: self.pool.target_size(request.id))
        return pb.NodeGroupTargetSizeResponse(targetSize=size)

    def NodeGroupIncreaseSize(self, request: Any, context: Any) -> pb.NodeGroupIncreaseSizeResponse:
        """Power on ``delta`` more machines of the group."""
        _guard(context, lambda: self.pool.increase_size(request.id, request.delta))
        return pb.NodeGroupIncreaseSizeResponse()

    def NodeGroupDeleteNodes(self, request: Any, context: Any) -> pb.NodeGroupDeleteNodesResponse:
        """Start powering off the named nodes of the group (shutdown, then the plug off)."""
        nodes = [(n.providerID, n.name) for n in request.nodes]
        _guard(context, lambda: self.pool.delete_nodes(request.id, nodes))
        return pb.NodeGroupDeleteNodesResponse()

    def NodeGroupDecreaseTargetSize(self, request: Any, context: Any) -> pb.NodeGroupDecreaseTargetSizeResponse:
        """Drop requested machines that have not come up yet."""
        _guard(context, lambda: self.pool.decrease_target_size(request.id, request.delta))
        return pb.NodeGroupDecreaseTargetSizeResponse()

    def NodeGroupNodes(self, request: Any, context: Any) -> pb.NodeGroupNodesResponse:
        """The group's machines with their states."""
        instances = _guard(context, lambda: self.pool.instances(request.id))
        return pb.NodeGroupNodesResponse(
            instances=[
                pb.Instance(id=i.id, status=pb.InstanceStatus(instanceState=_STATES[i.state])) for i in instances
            ]
        )

    def NodeGroupTemplateNodeInfo(self, request: Any, context: Any) -> pb.NodeGroupTemplateNodeInfoResponse:
        """The group's template node (and its ResourceSlices) for scale-up simulation."""
        _, raw, slices = _guard(context, lambda: self.pool.template(request.id))
        response = pb.NodeGroupTemplateNodeInfoResponse(nodeBytes=raw, resourceSliceBytes=slices)
        response.nodeInfo.ParseFromString(raw)
        return response

    def NodeGroupGetOptions(self, request: Any, context: Any) -> pb.NodeGroupAutoscalingOptionsResponse:
        """The autoscaling options: the defaults cluster-autoscaler sent."""
        _guard(context, lambda: self.pool.instances(request.id))  # NOT_FOUND for an unknown group
        return pb.NodeGroupAutoscalingOptionsResponse(nodeGroupAutoscalingOptions=request.defaults)


def server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    """TLS that requires a client certificate chaining to ``tls.client_ca`` (mutual TLS)."""
    try:
        key, cert, ca = tls.key.read_bytes(), tls.cert.read_bytes(), tls.client_ca.read_bytes()
    except OSError as exc:
        raise OSError(f"PPL012 cannot read the TLS files ({exc.filename}: {exc.strerror}); check tls in the "
                      "configuration") from exc
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True)


def start_server(pool: PlugPool, address: str, workers: int = 8,
                 tls: TlsConfig | None = None) -> tuple[grpc.Server, int]:
    """Start the gRPC server on ``address`` ("host:port"; port 0 picks one): with ``tls`` mutual TLS, without it
    plaintext (the configuration allows that on loopback only). Returns the server and port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plugpool-grpc"))
    pb_grpc.add_CloudProviderServicer_to_server(CloudProviderService(pool), server)  # type: ignore[no-untyped-call]
    if tls is not None:
        port = server.add_secure_port(address, server_credentials(tls))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}; is the port in use?")
    server.start()
    return server, port
