"""Errors of the checkpoint client. Each message names the object, the cause and the next step."""

from __future__ import annotations

__all__ = ["AccessDenied", "CheckpointError", "FinalWriteFailed", "NotFound", "StoreError"]


class CheckpointError(Exception):
    """Base of every checkpoint-client error."""


class StoreError(CheckpointError):
    """The object store refused or failed a request."""


class AccessDenied(StoreError):
    """This identity may not touch that bucket or object (ADR-19: one workload cannot read another's)."""


class NotFound(StoreError):
    """No such bucket, object or configuration."""


class FinalWriteFailed(CheckpointError):
    """The final checkpoint on a notice did not complete: the lease was released and the failure reported."""
