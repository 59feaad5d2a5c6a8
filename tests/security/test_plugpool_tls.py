"""plugpool's gRPC server takes mutual TLS as cluster-autoscaler's externalgrpc provider speaks it: a client with a
certificate from the configured client CA switches plugs; a plaintext client, a TLS client without a certificate
and one whose certificate another CA signed are refused at the handshake (gRPC ``UNAVAILABLE``), switch nothing,
and leave a ``PPL020`` line and a count behind. The configuration refuses plaintext unless it is asked for on
loopback (``PPL010``, ``PPL011``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from controllers.errors import ConfigError
from controllers.plugpool.config import Credentials, TlsConfig, parse_config
from controllers.plugpool.kube import KubernetesCluster
from controllers.plugpool.plugs import EspHomePlugs
from controllers.plugpool.pool import PlugPool
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import externalgrpc_pb2_grpc as pb_grpc
from controllers.plugpool.service import start_server
from controllers.plugpool.tls_refusals import RefusalLog
from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble
from tests.controllers.plugpool.certs import ManualClock, Pem, make_pki
from tests.controllers.plugpool.conftest import plugs  # noqa: F401  (the fixture; kube is tests/conftest.py's)
from tests.controllers.plugpool.helpers import NS, config_dict


@dataclass(frozen=True)
class Served:
    port: int
    ca: Pem
    client: Pem
    rogue: Pem
    plugs: EspHomeDouble
    refusals: RefusalLog
    clock: ManualClock


@pytest.fixture
def served(tmp_path: Path, kube: KubeApiDouble, plugs: EspHomeDouble) -> Iterator[Served]:  # noqa: F811
    kube.put_object("Namespace", {"metadata": {"name": NS}})
    pki = make_pki(tmp_path)
    data = config_dict({n: plugs.add_plug(n) for n in ("worker-1", "worker-2")})
    del data["insecureLoopback"]
    data["tls"] = pki.tls.model_dump(by_alias=True, mode="json")
    config = parse_config(data)
    cluster = KubernetesCluster(kube.client_configuration(), timeout=10.0)
    pool = PlugPool(config, EspHomePlugs(Credentials(username="admin", password="secret"), timeout=2.0,
                                         connect_timeout=2.0), cluster, tick=0.05)
    pool.start()
    clock = ManualClock()
    refusals = RefusalLog(clock)
    grpc_server, port = start_server(pool, "127.0.0.1:0", tls=config.tls, refusals=refusals)
    try:
        yield Served(port, pki.ca, pki.client, pki.rogue, plugs, refusals, clock)
    finally:
        grpc_server.stop(0).wait()
        pool.stop()
        cluster.close()


def _increase(channel: grpc.Channel) -> str:
    stub = pb_grpc.CloudProviderStub(channel)
    try:
        stub.NodeGroupIncreaseSize(pb.NodeGroupIncreaseSizeRequest(id="workers", delta=2), timeout=10)
    except grpc.RpcError as exc:
        return str(exc.code().name)
    return "OK"


def test_only_a_client_certificate_from_the_configured_ca_switches_a_plug(served: Served) -> None:
    address = f"127.0.0.1:{served.port}"
    strangers = {
        "plaintext": grpc.insecure_channel(address),
        "tls without a certificate": grpc.secure_channel(address, grpc.ssl_channel_credentials(served.ca.cert)),
        "another CA's certificate": grpc.secure_channel(address, grpc.ssl_channel_credentials(
            served.ca.cert, served.rogue.key, served.rogue.cert)),
    }
    for who, channel in strangers.items():
        with channel:
            assert _increase(channel) == "UNAVAILABLE", who
    assert not any(served.plugs.is_on(n) for n in ("worker-1", "worker-2"))   # nothing was switched
    with grpc.secure_channel(address, grpc.ssl_channel_credentials(
            served.ca.cert, served.client.key, served.client.cert)) as channel:
        stub = pb_grpc.CloudProviderStub(channel)
        assert [g.id for g in stub.NodeGroups(pb.NodeGroupsRequest(), timeout=30).nodeGroups] == ["workers"]


def _refused(served: Served, reason: str) -> int:
    deadline = time.monotonic() + 10   # the front records the refusal on its own thread
    while reason not in served.refusals.counts():
        assert time.monotonic() < deadline, f"no refusal {reason!r}: {served.refusals.counts()}"
        time.sleep(0.02)
    return served.refusals.counts()[reason]


def test_each_refused_handshake_of_a_grpc_client_is_logged_ppl020_and_counted_by_reason(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    address = f"127.0.0.1:{served.port}"
    strangers = {
        "no certificate": grpc.ssl_channel_credentials(served.ca.cert),
        "unknown CA": grpc.ssl_channel_credentials(served.ca.cert, served.rogue.key, served.rogue.cert),
    }
    for reason, credentials in strangers.items():
        with grpc.secure_channel(address, credentials) as channel:
            assert _increase(channel) == "UNAVAILABLE", reason
        assert _refused(served, reason) >= 1   # gRPC may retry the connection within the one call
        served.clock.advance(10.0)   # past the rate limit: the next refusal from 127.0.0.1 gets its own line
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
             and r.getMessage().startswith("PPL020 refused TLS handshake from 127.0.0.1: ")]
    assert [line.split(": ", 1)[1].split(" (")[0] for line in lines] == list(strangers)
    assert not any(served.plugs.is_on(n) for n in ("worker-1", "worker-2"))


def test_the_configuration_refuses_plaintext_except_asked_for_on_loopback(tmp_path: Path) -> None:
    base = config_dict({"worker-1": "http://plug.example/worker-1"})
    del base["insecureLoopback"]
    with pytest.raises(ConfigError, match="PPL010 no tls"):
        parse_config(base)
    with pytest.raises(ConfigError, match=r"PPL011 insecureLoopback with listen '0\.0\.0\.0:8086'"):
        parse_config({**base, "insecureLoopback": True, "listen": "0.0.0.0:8086"})
    assert parse_config({**base, "insecureLoopback": True}).tls is None
    tls = {"cert": "/c", "key": "/k", "clientCA": "/ca"}
    assert parse_config({**base, "tls": tls, "listen": "0.0.0.0:8086"}).tls == TlsConfig.model_validate(tls)
