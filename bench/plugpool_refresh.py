"""plugpool Refresh latency: plugs read in parallel against reading them one after the other.

24 machines on ESPHome plug doubles that answer in 40 ms, two of them unreachable (the read times out at
0.3 s), Nodes on the Kubernetes API double; Refresh called over gRPC as cluster-autoscaler calls it. The
baseline is the same PlugPool with one reader thread. Median of 5 refreshes each.
"""

from __future__ import annotations

import logging
import statistics
import time

import grpc

from bench._cli import no_arguments, stop_on_signals
from controllers.plugpool.config import Credentials, parse_config
from controllers.plugpool.kube import KubernetesCluster
from controllers.plugpool.plugs import EspHomePlugs, PlugBoard
from controllers.plugpool.pool import PlugPool
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import externalgrpc_pb2_grpc as pb_grpc
from controllers.plugpool.service import start_server
from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble

MACHINES, DELAY, DEAD = 24, 0.04, 2


def _config(urls: dict[str, str]) -> dict[str, object]:
    return {
        "powerOff": {"namespace": "plugpool"},
        "nodeGroups": [
            {
                "id": "workers",
                "maxSize": len(urls),
                "template": {"cpu": "8", "memory": "32Gi"},
                "nodes": [{"name": n, "plug": {"url": u, "switch": "relay"}} for n, u in urls.items()],
            }
        ],
    }


def _measure(kube: KubeApiDouble, plugs: EspHomeDouble, urls: dict[str, str], workers: int) -> float:
    config = parse_config(_config(urls))
    cluster = KubernetesCluster(kube.client_configuration())
    client = EspHomePlugs(Credentials(username="admin", password="secret"), timeout=0.3, connect_timeout=0.3)
    pool = PlugPool(config, client, cluster)
    pool.board.close()
    pool.board = PlugBoard(client, [(n.name, n.plug) for _, n in config.all_nodes], workers=workers)
    server, port = start_server(pool, "127.0.0.1:0")
    times = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        ca = pb_grpc.CloudProviderStub(channel)  # type: ignore[no-untyped-call]
        ca.Refresh(pb.RefreshRequest(), timeout=30)  # warm connections
        for _ in range(5):
            started = time.perf_counter()
            ca.Refresh(pb.RefreshRequest(), timeout=30)
            times.append(time.perf_counter() - started)
    server.stop(0).wait()
    pool.stop()
    cluster.close()
    return statistics.median(times)


def main() -> None:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    no_arguments("bench.plugpool_refresh", __doc__)
    logging.getLogger("plugpool").setLevel(logging.ERROR)  # the unreachable plugs warn on every read
    with KubeApiDouble() as kube, EspHomeDouble() as plugs:
        urls = {}
        for i in range(MACHINES):
            name = f"m{i:02d}"
            urls[name] = plugs.add_plug(name, on=i % 2 == 0)
            plugs.slow(name, DELAY)
            kube.put_object("Node", {"metadata": {"name": name}, "spec": {"providerID": f"k3s://{name}"}})
        for i in range(DEAD):
            plugs.slow(f"m{i:02d}", 5.0)
        sequential = _measure(kube, plugs, urls, workers=1)
        parallel = _measure(kube, plugs, urls, workers=16)
    print(f"plugpool Refresh, {MACHINES} plugs at {DELAY * 1000:.0f} ms, {DEAD} unreachable (0.3 s timeout)")
    print(f"baseline, one reader: {sequential * 1000:.1f} ms")
    print(f"parallel reads (16):  {parallel * 1000:.1f} ms")
    print(f"speed-up:             {sequential / parallel:.1f}x")


if __name__ == "__main__":
    main()
