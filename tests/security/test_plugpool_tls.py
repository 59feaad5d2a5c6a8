"""plugpool's gRPC server takes mutual TLS as cluster-autoscaler's externalgrpc provider speaks it: a client with a
certificate from the configured client CA switches plugs; a plaintext client, a TLS client without a certificate
and one whose certificate another CA signed are refused at the handshake (gRPC ``UNAVAILABLE``) and switch
nothing. The configuration refuses plaintext unless it is asked for on loopback (``PPL010``, ``PPL011``)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controllers.errors import ConfigError
from controllers.plugpool.config import Credentials, TlsConfig, parse_config
from controllers.plugpool.kube import KubernetesCluster
from controllers.plugpool.plugs import EspHomePlugs
from controllers.plugpool.pool import PlugPool
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from controllers.plugpool.proto import externalgrpc_pb2_grpc as pb_grpc
from controllers.plugpool.service import start_server
from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble
from tests.controllers.plugpool.conftest import plugs  # noqa: F401  (the fixture; kube is tests/conftest.py's)
from tests.controllers.plugpool.helpers import NS, config_dict

NOW = dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Pem:
    cert: bytes
    key: bytes


def _issue(name: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None, *,
           ca: bool = False, server: bool = False) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_cert, signer_key = issuer if issuer else (None, key)
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(signer_cert.subject if signer_cert else subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(NOW - dt.timedelta(minutes=5))
               .not_valid_after(NOW + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
    return builder.sign(signer_key, hashes.SHA256()), key


def _pem(pair: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> Pem:
    cert, key = pair
    return Pem(cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


@dataclass(frozen=True)
class Served:
    port: int
    ca: Pem
    client: Pem
    rogue: Pem
    plugs: EspHomeDouble


@pytest.fixture
def served(tmp_path: Path, kube: KubeApiDouble, plugs: EspHomeDouble) -> Iterator[Served]:  # noqa: F811
    kube.put_object("Namespace", {"metadata": {"name": NS}})
    ca, other_ca = _issue("sco test CA", ca=True), _issue("someone else's CA", ca=True)
    server, client, rogue = _issue("plugpool", ca, server=True), _issue("cluster-autoscaler", ca), _issue(
        "cluster-autoscaler", other_ca)
    for name, pem in (("server", _pem(server)), ("ca", _pem(ca))):
        (tmp_path / f"{name}.crt").write_bytes(pem.cert)
        (tmp_path / f"{name}.key").write_bytes(pem.key)
    data = config_dict({n: plugs.add_plug(n) for n in ("worker-1", "worker-2")})
    del data["insecureLoopback"]
    data["tls"] = {"cert": str(tmp_path / "server.crt"), "key": str(tmp_path / "server.key"),
                   "clientCA": str(tmp_path / "ca.crt")}
    config = parse_config(data)
    cluster = KubernetesCluster(kube.client_configuration(), timeout=10.0)
    pool = PlugPool(config, EspHomePlugs(Credentials(username="admin", password="secret"), timeout=2.0,
                                         connect_timeout=2.0), cluster, tick=0.05)
    pool.start()
    grpc_server, port = start_server(pool, "127.0.0.1:0", tls=config.tls)
    try:
        yield Served(port, _pem(ca), _pem(client), _pem(rogue), plugs)
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
