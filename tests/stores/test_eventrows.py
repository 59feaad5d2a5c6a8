"""``stores.eventrows`` refuses exactly what the pydantic ``Event`` refuses, and gives ``Event.row()`` otherwise.

The fast path (orjson and hand-written checks) must accept only payloads pydantic accepts, with the same
row; everything else goes to pydantic. These tests hold ``parse_events`` to a reference built from pydantic
alone, over the poison kinds of the fault soak, every payload shape we could think of, and seeded mutations.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import orjson
import pytest

from contracts.events import Event
from stores import eventrows
from stores.eventrows import (
    EARLIEST,
    EVENT_COLUMNS,
    EVENT_FIELDS,
    encode_rows,
    fast_row,
    parse_events,
    reason,
    row_of,
    time_problem,
    time_text,
)
from tests.stores.helpers import make_event

NOW = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
BASE = json.loads(make_event(1).to_json())
MAX_PAYLOAD = 1024 * 1024  # nats-server's default max_payload


def _variant(**changes: object) -> bytes:
    body = {**BASE, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


VARIANTS = [
    make_event(2).to_json(),  # what every publisher of ours writes
    _variant(event_id=BASE["event_id"].upper()),  # pydantic normalises the UUID
    _variant(event_id=BASE["event_id"].replace("-", "")), _variant(event_id="{" + BASE["event_id"] + "}"),
    _variant(event_id="urn:uuid:" + BASE["event_id"]), _variant(event_id="not-a-uuid"), _variant(event_id=7),
    _variant(event_id=...),  # pydantic makes one up (default_factory): never the fast path
    _variant(time="2026-11-01T03:04:05+02:00"), _variant(time="2026-11-01T03:04:05.4Z"),
    _variant(time="2026-11-01T03:04:05.123456Z"), _variant(time="2026-11-01T03:04:05.1234567Z"),
    _variant(time="2026-11-01T03:04:05+00:00"), _variant(time="2026-11-01T03:04:05-00:00"),
    _variant(time="2026-11-01T03:04:05z"), _variant(time="2026-11-01t03:04:05Z"),
    _variant(time="2026-11-01 03:04:05Z"), _variant(time="2026-11-01T03:04:05"), _variant(time=1793500000),
    _variant(time="2026-02-30T00:00:00Z"), _variant(time="2026-11-01T24:00:00Z"), _variant(time="2026-11-01T23:59:60Z"),
    _variant(time="2024-02-29T12:00:00Z"), _variant(time="\u0662026-11-01T03:04:05Z"), _variant(time=""),
    _variant(drill="true"), _variant(drill=1), _variant(drill=None), _variant(drill=True),
    _variant(attributes={"f": 1.0}), _variant(attributes={"f": 1.5}), _variant(attributes={"a": [1]}),
    _variant(attributes={"a": {"b": 1}}), _variant(attributes=None), _variant(attributes=[]),
    _variant(attributes={"big": 2**63 + 5}), _variant(attributes={"bigger": 2**70}),
    _variant(attributes={"b": None, "a": True, "c": "x\u00e9\n\t\"\\"}), _variant(attributes=...),
    _variant(extra="x"), _variant(partition=None, pool=...), _variant(partition=5), _variant(workload=[]),
    _variant(partition=0), _variant(pool=False), _variant(instance=""), _variant(contract_version={}),
    _variant(region=3), _variant(region=None), _variant(kind="no-such-kind"), _variant(kind="PLACED"),
    _variant(kind=None), _variant(cause=...), _variant(source=None), _variant(source=...),
    _variant(cause="caf\u00e9 \u2603 \U0001f600"), _variant(cause="\x00\x01"), _variant(region=""),
    json.dumps({**BASE, "cause": "\ud800"}).encode(),
    make_event(3).to_json().decode().encode("utf-16"), b"\xef\xbb\xbf" + make_event(4).to_json(),
    b"{not json", b"[]", b"", b"null", b"{}", b"1", make_event(5).to_json() + b" ", b" " + make_event(6).to_json(),
    make_event(7).to_json() + make_event(8).to_json(), make_event(9).to_json()[:-1],
    make_event(10).to_json().replace(b'"cause":"test"', b'"cause":"te\tst"'),  # a raw control character
    make_event(11).to_json().replace(b'"cause":"test"', b'"cause":"te\xffst"'),  # not UTF-8
    make_event(12).to_json()[:-1] + b',"cause":"later"}',  # a duplicated key: the last one wins in both
    make_event(13).to_json().replace(b'"n":13', b'"n":13,"n":"x"'),
    make_event(14).to_json().replace(b'"n":14', b'"n":1e2'), make_event(15).to_json().replace(b'"n":15', b'"n":-0'),
    make_event(16).to_json().replace(b'"n":16', b'"n":NaN'),
    # The soak's poison kinds: dated 1971 and 9999, and an hour and a second ahead (the time window).
    _variant(time="1971-06-01T00:00:00Z"), _variant(time="9999-12-31T23:59:59.999Z"),
    _variant(time="2026-11-02T01:00:01Z"), _variant(time="2026-11-02T01:00:00Z"), _variant(time="2000-01-01T00:00:00Z"),
    _variant(time="1999-12-31T23:59:59.999999Z"),
    # Near max_payload: an invalid event just under the limit, and a valid one (accepted by both); oversize.
    _variant(extra="x" * (MAX_PAYLOAD - 600)), _variant(cause="y" * (MAX_PAYLOAD - 600)),
    _variant(attributes={"blob": "z" * (MAX_PAYLOAD + 10)}), b'{"cause": "' + b"q" * (MAX_PAYLOAD + 10),
]


def _made_up_ids(payloads: list[bytes], results: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """Without an ``event_id`` pydantic makes a random one up: compare everything else."""
    out: list[tuple[str, object]] = []
    for data, (kind, value) in zip(payloads, results, strict=True):
        if kind == "row" and b'"event_id"' not in data and isinstance(value, list):
            value = ["<made up>", *value[1:]]
        out.append((kind, value))
    return out


def _reference(payloads: list[bytes]) -> list[tuple[str, object]]:
    """What pydantic alone says: the row (``time`` as ClickHouse text) or the reason, then the time window."""
    out: list[tuple[str, object]] = []
    for data in payloads:
        try:
            event = Event.from_json(data)
        except ValueError as exc:
            out.append(("rejected", f"not a valid event: {reason(exc)}"))
            continue
        problem = time_problem(event.time, NOW)
        if problem is not None:
            out.append(("rejected", problem))
            continue
        row = event.row()
        out.append(("row", [time_text(row[c]) if c == "time" else row[c] for c in EVENT_COLUMNS]))
    return _made_up_ids(payloads, out)


def _parsed(payloads: list[bytes]) -> list[tuple[str, object]]:
    parsed = parse_events(payloads, NOW)
    got: dict[int, tuple[str, object]] = {i: ("row", r) for i, r in zip(parsed.indexes, parsed.rows, strict=True)}
    got |= {i: ("rejected", why) for i, why in parsed.rejected}
    return _made_up_ids(payloads, [got[i] for i in range(len(payloads))])


def test_every_payload_shape_and_poison_kind_gives_exactly_pydantics_row_or_reason() -> None:
    expected = _reference(VARIANTS)
    assert _parsed(VARIANTS) == expected
    assert sum(kind == "row" for kind, _ in expected) >= 15  # both outcomes are exercised
    assert sum(kind == "rejected" for kind, _ in expected) >= 40


def test_what_the_fast_path_accepts_pydantic_accepts_with_the_same_row() -> None:
    accepted = 0
    for data in VARIANTS:
        fast = fast_row(data)
        if fast is None:
            continue
        accepted += 1
        event = Event.from_json(data)
        assert fast == (row_of(event), event.time), data[:200]
    assert accepted >= 10  # the fast path is really taken, not a pydantic run with extra steps


def test_the_fast_paths_field_list_is_the_event_models() -> None:
    assert tuple(Event.model_fields) == EVENT_FIELDS


def test_the_fast_path_takes_what_our_publishers_write() -> None:
    events = [make_event(i) for i in range(50)]
    events.append(make_event(50).model_copy(update={"time": dt.datetime(2026, 11, 1, 1, 2, 3, 4560, tzinfo=dt.UTC),
                                                     "partition": None, "attributes": {}}))
    for event in events:
        assert fast_row(event.to_json()) == (row_of(event), event.time)


_VALUES: list[Any] = [None, True, False, 0, 1, -1, 2**64, 1.0, 0.5, "", "x", "placed", "launched", "2026-11-01",
                      "2026-11-01T00:00:00Z", "2026-11-01T00:00:00.5+00:00", "00000000-0000-0000-0000-00000000000a",
                      "00000000-0000-0000-0000-00000000000A", [], {}, {"k": 1}, {"k": [1]}, {"k": 1.5}, {"": None}]


def _mutant(rng: random.Random) -> bytes:
    body: dict[str, Any] = dict(BASE)
    for _ in range(rng.randint(1, 3)):
        action = rng.random()
        name = rng.choice([*BASE, "extra"])
        if action < 0.2:
            body.pop(name, None)
        else:
            body[name] = rng.choice(_VALUES)
    text = json.dumps(body).encode()
    if rng.random() < 0.2:  # and now and then a damaged byte
        at = rng.randrange(len(text))
        text = text[:at] + bytes([rng.randrange(256)]) + text[at + 1:]
    return text


def test_seeded_mutations_of_an_event_get_the_same_verdict_from_both_paths() -> None:
    rng = random.Random(15)
    mutants = [_mutant(rng) for _ in range(3000)]
    expected = _reference(mutants)
    assert _parsed(mutants) == expected
    assert 100 <= sum(kind == "row" for kind, _ in expected) <= 2900  # both outcomes, many times


def test_wire_rows_go_as_json_columns_with_the_time_as_clickhouse_text() -> None:
    event = make_event(3).model_copy(update={"time": dt.datetime(2026, 11, 1, 1, 2, 3, 456789, tzinfo=dt.UTC)})
    columns = orjson.loads(encode_rows([row_of(event), row_of(make_event(4))]))
    assert len(columns) == len(EVENT_COLUMNS)
    assert columns[2][0] == "2026-11-01 01:02:03.456789"
    assert [column[1] for column in columns] == row_of(make_event(4))


def test_time_text_is_utc_whatever_the_zone() -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert time_text(dt.datetime(2026, 11, 1, 3, 4, 5, tzinfo=plus_two)) == "2026-11-01 01:04:05.000000"


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


@pytest.mark.parametrize("attributes", [
    {}, {"units": 3, "tier": "t2"}, {"b": True, "a": False, "n": None, "big": 10 ** 30, "neg": -7},
    {"é": "ü\x7f\n\"\\/", "\x00": "", "日本": "\ud7ff\U0001f600"},
])
def test_the_attributes_column_is_what_json_dumps_with_sorted_keys_writes(attributes: dict[str, Any]) -> None:
    assert eventrows._ATTRIBUTES(attributes) == json.dumps(attributes, sort_keys=True)
