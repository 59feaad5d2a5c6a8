"""Approving fallback spend beyond the cap, against real PostgreSQL and the simulated region (ADR-23, ADR-30): the
arbiter raises a request after a hall loss, `sco fallback approve|deny` records a signed answer with the
approvals role's least privilege, and the controller accepts it only from the named approver before the deadline
— then spends above the cap within the approved amount, reserved in the ledger before launch."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from contracts.approvals import ApprovalDecision, sign_decision
from contracts.signing import generate_keypair
from controllers.controller import approval_store
from controllers.controller.approval_judge import OpenRequest
from controllers.controller.fallback import FallbackConfig
from controllers.controller.floor_keeper import FloorConfig
from controllers.controller.loop import Controller
from sco.commands.keys import init_approver_key
from sco.stack.pgroles import grant_component
from testkit.builders import contract, contracts
from tests.controllers.controller.test_controller import World, world  # noqa: F401  (the fixture)
from tests.support.cli import sco

pytestmark = pytest.mark.services

CFO, OPS = "cfo@example.org", "ops@example.org"
CAP = Decimal(60)
KEYS = {who: generate_keypair() for who in (CFO, OPS)}


@pytest.fixture
def approvals_url(world: World) -> Iterator[str]:  # noqa: F811
    """A login role with exactly the approvals component's grants (sco.stack.pgroles.GRANTS)."""
    role, password = f"t_approvals_{uuid.uuid4().hex[:10]}", secrets.token_urlsafe(18)
    world.conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role),
                                                                          sql.Literal(password)))
    grant_component(world.conn, "approvals", role)
    parts = urlsplit(world.url)
    yield urlunsplit(parts._replace(netloc=f"{quote(role)}:{quote(password)}@{parts.hostname}:{parts.port}"))
    world.conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    world.conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _overrun(world: World, operator: str = OPS) -> tuple[Controller, OpenRequest]:  # noqa: F811
    """A hall loss: the floor is restored, fallback spends the 60 EUR cap, and the arbiter asks the approver."""
    train = contract("train", "T1", floor_pct=50, fallback={"spend_cap_24h_eur": int(CAP), "approver": CFO})
    world.source.demand(train.ref, 150)
    ctl = world.controller(contracts(train), floor=FloorConfig(hall_lost_min=2), operator=operator,
                           fallback=FallbackConfig(reserve_horizon=timedelta(hours=24)),
                           approver_keys=tuple((who, pair.public_pem) for who, pair in KEYS.items()))
    world.run(ctl, 10)
    floor_h1 = [i.instance_id for i in world.mine() if i.metadata["sco_purpose"] == "floor" and i.hall == "h1"]
    world.region.hall_reclaim("h1")
    world.region.reclaim(tuple(floor_h1), drill=False)
    for i in world.region.list_instances():
        if i.status == "notified":
            ctl.record_notice("train", world.clock.now())
    world.run(ctl, 3, every_s=30)
    assert world.events("approval-requested"), "the overrun should ask the approver"
    [request] = approval_store.open_requests(world.conn, "r1")
    assert request.raised_by == operator and request.approver == CFO
    return ctl, request


def _committed(world: World) -> Decimal:  # noqa: F811
    return Decimal(world.conn.execute("SELECT coalesce(sum(amount_eur), 0) FROM spend_reservations WHERE workload = "
                                      "'train' AND state IN ('held', 'consumed')").fetchone()[0])


def _answer(url: str, request: OpenRequest, by: str, amount: Decimal, at: datetime, decision: str = "grant") -> str:
    d = ApprovalDecision(request_id=uuid.UUID(request.request_id), workload=request.workload, region=request.region,
                         decision=decision, amount_eur=amount, approver=by, decided_at=at)  # type: ignore[arg-type]
    with psycopg.connect(url, autocommit=True) as conn:
        return str(approval_store.submit(conn, sign_decision(d, KEYS[by].private_pem)))


def _verdict(world: World, decision_id: str) -> tuple[str, str]:  # noqa: F811
    row = world.conn.execute("SELECT verdict_code, verdict_message FROM approval_decisions WHERE decision_id = %s",
                             (decision_id,)).fetchone()
    return row[0], row[1]


def _largest(request: OpenRequest) -> Decimal:
    return max(Decimal(o["cost_eur"]) for o in request.options)


