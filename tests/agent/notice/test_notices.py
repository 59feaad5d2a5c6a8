"""Notice parsing (the provider contract's Notice/Advisory JSON) and first-wins de-duplication."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agent.model import AgentError
from agent.notice.messages import NoticeGate, parse_metadata, parse_notice
from contracts.provider import Advisory, Notice


def provider_notice() -> Notice:
    now = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
    return Notice(region="r1", instance_id="i-1", pool_id="p1", hall="h1", issued_at=now,
                  terminate_at=now + timedelta(seconds=120), cause="reclaim", drill=True)


def test_the_provider_notice_json_parses_and_gets_the_same_id_on_both_channels() -> None:
    model = provider_notice()
    via_nats = parse_notice(model.model_dump_json().encode(), "nats", 1.0)
    doc = json.loads(model.model_dump_json())
    doc["issued_at"] = model.issued_at.isoformat()  # another serialisation of the same instant
    via_metadata = parse_metadata(json.dumps({"instance_id": "i-1", "notices": [doc]}).encode(), 2.0)[0]
    assert via_nats.notice_id == via_metadata.notice_id
    assert via_nats.instance == "i-1" and via_nats.pool == "p1" and via_nats.drill
    assert via_nats.terminate_at == model.terminate_at
    gate = NoticeGate()
    assert gate.admit(via_nats) and not gate.admit(via_metadata)


def test_an_advisory_parses_with_its_kind_and_no_deadline() -> None:
    now = datetime.now(UTC)
    adv = Advisory(region="r1", instance_id="i-1", pool_id="p1", issued_at=now,
                   expected_at=now + timedelta(minutes=6), probability=0.7)
    parsed = parse_notice(adv.model_dump_json(), "nats", 0.0, default_kind="advisory")
    assert parsed.kind == "advisory" and parsed.terminate_at is None
    notice = parse_notice(provider_notice().model_dump_json(), "nats", 0.0)
    gate = NoticeGate()
    assert gate.admit(parsed) and gate.admit(notice)  # an advisory does not swallow the notice


@pytest.mark.parametrize("payload", [b"not json", b"[]", b'{"issued_at": "2026-01-01T00:00:00Z"}',
                                     b'{"instance_id": "i-1", "issued_at": "2026-01-01T00:00:00"}'])
def test_a_malformed_notice_is_refused_with_a_reason(payload: bytes) -> None:
    with pytest.raises(AgentError):
        parse_notice(payload, "nats", 0.0)


def test_the_gate_forgets_only_beyond_its_capacity() -> None:
    gate = NoticeGate(capacity=2)
    notices = [parse_notice({"instance_id": "i", "notice_id": f"n{i}"}, "nats", 0.0) for i in range(3)]
    assert all(gate.admit(n) for n in notices)
    assert not gate.admit(notices[2]) and gate.admit(notices[0])
