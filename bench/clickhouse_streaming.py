"""Does the front end stream a result larger than it could hold, in bounded memory, at a useful rate?

``.venv/bin/python -m bench.clickhouse_streaming [MEGABYTES]`` (default 1024) — an in-process front end over
an in-memory chDB sends a ``Native`` result of about MEGABYTES MB (``numbers()`` with a 50-byte string) to a
raw-socket reader that keeps nothing. Baseline in the same run: the same query read straight from chDB's
streaming API in the same process (no HTTP). Targets: RSS growth < 64 MiB whatever the size, and the front
end's rate ≥ 0.5× the baseline's. Exits non-zero when a target fails or no figure could be measured.
"""

from __future__ import annotations

import socket
import sys
import threading
import time

from chdb.state import sqlitelike

from bench._cli import parser
from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer

_ROW_BYTES = 8 + 1 + 50


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def _query(megabytes: int) -> str:
    return f"SELECT number, repeat('x', 50) FROM numbers({megabytes * 1_000_000 // _ROW_BYTES}) FORMAT Native"


def baseline(megabytes: int) -> tuple[int, float]:
    """Bytes and seconds for the result read from chDB's streaming API directly."""
    handle = sqlitelike.connect(":memory:")
    conn = handle._conn
    started = time.perf_counter()
    stream = conn.send_query(_query(megabytes), "Native", params={})
    total = 0
    while (piece := conn.streaming_fetch_result(stream)) is not None and piece.size():
        total += piece.size()
    elapsed = time.perf_counter() - started
    handle.close()
    return total, elapsed


def through_front_end(megabytes: int) -> tuple[int, float, int]:
    """Bytes, seconds and peak RSS growth for the result read over HTTP from the front end."""
    engine = ChdbEngine(None)
    server = ClickHouseHTTPServer("127.0.0.1", 0, engine)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        host, port = server.server_address[:2]
        query = _query(megabytes).encode()
        before = peak = _rss()
        started = time.perf_counter()
        with socket.create_connection((str(host), int(port)), timeout=120) as sock, sock.makefile("rb") as reply:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(query), query))
            while reply.readline() not in (b"\r\n", b""):
                pass
            total = 0
            while size := int(reply.readline().strip(), 16):
                while size:
                    got = len(reply.read(min(size, 1 << 20)))
                    total, size = total + got, size - got
                reply.readline()
                peak = max(peak, _rss())
        return total, time.perf_counter() - started, peak - before
    finally:
        server.shutdown()
        server.server_close()
        engine.close()


def main(argv: list[str] | None = None) -> int:
    cli = parser("bench.clickhouse_streaming", __doc__)
    cli.add_argument("megabytes", nargs="?", type=int, default=1024, help="the result's size in MB (default 1024)")
    megabytes = cli.parse_args(argv).megabytes
    base_bytes, base_s = baseline(megabytes)
    sent, front_s, growth = through_front_end(megabytes)
    if not sent or not base_bytes or sent != base_bytes:
        print(f"FAIL: no comparable figure (front end {sent} bytes, chDB {base_bytes} bytes)")
        return 1
    ratio = (sent / front_s) / (base_bytes / base_s)
    checks = [(f"RSS growth {growth / 2**20:.0f} MiB for a {sent / 2**20:.0f} MiB result", growth < 64 << 20,
               "< 64 MiB"),
              (f"rate {sent / front_s / 2**20:.0f} MiB/s vs chDB alone {base_bytes / base_s / 2**20:.0f} MiB/s "
               f"= {ratio:.2f}×", ratio >= 0.5, "≥ 0.5×")]
    for text, ok, target in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text} (target {target})")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
