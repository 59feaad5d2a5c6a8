"""Certificates for the TLS tests: a CA, a server certificate for 127.0.0.1, a client certificate from the CA and
one from another CA; and a clock the tests move by hand."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controllers.plugpool.config import TlsConfig

__all__ = ["ManualClock", "Pem", "Pki", "make_pki"]

Pair = tuple[x509.Certificate, ec.EllipticCurvePrivateKey]


@dataclass(frozen=True)
class Pem:
    cert: bytes
    key: bytes


def _issue(name: str, issuer: Pair | None = None, *, ca: bool = False, server: bool = False) -> Pair:
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_cert, signer_key = issuer if issuer else (None, key)
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(signer_cert.subject if signer_cert else subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
    return builder.sign(signer_key, hashes.SHA256()), key


def _pem(pair: Pair) -> Pem:
    cert, key = pair
    return Pem(cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


@dataclass(frozen=True)
class Pki:
    ca: Pem
    client: Pem      # cluster-autoscaler's certificate, from the configured CA
    rogue: Pem       # the same name, signed by someone else's CA
    tls: TlsConfig   # plugpool's server side, written to files
    dir: Path

    def client_files(self, pem: Pem, name: str) -> tuple[Path, Path]:
        """``pem`` written to files (certificate, key) for an ``ssl`` client."""
        cert, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        cert.write_bytes(pem.cert)
        key.write_bytes(pem.key)
        return cert, key


def make_pki(directory: Path) -> Pki:
    """A fresh CA and certificates, the server's written under ``directory``."""
    ca, other_ca = _issue("sco test CA", ca=True), _issue("someone else's CA", ca=True)
    server = _issue("plugpool", ca, server=True)
    client, rogue = _issue("cluster-autoscaler", ca), _issue("cluster-autoscaler", other_ca)
    for name, pem in (("server", _pem(server)), ("ca", _pem(ca))):
        (directory / f"{name}.crt").write_bytes(pem.cert)
        (directory / f"{name}.key").write_bytes(pem.key)
    tls = TlsConfig.model_validate({"cert": str(directory / "server.crt"), "key": str(directory / "server.key"),
                                    "clientCA": str(directory / "ca.crt")})
    return Pki(_pem(ca), _pem(client), _pem(rogue), tls, directory)


class ManualClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
