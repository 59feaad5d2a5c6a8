"""A poison approval cannot stall the controller: an answer the approvals credential records that is too deep,
too large or no JSON at all is quarantined — its verdict written with the stable code ``APR009`` and an
``approval-refused`` event naming the decision (the row stays, as the dead letter's reference) — and the same
pass, and every pass after it, goes on: a real approval recorded after the poison is still granted.
Against real PostgreSQL, with the approvals component's own grants."""

from __future__ import annotations

import logging
import uuid
from decimal import Decimal

import psycopg
import pytest

from controllers.controller import approval_store
from tests.controllers.controller.test_approvals import (  # noqa: F401  (the fixtures)
    CFO,
    _answer,
    _largest,
    _overrun,
    _verdict,
    approvals_url,
)
from tests.controllers.controller.test_controller import World, world  # noqa: F401

pytestmark = pytest.mark.services
DEEP = "[" * 3000 + "]" * 3000                       # the reviewer's 3,000 levels
DEEP_OBJECT = '{"a":' * 2000 + "1" + "}" * 2000   # within the size limit once PostgreSQL spaces it


def _poison(url: str, request_id: str, body: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("INSERT INTO approval_decisions (decision_id, request_id, approver, decision, signed) "
                           "VALUES (gen_random_uuid(), %s, %s, 'grant', %s) RETURNING decision_id",
                           (request_id, CFO, body)).fetchone()
    assert row is not None
    return str(row[0])


def test_a_deeply_nested_answer_is_quarantined_with_an_event_and_the_next_pass_grants_a_real_approval(
        world: World, approvals_url: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    ctl, request = _overrun(world)
    poisons = [_poison(approvals_url, request.request_id, body) for body in (DEEP, DEEP_OBJECT)]
    with caplog.at_level(logging.WARNING, logger="controllers.controller.approval_store"):
        world.run(ctl, 2, every_s=5)          # raises (CTL001 RecursionError) on the unfixed store
    for decision in poisons:
        code, message = _verdict(world, decision)
        assert code == "APR009" and "nested deeper than" in message, message
        assert f"decision {decision}" in caplog.text
    refused = {e["attributes"]["decision"]: e["attributes"]["code"] for e in world.events("approval-refused")}
    assert {d: refused.get(d) for d in poisons} == {d: "APR009" for d in poisons}
    granted = _largest(request)
    real = _answer(approvals_url, request, CFO, granted, world.clock.now())
    world.run(ctl, 2, every_s=5)
    assert _verdict(world, real)[0] == "APR000"
    assert world.conn.execute("SELECT state, granted_eur FROM approval_requests WHERE request_id = %s",
                              (request.request_id,)).fetchone() == ("granted", Decimal(granted))


def test_every_shape_of_poison_is_refused_unparsed_with_its_own_reason(
        world: World, approvals_url: str) -> None:  # noqa: F811
    rid = uuid.uuid4()
    world.conn.execute("INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, options) "
                       "VALUES (%s, 'train', 'r1', %s, %s, '[]')", (rid, CFO, world.clock.now()))
    bodies = {"deep": DEEP, "deep object": DEEP_OBJECT, "large": '{"pad": "' + "x" * 20_000 + '"}',
              "wide": "[" + ",".join(["1"] * 6000) + "]", "not a decision": '{"decision": "grant"}'}
    ids = {name: _poison(approvals_url, str(rid), body) for name, body in bodies.items()}
    answers = {a.decision_id: a for a in approval_store.unjudged(world.conn, "r1")}
    reasons = {name: answers[i].error for name, i in ids.items()}
    assert all(answers[i].signed is None for i in ids.values())
    assert "nested deeper than" in reasons["deep"] and "nested deeper than" in reasons["deep object"]
    assert "above 16384" in reasons["large"] and "above 16384" in reasons["wide"]
    assert "error(s)" in reasons["not a decision"]
