"""The front end keeps every request and every session to itself (issue 15): no leftover output, settings,
readonly mode or temporary table reaches another client; sessions lock and expire as on a ClickHouse server."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from sco.stack.clickhouse_http import ChdbEngine, ClickHouseError, parse_request
from testkit.clickhouse import ClickHouseProcess
from tests.stores.helpers import http
from tests.support.wait import wait_for

from .frontend_helpers import cancel_slow_query, running_frontend, slow_query_on_a_socket, streamed

_FAILS_PART_WAY = b"SELECT number, throwIf(number = 200000) FROM numbers(1000000) SETTINGS max_block_size = 1000"


def _q(url: str, **params: str) -> str:
    return f"{url}/?{urlencode(params)}"


def test_a_query_that_fails_part_way_leaves_no_output_for_the_next_request(
        clickhouse_server: ClickHouseProcess) -> None:
    failed = streamed(clickhouse_server.url + "/", _FAILS_PART_WAY)  # 1.8 MB streamed before it fails
    assert (failed.status, failed.complete) == (200, False)
    assert b"Code: 395" in failed.body[-2000:] and failed.body.endswith(b"\r\n__exception__\r\n")
    assert http(clickhouse_server.url + "/", b"SELECT 1").body == b"1\n"


def test_a_session_query_that_fails_part_way_leaves_no_output_for_the_sessions_next_request(
        clickhouse_server: ClickHouseProcess) -> None:
    failed = streamed(_q(clickhouse_server.url, session_id="leftover"), _FAILS_PART_WAY)
    assert not failed.complete and b"Code: 395" in failed.body[-2000:]
    assert http(_q(clickhouse_server.url, session_id="leftover", query="SELECT 2")).body == b"2\n"


def test_a_query_that_fails_within_the_first_mebibyte_gets_the_error_status(
        clickhouse_server: ClickHouseProcess) -> None:
    failed = http(clickhouse_server.url + "/", _FAILS_PART_WAY.replace(b"200000", b"2000"))
    assert (failed.status, failed.headers["X-ClickHouse-Exception-Code"]) == (500, "395")
    assert failed.body.startswith(b"Code: 395")  # the rows before it were dropped, as a server does


def test_readonly_in_the_url_applies_to_that_request_only(clickhouse_url: str) -> None:
    refused = http(clickhouse_url + "&readonly=1", b"CREATE TABLE r1 (a UInt8) ENGINE = Memory")
    assert refused.headers["X-ClickHouse-Exception-Code"] == "164"  # READONLY
    assert http(clickhouse_url, b"CREATE TABLE r2 (a UInt8) ENGINE = Memory").status == 200


def test_a_sessionless_set_applies_to_no_later_request(clickhouse_server: ClickHouseProcess) -> None:
    assert http(clickhouse_server.url + "/", b"SET max_rows_to_read = 5").status == 200
    assert http(clickhouse_server.url + "/", b"SELECT count() FROM numbers(100)").body == b"100\n"


def test_readonly_set_in_a_session_stays_in_that_session(clickhouse_url: str) -> None:
    session = clickhouse_url + "&session_id=ro-session"
    assert http(session, b"SET readonly = 1").status == 200
    assert http(session, b"CREATE TABLE s1 (a UInt8) ENGINE = Memory").headers["X-ClickHouse-Exception-Code"] == "164"
    assert http(clickhouse_url, b"CREATE TABLE s2 (a UInt8) ENGINE = Memory").status == 200
    assert http(clickhouse_url + "&session_id=other-session", b"CREATE TABLE s3 (a UInt8) ENGINE = Memory"
                ).status == 200


def test_readonly_in_the_url_of_a_session_request_leaves_the_session_usable(clickhouse_url: str) -> None:
    session = clickhouse_url + "&session_id=url-readonly"
    assert http(session + "&readonly=1", b"SELECT 1").body == b"1\n"
    assert http(session, b"SELECT 2").body == b"2\n"
    assert http(clickhouse_url, b"CREATE TABLE u1 (a UInt8) ENGINE = Memory").status == 200


def test_temporary_tables_belong_to_their_session(clickhouse_server: ClickHouseProcess) -> None:
    a = _q(clickhouse_server.url, session_id="tmp-a")
    assert http(a, b"CREATE TEMPORARY TABLE tmp (x UInt8)").status == 200
    assert http(a, b"INSERT INTO tmp VALUES (7)").status == 200
    assert http(a, b"SELECT x FROM tmp").body == b"7\n"
    other = http(_q(clickhouse_server.url, session_id="tmp-b"), b"SELECT x FROM tmp")
    assert other.headers["X-ClickHouse-Exception-Code"] == "60"  # UNKNOWN_TABLE
    assert http(clickhouse_server.url + "/", b"SELECT x FROM tmp").headers["X-ClickHouse-Exception-Code"] == "60"


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _run(engine: ChdbEngine, sql: bytes, **params: str) -> bytes:
    return engine.execute(parse_request(params, {}, sql)).body


def test_a_session_expires_session_timeout_seconds_after_its_last_use_taking_its_temporary_tables() -> None:
    clock = _Clock()
    engine = ChdbEngine(None, clock=clock)
    try:
        _run(engine, b"CREATE TEMPORARY TABLE t (a UInt8)", session_id="short", session_timeout="5")
        _run(engine, b"CREATE TEMPORARY TABLE t (a UInt8)", session_id="default-timeout")
        clock.now += 5
        assert engine.sessions() == ["default-timeout", "short"]
        clock.now += 1
        assert engine.sessions() == ["default-timeout"]
        with pytest.raises(ClickHouseError) as gone:
            _run(engine, b"SELECT * FROM t", session_id="short")
        assert gone.value.name == "UNKNOWN_TABLE"
        clock.now += 54
        assert engine.sessions() == ["default-timeout", "short"]  # 60 s: ClickHouse's default session_timeout
        clock.now += 1
        assert engine.sessions() == ["short"]
    finally:
        engine.close()


def test_session_check_refuses_an_unknown_session_and_an_out_of_range_timeout_is_refused() -> None:
    engine = ChdbEngine(None)
    try:
        with pytest.raises(ClickHouseError) as unknown:
            _run(engine, b"SELECT 1", session_id="never-opened", session_check="1")
        assert (unknown.value.code, unknown.value.name) == (372, "SESSION_NOT_FOUND")
        with pytest.raises(ClickHouseError, match="Invalid session timeout: '7200'"):
            _run(engine, b"SELECT 1", session_id="s", session_timeout="7200")
    finally:
        engine.close()


# The slow query runs 200 s (SLOW_QUERY), not 4: a loaded machine may take seconds to get from "it runs" to the
# second request, which must still find it running; it is cancelled once that request is answered.
@pytest.mark.services
def test_a_second_request_on_a_busy_session_gets_session_is_locked() -> None:
    with running_frontend() as server:
        slow = slow_query_on_a_socket(server.url, "&session_id=busy")
        wait_for(lambda: server.engine.running == 1, 60, what="the slow query started on the session")
        second = http(_q(server.url, session_id="busy", query="SELECT 1"))
        other = http(_q(server.url, session_id="idle", query="SELECT 1"))
        cancel_slow_query(slow)
    assert (second.status, second.headers["X-ClickHouse-Exception-Code"]) == (500, "373")
    assert b"SESSION_IS_LOCKED" in second.body
    assert other.body == b"1\n"


@pytest.mark.services
def test_when_every_query_slot_is_busy_a_request_gets_503_at_once_instead_of_waiting() -> None:
    with running_frontend({"max_queries": 1, "queue_timeout_s": 0.0}) as server:
        slow = slow_query_on_a_socket(server.url)
        wait_for(lambda: server.engine.running == 1, 60, what="the slow query holds the only slot")
        refused = http(_q(server.url, query="SELECT 1"))
        cancel_slow_query(slow)  # returns once the front end answered it: the slot is free again
        after = http(_q(server.url, query="SELECT 1"))
    assert (refused.status, refused.headers["X-ClickHouse-Exception-Code"]) == (503, "202")
    assert after.body == b"1\n"
