"""The externalgrpc ``CloudProvider`` gRPC service over a :class:`PlugPool`, and ``serve()``."""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc

from .config import TlsConfig
from .pool import InstanceState, PlugPool, ProviderError
from .proto import externalgrpc_pb2 as pb
from .proto import externalgrpc_pb2_grpc as pb_grpc
from .tls_front import HANDSHAKE_TIMEOUT_SECONDS, MAX_HANDSHAKES, TlsFront, server_context
from .tls_refusals import RefusalLog

__all__ = ["GPU_LABEL", "CloudProviderService", "PlugPoolServer", "start_server"]

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


class PlugPoolServer:
    """The running service: the gRPC server and, with TLS, the front that terminates it (``refusals`` has the
    refused handshakes). ``stop(grace)`` returns the event gRPC sets once every call has ended."""

    def __init__(self, server: grpc.Server, front: TlsFront | None = None, private_dir: Path | None = None) -> None:
        self.grpc = server
        self.front = front
        self._private_dir = private_dir

    @property
    def refusals(self) -> RefusalLog | None:
        """The refused TLS handshakes (None without TLS)."""
        return self.front.refusals if self.front is not None else None

    def stop(self, grace: float | None) -> threading.Event:
        """Stop accepting, then stop the gRPC server (calls in flight get ``grace`` seconds)."""
        if self.front is not None:
            self.front.stop()
        done = cast(threading.Event, self.grpc.stop(grace))
        if self._private_dir is not None:  # no new connection can reach the socket: the front is gone
            shutil.rmtree(self._private_dir, ignore_errors=True)
        return done


def _grpc_server(pool: PlugPool, workers: int) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plugpool-grpc"))
    pb_grpc.add_CloudProviderServicer_to_server(CloudProviderService(pool), server)  # type: ignore[no-untyped-call]
    return server


def start_server(pool: PlugPool, address: str, workers: int = 8, tls: TlsConfig | None = None, *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS, max_handshakes: int = MAX_HANDSHAKES,
                 refusals: RefusalLog | None = None) -> tuple[PlugPoolServer, int]:
    """Start the service on ``address`` ("host:port"; port 0 picks one) and return it with its port.

    With ``tls``: mutual TLS terminated by :class:`TlsFront` (every refused handshake logged ``PPL020`` and
    counted), relayed to gRPC on a Unix socket in a private directory. Without it: plaintext gRPC on ``address``
    (the configuration allows that on loopback only)."""
    server = _grpc_server(pool, workers)
    if tls is None:
        port = server.add_insecure_port(address)
        if port == 0:
            raise OSError(f"cannot listen on {address}; is the port in use?")
        server.start()
        return PlugPoolServer(server), port
    context = server_context(tls)
    private_dir = Path(tempfile.mkdtemp(prefix="plugpool-grpc-"))  # mode 0700: only our user may connect
    sock = private_dir / "grpc.sock"
    try:
        if server.add_insecure_port(f"unix:{sock}") == 0:
            raise OSError(f"cannot listen on the private socket {sock}")
        server.start()
        front = TlsFront(context, sock, refusals or RefusalLog(), handshake_timeout=handshake_timeout,
                         max_handshakes=max_handshakes)
        try:
            port = front.start(address)
        except OSError as exc:
            server.stop(0).wait()
            raise OSError(f"cannot listen on {address} ({exc.strerror or exc}); is the port in use?") from exc
    except BaseException:
        shutil.rmtree(private_dir, ignore_errors=True)
        raise
    return PlugPoolServer(server, front, private_dir), port
