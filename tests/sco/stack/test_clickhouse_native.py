"""Native output for the client's protocol revision (time zones kept, BlockInfo) and external data, as a
ClickHouse server does them (issue 15)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from chdb import _chdb
from clickhouse_connect.driver.external import ExternalData

from sco.stack.clickhouse_http.native import BLOCK_INFO, for_revision
from stores import clickhouse
from tests.stores.helpers import http

from .frontend_helpers import streamed

_AT = dt.datetime(2026, 7, 1, 12, 30, 15, tzinfo=dt.UTC)


def test_datetime_columns_keep_their_time_zones_through_clickhouse_connect(clickhouse_url: str) -> None:
    client = clickhouse.client(clickhouse_url)
    try:
        assert client.protocol_version == 54405  # the probe found BlockInfo: client_protocol_version is sent
        client.command("CREATE TABLE zones (s String, tags Array(LowCardinality(String)), "
                       "berlin DateTime('Europe/Berlin'), tokyo DateTime64(3, 'Asia/Tokyo'), "
                       "york Nullable(DateTime('America/New_York')), plain DateTime) ENGINE = Memory")
        client.insert("zones", [[f"row{i}", ["a", "b"], _AT, _AT, _AT, _AT] for i in range(3)],
                      column_names=["s", "tags", "berlin", "tokyo", "york", "plain"])
        rows = client.query("SELECT s, tags, berlin, tokyo, york FROM zones ORDER BY s").result_rows
    finally:
        client.close()
    assert len(rows) == 3
    _, tags, berlin, tokyo, york = rows[0]
    assert tags == ["a", "b"]
    assert (berlin, berlin.tzinfo) == (_AT, ZoneInfo("Europe/Berlin"))  # 14:30:15+02:00, the same instant
    assert (tokyo, tokyo.tzinfo) == (_AT, ZoneInfo("Asia/Tokyo"))
    assert (york, york.tzinfo) == (_AT, ZoneInfo("America/New_York"))


def _native(sql: str) -> bytes:
    return bytes(_chdb.connect(":memory:").query(sql, "Native").bytes())


def test_native_blocks_get_blockinfo_zones_and_the_custom_serialization_byte_by_revision() -> None:
    block = _native("SELECT 'x' AS s, toDateTime(0, 'Europe/Berlin') AS t")
    assert b"\x08DateTime\x00" in block  # chDB writes the zone-less type
    zones = ["String", "DateTime('Europe/Berlin')"]
    assert for_revision(block, 0, zones) == block
    old = for_revision(block, 54336, zones)
    assert old == BLOCK_INFO + block  # before 54337 a server strips the zone as well
    assert b"\x19DateTime('Europe/Berlin')\x00\x00\x00\x00" in bytes(for_revision(block, 54405, zones))
    custom = bytes(for_revision(block, 54454, zones))
    assert b"\x06String\x00\x01x" in custom and b"DateTime('Europe/Berlin')\x00\x00\x00\x00\x00" in custom


def test_a_block_it_cannot_walk_keeps_blockinfo_but_not_the_zone() -> None:
    block = _native("SELECT CAST('{}' AS JSON) AS j, toDateTime(0, 'Europe/Berlin') AS t")
    zones = ["JSON", "DateTime('Europe/Berlin')"]
    assert for_revision(block, 54405, zones, one_block=True) == BLOCK_INFO + block
    assert for_revision(block + block, 54405, zones) == block + block  # several: left as they are


def test_external_data_is_a_temporary_table_for_that_query_only(clickhouse_url: str) -> None:
    client = clickhouse.client(clickhouse_url)
    try:
        ids = ExternalData(file_name="ids.csv", data=b"1,a\n2,b\n3,c\n", fmt="CSV",
                           structure=["id UInt32", "name String"])
        assert client.query("SELECT name FROM ids WHERE id > 1 ORDER BY id", external_data=ids).result_rows == \
            [("b",), ("c",)]
        typed = ExternalData(file_name="pairs", data=b"5\t6\n", types="UInt8,Decimal(10, 2)")
        assert client.query("SELECT _1 + _2 FROM pairs", external_data=typed).result_rows[0][0] == 11
    finally:
        client.close()
    assert http(clickhouse_url, b"SELECT * FROM ids").headers["X-ClickHouse-Exception-Code"] == "60"


@pytest.mark.parametrize(("params", "code"), [("", "36"), ("&t_structure=a%20UInt8%20DEFAULT%20file('x')", "62")])
def test_external_data_without_a_column_list_is_refused_like_a_server(clickhouse_url: str, params: str,
                                                                        code: str) -> None:
    body = (b"--b\r\nContent-Disposition: form-data; name=\"t\"; filename=\"t.tsv\"\r\n\r\n1\n\r\n--b--\r\n")
    reply = streamed(clickhouse_url + "&query=SELECT%20*%20FROM%20t" + params, body,
                     {"Content-Type": "multipart/form-data; boundary=b"})
    assert (reply.status, reply.headers["X-ClickHouse-Exception-Code"]) == (400, code)
