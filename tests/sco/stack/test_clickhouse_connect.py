"""clickhouse-connect works unchanged against `sco clickhouse serve`."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from stores import clickhouse
from testkit.paths import REPO


@pytest.mark.parametrize("compress", [True, "lz4", "zstd", "gzip", False])
def test_clickhouse_connect_inserts_and_reads_back_with_each_compression(clickhouse_url: str,
                                                                         compress: bool | str) -> None:
    client = clickhouse.client(clickhouse_url, compress=compress)
    client.command("CREATE TABLE IF NOT EXISTS t (id UInt64, name String, at DateTime64(3, 'UTC'), "
                   "amount Decimal(18, 6), tags Array(String)) ENGINE = ReplacingMergeTree ORDER BY id")
    at = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    rows = [[i, f"n{i}", at, Decimal("1.25") * i, ["a", str(i)]] for i in range(5000)]
    summary = client.insert("t", rows, column_names=["id", "name", "at", "amount", "tags"])
    assert summary.written_rows == 5000
    got = client.query("SELECT id, name, at, amount, tags FROM t WHERE id = {id:UInt64}", parameters={"id": 7})
    # clickhouse-connect hands back UTC DateTime64 values as naive datetimes by default
    assert got.result_rows == [(7, "n7", at.replace(tzinfo=None), Decimal("8.75"), ["a", "7"])]
    assert client.query_arrow("SELECT id FROM t ORDER BY id").num_rows == 5000
    assert client.query_df("SELECT sum(amount) AS s FROM t")["s"][0] == Decimal("1.25") * sum(range(5000))
    client.close()


def test_clickhouse_connect_streams_large_arrow_results_and_form_encoded_parameters(clickhouse_url: str) -> None:
    client = clickhouse.client(clickhouse_url, form_encode_query_params=True)
    table = client.query_arrow("SELECT number, toString(number) AS s FROM numbers({n:UInt64})",
                               parameters={"n": 100_000})
    assert table.num_rows == 100_000
    with client.query_row_block_stream("SELECT number FROM numbers(50000)") as stream:
        assert sum(len(block) for block in stream) == 50_000
    client.close()


def test_clickhouse_connect_raises_the_server_error_code(clickhouse_url: str) -> None:
    client = clickhouse.client(clickhouse_url)
    with pytest.raises(DatabaseError, match=r"UNKNOWN_TABLE|Code: 60"):
        client.query("SELECT * FROM missing_table")
    assert client.command("SELECT 1") == 1
    client.close()


def test_clickhouse_client_uses_the_database_named_in_the_url(clickhouse_url: str) -> None:
    client = clickhouse.client(clickhouse_url)
    assert client.command("SELECT currentDatabase()") == clickhouse_url.rsplit("=", 1)[1]
    client.close()


WRITER = """
import sys
from stores import clickhouse
client = clickhouse.client(sys.argv[1])
proc = int(sys.argv[2])
for i in range(20):
    client.insert("shared", [[proc, i]], column_names=["proc", "i"])
    assert client.command("SELECT count() FROM shared WHERE proc = {p:UInt8}", parameters={"p": proc}) == i + 1
"""


def test_several_client_processes_share_the_one_engine(clickhouse_url: str) -> None:
    import subprocess
    import sys

    client = clickhouse.client(clickhouse_url)
    client.command("CREATE TABLE shared (proc UInt8, i UInt32) ENGINE = MergeTree ORDER BY (proc, i)")
    repo = REPO
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, clickhouse_url, str(k)], cwd=repo,
                              stderr=subprocess.PIPE) for k in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    assert client.query("SELECT proc, count() FROM shared GROUP BY proc ORDER BY proc").result_rows == [
        (0, 20), (1, 20), (2, 20), (3, 20)]
    client.close()
