"""The front end's request parsing and error mapping, without a server."""

from __future__ import annotations

import gzip

import pytest

from sco.stack.clickhouse_http.protocol import ClickHouseError, decompress, http_status, parse_request, split_insert


def test_an_insert_with_a_format_splits_into_statement_format_and_rows() -> None:
    assert split_insert(b"INSERT INTO db.t (a, `format`) FORMAT Native\n\x09\x00rows") == (
        "INSERT INTO db.t (a, `format`)", "Native", b"\x09\x00rows")
    assert split_insert(b"insert into t settings async_insert=0 format JSONEachRow {\"a\":1}") == (
        "insert into t settings async_insert=0", "JSONEachRow", b'{"a":1}')
    assert split_insert(b"INSERT INTO t VALUES (1)") is None
    assert split_insert(b"SELECT 1 FORMAT Native") is None


def test_url_query_and_body_rows_make_one_insert_and_other_parameters_become_settings() -> None:
    request = parse_request({"query": "INSERT INTO t FORMAT TSV", "database": "d", "param_x": "1",
                             "max_threads": "2", "session_id": "s", "wait_end_of_query": "1"},
                            {"content-encoding": "gzip"}, gzip.compress(b"1\t2\n"))
    assert (request.insert, request.data, request.database, request.session_id) == (
        ("INSERT INTO t", "TSV"), b"1\t2\n", "d", "s")
    assert request.params == {"x": b"1"}  # parameters stay bytes: binary-safe
    assert request.settings == {"max_threads": "2"}
    assert request.default_format == "TabSeparated" and request.query_id


def test_a_url_query_without_format_is_joined_with_the_body() -> None:
    request = parse_request({"query": "SELECT * FROM t"}, {}, b"WHERE a = 1")
    assert (request.query, request.insert) == (b"SELECT * FROM t\nWHERE a = 1", None)


def test_an_empty_query_and_an_unknown_encoding_are_clickhouse_errors() -> None:
    with pytest.raises(ClickHouseError, match="Empty query"):
        parse_request({}, {}, b"  ")
    with pytest.raises(ClickHouseError, match="Unknown Content-Encoding: snappy"):
        decompress(b"x", "snappy")
    with pytest.raises(ClickHouseError) as bad:
        decompress(b"not gzip", "gzip")
    assert (bad.value.code, bad.value.name) == (271, "CANNOT_DECOMPRESS")


@pytest.mark.parametrize(("text", "code", "status"), [
    ("Code: 60. DB::Exception: Table default.x does not exist. (UNKNOWN_TABLE) (version 26.9.2.1)", 60, 404),
    ("Code: 62. DB::Exception: Syntax error: failed at position 1. (SYNTAX_ERROR)", 62, 400),
    ("Code: 241. DB::Exception: Memory limit exceeded. (MEMORY_LIMIT_EXCEEDED)", 241, 500),
    ("something without a code", 1001, 500),
])
def test_engine_errors_map_to_their_code_and_http_status(text: str, code: int, status: int) -> None:
    error = ClickHouseError.from_engine(RuntimeError(text))
    assert (error.code, http_status(error)) == (code, status)
    assert str(error).startswith(f"Code: {code}.")


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "zstd", "lz4"])
def test_decompression_stops_at_the_limit_and_reads_several_frames(encoding: str) -> None:
    import zlib

    import lz4.frame
    from backports import zstd

    compress = {"gzip": gzip.compress, "deflate": zlib.compress, "zstd": zstd.compress,
                "lz4": lz4.frame.compress}[encoding]
    frame = bytes(compress(b"x" * 100_000))
    assert decompress(frame, encoding, 100_000) == b"x" * 100_000
    with pytest.raises(ClickHouseError) as over:
        decompress(frame, encoding, 99_999)
    assert (over.value.code, over.value.name) == (307, "TOO_LARGE_SIZE_COMPRESSED")
    with pytest.raises(ClickHouseError) as cut:
        decompress(frame[:-4], encoding, 1 << 20)
    assert cut.value.name == "CANNOT_DECOMPRESS"
    if encoding != "deflate":  # gzip members, zstd and lz4 frames may follow one another
        assert decompress(frame + frame, encoding, 200_000) == b"x" * 200_000


def test_a_binary_query_parameter_stays_bytes_and_the_session_timeout_is_read() -> None:
    request = parse_request({"query": b"SELECT {s:String}", "param_s": b"\xff\x00", "session_id": b"s",
                             "session_timeout": b"5", "session_check": b"1"}, {}, b"")
    assert (request.params, request.session_timeout_s, request.session_check) == ({"s": b"\xff\x00"}, 5.0, True)
    with pytest.raises(ClickHouseError, match="Invalid session timeout: 'never'"):
        parse_request({"query": "SELECT 1", "session_timeout": "never"}, {}, b"")


def test_a_body_already_in_a_spooled_file_is_decoded_from_it_or_passed_on_as_it_is() -> None:
    import io
    import os

    from sco.stack.clickhouse_http.bodies import SPOOL_BYTES, decompress_stream, spool

    data = os.urandom(1 << 20) * 12  # 12 MiB: past SPOOL_BYTES, compresses to about 1 MiB
    assert len(data) > SPOOL_BYTES
    with spool(io.BytesIO(data).read, len(data)) as plain:
        assert decompress_stream(plain, "", 16 << 20) is plain and plain.read() == data  # no copy, no encoding
    packed = gzip.compress(data, compresslevel=1)
    with decompress_stream(spool(io.BytesIO(packed).read, len(packed)), "gzip", 16 << 20) as decoded:
        assert decoded.read() == data
    too_big = spool(io.BytesIO(data).read, len(data))
    with pytest.raises(ClickHouseError) as refused:
        decompress_stream(too_big, "identity", 8 << 20)
    assert refused.value.code == 307 and too_big.closed
    with spool(io.BytesIO(b"short").read, 100) as short:
        assert short.read() == b"short"  # what arrived, for the caller to find short
