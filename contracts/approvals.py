"""A signed answer to a fallback approval request (ADR-23, ADR-30).

The record ``sco fallback approve|deny`` writes and the controller's arbiter reads.

The approver signs the canonical JSON of ``ApprovalDecision`` with their ECDSA P-256 key (the same format as
the bundles, ``contracts.signing``: base64 DER over SHA-256, so ``cosign verify-blob --key`` checks it too).
The arbiter verifies it with the approver's registered public key and then judges it against the request and
the contract in force; the stable codes of that judgement are ``APPROVAL_CODES``.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .canonical import canonical_bytes
from .signing import load_private_key, load_public_key, sign_blob, verify_blob

__all__ = ["APPROVAL_CODES", "ApprovalDecision", "SignedDecision", "sign_decision", "verify_decision"]

_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

# code -> what it means (the arbiter's verdicts; ``APR000`` is the only acceptance)
APPROVAL_CODES: dict[str, str] = {
    "APR000": "accepted",
    "APR001": "the request is no longer open (already answered or expired)",
    "APR002": "the decision names another request, workload or region than the one it answers",
    "APR003": "no contract in force names an approver for the workload",
    "APR004": "the signer is not the approver named in the contract",
    "APR005": "the signer raised the spend (operators cannot approve their own spend, ADR-30)",
    "APR006": "the signature does not verify with the approver's registered key, or no key is registered",
    "APR007": "the answer came after the 15-minute deadline",
    "APR008": "the granted amount is not positive or exceeds the largest priced option",
    "APR009": "the recorded answer is not a signed decision (too large, too deeply nested or malformed): quarantined",
}


class ApprovalDecision(BaseModel):
    """What the approver signs: grant (an amount in EUR above the cap) or deny one open request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sco/fallback-approval"] = "sco/fallback-approval"
    request_id: uuid.UUID
    workload: Annotated[str, Field(min_length=1, max_length=200)]
    region: Annotated[str, Field(min_length=1, max_length=100)]
    decision: Literal["grant", "deny"]
    amount_eur: Annotated[Decimal, Field(ge=0, le=10_000_000)] = Decimal(0)
    approver: Annotated[str, Field(max_length=320)]
    decided_at: datetime

    @field_validator("approver")
    @classmethod
    def _approver_is_email(cls, value: str) -> str:
        if not _EMAIL_RE.fullmatch(value):
            raise ValueError(f"approver must be the e-mail address the contract names, got {value[:80]!r}")
        return value

    def payload(self) -> bytes:
        """The canonical bytes that are signed."""
        return canonical_bytes(self.model_dump(mode="json"))


class SignedDecision(BaseModel):
    """A decision and the base64 DER signature of its canonical payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: ApprovalDecision
    signature: Annotated[str, Field(min_length=1, max_length=512)]


def sign_decision(decision: ApprovalDecision, private_key: bytes) -> SignedDecision:
    """Sign ``decision`` with the approver's PEM private key (raises ``KeyError_`` for a bad key)."""
    return SignedDecision(decision=decision, signature=sign_blob(decision.payload(), load_private_key(private_key))
                          .decode())


def verify_decision(signed: SignedDecision, public_key: bytes) -> None:
    """Raise ``SignatureError`` (or ``KeyError_`` for a bad key) unless the signature verifies."""
    verify_blob(signed.decision.payload(), signed.signature.encode(), load_public_key(public_key))
