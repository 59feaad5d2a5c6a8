"""The errors the ``distributor`` package defines. Standard library only.

Exception
└── DistributorError            the base of every error ``distributor`` raises on purpose
└── RolloutError            a bundle release cannot be staged or moved: code, what, the fix (ADR-32)
"""

from __future__ import annotations

__all__ = ["DistributorError", "RolloutError"]


class DistributorError(Exception):
    """Base of every error the ``distributor`` package raises on purpose."""


class RolloutError(DistributorError, ValueError):
    """A bundle release cannot be staged, promoted or rolled back; the message has a stable code and the fix."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")
