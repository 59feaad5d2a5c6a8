"""The lifecycle event model and subject names every process shares."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from contracts.events import Event
from contracts.subjects import EventKind, event_subject, notice_subject


def test_an_event_round_trips_through_json_with_its_id_and_utc_time() -> None:
    cet = timezone(timedelta(hours=1))
    event = Event(kind=EventKind.NOTICE, time=datetime(2026, 11, 29, 13, 0, tzinfo=cet), region="r1",
                  instance="i-1", pool="r1-h1-std-g6-large-rc", workload="genomics-align",
                  contract_version="genomics-align@5", cause="reclaimer:guaranteed-demand", drill=True)
    again = Event.from_json(event.to_json())
    assert again == event and again.time == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert again.subject == "sco.events.r1.notice"
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
