"""A client-side token bucket for mutating provider calls (ADR-12: 10 mutating calls a second per region,
split statically between partitions). Adapters take it as their ``mutating_hook``: it is called with the
operation name before every launch, terminate or reclaim, and raises ``Throttled`` (or waits) when the
budget is spent. The clock is injected; ``time.monotonic`` only in the production default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from contracts.provider_errors import Throttled

__all__ = ["MutatingHook", "TokenBucket"]

MutatingHook = Callable[[str], None]


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` banked. ``__call__(op)`` spends one token or raises
    ``Throttled`` with the wait; ``blocking=True`` sleeps instead (with the injected ``sleep``)."""

    def __init__(self, rate: float, burst: float | None = None, *, key: str = "",
                 monotonic: Callable[[], float] = time.monotonic, blocking: bool = False,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if rate <= 0:
            raise ValueError(f"token bucket rate must be > 0 calls/s, got {rate}")
        self.rate = rate
        self.burst = burst if burst is not None else rate
        self.key = key
        self._monotonic = monotonic
        self._blocking = blocking
        self._sleep = sleep
        self._tokens = self.burst
        self._last = monotonic()
        self._lock = threading.Lock()
        self.spent = 0
        self.refused = 0    # calls refused (``Throttled``): the token budget's pressure, exported as a metric

    def _refill(self) -> None:
        now = self._monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def try_acquire(self, tokens: float = 1.0) -> float:
        """Spend ``tokens`` and return 0, or return the seconds to wait (spending nothing)."""
        with self._lock:
            self._refill()
            if self._tokens >= tokens - 1e-9:  # float refills land a hair short of a whole token
                self._tokens = max(self._tokens - tokens, 0.0)
                self.spent += 1
                return 0.0
            return (tokens - self._tokens) / self.rate

    def __call__(self, operation: str) -> None:
        while True:
            wait = self.try_acquire()
            if wait == 0.0:
                return
            if not self._blocking:
                with self._lock:
                    self.refused += 1
                raise Throttled(operation, wait, self.rate, self.key)
            self._sleep(wait)
