"""The controller's side of the distributor: the partition's agent bundle every launch carries.

The agent bundle (the copy every launch's cloud-config carries) is fetched with ``If-None-Match``, and taken only when
its signature verifies and it may follow the one held (same kind and partition, generation not older:
``contracts.bundle_verify.check_succession``).
"""

from __future__ import annotations

import urllib.error
import urllib.request

from contracts.bundle_verify import BundleError, check_succession, verify_bundle_bytes
from contracts.bundle_wire import AGENT_BUNDLE, SIG_SUFFIX, file_url

__all__ = ["AgentBundleFeed", "fetch"]


def fetch(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes, str | None]:
    """One GET: the status, the body (empty unless 200) and the ETag; an unreachable server raises ``OSError``."""
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read(), resp.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        return int(exc.code), b"", exc.headers.get("ETag") if exc.headers else None


class AgentBundleFeed:
    """Polls ``<base>/<region>/<cluster>/agent-bundle.json`` (+ ``.sig``) for one partition."""

    def __init__(self, base_url: str, partition: str, public_key_pem: bytes, authorization: str,
                 held: tuple[bytes, bytes] | None = None, timeout: float = 5.0) -> None:
        """``authorization``: the ``Authorization`` header (the controller's bearer token or Basic)."""
        self.url = file_url(base_url, partition, AGENT_BUNDLE)
        self.partition, self.public_key_pem, self.timeout = partition, public_key_pem, timeout
        self.headers = {"Authorization": authorization}
        self.held = held
        self.etag: str | None = None
        self.refused = 0
        self.last_error = ""

    def _get(self, url: str, extra: dict[str, str]) -> tuple[int, bytes, str | None]:
        return fetch(url, {**self.headers, **extra}, self.timeout)

    def poll(self) -> tuple[bytes, bytes] | None:
        """A newer verified bundle to hand to launches, or None (unchanged, unreachable or refused: counted)."""
        try:
            status, raw, etag = self._get(self.url, {"If-None-Match": self.etag} if self.etag else {})
            if status == 304:
                return None
            if status != 200:
                raise OSError(f"{self.url} answered {status}")
            sig_status, sig, _ = self._get(self.url + SIG_SUFFIX, {})
            if sig_status != 200:
                raise OSError(f"{self.url}.sig answered {sig_status}")
        except OSError as exc:
            self.last_error = str(exc)
            return None
        try:
            payload = verify_bundle_bytes(raw, sig, self.public_key_pem).payload
            if payload.get("kind") != "AgentBundle" or payload.get("partition") != self.partition:
                raise BundleError(f"{self.url} is not this partition's agent bundle", code="BND003")
            if self.held is not None:
                previous = verify_bundle_bytes(self.held[0], self.held[1], self.public_key_pem).payload
                check_succession(previous, payload, self.url)
        except BundleError as exc:
            self.refused += 1
            self.last_error = str(exc)
            return None
        self.etag = etag
        if self.held is not None and self.held[0] == raw:
            return None
        self.held = (raw, sig)
        return self.held
