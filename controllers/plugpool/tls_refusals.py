"""What plugpool does with a refused TLS handshake: one ``PPL020`` line per peer address per window, a count of
the ones held back, and a counter per reason.

A flood of bad handshakes (a misconfigured client retrying every few milliseconds, or a scan) must not fill the
disk: a peer address gets at most one line per ``window`` seconds, and its next line says how many refusals were
held back meanwhile. The counter per reason keeps every refusal, logged or not.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Refusal", "RefusalLog", "classify"]

log = logging.getLogger("plugpool.tls")
WINDOW_SECONDS = 10.0
# Beyond this many distinct addresses inside one window, the rest share one line: the table stays bounded even
# when the refusals come from a whole address range.
MAX_PEERS = 4096
OTHER_PEERS = "other addresses"

# (OpenSSL reason, verify message fragment) -> the reason label; the first match wins.
_REASONS: tuple[tuple[str, str], ...] = (
    ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "no certificate"),
    ("CERTIFICATE_REQUIRED", "no certificate"),
    ("WRONG_VERSION_NUMBER", "not TLS"),
    ("HTTP_REQUEST", "not TLS"),
    ("UNSUPPORTED_PROTOCOL", "protocol version"),
    ("TLSV1_ALERT_PROTOCOL_VERSION", "protocol version"),
    ("NO_SHARED_CIPHER", "no shared cipher"),
    ("NO_APPLICATION_PROTOCOL", "no ALPN h2"),
)


@dataclass(frozen=True)
class Refusal:
    """A refused handshake: the reason label (few values, for the counter) and the detail for the log line."""

    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail and self.detail != self.reason else self.reason


def classify(exc: BaseException) -> Refusal:
    """The refusal an exception raised by the server side of a TLS handshake stands for."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        message = getattr(exc, "verify_message", None) or str(exc)
        if "issuer" in message or "self-signed" in message or "self signed" in message:
            return Refusal("unknown CA", message)
        if "expired" in message or "not yet valid" in message:
            return Refusal("certificate expired", message)
        return Refusal("bad certificate", message)
    if isinstance(exc, ssl.SSLError):
        name = getattr(exc, "reason", None) or str(exc)  # OpenSSL's reason, when the error came from OpenSSL
        for marker, reason in _REASONS:
            if marker in name:
                return Refusal(reason, name)
        return Refusal("TLS error", name)
    if isinstance(exc, TimeoutError | ConnectionAbortedError):
        return Refusal("handshake timeout", str(exc))
    if isinstance(exc, ConnectionError | EOFError):
        return Refusal("closed during handshake", type(exc).__name__)
    return Refusal("error", f"{type(exc).__name__}: {exc}")


@dataclass
class _Peer:
    last_line: float
    held_back: int = 0


class RefusalLog:
    """Counts every refusal by reason and logs it rate-limited per peer address (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = WINDOW_SECONDS,
                 max_peers: int = MAX_PEERS) -> None:
        self._clock = clock
        self._window = window
        self._max_peers = max_peers
        self._lock = threading.Lock()
        self._peers: dict[str, _Peer] = {}
        self._counts: Counter[str] = Counter()

    def refused(self, address: str, refusal: Refusal) -> None:
        """Record a refused handshake from ``address`` (host only: the port changes with every attempt)."""
        now = self._clock()
        with self._lock:
            self._counts[refusal.reason] += 1
            key = self._key(address, now)
            peer = self._peers.get(key)
            if peer is not None and now - peer.last_line < self._window:
                peer.held_back += 1
                return
            held_back = peer.held_back if peer is not None else 0
            self._peers[key] = _Peer(last_line=now)
            more = f" ({held_back} more refused since the last line)" if held_back else ""
            # under the lock: whoever sees the count also finds the line written
            log.warning("PPL020 refused TLS handshake from %s: %s%s", key, refusal, more)

    def _key(self, address: str, now: float) -> str:
        if address in self._peers or len(self._peers) < self._max_peers:
            return address
        # held-back counts of quiet peers are dropped with them: their lines were written, the counter has them all
        for stale in [a for a, p in self._peers.items() if now - p.last_line >= self._window]:
            del self._peers[stale]
        return address if len(self._peers) < self._max_peers else OTHER_PEERS

    def counts(self) -> dict[str, int]:
        """Refused handshakes so far, by reason (the ``sco_plugpool_tls_refused_total`` series)."""
        with self._lock:
            return dict(self._counts)
