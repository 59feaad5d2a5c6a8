"""The front end bounds what a client can make it hold or wait for (issue 15), and answers like a ClickHouse
server where it used to differ: truncated bodies, decompression bombs, connection bursts, slow clients,
multi-statements, ``X-ClickHouse-Format``, binary SQL and unknown paths."""

from __future__ import annotations

import gzip
import socket
import threading
import zlib
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from sco.stack.clickhouse_http import ClickHouseHTTPServer
from testkit.clickhouse import ClickHouseProcess, authorized
from tests.stores.helpers import http

from .frontend_helpers import raw_exchange, running_frontend


def _path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path or '/'}?{parts.query}" if parts.query else parts.path or "/"


def _insert_head(url: str, table: str, extra: str) -> bytes:
    target = _path_of(url) + "&query=" + quote(f"INSERT INTO {table} FORMAT TSV")
    return f"POST {target} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


def test_a_body_shorter_than_its_content_length_commits_nothing(clickhouse_url: str) -> None:
    http(clickhouse_url, b"CREATE TABLE short_body (a UInt32) ENGINE = MergeTree ORDER BY a")
    reply = raw_exchange(clickhouse_url, _insert_head(clickhouse_url, "short_body", "Content-Length: 100\r\n")
                         + b"1\n2\n3\n")
    assert b" 400 " in reply.split(b"\r\n", 1)[0] and b"CANNOT_READ_ALL_DATA" in reply
    assert http(clickhouse_url, b"SELECT count() FROM short_body").body == b"0\n"


def test_a_chunked_upload_aborted_before_the_final_zero_chunk_commits_nothing(clickhouse_url: str) -> None:
    http(clickhouse_url, b"CREATE TABLE aborted (a UInt32) ENGINE = MergeTree ORDER BY a")
    rows = b"".join(b"%d\n" % i for i in range(1000))
    chunked = b"%x\r\n%s\r\n" % (len(rows), rows)  # no "0\r\n\r\n": the client went away
    raw_exchange(clickhouse_url, _insert_head(clickhouse_url, "aborted", "Transfer-Encoding: chunked\r\n") + chunked)
    assert http(clickhouse_url, b"SELECT count() FROM aborted").body == b"0\n"
    whole = chunked + b"0\r\n\r\n"  # the same upload, finished, is committed
    reply = raw_exchange(clickhouse_url, _insert_head(clickhouse_url, "aborted", "Transfer-Encoding: chunked\r\n"
                                                      "Connection: close\r\n") + whole)
    assert reply.startswith(b"HTTP/1.1 200")
    assert http(clickhouse_url, b"SELECT count() FROM aborted").body == b"1000\n"


