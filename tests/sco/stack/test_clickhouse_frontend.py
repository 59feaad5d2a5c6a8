"""The ClickHouse HTTP front end (`sco clickhouse serve`) against the real chDB engine, over real HTTP."""

from __future__ import annotations

import gzip
import io
import json
import threading
import zlib
from urllib.parse import quote, urlencode

import lz4.frame
import pyarrow as pa
import pytest
from backports import zstd

from testkit.clickhouse import ClickHouseProcess
from tests.stores.helpers import http


def _q(server: ClickHouseProcess, **params: str) -> str:
    return f"{server.url}/?{urlencode(params)}"


def test_ping_answers_ok(clickhouse_server: ClickHouseProcess) -> None:
    reply = http(clickhouse_server.url + "/ping")
    assert (reply.status, reply.body) == (200, b"Ok.\n")


def test_a_query_in_the_url_or_the_body_or_both_is_answered_in_tab_separated_by_default(
        clickhouse_server: ClickHouseProcess) -> None:
    assert http(_q(clickhouse_server, query="SELECT 1 + 1")).body == b"2\n"
    assert http(clickhouse_server.url + "/", b"SELECT 'body'").body == b"body\n"
    both = http(_q(clickhouse_server, query="SELECT number FROM numbers(10)"), b"WHERE number > 7")
    assert both.body == b"8\n9\n"
    assert both.headers["X-ClickHouse-Format"] == "TabSeparated"


def test_database_query_id_and_default_format_come_from_url_parameters(clickhouse_url: str) -> None:
    base, _, db = clickhouse_url.partition("/?database=")
    reply = http(f"{base}/?" + urlencode({"database": db, "query_id": "q-42", "default_format": "JSONEachRow",
                                          "query": "SELECT currentDatabase() AS d"}))
    assert json.loads(reply.body) == {"d": db}
    assert reply.headers["X-ClickHouse-Query-Id"] == "q-42"
    assert reply.headers["X-ClickHouse-Format"] == "JSONEachRow"
    assert reply.headers["Content-Type"].startswith("application/json")
    summary = json.loads(reply.headers["X-ClickHouse-Summary"])
    assert {"read_rows", "written_rows", "elapsed_ns"} <= set(summary)


def test_url_settings_apply_to_their_query_only(clickhouse_server: ClickHouseProcess) -> None:
    query = "SELECT getSetting('max_block_size')"
    default = http(_q(clickhouse_server, query=query)).body
    assert http(_q(clickhouse_server, query=query, max_block_size="777")).body == b"777\n"
    assert http(_q(clickhouse_server, query=query)).body == default


def test_set_in_a_session_stays_in_that_session_and_does_not_leak_to_others(
        clickhouse_server: ClickHouseProcess) -> None:
    query = "SELECT getSetting('max_block_size')"
    default = http(_q(clickhouse_server, query=query)).body
    assert http(_q(clickhouse_server, query="SET max_block_size = 4242", session_id="s1")).status == 200
    assert http(_q(clickhouse_server, query=query, session_id="s1")).body == b"4242\n"
    assert http(_q(clickhouse_server, query=query, session_id="s2")).body == default
    assert http(_q(clickhouse_server, query=query)).body == default
    assert http(_q(clickhouse_server, query=query, session_id="s1")).body == b"4242\n"


def test_parameterised_queries_bind_param_values(clickhouse_server: ClickHouseProcess) -> None:
    reply = http(_q(clickhouse_server, query="SELECT {n:UInt32} * 2, {s:String}", param_n="21", param_s="a'b"))
    assert reply.body == b"42\ta\\'b\n"


@pytest.mark.parametrize("fmt", ["Native", "RowBinaryWithNamesAndTypes", "Arrow", "Parquet", "JSON", "CSVWithNames"])
def test_every_output_format_is_passed_through(clickhouse_server: ClickHouseProcess, fmt: str) -> None:
    reply = http(clickhouse_server.url + "/", f"SELECT number AS n FROM numbers(3) FORMAT {fmt}".encode())
    assert reply.status == 200
    assert reply.headers["X-ClickHouse-Format"] == fmt
    if fmt == "Arrow":
        table = pa.ipc.open_file(io.BytesIO(reply.body)).read_all()
        assert table.column("n").to_pylist() == [0, 1, 2]
    elif fmt == "JSON":
        assert [int(r["n"]) for r in json.loads(reply.body)["data"]] == [0, 1, 2]
    elif fmt == "CSVWithNames":
        assert reply.body == b'"n"\n0\n1\n2\n'
    elif fmt == "Native":
        assert reply.body.startswith(b"\x01\x03\x01n\x06UInt64")
    else:
        assert len(reply.body) > 10


def _compress(encoding: str, data: bytes) -> bytes:
    compressors = {"gzip": gzip.compress, "deflate": zlib.compress, "zstd": zstd.compress,
                   "lz4": lz4.frame.compress}
    return bytes(compressors[encoding](data))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "zstd", "lz4"])
def test_compressed_request_bodies_are_decompressed(clickhouse_url: str, encoding: str) -> None:
    http(clickhouse_url + "&" + urlencode({"query": "CREATE TABLE t (a UInt32, s String) ENGINE = Memory"}),
         b"")
    rows = b"".join(b"%d\tv%d\n" % (i, i) for i in range(500))
    insert = http(clickhouse_url + "&query=" + quote("INSERT INTO t FORMAT TabSeparated"),
                  _compress(encoding, rows), {"Content-Encoding": encoding})
    assert insert.status == 200, insert.body
    assert json.loads(insert.headers["X-ClickHouse-Summary"])["written_rows"] == "500"
    query = http(clickhouse_url, _compress(encoding, b"SELECT count(), sum(a) FROM t"),
                 {"Content-Encoding": encoding})
    assert query.body == b"500\t124750\n"


