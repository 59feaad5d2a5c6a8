"""The controller's own bundle from the distributor, polled with ``If-None-Match`` as the controller.

``controller-bundle.json`` with its signing and (when governed fields changed) governance signatures.

The rule a served bundle must pass to replace the held one is ``accept``, and it is the controller's start-up
path (``contracts.bundle_verify.verify_bundle_bytes``) with the held bundle as the previous one:

* the signing signature verifies (``BND001``);
* it may follow the held bundle — same kind and partition (``BND003``), a generation not older, and not the
  same generation with other content (``BND002``: no rollback, no fork; ``check_succession``);
* the governed fields (floors, spend caps, approvers, fallback policy) are recomputed against the held bundle,
  and when any changed the governance signature must verify with the governance key (``BND004``, ADR-30).

``ControllerBundleFeed.poll`` fetches, applies the rule and, when the caller's ``admit`` (the partition's
``BundleGuard`` in PostgreSQL) agrees too, holds the new bundle. A refused bundle leaves the held one in force.
Files that fail the rule are reported only when the next poll reads the very same files again: ``publish``
writes the signatures before it renames the bundle into place, so one poll may read a half-published set (the
old bundle with the new signature), and that must not raise a ``bundle-refused`` (a canary gate, ADR-32). The
same refused files are then reported once, not on every poll, while a changed file (e.g. a governance signature
added later) is judged again.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.bundle_verify import BundleError, VerifiedBundle, verify_bundle_bytes
from contracts.bundle_wire import CONTROLLER_BUNDLE, GOVERNANCE_SIG_SUFFIX, SIG_SUFFIX, file_url

from .client import fetch

__all__ = ["ControllerBundleFeed", "Polled", "SignedBundle", "accept"]

Admit = Callable[[dict[str, Any], str], BundleError | None]


@dataclass(frozen=True)
class SignedBundle:
    """A controller bundle's bytes and its detached signatures, as served."""

    raw: bytes
    signature: bytes
    governance_signature: bytes | None = None

    @property
    def digest(self) -> str:
        """One digest over the three files: a changed signature is a different offer."""
        h = hashlib.sha256()
        for part in (self.raw, self.signature, self.governance_signature or b""):
            h.update(hashlib.sha256(part).digest())
        return h.hexdigest()

    def generation(self) -> int | None:
        """The generation the (possibly forged) payload claims, for the refusal's report; None when unreadable."""
        try:
            return int(json.loads(self.raw).get("generation", 0))
        except (ValueError, TypeError, AttributeError):
            return None


@dataclass(frozen=True)
class Polled:
    """One poll: a bundle ``taken``, a new ``refused`` one (with the generation it claimed), or neither.

    Neither: (unchanged, a refusal already reported, or the distributor unreachable: ``error``).
    """

    taken: VerifiedBundle | None = None
    refused: BundleError | None = None
    offered_generation: int | None = None
    error: str = ""


def accept(offered: SignedBundle, held: VerifiedBundle, public_key_pem: bytes, governance_key_pem: bytes | None,
           where: str) -> VerifiedBundle:
    """``offered`` verified as the successor of ``held``: the start-up verification with ``held`` as previous.

    Raises:
        BundleError: ``BND001`` bad signature or not canonical; ``BND002`` older generation or a fork;
            ``BND003`` another partition's or kind's bundle; ``BND004`` governed changes without a valid
            governance signature (or without the governance key to check it).
    """
    try:
        return verify_bundle_bytes(offered.raw, offered.signature, public_key_pem, offered.governance_signature,
                                   governance_key_pem, previous=held.payload)
    except BundleError as exc:
        raise BundleError(f"{where}: {exc.message}", code=exc.code) from None


class ControllerBundleFeed:
    """Polls ``<base>/<region>/<cluster>/controller-bundle.json`` (+ ``.sig``, ``.governance.sig``)."""

    def __init__(self, base_url: str, partition: str, public_key_pem: bytes, governance_key_pem: bytes | None,
                 authorization: str, held: VerifiedBundle, timeout: float = 5.0) -> None:
        """``held``: the verified bundle in force; ``authorization``: the controller's ``Authorization`` header."""
        self.url = file_url(base_url, partition, CONTROLLER_BUNDLE)
        self.partition, self.public_key_pem, self.governance_key_pem = partition, public_key_pem, governance_key_pem
        self.headers, self.timeout = {"Authorization": authorization}, timeout
        self.held = held
        self.etag: str | None = None
        self.refused: Counter[str] = Counter()   # by code
        self.last_error = ""
        self._refused_digest: str | None = None
        self._suspect_digest: str | None = None   # failed the rule once: reported if read again unchanged

    @property
    def suspect(self) -> bool:
        """True when the last poll read files that failed the rule for the first time (not yet reported)."""
        return self._suspect_digest is not None

    def _fetch(self) -> tuple[SignedBundle, str | None] | None:
        """The served files, or None when unchanged (304). Raises ``OSError`` when they cannot be read."""
        status, raw, etag = fetch(self.url, {**self.headers, **({"If-None-Match": self.etag} if self.etag else {})},
                                  self.timeout)
        if status == 304:
            return None
        if status != 200:
            raise OSError(f"{self.url} answered {status}")
        sig_status, sig, _ = fetch(self.url + SIG_SUFFIX, self.headers, self.timeout)
        if sig_status != 200:
            raise OSError(f"{self.url}.sig answered {sig_status}")
        gov_status, gov, _ = fetch(self.url + GOVERNANCE_SIG_SUFFIX, self.headers, self.timeout)
        if gov_status not in (200, 404):
            raise OSError(f"{self.url}.governance.sig answered {gov_status}")
        return SignedBundle(raw, sig, gov if gov_status == 200 else None), etag

    def poll(self, admit: Admit | None = None) -> Polled:
        """Fetch and judge; hold the served bundle when it passes ``accept`` and ``admit`` (None: agreed)."""
        try:
            got = self._fetch()
        except OSError as exc:
            self.last_error = str(exc)
            return Polled(error=self.last_error)
        if got is None:  # the held bundle's ETag: what is served is what is held
            self._suspect_digest = None
            return Polled()
        offered, etag = got
        if offered.raw == self.held.raw:
            self.etag, self._suspect_digest = etag, None
            return Polled()
        if offered.digest == self._refused_digest:
            return Polled()  # reported when first refused; refused again without a new count
        try:
            verified = accept(offered, self.held, self.public_key_pem, self.governance_key_pem, self.url)
        except BundleError as exc:
            self.last_error = str(exc)
            if offered.digest != self._suspect_digest:  # perhaps half-published: judge the next read first
                self._suspect_digest = offered.digest
                return Polled()
            return self._refuse(exc, offered)
        error = admit(verified.payload, self.url) if admit is not None else None
        if error is not None:
            self.last_error = str(error)
            return self._refuse(error, offered)
        self.held, self.etag, self._refused_digest, self._suspect_digest = verified, etag, None, None
        return Polled(taken=verified)

    def _refuse(self, error: BundleError, offered: SignedBundle) -> Polled:
        self.refused[error.code] += 1
        self._refused_digest, self._suspect_digest = offered.digest, None
        return Polled(refused=error, offered_generation=offered.generation())