def test_an_approval_by_the_named_approver_lets_the_arbiter_spend_above_the_cap_within_the_approved_amount(
        world: World, approvals_url: str) -> None:  # noqa: F811
    ctl, request = _overrun(world)
    before = _committed(world)
    assert before <= CAP
    granted = _largest(request)
    decision = _answer(approvals_url, request, CFO, granted, world.clock.now())
    world.run(ctl, 3, every_s=5)
    code, message = _verdict(world, decision)
    assert code == "APR000" and f"granted {granted} EUR" in message
    assert [e["attributes"]["code"] for e in world.events("approval-granted")] == ["APR000"]
    after = _committed(world)
    assert CAP < after <= CAP + granted, "fallback above the cap, within the approved amount"
    assert world.conn.execute("SELECT state, granted_eur, decided_by FROM approval_requests WHERE request_id = %s",
                              (request.request_id,)).fetchone() == ("granted", granted, CFO)
    held_then_launched = world.conn.execute(
        "SELECT count(*) FROM spend_reservations r JOIN spends s USING (reservation_id) WHERE r.workload = 'train' "
        "AND r.state = 'consumed' AND s.spent_at >= r.window_start").fetchone()[0]
    assert held_then_launched > 0


def test_an_approval_by_anyone_else_or_after_the_deadline_is_refused_with_a_clear_message(
        world: World, approvals_url: str) -> None:  # noqa: F811
    ctl, request = _overrun(world)
    before = _committed(world)
    by_operator = _answer(approvals_url, request, OPS, _largest(request), world.clock.now())
    ctl.step()
    code, message = _verdict(world, by_operator)
    assert code == "APR004" and "its contract names cfo@example.org as the approver" in message
    assert world.events("approval-refused")[0]["attributes"]["code"] == "APR004"
    world.clock.advance(minutes=16)
    late = _answer(approvals_url, request, CFO, _largest(request), world.clock.now())
    ctl.step()
    code, message = _verdict(world, late)
    assert code == "APR007" and "expired at" in message
    assert world.events("shortfall") and _committed(world) == before, "nothing more is spent"
    state = world.conn.execute("SELECT state FROM approval_requests WHERE request_id = %s",
                               (request.request_id,)).fetchone()[0]
    assert state == "expired"


def test_the_operator_who_raised_the_spend_cannot_approve_it_even_when_named(
        world: World, approvals_url: str) -> None:  # noqa: F811
    ctl, request = _overrun(world, operator=CFO)
    own = _answer(approvals_url, request, CFO, _largest(request), world.clock.now())
    ctl.step()
    assert _verdict(world, own)[0] == "APR005" and _committed(world) <= CAP


def test_a_denial_records_the_shortfall_at_once(world: World, approvals_url: str) -> None:  # noqa: F811
    ctl, request = _overrun(world)
    before = _committed(world)
    shortfalls = len(world.events("shortfall"))
    denied = _answer(approvals_url, request, CFO, Decimal(0), world.clock.now(), decision="deny")
    ctl.step()
    assert _verdict(world, denied)[0] == "APR000"
    assert world.events("approval-denied") and len(world.events("shortfall")) > shortfalls
    assert _committed(world) == before


