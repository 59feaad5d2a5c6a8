"""ECDSA P-256 / SHA-256 signatures in the format ``cosign sign-blob`` writes and ``verify-blob --key`` reads.

The signature file holds the base64 of the DER-encoded ECDSA signature over SHA-256 of the blob bytes;
public keys are PEM (SubjectPublicKeyInfo), private keys PEM PKCS#8. Only ``cryptography`` is used, so the
agent can verify bundles without anything heavier.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from .errors import KeyError_, SignatureError

__all__ = [
    "KeyError_",
    "KeyPair",
    "SignatureError",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "public_pem",
    "sign_blob",
    "verify_blob",
]


@dataclass(frozen=True)
class KeyPair:
    """A new ECDSA P-256 key pair, both halves PEM-encoded (private key unencrypted PKCS#8)."""

    private_pem: bytes
    public_pem: bytes


def generate_keypair() -> KeyPair:
    """Generate an ECDSA P-256 key pair."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return KeyPair(private_pem=private, public_pem=public_pem(key))


def public_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The PEM (SubjectPublicKeyInfo) public half of ``key``."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _read(path: Path | str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise KeyError_(f"cannot read {what} {path}: {exc.strerror}. Create one with `sco keys init`.") from exc


def load_private_key(source: Path | str | bytes) -> ec.EllipticCurvePrivateKey:
    """Load an ECDSA P-256 private key from a PEM file path or PEM bytes.

    Raises:
        KeyError_: the file cannot be read, is not a PEM private key, or is not on the P-256 curve.
    """
    data = source if isinstance(source, bytes) else _read(source, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        where = "key" if isinstance(source, bytes) else str(source)
        raise KeyError_(f"{where} is not a PEM private key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise KeyError_("the private key is not ECDSA P-256 (secp256r1); create one with `sco keys init`.")
    return key


def load_public_key(source: Path | str | bytes) -> ec.EllipticCurvePublicKey:
    """Load an ECDSA P-256 public key from a PEM file path or PEM bytes.

    Raises:
        KeyError_: the file cannot be read, is not a PEM public key, or is not on the P-256 curve.
    """
    data = source if isinstance(source, bytes) else _read(source, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        where = "key" if isinstance(source, bytes) else str(source)
        raise KeyError_(f"{where} is not a PEM public key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise KeyError_("the public key is not ECDSA P-256 (secp256r1).")
    return key


def sign_blob(blob: bytes, key: ec.EllipticCurvePrivateKey) -> bytes:
    """Return the base64 DER signature (the content of a cosign ``.sig`` file)."""
    der = key.sign(blob, ec.ECDSA(hashes.SHA256()))
    return base64.b64encode(der)


def verify_blob(blob: bytes, signature_b64: bytes, key: ec.EllipticCurvePublicKey) -> None:
    """Raise :class:`SignatureError` unless ``signature_b64`` is a valid signature of ``blob`` by ``key``."""
    try:
        der = base64.b64decode(signature_b64.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("the signature file is not base64; it may be truncated or replaced.") from None
    try:
        key.verify(der, blob, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise SignatureError(
            "signature does not verify: the bundle was changed after signing or was signed by another key."
        ) from None
