"""`sco plugpool serve` as a process: the production wiring (in-cluster-or-kubeconfig client, ESPHome client with
credentials from the environment) serving cluster-autoscaler on the configured address."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import yaml

from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import externalgrpc_pb2_grpc as pb_grpc
from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble
from testkit.paths import REPO
from tests.controllers.plugpool.helpers import config_dict
from tests.support.ports import free_port


def test_sco_plugpool_serve_answers_cluster_autoscaler_and_stops_on_sigterm(
    tmp_path: Path, kube: KubeApiDouble, plugs: EspHomeDouble
) -> None:
    port = free_port()
    data = config_dict({"worker-1": plugs.add_plug("worker-1")})
    data["listen"] = f"127.0.0.1:{port}"
    (tmp_path / "plugpool.yaml").write_text(yaml.safe_dump(data))
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "double", "cluster": {"server": kube.url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "double", "user": "u"}}],
        "current-context": "c",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    env = {
        **os.environ,
        "KUBECONFIG": str(tmp_path / "kubeconfig"),
        "PLUGPOOL_PLUG_USERNAME": "admin",
        "PLUGPOOL_PLUG_PASSWORD": "secret",
        "KUBERNETES_SERVICE_HOST": "",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "sco", "plugpool", "serve", "--config", str(tmp_path / "plugpool.yaml")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            ca = pb_grpc.CloudProviderStub(channel)
            assert [g.id for g in ca.NodeGroups(pb.NodeGroupsRequest(), timeout=30).nodeGroups] == ["workers"]
            ca.Refresh(pb.RefreshRequest(), timeout=30)
            ca.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=1), timeout=30)
        assert plugs.switches("worker-1") == ["turn_on"]
        assert kube.requests_matching("GET", "/api/v1/nodes$")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:  # the server stops in well under a second when idle; the limit only bounds a broken build
            output = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            output = proc.communicate()[0] + "\n[still running 60 s after SIGTERM: killed]"
    assert proc.returncode == 0, output
    assert "serving externalgrpc CloudProvider on 127.0.0.1" in output and "switched on worker-1" in output
