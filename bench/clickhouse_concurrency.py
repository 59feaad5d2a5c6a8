"""Can chDB run two queries at once in one process, and does a short query wait behind a long one?

``.venv/bin/python -m bench.clickhouse_concurrency [ROUNDS]`` — (1) in-process chDB: one single-threaded
scan alone, then two at once on two connections, then two at once on one connection; (2) through the front end
(in-process server, in-memory chDB): the latency of ``SELECT 1`` alone and while that scan runs.
"""

from __future__ import annotations

import secrets
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from chdb.state import sqlitelike

from bench._cli import parser
from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer
from sco.stack.clickhouse_http.auth import write_users_file

_SCAN = "SELECT count() FROM numbers(200000000) WHERE cityHash64(number) % 7 = 3 SETTINGS max_threads = 1"


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _together(*works: Callable[[], object]) -> tuple[float, float]:
    """Run ``works`` at once: (when the first finished, when the last finished), in seconds from the start.

    Run one after another, the first ends at about one query's time; run concurrently, both end together.
    """
    ends: list[float] = []

    def run(work: Callable[[], object]) -> None:
        work()
        ends.append(time.perf_counter())

    threads = [threading.Thread(target=run, args=(w,)) for w in works]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return min(ends) - started, max(ends) - started


def in_process(rounds: int) -> dict[str, float]:
    a, b = sqlitelike.connect(":memory:"), sqlitelike.connect(":memory:")

    def scan(conn: sqlitelike.Connection) -> Callable[[], object]:
        return lambda: bytes(conn._conn.query(_SCAN, "TabSeparated", params={}).bytes())

    alone = min(_timed(scan(a)) for _ in range(rounds))
    two_conns = min(_together(scan(a), scan(b)) for _ in range(rounds))
    one_conn = min(_together(scan(a), scan(a)) for _ in range(rounds))
    a.close()
    b.close()
    return {"one scan alone": alone,
            "two scans, two connections: first done": two_conns[0], "… last done": two_conns[1],
            "two scans, one connection: first done": one_conn[0], "… last done ": one_conn[1]}


def through_front_end(rounds: int) -> dict[str, float]:
    engine = ChdbEngine(None)
    password = secrets.token_urlsafe(18)
    users = write_users_file(Path(tempfile.mkdtemp(prefix="sco-bench-users-")) / "users.json",
                             {"bench": (password, "default")})
    server = ClickHouseHTTPServer("127.0.0.1", 0, engine, users_file=users)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    auth = {"X-ClickHouse-User": "bench", "X-ClickHouse-Key": password}

    def post(sql: str) -> Callable[[], object]:
        return lambda: urllib.request.urlopen(urllib.request.Request(server.url + "/", sql.encode(), headers=auth),
                                              timeout=120).read()

    short = [_timed(post("SELECT 1")) for _ in range(20 * rounds)]
    behind: list[float] = []
    for _ in range(rounds):
        long_query = threading.Thread(target=post(_SCAN))
        long_query.start()
        time.sleep(0.1)
        behind += [_timed(post("SELECT 1")) for _ in range(5)]
        long_query.join()
    server.shutdown()
    server.server_close()
    engine.close()
    return {"SELECT 1 alone (median)": statistics.median(short),
            "SELECT 1 while a scan runs (median)": statistics.median(behind),
            "SELECT 1 while a scan runs (max)": max(behind)}


def main(argv: list[str] | None = None) -> int:
    cli = parser("bench.clickhouse_concurrency", __doc__)
    cli.add_argument("rounds", nargs="?", type=int, default=3, help="timed runs of each case (default 3)")
    rounds = cli.parse_args(argv).rounds
    for name, seconds in {**in_process(rounds), **through_front_end(rounds)}.items():
        print(f"{name:40s} {seconds * 1000:9.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
