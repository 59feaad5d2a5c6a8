"""The ClickHouse front end's overhead: the same queries through `sco clickhouse serve` (HTTP) and against
chDB in this process (the baseline), as a ratio.

    .venv/bin/python -m bench.clickhouse_frontend

Both engines hold the same 1,000,000-row events-like table (built from ``numbers()``, so identical). For
each query: the median of 15 interleaved runs of (a) chDB in-process ``query(sql, fmt)``, (b) a raw HTTP POST to the
front end (server + HTTP only), (c) clickhouse-connect (server + HTTP + the client's decoding).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._cli import no_arguments, stop_on_signals
from sco.stack import services
from stores import clickhouse
from testkit.clickhouse import authorized

SETUP = [
    "CREATE TABLE ev (event_id String, kind LowCardinality(String), time DateTime64(3, 'UTC'), "
    "region LowCardinality(String), pool LowCardinality(String), workload LowCardinality(String), units UInt32) "
    "ENGINE = ReplacingMergeTree ORDER BY (region, kind, event_id)",
    "INSERT INTO ev SELECT toString(generateUUIDv4()), ['placed','notice','drained','lost'][number % 4 + 1], "
    "toDateTime64('2026-11-01 00:00:00', 3, 'UTC') + number, concat('r', toString(number % 3)), "
    "concat('pool-', toString(number % 140)), concat('w', toString(number % 220)), number % 16 "
    "FROM numbers(1000000)",
]
QUERIES = {
    "point: SELECT 1": ("SELECT 1", "TabSeparated"),
    "aggregate: 1M rows -> 140 pools": (
        "SELECT pool, countIf(kind = 'lost') / count() AS loss, sum(units) FROM ev GROUP BY pool ORDER BY pool",
        "Native"),
    "scan: 100k rows out as Arrow": ("SELECT event_id, pool, units FROM ev LIMIT 100000", "Arrow"),
}


def _medians(fns: list[Callable[[], Any]], runs: int = 15) -> list[float]:
    """Median seconds per function; the functions take turns each round so load drifts hit all alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            started = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    no_arguments("bench.clickhouse_frontend", __doc__)
    from chdb.state import sqlitelike

    root = Path(tempfile.mkdtemp(prefix="sco-bench-ch-"))
    server = services.start_clickhouse(root / "ch")
    local = sqlitelike.connect(":memory:")
    try:
        client = clickhouse.client(server.url)
        for sql in SETUP:
            client.command(sql)
            local.query(sql)
        print(f"{'query':<34} {'in-process':>11} {'HTTP raw':>11} {'ratio':>7} {'clickhouse-connect':>19} {'ratio':>7}")
        for name, (sql, fmt) in QUERIES.items():
            def in_process(sql: str = sql, fmt: str = fmt) -> Any:
                return local.query(sql, fmt)

            def raw_http(sql: str = sql, fmt: str = fmt) -> bytes:
                body = f"{sql} FORMAT {fmt}".encode()
                url, headers = authorized(server.url + "/")  # the URL's credentials as HTTP Basic
                with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=60) as r:
                    data: bytes = r.read()
                    return data

            def connect(sql: str = sql, fmt: str = fmt) -> Any:
                return client.query_arrow(sql) if fmt == "Arrow" else client.query(sql).result_rows

            base, raw, cc = _medians([in_process, raw_http, connect])
            print(f"{name:<34} {base * 1e3:>9.2f}ms {raw * 1e3:>9.2f}ms {raw / base:>6.2f}x "
                  f"{cc * 1e3:>17.2f}ms {cc / base:>6.2f}x")
        client.close()
        return 0
    finally:
        local.close()
        services.stop_pid(server.pid)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
