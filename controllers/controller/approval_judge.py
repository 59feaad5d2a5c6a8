"""The arbiter's judgement of an answer to an approval request (ADR-23, ADR-30), pure.

``judge(request, decision, contract, now)`` returns a ``Verdict`` with a stable code (``contracts.approvals.
APPROVAL_CODES``). An answer counts only when it is signed by the approver the contract in force names, with
that approver's registered key; when the signer is not the identity that raised the spend (operators cannot
approve their own spend); and when the arbiter reads it before the request's 15-minute deadline. A grant
carries an amount in EUR, positive and no larger than the largest priced option the approver was offered; it
raises the workload's authority above its 24-hour cap by exactly that amount (``ledger.reserve`` counts it).
The same function runs in ``sco fallback approve`` as a pre-check and in the controller as the authority.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Protocol

from contracts.approvals import SignedDecision, verify_decision
from contracts.errors import ContractsError

from .model import Answer, Approval, OpenRequest

__all__ = ["Answer", "NamesApprover", "OpenRequest", "Verdict", "deadline", "judge", "judge_answers",
           "largest_option_eur", "with_verdicts"]

APPROVAL_TIMEOUT = timedelta(minutes=15)


class NamesApprover(Protocol):
    """What the judgement needs of a contract: the approver it names (``contracts.schema.Contract`` is one)."""

    @property
    def approver(self) -> str | None:
        """The contract's named approver, or None."""


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    code: str
    message: str
    decision: str                   # grant | deny
    granted_eur: Decimal = Decimal(0)


def deadline(request: OpenRequest, timeout: timedelta = APPROVAL_TIMEOUT) -> datetime:
    """When an open request times out."""
    return request.requested_at + timeout


def largest_option_eur(options: Sequence[Mapping[str, str]]) -> Decimal:
    """The largest priced option of a request, in EUR (0 without one)."""
    out = Decimal(0)
    for o in options:
        try:
            out = max(out, Decimal(str(o.get("cost_eur", "0"))))
        except InvalidOperation:
            continue
    return out


def _refuse(code: str, message: str, decision: str) -> Verdict:
    return Verdict(False, code, f"{code}: {message}", decision)


def judge(request: OpenRequest, signed: SignedDecision, contract: NamesApprover | None, now: datetime, *,
          keys: Mapping[str, bytes], timeout: timedelta = APPROVAL_TIMEOUT) -> Verdict:
    """Accept or refuse ``signed`` as the answer to ``request`` at ``now`` (``keys``: approver e-mail -> PEM)."""
    d = signed.decision
    rid = request.request_id
    if request.state != "pending":
        return _refuse("APR001", f"request {rid} for {request.workload} is already {request.state}; list the open "
                       "ones with `sco fallback approvals`", d.decision)
    if (str(d.request_id), d.workload, d.region) != (rid, request.workload, request.region):
        return _refuse("APR002", f"the decision answers request {d.request_id} ({d.workload} in {d.region}), not "
                       f"{rid} ({request.workload} in {request.region}); sign a decision for this request",
                       d.decision)
    named = contract.approver if contract is not None else None
    if named is None:
        return _refuse("APR003", f"no contract in force for {request.workload} names a fallback approver; "
                       "set fallback.approver in the contract (a governed field)", d.decision)
    if d.approver != named:
        return _refuse("APR004", f"{d.approver} may not answer for {request.workload}: its contract names "
                       f"{named} as the approver; ask {named}", d.decision)
    if request.raised_by is not None and d.approver == request.raised_by:
        return _refuse("APR005", f"{d.approver} raised this spend and cannot approve it (ADR-30: operators "
                       "cannot approve their own spend); the contract must name someone else", d.decision)
    key = keys.get(d.approver)
    if key is None:
        return _refuse("APR006", f"no public key is registered for {d.approver}; register "
                       f"{d.approver}.pub.pem in the controller's approver keys", d.decision)
    try:
        verify_decision(signed, key)
    except ContractsError as exc:
        return _refuse("APR006", f"the decision by {d.approver} does not verify with the registered key: {exc}",
                       d.decision)
    due = deadline(request, timeout)
    if now >= due:
        late = int((now - due).total_seconds())
        return _refuse("APR007", f"request {rid} expired at {due.isoformat()} ({late} s before this answer was "
                       "read); shortfall is recorded — wait for the next request", d.decision)
    if d.decision == "deny":
        return Verdict(True, "APR000", f"APR000: {d.approver} denied fallback beyond the cap for {request.workload}",
                       "deny")
    top = largest_option_eur(request.options)
    if d.amount_eur <= 0 or d.amount_eur > top:
        return _refuse("APR008", f"a grant of {d.amount_eur} EUR is outside (0, {top}] EUR, the largest priced "
                       "option offered; grant an offered option (--option) or a smaller --amount", d.decision)
    return Verdict(True, "APR000", f"APR000: {d.approver} granted {d.amount_eur} EUR above the 24 h cap for "
                   f"{request.workload}", "grant", d.amount_eur)


def judge_answers(answers: Sequence[Answer], contract_of: Callable[[str], NamesApprover | None], now: datetime, *,
                  keys: Mapping[str, bytes], timeout: timedelta = APPROVAL_TIMEOUT) -> list[tuple[Answer, Verdict]]:
    """Judge a pass's answers in the order they were recorded: once one is accepted, its request is answered
    and later answers to it are refused (``APR001``)."""
    answered: dict[str, str] = {}
    out = []
    for a in answers:
        request = a.request
        if request.request_id in answered:
            request = OpenRequest(request.request_id, request.workload, request.region, request.approver,
                                  request.raised_by, request.requested_at, answered[request.request_id],
                                  request.options)
        if a.signed is None:
            verdict = _refuse("APR009", f"the recorded decision {a.decision_id} is not a signed decision ({a.error}); "
                              "quarantined unparsed; record it again with `sco fallback approve|deny`", "unknown")
        else:
            verdict = judge(request, a.signed, contract_of(request.workload), now, keys=keys, timeout=timeout)
        if verdict.accepted:
            answered[request.request_id] = "granted" if verdict.decision == "grant" else "denied"
        out.append((a, verdict))
    return out


def with_verdicts(approvals: Mapping[str, Approval], verdicts: Sequence[tuple[Answer, Verdict]]) -> dict[str, Approval]:
    """The workloads' approval states after this pass's accepted answers (what the arbiter decides from)."""
    out = dict(approvals)
    for answer, verdict in verdicts:
        r = answer.request
        held = out.get(r.workload)
        if not verdict.accepted or (held is not None and held.requested_at > r.requested_at):
            continue
        units = max((int(o.get("units", "0")) for o in r.options if str(o.get("units", "0")).isdigit()), default=0)
        out[r.workload] = Approval(r.requested_at, "granted" if verdict.decision == "grant" else "denied",
                                   verdict.granted_eur, units)
    return out
