"""The node's contract cache (ADR-15): verified on arrival, kept on disk, never expired.

Sources, in order of arrival: the last good bundle on disk (``<state>/bundle/``), the bundle carried in
the user-data at boot, then the distributor every ``refresh_s`` seconds. A bundle is *held* only when its
signature verifies against the image's public key, it is canonical JSON, it names this node's partition
and its generation is not older than the one held (nor equal with other content). Anything else is refused
and counted (``sco_agent_bundle_refused_total``), except the user-data copy being older than the cache on
disk, which is expected after a refresh; the held bundle stays. Nothing expires: the age of the held
bundle is a metric (``sco_agent_bundle_age_seconds``).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from contracts.bundle_verify import BundleError, verify_bundle_bytes
from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE
from contracts.subjects import agent_nats_name

from .httpwire import exchange
from .model import AgentError, Contract, contract_from_entry, parse_time

__all__ = ["BundleStore", "HeldBundle", "Offer", "fetch_bundle", "instance_basic_auth"]

USER_DATA = "user-data"  # the origin of the boot copy


@dataclass(frozen=True)
class HeldBundle:
    """A verified agent bundle for this node's partition, with the contracts it carries."""

    partition: str
    generation: int
    issued_at: datetime
    source_digest: str
    contracts: dict[str, Contract]
    raw: bytes
    signature: bytes
    origin: str


@dataclass(frozen=True)
class Offer:
    """The answer to an offered bundle: ``outcome`` (accepted, unchanged, older, refused) and why."""

    outcome: str  # accepted | unchanged | older (the user-data copy, behind the cache) | refused
    reason: str = ""
    bundle: HeldBundle | None = None


class BundleStore:
    """The contract cache: verifies offered bundles, holds the newest, persists it under ``<state>/bundle``."""

    def __init__(self, state_dir: Path, public_key_pem: bytes, partition: str) -> None:
        """Hold nothing yet; bundles must be signed by ``public_key_pem`` and name ``partition``."""
        self.directory = state_dir / "bundle"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.public_key_pem = public_key_pem
        self.partition = partition
        self.current: HeldBundle | None = None
        self.refused = 0  # every refusal: signature, format, partition, older generation
        self.older = 0  # of which older generations (rollbacks)
        self.accepted = 0
        self.last_refused_reason = ""
        self.last_refresh_ok: datetime | None = None

    def parse(self, raw: bytes, signature: bytes, origin: str) -> HeldBundle:
        """Verify and read a bundle.

        Raises:
            AgentError: The signature, kind, partition, workloads or ``issued_at`` is not usable.
        """
        try:
            verified = verify_bundle_bytes(raw, signature, self.public_key_pem)
        except BundleError as exc:
            raise AgentError(f"bundle from {origin} refused: {exc}") from None
        payload = verified.payload
        if payload.get("kind") != "AgentBundle":
            raise AgentError(f"bundle from {origin} refused: kind {payload.get('kind')!r} is not AgentBundle.")
        if payload.get("partition") != self.partition:
            raise AgentError(f"bundle from {origin} refused: partition {payload.get('partition')!r} is not this "
                             f"node's {self.partition!r}; check the distributor URL in the user-data.")
        workloads = payload.get("workloads")
        if not isinstance(workloads, dict):
            raise AgentError(f"bundle from {origin} refused: no workloads object.")
        contracts = {ref: contract_from_entry(ref, entry) for ref, entry in workloads.items()}
        try:
            issued = parse_time(str(payload.get("issued_at", "")))
        except ValueError:
            raise AgentError(f"bundle from {origin} refused: issued_at {payload.get('issued_at')!r} "
                             "is not ISO-8601.") from None
        return HeldBundle(partition=self.partition, generation=int(payload.get("generation", 0)), issued_at=issued,
                          source_digest=str(payload.get("source_digest", "")), contracts=contracts, raw=raw,
                          signature=signature.strip(), origin=origin)

    def offer(self, raw: bytes, signature: bytes, origin: str) -> Offer:
        """Offer a bundle: hold and persist it when it verifies and is not older than the held one."""
        try:
            bundle = self.parse(raw, signature, origin)
        except AgentError as exc:
            self.refused += 1
            self.last_refused_reason = str(exc)
            return Offer("refused", str(exc))
        held = self.current
        if held is not None and bundle.raw == held.raw:
            return Offer("unchanged", bundle=held)
        if held is not None and bundle.generation < held.generation:
            reason = f"bundle from {origin} refused: generation {bundle.generation} is older than the held " \
                     f"{held.generation}"
            if origin == USER_DATA:  # the boot copy: expected to lag the cache on disk, not a rollback
                return Offer("older", reason, bundle=held)
            self.older += 1
            return self._refuse(Offer("refused", reason + " (a rollback)", bundle=held))
        if held is not None and bundle.generation == held.generation and bundle.source_digest != held.source_digest:
            return self._refuse(Offer("refused", f"bundle from {origin} refused: generation {bundle.generation} "
                                      "like the held bundle but with other content", bundle=held))
        self.current = bundle
        self.accepted += 1
        self._persist(bundle)
        return Offer("accepted", bundle=bundle)

    def _refuse(self, offer: Offer) -> Offer:
        self.refused += 1
        self.last_refused_reason = offer.reason
        return offer

    def load_disk(self) -> Offer | None:
        """Offer the bundle persisted on disk; None when there is none."""
        raw_path, sig_path = self.directory / AGENT_BUNDLE, self.directory / AGENT_SIGNATURE
        if not raw_path.exists():
            return None
        try:
            raw, sig = raw_path.read_bytes(), sig_path.read_bytes()
        except OSError as exc:
            self.refused += 1
            return Offer("refused", f"cannot read the cached bundle: {exc}")
        return self.offer(raw, sig, "disk")

    def _persist(self, bundle: HeldBundle) -> None:
        if bundle.origin == "disk":
            return
        for name, data in ((AGENT_SIGNATURE, bundle.signature + b"\n"), (AGENT_BUNDLE, bundle.raw)):
            tmp = self.directory / (name + ".tmp")
            tmp.write_bytes(data)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.directory / name)

    def age_seconds(self, now: datetime) -> float:
        """Seconds since the held bundle was issued (NaN without one); never enforced, only a metric."""
        if self.current is None:
            return float("nan")
        return max(0.0, (now - self.current.issued_at).total_seconds())


