"""Finding: a 1.1 MB gzip bomb peaked the front end at 953 MiB. The decompressed-size limit now applies while
decompressing, 1 MiB at a time into a spooled file (8 MiB in memory, the rest on disk), and the decompression
happens in the guard, the front end's process without chDB, so the bomb is refused with 307 and the peak
``VmHWM`` of the process that handles it stays far under 256 MiB (``bench.clickhouse_bomb``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sco.stack.clickhouse_http.bodies import SPOOL_BYTES, decompress_stream, spilled
from sco.stack.clickhouse_http.protocol import ClickHouseError
from testkit.paths import REPO

pytestmark = pytest.mark.services


def test_the_front_end_refuses_a_gzip_bomb_with_the_guards_peak_memory_under_256_mib() -> None:
    run = subprocess.run([sys.executable, "-m", "bench.clickhouse_bomb"], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr
    assert "HTTP 500" in run.stdout  # refused (307 TOO_LARGE_SIZE_COMPRESSED), not executed


def test_decompression_stops_at_the_limit_and_spills_a_large_body_to_disk() -> None:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = b"".join(packer.compress(bytes(1 << 20)) for _ in range(64)) + packer.flush()
    with pytest.raises(ClickHouseError) as refused:
        decompress_stream(body, "gzip", 32 << 20)
    assert refused.value.code == 307
    with decompress_stream(body, "gzip", 128 << 20) as stream:
        assert spilled(stream) and stream.seek(0, 2) == 64 << 20 > SPOOL_BYTES


@pytest.mark.parametrize("where", ["url", "body"])
def test_a_large_compressed_insert_is_inserted_whole_from_its_spooled_file(where: str) -> None:
    import gzip
    from urllib.parse import quote

    from tests.sco.stack.frontend_helpers import running_frontend
    from tests.stores.helpers import http

    rows = b"".join(b"%d,row-%d-%s\n" % (i, i, b"x" * 40) for i in range(400_000))  # about 20 MB
    assert len(rows) > 2 * SPOOL_BYTES
    with running_frontend() as server:
        http(server.url + "/", b"CREATE TABLE big (a UInt32, s String) ENGINE = MergeTree ORDER BY a")
        head = b"INSERT INTO big FORMAT CSV"
        url = server.url + "/" + (f"?query={quote(head.decode())}" if where == "url" else "")
        body = gzip.compress(rows if where == "url" else head + b"\n" + rows, compresslevel=1)
        reply = http(url, body, {"Content-Encoding": "gzip"})
        assert reply.status == 200, reply.body[:300]
        assert http(server.url + "/", b"SELECT count(), sum(a) FROM big").body == b"400000\t79999800000\n"
