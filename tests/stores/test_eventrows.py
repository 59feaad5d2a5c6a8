"""``stores.eventrows`` gives exactly ``Event.row()``, and the reasons pydantic gives, for every payload shape."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from contracts.events import Event
from stores.eventrows import EARLIEST, EVENT_COLUMNS, parse_events, reason, row_of, time_problem
from tests.stores.helpers import make_event

NOW = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
BASE = json.loads(make_event(1).to_json())


def _variant(**changes: object) -> bytes:
    body = {**BASE, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


VARIANTS = [
    make_event(2).to_json(),  # what every publisher of ours writes
    _variant(event_id=BASE["event_id"].upper()),  # pydantic normalises the UUID
    _variant(event_id=BASE["event_id"].replace("-", "")),
    _variant(time="2026-11-01T03:04:05+02:00"), _variant(time="2026-11-01T03:04:05.4Z"),
    _variant(time="2026-11-01 03:04:05Z"), _variant(time="2026-11-01T03:04:05"), _variant(time=1793500000),
    _variant(drill="true"), _variant(drill=1), _variant(attributes={"f": 1.0}), _variant(attributes={"f": 1.5}),
    _variant(attributes={"a": [1]}), _variant(extra="x"), _variant(partition=None, pool=...),
    _variant(region=3), _variant(kind="no-such-kind"), _variant(cause=...), _variant(source=None),
    _variant(cause="caf\u00e9 \u2603"), json.dumps({**BASE, "cause": "\ud800"}).encode(),
    make_event(3).to_json().decode().encode("utf-16"), b"\xef\xbb\xbf" + make_event(4).to_json(),
    b"{not json", b"[]", b"", b"null", make_event(5).to_json() + b" ", b" " + make_event(6).to_json(),
]


def _reference(payloads: list[bytes]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for data in payloads:
        try:
            row = Event.from_json(data).row()
        except ValueError as exc:
            out.append(("rejected", f"not a valid event: {reason(exc)}"))
            continue
        out.append(("row", [row[c] for c in EVENT_COLUMNS]))
    return out


def test_every_payload_shape_gives_exactly_event_row_or_pydantics_reason() -> None:
    parsed = parse_events(VARIANTS, NOW)
    got: dict[int, tuple[str, object]] = {i: ("row", r) for i, r in zip(parsed.indexes, parsed.rows, strict=True)}
    got |= {i: ("rejected", why) for i, why in parsed.rejected}
    assert [got[i] for i in range(len(VARIANTS))] == _reference(VARIANTS)
    assert len(parsed.rows) >= 8 and len(parsed.rejected) >= 10  # both outcomes are exercised


def test_row_of_is_event_row_in_column_order() -> None:
    event = make_event(7).model_copy(update={"partition": None, "attributes": {"b": 1, "a": None, "c": True}})
    row = event.row()
    assert row_of(event) == [row[c] for c in EVENT_COLUMNS]


@pytest.mark.parametrize(("when", "problem"), [
    (dt.datetime(1971, 1, 1, tzinfo=dt.UTC), "before 2000-01-01"),
    (dt.datetime(9999, 1, 1, tzinfo=dt.UTC), "more than 1 h after now"),
    (NOW + dt.timedelta(hours=1, seconds=1), "more than 1 h after now"),
])
def test_a_time_outside_the_sane_window_names_the_window(when: dt.datetime, problem: str) -> None:
    why = time_problem(when, NOW)
    assert why is not None and why.startswith("time outside the sane window") and problem in why


def test_the_edges_of_the_window_are_inside() -> None:
    assert time_problem(EARLIEST, NOW) is None
    assert time_problem(NOW + dt.timedelta(hours=1), NOW) is None