def fetch_bundle(base_url: str, timeout: float = 5.0, headers: dict[str, str] | None = None,
                 etag: str | None = None) -> tuple[bytes, bytes, str | None] | None:
    """GET ``<base>/agent-bundle.json`` and ``.sig`` from the distributor (``sco distributor serve``).

    ``headers`` carry the credential; with ``etag`` (the last bundle's) the bundle is asked for with
    ``If-None-Match`` and None is returned when the distributor answers 304 Not Modified. Otherwise the bundle,
    its signature and the bundle's ETag.

    Raises:
        AgentError: the distributor is unreachable or answers anything but 200 (or 304).
    """
    base = base_url if base_url.endswith("/") else base_url + "/"
    out: list[bytes] = []
    tag: str | None = None
    for name in (AGENT_BUNDLE, AGENT_SIGNATURE):
        sent = dict(headers or {})
        if name == AGENT_BUNDLE and etag:
            sent["If-None-Match"] = etag
        try:
            status, fields, body = exchange("GET", base + name, headers=sent, timeout=timeout)
        except OSError as exc:
            raise AgentError(f"distributor {base + name} unreachable: {exc}") from exc
        if status == 304 and name == AGENT_BUNDLE and etag:
            return None
        if status != 200:
            raise AgentError(f"distributor {base + name} answered {status}")
        if name == AGENT_BUNDLE:
            tag = fields.get("etag")
        out.append(body)
    return out[0], out[1], tag


def instance_basic_auth(region: str, instance: str, password_file: Path | None) -> dict[str, str]:
    """The instance's own credential (its NATS user and password) as an HTTP Basic header.

    None without a password file, or once the file is gone (it is removed at the end of a drain).
    """
    if password_file is None:
        return {}
    try:
        password = password_file.read_text().strip()
    except OSError:
        return {}
    user = agent_nats_name(region, instance)
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
