"""The ingest holds each event's body to its subject: a credential that may publish only its own instance's
subjects cannot land an event about another instance (it is dead-lettered with ``subject-mismatch``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from contracts.subjects import event_subject
from stores.ingest import split_batch
from tests.stores.helpers import make_event

NOW = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)


@dataclass
class Msg:
    subject: str
    data: bytes


def test_an_event_about_another_instance_than_its_subject_names_is_dead_lettered_with_the_reason() -> None:
    event = make_event(1)
    assert event.instance
    own = Msg(event.subject, event.to_json())
    legacy = Msg(event_subject(event.region, event.kind), event.to_json())  # instance-less: relay/region only
    spoofed = Msg(event_subject(event.region, event.kind, "i-someone-else"), event.to_json())
    wrong_kind = Msg(event_subject(event.region, "placed" if event.kind != "placed" else "lost", event.instance),
                     event.to_json())
    batch = split_batch([own, spoofed, legacy, wrong_kind], NOW)
    assert batch.good == [own, legacy]
    assert len(batch.rows) == 2
    assert [(m, why.split(":")[0]) for m, why in batch.dead] == [(spoofed, "subject-mismatch"),
                                                                   (wrong_kind, "subject-mismatch")]
    assert "i-someone-else" in batch.dead[0][1]
