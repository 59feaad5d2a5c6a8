"""Verify a signed bundle.

Standard library and ``cryptography`` only: the agent uses this at boot and on
every refresh. A bundle is ``<name>.json`` (canonical JSON) with ``<name>.json.sig`` (base64 DER ECDSA
P-256/SHA-256, the cosign ``sign-blob`` format) and, when governed fields changed, a second signature
``<name>.json.governance.sig`` by the capacity-governance key (ADR-30).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .canonical import CanonicalError, canonical_bytes
from .errors import BundleError
from .signing import KeyError_, SignatureError, load_public_key, verify_blob

__all__ = ["BundleError", "VerifiedBundle", "verify_bundle", "verify_bundle_bytes"]

SIG_SUFFIX = ".sig"
GOVERNANCE_SIG_SUFFIX = ".governance.sig"


@dataclass(frozen=True)
class VerifiedBundle:
    """A bundle whose signature checked out.

    Attributes:
        payload: the decoded canonical JSON.
        raw: the signed bytes as read.
        governance_verified: True when a governance signature was present and valid.
    """

    payload: dict[str, Any]
    raw: bytes
    governance_verified: bool

    @property
    def kind(self) -> str:
        """The bundle's ``kind`` (``AgentBundle`` or ``ControllerBundle``), or ``""`` when absent."""
        return str(self.payload.get("kind", ""))

    @property
    def generation(self) -> int:
        """The bundle's generation, 0 when absent; it only ever grows for a partition."""
        return int(self.payload.get("generation", 0))


def verify_bundle_bytes(raw: bytes, signature: bytes, public_key_pem: bytes,
                        governance_signature: bytes | None = None,
                        governance_key_pem: bytes | None = None) -> VerifiedBundle:
    """Verify a bundle's signature(s) and decode it.

    Args:
        raw: the bundle's bytes (canonical JSON).
        signature: the base64 DER ECDSA signature of ``raw``.
        public_key_pem: the publisher's P-256 public key.
        governance_signature: the capacity-governance signature, when the bundle has one.
        governance_key_pem: the governance public key to check it with.

    Raises:
        BundleError: a bad signature or key, a payload that is not canonical JSON of an object, or
            governed changes without a valid governance signature.
    """
    try:
        verify_blob(raw, signature, load_public_key(public_key_pem))
    except (SignatureError, KeyError_) as exc:
        raise BundleError(str(exc)) from None
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"the bundle is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise BundleError("the bundle is not a JSON object")
    try:
        if canonical_bytes(payload) != raw:
            raise BundleError("the bundle is not in canonical form; it was not written by `sco contracts compile`")
    except CanonicalError as exc:
        raise BundleError(f"the bundle is not canonical JSON: {exc}") from None
    governed = payload.get("governed_changes") or []
    governance_ok = False
    if governed:
        if governance_signature is None:
            raise BundleError(
                f"{len(governed)} governed field change(s) (floors, spend caps, approvers, fallback policy) "
                "but no governance signature; it must be compiled with --governance-key (ADR-30).")
        if governance_key_pem is None:
            raise BundleError("governed fields changed: pass --governance-key <pem> to verify the second signature.")
        try:
            verify_blob(raw, governance_signature, load_public_key(governance_key_pem))
        except (SignatureError, KeyError_) as exc:
            raise BundleError(f"governance signature: {exc}") from None
        governance_ok = True
    return VerifiedBundle(payload=payload, raw=raw, governance_verified=governance_ok)


def verify_bundle(path: Path, public_key: Path, governance_key: Path | None = None) -> VerifiedBundle:
    """Verify ``path`` with ``path.sig`` (and ``path.governance.sig`` when governed fields changed)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror}") from exc
    sig_path = path.with_name(path.name + SIG_SUFFIX)
    try:
        signature = sig_path.read_bytes()
    except OSError as exc:
        raise BundleError(f"no signature file {sig_path} next to the bundle") from exc
    gov_path = path.with_name(path.name + GOVERNANCE_SIG_SUFFIX)
    gov_sig = gov_path.read_bytes() if gov_path.exists() else None
    try:
        key_pem = public_key.read_bytes()
        gov_pem = governance_key.read_bytes() if governance_key is not None else None
    except OSError as exc:
        raise BundleError(f"cannot read key {exc.filename}: {exc.strerror}") from exc
    return verify_bundle_bytes(raw, signature, key_pem, gov_sig, gov_pem)