def test_a_content_length_that_is_not_a_number_is_refused(clickhouse_server: ClickHouseProcess) -> None:
    reply = raw_exchange(clickhouse_server.url, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nSELECT 1")
    assert reply.startswith(b"HTTP/1.1 400") and b"is not a byte count" in reply


def _gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` gzip members of 1 MiB of zeros each: about 1 KiB of body per MiB it expands to."""
    return gzip.compress(bytes(1 << 20), 9) * megabytes


@pytest.mark.services
def test_a_decompression_bomb_is_refused_once_its_output_passes_the_limit() -> None:
    with running_frontend(max_body_bytes=4 << 20) as server:
        bomb = http(server.url + "/?query=" + quote("INSERT INTO FUNCTION null('a String') FORMAT RawBLOB"),
                    _gzip_bomb(64), {"Content-Encoding": "gzip"})
        fits = http(server.url + "/", gzip.compress(b"SELECT 1"), {"Content-Encoding": "gzip"})
    assert bomb.headers["X-ClickHouse-Exception-Code"] == "307"
    assert b"after decompression" in bomb.body
    assert fits.body == b"1\n"


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def test_a_1_1_mb_gzip_expanding_to_1_1_gb_is_refused_by_default_with_rss_under_1_gb(
        clickhouse_server: ClickHouseProcess) -> None:
    bomb = _gzip_bomb(1100)
    assert len(bomb) < 2 << 20
    reply = http(clickhouse_server.url + "/?query=" + quote("INSERT INTO FUNCTION null('a String') FORMAT RawBLOB"),
                 bomb, {"Content-Encoding": "gzip"})
    assert reply.headers["X-ClickHouse-Exception-Code"] == "307"
    assert clickhouse_server.running is not None
    assert _peak_rss_bytes(clickhouse_server.running.pid) < 1 << 30


def test_64_simultaneous_connections_are_all_answered(clickhouse_server: ClickHouseProcess) -> None:
    host, port = clickhouse_server.base_url.removeprefix("http://").split(":")
    auth = authorized(clickhouse_server.url)[1]["Authorization"]
    sockets = [socket.create_connection((host, int(port)), timeout=60) for _ in range(64)]
    try:
        for i, sock in enumerate(sockets):
            sock.sendall(f"GET /?query=SELECT%20{i} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n"
                         "Connection: close\r\n\r\n".encode())
        replies = []
        for sock in sockets:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            replies.append(data)
    finally:
        for sock in sockets:
            sock.close()
    assert [r.split(b"\r\n", 1)[0] for r in replies] == [b"HTTP/1.1 200 OK"] * 64
    assert [r.rsplit(b"\r\n\r\n", 1)[1] for r in replies] == [b"%d\n" % i for i in range(64)]


def test_the_listen_backlog_holds_at_least_128_connections() -> None:
    assert ClickHouseHTTPServer.request_queue_size >= 128


@pytest.mark.services
def test_a_connection_that_sends_its_headers_too_slowly_is_closed_by_the_read_timeout() -> None:
    with running_frontend(read_timeout_s=0.3) as server:
        closed = raw_exchange(server.url, b"POST / HTTP/1.1\r\nHost: x\r\n", close_write=False, timeout_s=30)
        body_never_sent = raw_exchange(server.url, b"POST /?query=SELECT%201 HTTP/1.1\r\nHost: x\r\n"
                                       b"Content-Length: 10\r\n\r\n", close_write=False, timeout_s=30)
        still_serving = http(server.url + "/?query=SELECT%201")
    assert closed == b""  # the server hung up: the client's own 30 s timeout would have raised instead
    assert b"SOCKET_TIMEOUT" in body_never_sent and b"HTTP/1.1 200" not in body_never_sent
    assert still_serving.body == b"1\n"


@pytest.mark.services
def test_past_max_connections_a_new_connection_gets_503_at_once() -> None:
    with running_frontend(max_connections=1) as server:
        host, port = server.plain_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as holder:
            holder.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
            assert holder.recv(65536).startswith(b"HTTP/1.1 200")  # the one worker is taken by this connection
            refused = raw_exchange(server.url, b"", close_write=False)  # answered before it sends anything
    assert refused.startswith(b"HTTP/1.1 503") and b"TOO_MANY_SIMULTANEOUS_QUERIES" in refused


def test_a_multi_statement_query_is_refused_as_a_syntax_error(clickhouse_server: ClickHouseProcess) -> None:
    reply = http(clickhouse_server.url + "/", b"SELECT 1; SELECT 2")
    assert (reply.status, reply.headers["X-ClickHouse-Exception-Code"]) == (400, "62")
    assert b"Multi-statements are not allowed" in reply.body
    assert http(clickhouse_server.url + "/", b"SELECT ';' AS s;").body == b";\n"  # one statement, trailing ;


def test_x_clickhouse_format_comes_only_with_a_result(clickhouse_url: str) -> None:
    assert "X-ClickHouse-Format" not in http(clickhouse_url, b"CREATE TABLE f (a UInt8) ENGINE = Memory").headers
    assert "X-ClickHouse-Format" not in http(clickhouse_url, b"INSERT INTO f VALUES (1)").headers
    assert "X-ClickHouse-Format" not in http(clickhouse_url, b"SET max_threads = 1").headers
    assert http(clickhouse_url, b"SELECT a FROM f").headers["X-ClickHouse-Format"] == "TabSeparated"


def test_sql_and_parameters_are_taken_as_bytes(clickhouse_server: ClickHouseProcess) -> None:
    assert http(clickhouse_server.url + "/", b"SELECT hex('\xff\x00a')").body == b"FF0061\n"
    binary = http(clickhouse_server.url + "/?query=" + quote("SELECT hex({s:String})") + "&param_s=%FF%00a")
    assert binary.body == b"FF0061\n"
    text = http(clickhouse_server.url + "/?query=" + quote("SELECT {s:String}") + "&param_s=" + quote("é"))
    assert text.body == "é\n".encode()


def test_an_unknown_path_answers_404(clickhouse_server: ClickHouseProcess) -> None:
    reply = http(clickhouse_server.url + "/no/such/handler?query=SELECT%201")
    assert reply.status == 404 and b"There is no handle /no/such/handler" in reply.body


def test_many_clients_in_parallel_each_get_only_their_own_results(clickhouse_server: ClickHouseProcess) -> None:
    wrong: list[str] = []

    def client(k: int) -> None:
        for _ in range(10):
            if k % 2:
                http(clickhouse_server.url + "/", b"SELECT throwIf(number = 5000) FROM numbers(100000) "
                     b"SETTINGS max_block_size = 100")
            got = http(clickhouse_server.url + "/?query=" + quote(f"SELECT {k}")).body
            if got != b"%d\n" % k:
                wrong.append(f"client {k}: {got[:40]!r}")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_streamed_deflate_body_is_read_whole(clickhouse_server: ClickHouseProcess) -> None:
    compressor = zlib.compressobj()
    body = compressor.compress(b"SELECT ") + compressor.flush(zlib.Z_SYNC_FLUSH) + compressor.compress(b"42")
    body += compressor.flush()
    assert http(clickhouse_server.url + "/", body, {"Content-Encoding": "deflate"}).body == b"42\n"