def test_inserts_take_their_rows_from_the_body_or_inline_after_format(clickhouse_url: str) -> None:
    http(clickhouse_url, b"CREATE TABLE e (id String, n UInt8) ENGINE = MergeTree ORDER BY id")
    assert http(clickhouse_url + "&query=" + quote("INSERT INTO e FORMAT JSONEachRow"),
                b'{"id": "a", "n": 1}\n{"id": "b", "n": 2}\n').status == 200
    assert http(clickhouse_url, b'INSERT INTO e FORMAT JSONEachRow\n{"id": "c", "n": 3}\n').status == 200
    assert http(clickhouse_url + "&query=" + quote("INSERT INTO e VALUES"), b"('d', 4)").status == 200
    assert http(clickhouse_url, b"SELECT groupArray(id) FROM (SELECT id FROM e ORDER BY id)").body == \
        b"['a','b','c','d']\n"


def test_errors_carry_the_clickhouse_code_text_and_http_status(clickhouse_server: ClickHouseProcess,
                                                                clickhouse_url: str) -> None:
    missing = http(clickhouse_server.url + "/", b"SELECT * FROM no_such_table")
    assert missing.status == 404
    assert missing.headers["X-ClickHouse-Exception-Code"] == "60"
    assert missing.body.startswith(b"Code: 60. DB::Exception: ")
    syntax = http(clickhouse_server.url + "/", b"SELEC 1")
    assert (syntax.status, syntax.headers["X-ClickHouse-Exception-Code"]) == (400, "62")
    http(clickhouse_url, b"CREATE TABLE bad_rows (a UInt8) ENGINE = Memory")
    bad_row = http(clickhouse_url + "&query=" + quote("INSERT INTO bad_rows FORMAT CSV"), b"not-a-number\n")
    assert bad_row.status in (400, 500) and bad_row.body.startswith(b"Code: ")
    # the engine is still fine afterwards
    assert http(clickhouse_server.url + "/", b"SELECT 1").body == b"1\n"


def test_concurrent_clients_are_served_one_query_at_a_time_without_mixing_results(clickhouse_url: str) -> None:
    http(clickhouse_url, b"CREATE TABLE c (k UInt32, v UInt32) ENGINE = MergeTree ORDER BY k")
    errors: list[str] = []

    def worker(k: int) -> None:
        for i in range(20):
            body = b"%d\t%d\n" % (k, i)
            if http(clickhouse_url + "&query=" + quote("INSERT INTO c FORMAT TSV"), body).status != 200:
                errors.append(f"insert {k}/{i}")
            got = http(clickhouse_url + "&" + urlencode({"query": "SELECT {k:UInt32} + 0", "param_k": str(k)}))
            if got.body != b"%d\n" % k:
                errors.append(f"query {k}: {got.body!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert http(clickhouse_url, b"SELECT count(), uniqExact(k) FROM c").body == b"160\t8\n"


def test_clickhouse_native_block_compression_is_refused_clearly(clickhouse_server: ClickHouseProcess) -> None:
    reply = http(_q(clickhouse_server, query="SELECT 1", compress="1"))
    assert (reply.status, reply.headers["X-ClickHouse-Exception-Code"]) == (501, "48")
    assert b"Content-Encoding" in reply.body


def _comparable(fmt: str, body: bytes) -> bytes:
    """An Avro container ends every block with a 16-byte sync marker that Avro's C++ writer draws from a generator
    seeded with the current second: two runs a second apart differ there and nowhere else. Blank it."""
    if fmt != "Avro" or len(body) < 16:
        return body
    return body.replace(body[-16:], b"\0" * 16)


def test_avro_output_compares_equal_apart_from_its_sync_marker_and_differs_otherwise() -> None:
    one = b"Obj\x01header" + b"A" * 16 + b"block" + b"A" * 16
    other_second = b"Obj\x01header" + b"B" * 16 + b"block" + b"B" * 16
    assert _comparable("Avro", one) == _comparable("Avro", other_second)
    assert _comparable("Avro", one) != _comparable("Avro", other_second.replace(b"block", b"blocK"))
    assert _comparable("CSV", one) != _comparable("CSV", other_second)


def test_every_chdb_output_format_comes_back_byte_for_byte_as_in_process_chdb_gives_it(
        clickhouse_server: ClickHouseProcess) -> None:
    from chdb.state import sqlitelike

    local = sqlitelike.connect(":memory:")
    formats = http(clickhouse_server.url + "/", b"SELECT name FROM system.formats WHERE is_output ORDER BY name"
                   ).body.decode().split()
    assert len(formats) > 80
    sql = "SELECT number AS n, toString(number) AS s FROM numbers(3)"
    mismatched = []
    for fmt in formats:
        try:
            expected: bytes | None = bytes(local._conn.query(sql, fmt, params={}).bytes())
        except RuntimeError:
            expected = None
            local.close()  # chDB keeps a failed query's partial output for the next one: start clean
            local = sqlitelike.connect(":memory:")
        reply = http(clickhouse_server.url + "/", f"{sql} FORMAT {fmt}".encode())
        if expected is None:
            if reply.status == 200 or "X-ClickHouse-Exception-Code" not in reply.headers:
                mismatched.append(f"{fmt}: chDB refuses it, the front end answered {reply.status}")
        elif reply.status != 200:
            mismatched.append(f"{fmt}: {reply.status} {reply.body[:120]!r}")
        elif _comparable(fmt, reply.body) != _comparable(fmt, expected) and b"elapsed" not in expected:
            mismatched.append(f"{fmt}: bytes differ")  # JSON/XML carry a timing, so they are left out
    local.close()
    assert mismatched == []
