"""The stdlib fast path of ``stores.eventrows`` gives what pydantic gives, row for row and reason for reason."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from stores.eventrows import EARLIEST, parse_events, time_problem
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


def _pydantic_only(payloads: list[bytes]) -> object:
    from stores import eventrows

    original = eventrows._fast_row
    eventrows._fast_row = lambda data: None  # type: ignore[assignment]
    try:
        return parse_events(payloads, NOW)
    finally:
        eventrows._fast_row = original


def test_every_variant_parses_to_the_same_row_or_reason_as_pydantic_alone() -> None:
    fast = parse_events(VARIANTS, NOW)
    assert fast == _pydantic_only(VARIANTS)
    assert len(fast.rows) >= 8 and len(fast.rejected) >= 10  # both outcomes are exercised


def test_the_canonical_payload_takes_the_fast_path() -> None:
    from stores import eventrows

    assert eventrows._fast_row(make_event(7).to_json()) == eventrows._slow_row(make_event(7).to_json())


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
