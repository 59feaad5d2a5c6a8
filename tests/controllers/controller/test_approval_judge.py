"""The arbiter's judgement of an answer to an approval request, pure: only the approver the contract names,
signing with their registered key, never the identity that raised the spend, only before the deadline, and
only within the priced options (ADR-23, ADR-30)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from contracts.approvals import APPROVAL_CODES, ApprovalDecision, SignedDecision, sign_decision
from contracts.signing import generate_keypair
from controllers.controller.approval_judge import Answer, OpenRequest, judge, judge_answers, with_verdicts
from controllers.controller.fallback import Approval
from testkit.builders import T0

CFO, OPS, MALLORY = "cfo@example.org", "ops@example.org", "mallory@example.org"
KEYS = {who: generate_keypair() for who in (CFO, OPS, MALLORY)}
REGISTERED = {who: pair.public_pem for who, pair in KEYS.items() if who != MALLORY}
RID = str(uuid.UUID(int=7))
OPTIONS = ({"option": "cover-all", "units": "32", "cost_eur": "480.000000"},
           {"option": "cover-half", "units": "16", "cost_eur": "240.000000"},
           {"option": "accept-shortfall", "units": "32", "cost_eur": "0"})
REQUEST = OpenRequest(RID, "train", "r1", CFO, "controller@sco", T0, "pending", OPTIONS)


@dataclass(frozen=True)
class Named:
    approver: str | None


def signed(by: str = CFO, *, key: str | None = None, decision: str = "grant", amount: str = "480",
           request_id: str = RID, workload: str = "train") -> SignedDecision:
    d = ApprovalDecision(request_id=uuid.UUID(request_id), workload=workload, region="r1", decision=decision,  # type: ignore[arg-type]
                         amount_eur=Decimal(amount), approver=by, decided_at=T0)
    return sign_decision(d, KEYS[key or by].private_pem)


CASES: list[Any] = [
    pytest.param({}, {}, "APR000", Decimal("480"), id="the-named-approver-grants-on-time"),
    pytest.param({"amount": "100"}, {}, "APR000", Decimal("100"), id="a-smaller-amount-is-granted-as-given"),
    pytest.param({"decision": "deny", "amount": "0"}, {}, "APR000", Decimal(0), id="the-named-approver-denies"),
    pytest.param({"by": OPS}, {}, "APR004", Decimal(0), id="anyone-else-is-refused"),
    pytest.param({"by": OPS}, {"contract": Named(OPS), "raised_by": OPS}, "APR005", Decimal(0),
                 id="the-identity-that-raised-the-spend-cannot-approve-it"),
    pytest.param({}, {"now": T0 + timedelta(minutes=15)}, "APR007", Decimal(0), id="at-the-deadline-is-too-late"),
    pytest.param({}, {"now": T0 + timedelta(minutes=40)}, "APR007", Decimal(0), id="after-the-deadline"),
    pytest.param({"key": MALLORY}, {}, "APR006", Decimal(0), id="signed-with-another-key"),
    pytest.param({}, {"keys": {}}, "APR006", Decimal(0), id="no-registered-key"),
    pytest.param({"amount": "480.01"}, {}, "APR008", Decimal(0), id="more-than-the-largest-option"),
    pytest.param({"amount": "0"}, {}, "APR008", Decimal(0), id="a-grant-of-nothing"),
    pytest.param({}, {"state": "expired"}, "APR001", Decimal(0), id="an-expired-request"),
    pytest.param({"request_id": str(uuid.UUID(int=8))}, {}, "APR002", Decimal(0), id="an-answer-to-another-request"),
    pytest.param({"workload": "other"}, {}, "APR002", Decimal(0), id="an-answer-for-another-workload"),
    pytest.param({}, {"contract": Named(None)}, "APR003", Decimal(0), id="a-contract-without-an-approver"),
    pytest.param({}, {"contract": None}, "APR003", Decimal(0), id="no-contract-in-force"),
]


@pytest.mark.parametrize(("answer", "situation", "code", "granted"), CASES)
def test_an_answer_is_accepted_only_from_the_named_approver_before_the_deadline_within_the_options(
        answer: dict[str, Any], situation: dict[str, Any], code: str, granted: Decimal) -> None:
    request = replace(REQUEST, state=situation.get("state", "pending"),
                      raised_by=situation.get("raised_by", REQUEST.raised_by))
    verdict = judge(request, signed(**answer), situation.get("contract", Named(CFO)),
                    situation.get("now", T0 + timedelta(minutes=14, seconds=59)),
                    keys=situation.get("keys", REGISTERED))
    assert (verdict.code, verdict.accepted, verdict.granted_eur) == (code, code == "APR000", granted)
    assert verdict.message.startswith(f"{code}: ") and code in APPROVAL_CODES


def test_a_refusal_names_who_may_answer_and_what_to_do() -> None:
    wrong = judge(REQUEST, signed(OPS), Named(CFO), T0, keys=REGISTERED)
    assert "ops@example.org may not answer for train" in wrong.message and "ask cfo@example.org" in wrong.message
    late = judge(REQUEST, signed(), Named(CFO), T0 + timedelta(minutes=16), keys=REGISTERED)
    assert "expired at 2026-11-29T12:15:00+00:00" in late.message and "60 s" in late.message
    own = judge(replace(REQUEST, raised_by=CFO), signed(), Named(CFO), T0, keys=REGISTERED)
    assert "cannot approve their own spend" in own.message


def test_only_the_first_accepted_answer_to_a_request_counts_and_the_arbiter_sees_the_grant() -> None:
    answers = [Answer("d1", REQUEST, signed(OPS)), Answer("d2", REQUEST, signed(amount="240")),
               Answer("d3", REQUEST, signed(amount="480")), Answer("d4", REQUEST, None, "1 error(s)")]
    verdicts = judge_answers(answers, lambda w: Named(CFO), T0 + timedelta(minutes=1), keys=REGISTERED)
    assert [v.code for _, v in verdicts] == ["APR004", "APR000", "APR001", "APR009"]  # d4: quarantined unparsed
    approvals = with_verdicts({"train": Approval(T0, "pending", units=32)}, verdicts)
    assert approvals["train"] == Approval(T0, "granted", Decimal("240"), 32)


def test_a_signature_covers_every_field_of_the_decision() -> None:
    good = signed(amount="100")
    tampered = SignedDecision(decision=good.decision.model_copy(update={"amount_eur": Decimal("480")}),
                              signature=good.signature)
    assert judge(REQUEST, tampered, Named(CFO), T0, keys=REGISTERED).code == "APR006"
