"""clickhouse-connect works unchanged against `sco clickhouse serve`."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from sco.stores import clickhouse


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
