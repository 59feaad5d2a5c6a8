"""Verify a signed bundle, alone or as the successor of a previous one.

Standard library and ``cryptography`` only: the agent uses this at boot and on
every refresh. A bundle is ``<name>.json`` (canonical JSON) with ``<name>.json.sig`` (base64 DER ECDSA
P-256/SHA-256, the cosign ``sign-blob`` format) and, when governed fields changed, a second signature
``<name>.json.governance.sig`` by the capacity-governance key (ADR-30).

A bundle is trusted only as a verified chain (DESIGN §7): given the previous bundle, the successor must be
of the same kind and partition and not of an older generation, and the governed changes are recomputed
against the previous bundle rather than read from the payload's own list. Refusal codes (``BundleError.code``):

* ``BND001`` the signature does not verify, or the payload is not canonical JSON of an object;
* ``BND002`` an older generation than the previous bundle, or the same generation with other content;
* ``BND003`` another partition's (or another kind of) bundle;
* ``BND004`` governed changes without a valid governance signature;
* ``BND005`` a bundle, signature or key file cannot be read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bundle_wire import GOVERNANCE_SIG_SUFFIX, SIG_SUFFIX
from .canonical import CanonicalError, canonical_bytes
from .errors import BundleError
from .signing import KeyError_, SignatureError, load_public_key, verify_blob

__all__ = [
    "GOVERNED_FIELDS",
    "BundleError",
    "BundleFiles",
    "VerifiedBundle",
    "check_succession",
    "governed_changes",
    "read_bundle_files",
    "verify_bundle",
    "verify_bundle_bytes",
]

GOVERNED_FIELDS = ("floor_pct", "spend_cap_24h_eur", "approver", "fallback_policy")


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


@dataclass(frozen=True)
class BundleFiles:
    """A bundle's bytes and signatures as read from disk.

    Attributes:
        path: the bundle file.
        raw: its bytes.
        signature: the ``.sig`` file's bytes.
        governance_signature: the ``.governance.sig`` file's bytes, None when there is none.
    """

    path: Path
    raw: bytes
    signature: bytes
    governance_signature: bytes | None


def _governed(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry.get(k) for k in GOVERNED_FIELDS}


def governed_changes(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[dict[str, Any]]:
    """The governed fields of ``current`` (workload entries by ref) that differ from the ``previous`` payload.

    A workload new since ``previous`` counts as a change for every governed field it sets to something
    other than nothing (``None``, 0, ``"none"``).

    Returns:
        One dict per change: ``workload``, ``field``, ``from``, ``to``.
    """
    before: dict[str, dict[str, Any]] = {}
    for entry in (previous or {}).get("workloads", {}).values():
        before[entry["workload"]] = _governed(entry)
    changes = []
    for entry in current.values():
        name = entry["workload"]
        old = before.get(name, dict.fromkeys(GOVERNED_FIELDS))
        for key, value in _governed(entry).items():
            if old.get(key) != value and not (name not in before and value in (None, 0, "0", "none")):
                changes.append({"workload": name, "field": key, "from": old.get(key), "to": value})
    return changes


def check_succession(previous: dict[str, Any], current: dict[str, Any], where: str = "the bundle") -> None:
    """Refuse ``current`` unless it may follow ``previous``: same kind and partition, generation not older.

    Raises:
        BundleError: ``BND003`` another kind or partition; ``BND002`` an older generation, or the same
            generation with other content (a fork).
    """
    for key in ("kind", "partition"):
        if current.get(key) != previous.get(key):
            raise BundleError(f"{where} is for {key} {current.get(key)!r}, the previous bundle for "
                              f"{previous.get(key)!r}; a partition only accepts its own bundles: check the path",
                              code="BND003")
    gen, prev_gen = int(current.get("generation", 0)), int(previous.get("generation", 0))
    if gen < prev_gen:
        raise BundleError(f"{where} is generation {gen}, older than the previous bundle's {prev_gen}: a rollback "
                          "is refused; publish a new generation instead", code="BND002")
    if gen == prev_gen and current.get("source_digest") != previous.get("source_digest"):
        raise BundleError(f"{where} is generation {gen} like the previous bundle but with other content: two "
                          "bundles of one generation are refused; recompile against the published one",
                          code="BND002")


def _verified_payload(raw: bytes, signature: bytes, public_key_pem: bytes) -> dict[str, Any]:
    try:
        verify_blob(raw, signature, load_public_key(public_key_pem))
    except (SignatureError, KeyError_) as exc:
        raise BundleError(str(exc), code="BND001") from None
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"the bundle is not JSON: {exc}", code="BND001") from None
    if not isinstance(payload, dict):
        raise BundleError("the bundle is not a JSON object", code="BND001")
    try:
        if canonical_bytes(payload) != raw:
            raise BundleError("the bundle is not in canonical form; it was not written by `sco contracts compile`",
                              code="BND001")
    except CanonicalError as exc:
        raise BundleError(f"the bundle is not canonical JSON: {exc}", code="BND001") from None
    return payload


def _governed_to_check(payload: dict[str, Any], previous: dict[str, Any] | None) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = list(payload.get("governed_changes") or [])
    if previous is None or payload.get("kind") != "ControllerBundle":
        return listed
    workloads = payload.get("workloads")
    recomputed = governed_changes(previous, workloads if isinstance(workloads, dict) else {})
    return recomputed or listed


def verify_bundle_bytes(raw: bytes, signature: bytes, public_key_pem: bytes,
                        governance_signature: bytes | None = None,
                        governance_key_pem: bytes | None = None,
                        previous: dict[str, Any] | None = None,
                        require_governance_key: bool = True) -> VerifiedBundle:
    """Verify a bundle's signature(s) and decode it.

    Args:
        raw: the bundle's bytes (canonical JSON).
        signature: the base64 DER ECDSA signature of ``raw``.
        public_key_pem: the publisher's P-256 public key.
        governance_signature: the capacity-governance signature, when the bundle has one.
        governance_key_pem: the governance public key to check it with.
        previous: the verified payload of the bundle this one follows; when given, the succession is checked
            (:func:`check_succession`) and governed changes are recomputed against it.
        require_governance_key: when False and no governance key is given, a present governance signature is
            not checked (the compiler reading its own previous output without the governance key).

    Raises:
        BundleError: a bad signature or key, a payload that is not canonical JSON of an object, a bad
            succession, or governed changes without a valid governance signature.
    """
    payload = _verified_payload(raw, signature, public_key_pem)
    if previous is not None:
        check_succession(previous, payload)
    governed = _governed_to_check(payload, previous)
    governance_ok = False
    if governed:
        shown = "; ".join(f"{c['workload']}.{c['field']}: {c['from']} -> {c['to']}" for c in governed[:5])
        if governance_signature is None:
            raise BundleError(
                f"{len(governed)} governed field change(s) (floors, spend caps, approvers, fallback policy: "
                f"{shown}) but no governance signature; it must be compiled with --governance-key (ADR-30).",
                code="BND004")
        if governance_key_pem is None:
            if require_governance_key:
                raise BundleError(f"governed fields changed ({shown}): pass --governance-key <pem> to verify the "
                                  "second signature.", code="BND004")
            return VerifiedBundle(payload=payload, raw=raw, governance_verified=False)
        try:
            verify_blob(raw, governance_signature, load_public_key(governance_key_pem))
        except (SignatureError, KeyError_) as exc:
            raise BundleError(f"governance signature: {exc}", code="BND004") from None
        governance_ok = True
    return VerifiedBundle(payload=payload, raw=raw, governance_verified=governance_ok)


def read_bundle_files(path: Path) -> BundleFiles:
    """Read ``path``, ``path.sig`` and (when present) ``path.governance.sig``.

    Raises:
        BundleError: ``BND005`` the bundle cannot be read; ``BND001`` its signature file is missing.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror}", code="BND005") from None
    sig_path = path.with_name(path.name + SIG_SUFFIX)
    try:
        signature = sig_path.read_bytes()
    except OSError:
        raise BundleError(f"no signature file {sig_path} next to the bundle", code="BND001") from None
    gov_path = path.with_name(path.name + GOVERNANCE_SIG_SUFFIX)
    try:
        gov_sig = gov_path.read_bytes() if gov_path.exists() else None
    except OSError as exc:
        raise BundleError(f"cannot read {gov_path}: {exc.strerror}", code="BND005") from None
    return BundleFiles(path, raw, signature, gov_sig)


def _read_key(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read key {exc.filename}: {exc.strerror}", code="BND005") from None


def verify_bundle(path: Path, public_key: Path, governance_key: Path | None = None,
                  previous: Path | None = None) -> VerifiedBundle:
    """Verify ``path`` with ``path.sig`` (and ``path.governance.sig`` when governed fields changed).

    With ``previous`` (the bundle published before it), that bundle is verified first with the same keys, then
    the succession is checked and the governed changes recomputed against it.

    Raises:
        BundleError: with a code (see the module docstring); a refused previous bundle is named as such.
    """
    key_pem = _read_key(public_key)
    gov_pem = None if governance_key is None else _read_key(governance_key)
    baseline: dict[str, Any] | None = None
    if previous is not None:
        files = read_bundle_files(previous)
        try:
            baseline = verify_bundle_bytes(files.raw, files.signature, key_pem, files.governance_signature,
                                           gov_pem).payload
        except BundleError as exc:
            raise BundleError(f"the previous bundle {previous} is refused: {exc.message}", code=exc.code) from None
    files = read_bundle_files(path)
    return verify_bundle_bytes(files.raw, files.signature, key_pem, files.governance_signature, gov_pem, baseline)
