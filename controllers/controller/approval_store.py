"""Approval requests and their signed answers on PostgreSQL (ADR-23, ADR-30): the I/O beside the pure
``approval_judge``.

``sco fallback approve|deny`` (role ``sco_approvals``: read the requests and decisions, insert a decision's own
columns) calls ``submit``; the controller reads ``unjudged`` answers each pass and ``record_verdict`` writes the
arbiter's verdict — and, when it accepts, the request's state, granted amount and approver — in one transaction
with its event (outbox). Only the controller's role can change a request, so an answer counts only once the
arbiter has judged it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from contracts.approvals import SignedDecision
from contracts.events import Event
from stores.outbox import enqueue

from .approval_judge import Answer, OpenRequest, Verdict

__all__ = ["Answer", "Judged", "json_depth", "judged", "open_requests", "parse_record", "record_verdict",
           "send_unjudged", "submit", "unjudged"]

MAX_PER_PASS = 100           # answers judged a pass (the rest wait for the next one)
MAX_RECORD_CHARS = 16_384    # a signed decision is well under 1 KiB; anything larger is refused unparsed
MAX_RECORD_DEPTH = 16        # a signed decision nests 3 deep; deeper is refused unparsed (Python's parsers recurse)
log = logging.getLogger(__name__)
_COLUMNS = "request_id, workload, region, approver, raised_by, requested_at, state, options"


@dataclass(frozen=True)
class Judged:
    """A recorded answer and the arbiter's verdict on it (None: not judged yet)."""

    decision_id: str
    request_id: str
    approver: str
    decision: str
    amount_eur: str
    recorded_at: datetime
    verdict_code: str | None
    verdict_message: str | None


def _request(row: Any) -> OpenRequest:
    rid, workload, region, approver, raised_by, at, state, options = row
    return OpenRequest(str(rid), workload, region, approver, raised_by, at, state,
                       tuple({str(k): str(v) for k, v in o.items()} for o in (options or [])))


def open_requests(conn: Any, region: str | None = None, *, answered: bool = False) -> list[OpenRequest]:
    """Pending requests (with ``answered``: every request), oldest first."""
    where = ["TRUE"] if answered else ["state = 'pending'"]
    params: list[Any] = []
    if region:
        where.append("region = %s")
        params.append(region)
    with conn.transaction():
        rows = conn.execute(f"SELECT {_COLUMNS} FROM approval_requests WHERE {' AND '.join(where)} "
                            "ORDER BY requested_at, request_id", params).fetchall()
    return [_request(r) for r in rows]


def submit(conn: Any, signed: SignedDecision) -> uuid.UUID:
    """Record a signed answer for the arbiter (the approvals role may do nothing else)."""
    did = uuid.uuid4()
    d = signed.decision
    with conn.transaction():
        conn.execute("INSERT INTO approval_decisions (decision_id, request_id, approver, decision, amount_eur, signed) "
                     "VALUES (%s, %s, %s, %s, %s, %s)",
                     (did, d.request_id, d.approver, d.decision, d.amount_eur, signed.model_dump_json()))
    return did


def judged(conn: Any, request_id: str) -> list[Judged]:
    """Every answer recorded for one request, oldest first, with its verdict."""
    with conn.transaction():
        rows = conn.execute("SELECT decision_id, request_id, approver, decision, amount_eur, recorded_at, "
                            "verdict_code, verdict_message FROM approval_decisions WHERE request_id = %s "
                            "ORDER BY recorded_at, decision_id", (request_id,)).fetchall()
    return [Judged(str(r[0]), str(r[1]), r[2], r[3], str(r[4]), r[5], r[6], r[7]) for r in rows]


def unjudged(conn: Any, region: str) -> list[Answer]:
    """The region's answers the arbiter has not judged, in the order they were recorded.

    The record is read as text (never decoded by the driver) and parsed only within ``MAX_RECORD_CHARS`` and
    ``MAX_RECORD_DEPTH``: a poison answer comes back unparsed with its reason (the arbiter quarantines it,
    ``APR009``), never as an exception that would fail every pass.
    """
    return send_unjudged(conn, region)()


def send_unjudged(conn: Any, region: str) -> Callable[[], list[Answer]]:
    """``unjudged``'s statement sent; the reader of its rows returned (a pass sends its reads together)."""
    cols = ", ".join(f"r.{c.strip()}" for c in _COLUMNS.split(","))
    cur = conn.execute(
        f"SELECT d.decision_id, d.signed::text, {cols} FROM approval_decisions d JOIN approval_requests r "
        "USING (request_id) WHERE d.verdict_code IS NULL AND r.region = %s ORDER BY d.recorded_at, "
        "d.decision_id LIMIT %s", (region, MAX_PER_PASS))
    return lambda: [_answer(row) for row in cur.fetchall()]


def _answer(row: Sequence[Any]) -> Answer:
    decision_id, request = str(row[0]), _request(row[2:])
    signed, error = parse_record(str(row[1]))
    if error is not None:
        log.warning("approval decision %s quarantined: %s", decision_id, error)
    return Answer(decision_id, request, signed, error or "")


def parse_record(raw: str) -> tuple[SignedDecision | None, str | None]:
    """A stored answer as a signed decision, or None and why not (too large, too deep, not a decision)."""
    if len(raw) > MAX_RECORD_CHARS:
        return None, f"{len(raw)} characters, above {MAX_RECORD_CHARS}"
    depth = json_depth(raw)
    if depth > MAX_RECORD_DEPTH:
        return None, f"nested deeper than {MAX_RECORD_DEPTH} levels ({depth})"
    try:
        return SignedDecision.model_validate_json(raw), None
    except ValidationError as exc:
        return None, f"{exc.error_count()} error(s): {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
    except (ValueError, RecursionError) as exc:  # whatever the parser makes of it, never the pass's failure
        return None, f"unparsable: {type(exc).__name__}"


def json_depth(raw: str) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``raw`` (brackets inside strings do not count),
    without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in raw:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def record_verdict(conn: Any, answer: Answer, verdict: Verdict, now: datetime, event: Event, actor: str) -> None:
    """The verdict on ``answer``; when accepted, the request becomes granted (with the amount) or denied."""
    with conn.transaction():
        conn.execute("UPDATE approval_decisions SET verdict_code = %s, verdict_message = %s, judged_at = %s "
                     "WHERE decision_id = %s AND verdict_code IS NULL",
                     (verdict.code, verdict.message, now, answer.decision_id))
        if verdict.accepted and answer.signed is not None:
            conn.execute("UPDATE approval_requests SET state = %s, granted_eur = %s, decided_by = %s, answered_at = %s "
                         "WHERE request_id = %s AND state = 'pending'",
                         ("granted" if verdict.decision == "grant" else "denied", verdict.granted_eur,
                          answer.signed.decision.approver, now, answer.request.request_id))
        enqueue(conn, event, action="approval", actor=actor)