def test_the_cli_lists_requests_and_records_a_signed_answer_with_the_approvals_roles_least_privilege(
        world: World, approvals_url: str, tmp_path: Path) -> None:  # noqa: F811
    now = datetime.now(UTC)   # the CLI runs on the wall clock: a request raised just now is open
    rid = uuid.uuid4()
    world.conn.execute("INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, options, "
                       "raised_by) VALUES (%s, 'train', 'r1', %s, %s, %s, %s)",
                       (rid, CFO, now, '[{"option": "cover-all", "pool": "r1-h2-gp", "instances": "2", "units": "8", '
                        '"cost_eur": "96.000000"}, {"option": "accept-shortfall", "units": "8", "cost_eur": "0"}]',
                        OPS))
    listed = sco("fallback", "approvals", "--postgres", approvals_url)
    assert listed.returncode == 0 and str(rid) in listed.stdout and "cover-all" in listed.stdout
    assert "96.000000 EUR" in listed.stdout and "approver cfo@example.org" in listed.stdout
    cfo_key, _ = init_approver_key(tmp_path, CFO)
    ops_key, _ = init_approver_key(tmp_path, OPS)
    wrong = sco("fallback", "approve", str(rid), "--as", OPS, "--key", str(ops_key), "--postgres", approvals_url)
    assert wrong.returncode == 2 and "APR004" in wrong.stderr and "nothing recorded" in wrong.stderr
    too_much = sco("fallback", "approve", str(rid), "--as", CFO, "--key", str(cfo_key), "--amount", "97",
                   "--postgres", approvals_url)
    assert too_much.returncode == 2 and "APR008" in too_much.stderr
    ok = sco("fallback", "approve", str(rid), "--as", CFO, "--key", str(cfo_key), "--postgres", approvals_url)
    assert ok.returncode == 0 and "recorded grant" in ok.stdout, ok.stderr
    [row] = world.conn.execute("SELECT approver, decision, amount_eur, verdict_code FROM approval_decisions").fetchall()
    assert row == (CFO, "grant", Decimal("96"), None)   # recorded, not granted: only the arbiter judges
    with psycopg.connect(approvals_url, autocommit=True) as conn:
        for statement in ("UPDATE approval_requests SET state = 'granted', granted_eur = 1000000",
                          "UPDATE approval_decisions SET verdict_code = 'APR000'",
                          "INSERT INTO spend_reservations (reservation_id, workload, region, amount_eur, window_start, "
                          "window_end) VALUES (gen_random_uuid(), 'train', 'r1', 1, now(), now() + interval '1 h')",
                          "SELECT count(*) FROM instances"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO approval_decisions (decision_id, request_id, approver, decision, signed, "
                         "verdict_code) VALUES (gen_random_uuid(), %s, %s, 'grant', '{}', 'APR000')", (rid, CFO))


def test_the_cli_refuses_an_expired_request_and_a_missing_one_naming_the_fix(
        world: World, approvals_url: str, tmp_path: Path) -> None:  # noqa: F811
    rid = uuid.uuid4()
    world.conn.execute("INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, options, "
                       "raised_by) VALUES (%s, 'train', 'r1', %s, %s, '[]', %s)",
                       (rid, CFO, datetime.now(UTC) - timedelta(minutes=20), OPS))
    key, _ = init_approver_key(tmp_path, CFO)
    late = sco("fallback", "deny", str(rid), "--as", CFO, "--key", str(key), "--postgres", approvals_url)
    assert late.returncode == 2 and "APR007" in late.stderr and "Traceback" not in late.stderr
    missing = sco("fallback", "deny", str(uuid.uuid4()), "--as", CFO, "--key", str(key), "--postgres", approvals_url)
    assert missing.returncode == 2 and "APR001" in missing.stderr and "sco fallback approvals" in missing.stderr
    garbage = sco("fallback", "deny", "not-a-request", "--as", CFO, "--key", str(key), "--postgres", approvals_url)
    assert garbage.returncode == 2 and "is not a request id" in garbage.stderr
    nokey = sco("fallback", "deny", str(rid), "--as", CFO, "--key", str(tmp_path / "none.pem"),
                "--postgres", approvals_url)
    assert nokey.returncode == 2 and "sco keys init --approver" in nokey.stderr



def test_a_malformed_or_oversized_answer_is_refused_unparsed(world: World, approvals_url: str) -> None:  # noqa: F811
    rid = uuid.uuid4()
    world.conn.execute("INSERT INTO approval_requests (request_id, workload, region, approver, requested_at, options) "
                       "VALUES (%s, 'train', 'r1', %s, %s, '[]')", (rid, CFO, world.clock.now()))
    with psycopg.connect(approvals_url, autocommit=True) as conn:
        for body in ('{"decision": "grant"}', '{"pad": "' + "x" * 20_000 + '"}'):
            conn.execute("INSERT INTO approval_decisions (decision_id, request_id, approver, decision, signed) "
                         "VALUES (gen_random_uuid(), %s, %s, 'grant', %s)", (rid, CFO, body))
    answers = approval_store.unjudged(world.conn, "r1")
    assert [a.signed for a in answers] == [None, None]
    assert any("above 16384" in a.error for a in answers) and any("error(s)" in a.error for a in answers)
