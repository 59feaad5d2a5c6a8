"""What the front end's gate (authentication + chDB's ``EXPLAIN AST`` and ``formatQuerySingleLine`` + the
access decision of users.xml) costs per statement.

``.venv/bin/python -m bench.clickhouse_gate`` — for ``SELECT 1``, a dbt-sized model statement and a 1.2 MB
``INSERT … VALUES`` (40,000 rows): the median time of ``Gate.admit`` (authenticate, parse, decide) against the
time chDB itself takes to run the same statement in the same run (the model: its SELECT part, on an empty
table). Targets: at most 1.5x chDB's own time for the short statements, 3x for the big insert (parsed up to
VALUES: its rows are literals only, and chDB parses no more than max_query_size either). Exit 1 on a miss.
"""

from __future__ import annotations

import base64
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chdb.state import sqlitelike

from bench._cli import no_arguments
from sco.stack.clickhouse_http.auth import load_users_file, write_users_file
from sco.stack.clickhouse_http.gate import AstReader, Gate

_MODEL = ("CREATE TABLE m ENGINE = ReplacingMergeTree ORDER BY (pool, day) AS WITH s AS (SELECT pool, toDate(time) AS "
          "day, count() AS n, sumIf(price, kind = 'placed') AS spend FROM events WHERE time >= now() - INTERVAL 90 DAY "
          "GROUP BY pool, day) SELECT pool, day, n, spend, avg(spend) OVER (PARTITION BY pool ORDER BY day ROWS "
          "BETWEEN 6 PRECEDING AND CURRENT ROW) AS spend_7d FROM s")
_INSERT = "INSERT INTO t VALUES " + ", ".join(f"({i}, 'row-{i}', {i * 0.5})" for i in range(40_000))


def _median_s(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _run_chdb(chdb: Any, sql: str) -> object:
    return chdb.query(sql, "TabSeparated").bytes()


def main() -> int:
    no_arguments("bench.clickhouse_gate", __doc__)
    users = write_users_file(Path(tempfile.mkdtemp(prefix="sco-bench-gate-")) / "users.json",
                             {"bench": ("pw", "default")})
    gate = Gate(load_users_file(users), AstReader(":memory:"))
    headers = {"authorization": "Basic " + base64.b64encode(b"bench:pw").decode()}
    handle = sqlitelike.connect(":memory:")  # keep it: its __del__ closes the connection
    chdb = handle._conn
    chdb.query("CREATE TABLE t (a UInt32, b String, c Float64) ENGINE = Memory", "TabSeparated")
    chdb.query("CREATE TABLE events (pool String, time DateTime, price Float64, kind String) ENGINE = Memory",
               "TabSeparated")
    failed = False
    print(f"{'statement':<22} {'chDB runs it':>13} {'gate.admit':>12} {'ratio':>7}  target")
    for name, sql, engine_sql, runs, target in (
            ("SELECT 1", "SELECT 1", "SELECT 1", 200, 1.5),
            ("dbt model", _MODEL, _MODEL[_MODEL.index("WITH"):], 100, 1.5),
            (f"INSERT VALUES {len(_INSERT) / 1e6:.1f} MB", _INSERT, _INSERT, 5, 3.0)):
        base = _median_s(functools.partial(_run_chdb, chdb, engine_sql), runs)
        gated = _median_s(functools.partial(gate.admit, {}, headers, sql.encode()), runs)
        ok = gated / base <= target
        failed |= not ok
        print(f"{name:<22} {base * 1e3:>10.3f} ms {gated * 1e3:>9.3f} ms {gated / base:>6.2f}x  "
              f"<= {target:g}x: {'PASS' if ok else 'FAIL'}")
    handle.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
