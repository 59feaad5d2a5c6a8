"""Helpers for the plugpool tests (the fixtures are in conftest.py).

plugpool under test: the real gRPC server and client, the real kubernetes client against the Kubernetes
API double, the real ESPHome REST client against the ESPHome double. Power-off timings are in fractions of a
second; client and RPC timeouts are generous (they only bound a broken build)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from controllers.plugpool.config import Credentials, PlugPoolConfig, parse_config
from controllers.plugpool.kube import KubernetesCluster
from controllers.plugpool.plugs import EspHomePlugs
from controllers.plugpool.pool import PlugPool
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import externalgrpc_pb2_grpc as pb_grpc
from controllers.plugpool.service import start_server
from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble

__all__ = ["NS", "PREFIX", "Rig", "config_dict", "make_rig"]

NS = "plugpool"
PREFIX = "k3s://"


def config_dict(plug_urls: dict[str, str], max_size: int | None = None, **power_off: Any) -> dict[str, Any]:
    return {
        "listen": "127.0.0.1:0",
        "insecureLoopback": True,  # the in-process doubles; tests/security/test_plugpool_tls.py speaks TLS
        "providerIDPrefix": PREFIX,
        "powerOff": {"namespace": NS, "image": "busybox:1.37.0", "notReadyTimeout": "1s", "grace": "0.2s", **power_off},
        "nodeGroups": [
            {
                "id": "workers",
                "minSize": 0,
                "maxSize": len(plug_urls) if max_size is None else max_size,
                "template": {"cpu": "24", "memory": "64Gi", "labels": {"example.com/pool": "workers"}},
                "nodes": [{"name": n, "plug": {"url": u, "switch": "relay"}} for n, u in plug_urls.items()],
            }
        ],
    }


@dataclass
class Rig:
    """Everything a test needs; ``ca`` is the gRPC stub playing cluster-autoscaler."""

    kube: KubeApiDouble
    plugs: EspHomeDouble
    config: PlugPoolConfig
    pool: PlugPool
    server: grpc.Server
    channel: grpc.Channel
    ca: pb_grpc.CloudProviderStub
    cluster: KubernetesCluster
    extra: list[Callable[[], None]] = field(default_factory=list)

    def refresh(self) -> None:
        self.ca.Refresh(pb.RefreshRequest(), timeout=30)

    def instances(self) -> dict[str, int]:
        res = self.ca.NodeGroupNodes(pb.NodeGroupNodesRequest(id="workers"), timeout=30)
        return {i.id.removeprefix(PREFIX): i.status.instanceState for i in res.instances}

    def target(self) -> int:
        return int(self.ca.NodeGroupTargetSize(pb.NodeGroupTargetSizeRequest(id="workers"), timeout=30).targetSize)

    def register(self, name: str, ready: bool = True, tainted: bool = False, provider_id: str | None = None) -> None:
        taints = [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}] if tainted else []
        spec: dict[str, Any] = {"taints": taints}
        spec["providerID"] = PREFIX + name if provider_id is None else provider_id
        if not spec["providerID"]:
            del spec["providerID"]
        self.kube.put_object(
            "Node",
            {
                "metadata": {"name": name, "labels": {"example.com/pool": "workers"}},
                "spec": spec,
                "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
            },
        )

    def set_ready(self, name: str, ready: bool) -> None:
        node = self.kube.get_object("Node", name)
        assert node is not None
        node["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "Unknown"}]
        self.kube.put_object("Node", node)

    def taint(self, name: str, on: bool = True) -> None:
        node = self.kube.get_object("Node", name)
        assert node is not None
        taints = [t for t in node["spec"].get("taints") or [] if t["key"] != "ToBeDeletedByClusterAutoscaler"]
        if on:
            taints.append({"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"})
        node["spec"]["taints"] = taints
        self.kube.put_object("Node", node)

    def delete_nodes(self, *names: str) -> None:
        nodes = [pb.ExternalGrpcNode(providerID=PREFIX + n, name=n) for n in names]
        self.ca.NodeGroupDeleteNodes(pb.NodeGroupDeleteNodesRequest(id="workers", nodes=nodes), timeout=30)

    def stop(self) -> None:
        self.server.stop(0).wait()
        self.channel.close()
        self.pool.stop()
        self.cluster.close()


def make_rig(kube: KubeApiDouble, plugs: EspHomeDouble, data: dict[str, Any], tick: float = 0.05) -> Rig:
    config = parse_config(data)
    # Client timeouts well above what a loaded machine needs to answer from the in-process doubles; the tests that
    # want a timeout make a plug slower than that (``plugs.slow(name, 20.0)``).
    cluster = KubernetesCluster(kube.client_configuration(), timeout=10.0)
    client = EspHomePlugs(Credentials(username="admin", password="secret"), timeout=2.0, connect_timeout=2.0)
    pool = PlugPool(config, client, cluster, tick=tick)
    pool.start()
    server, port = start_server(pool, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return Rig(kube, plugs, config, pool, server, channel, pb_grpc.CloudProviderStub(channel), cluster)
