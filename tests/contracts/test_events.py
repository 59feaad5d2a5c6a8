"""The lifecycle event model and subject names every process shares."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from contracts.events import Event
from contracts.subjects import (
    AGENT_EVENT_KINDS,
    EventKind,
    agent_event_subjects,
    event_subject,
    event_subject_problem,
    notice_subject,
)


def test_an_event_round_trips_through_json_with_its_id_and_utc_time() -> None:
    cet = timezone(timedelta(hours=1))
    event = Event(kind=EventKind.NOTICE, time=datetime(2026, 11, 29, 13, 0, tzinfo=cet), region="r1",
                  instance="i-1", pool="r1-h1-std-g6-large-rc", workload="genomics-align",
                  contract_version="genomics-align@5", cause="reclaimer:guaranteed-demand", drill=True)
    again = Event.from_json(event.to_json())
    assert again == event and again.time == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert again.subject == "sco.events.r1.notice.i-1"
    assert set(event.row()) == {"event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                                "contract_version", "cause", "drill", "source", "attributes"}


def test_an_event_without_a_timezone_or_with_an_unknown_kind_or_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="timezone"):
        Event(kind=EventKind.LOST, time=datetime(2026, 1, 1), region="r1", cause="x")
    with pytest.raises(ValidationError):
        Event.model_validate({"kind": "exploded", "time": "2026-01-01T00:00:00Z", "region": "r1", "cause": "x"})
    with pytest.raises(ValidationError, match="extra"):
        Event.model_validate({"kind": "lost", "time": "2026-01-01T00:00:00Z", "region": "r1", "cause": "x",
                              "colour": "red"})


def test_subject_tokens_never_contain_dots_or_wildcards() -> None:
    assert notice_subject("r1", "node.1*>") == "sco.notice.r1.node_1__"
    assert event_subject("r1", EventKind.DRAIN_STARTED) == "sco.events.r1.drain-started"


def test_an_event_about_one_instance_rides_a_subject_that_names_it() -> None:
    assert event_subject("r1", EventKind.DRAINED, "i-7") == "sco.events.r1.drained.i-7"
    assert event_subject("r1", EventKind.EXCLUDED, None) == "sco.events.r1.excluded"
    assert event_subject("r1", "drained", "a.b*") == "sco.events.r1.drained.a_b_"


@pytest.mark.parametrize(("subject", "region", "kind", "instance", "refused"), [
    ("sco.events.r1.drained.i-1", "r1", "drained", "i-1", False),   # its own instance
    ("sco.events.r1.drained", "r1", "drained", "i-1", False),       # the instance-less form (relay/region only)
    ("sco.events.r1.excluded", "r1", "excluded", None, False),
    ("sco.events.r1.drained.i-1", "r1", "drained", "i-2", True),    # speaks for another instance
    ("sco.events.r1.drained.i-1", "r1", "drained", None, True),     # an instance subject, no instance in the body
    ("sco.events.r1.drained.i-1", "r2", "drained", "i-1", True),    # another region
    ("sco.events.r1.drained.i-1", "r1", "placed", "i-1", True),     # another kind
    ("sco.events.r1.drained", "r1", "overrun", None, True),
])
def test_an_events_body_must_belong_on_its_subject(subject: str, region: str, kind: str, instance: str | None,
                                                   refused: bool) -> None:
    problem = event_subject_problem(subject, region, kind, instance)
    assert (problem is not None) == refused
    if refused:
        assert problem is not None and problem.startswith("subject-mismatch") and subject in problem


def test_an_agents_subjects_are_its_own_instances_agent_kinds_only() -> None:
    subjects = agent_event_subjects("r1", "i-1")
    assert len(subjects) == len(AGENT_EVENT_KINDS)
    assert all(s.startswith("sco.events.r1.") and s.endswith(".i-1") for s in subjects)
    assert "sco.events.r1.placed.i-1" not in subjects and "sco.events.r1.drained.i-1" in subjects


def test_every_kind_the_agent_emits_is_one_its_credential_may_publish() -> None:
    agent = Path(__file__).resolve().parents[2] / "agent"
    used = {node.attr for path in agent.glob("*.py") for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "EventKind"}
    assert used and {EventKind[name] for name in used} <= AGENT_EVENT_KINDS, used
