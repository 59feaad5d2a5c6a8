"""Typed errors of the provider contract (ADR-05). Each carries the values that caused it and says what to do.

Defined in ``contracts.errors`` (standard library only), so callers can catch them without loading pydantic.
"""

from __future__ import annotations

from .errors import CapacityUnavailable, InvalidRequest, NotFound, NotOwned, ProviderError, QuotaExceeded, Throttled

__all__ = [
    "CapacityUnavailable",
    "InvalidRequest",
    "NotFound",
    "NotOwned",
    "ProviderError",
    "QuotaExceeded",
    "Throttled",
]
