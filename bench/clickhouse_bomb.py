"""The front end's peak memory under a gzip bomb: ``python -m bench.clickhouse_bomb``.

Starts ``python -m sco.stack.clickhouse_http`` (in-memory engine, a users file of its own), reads the server
process's ``VmHWM`` after ``SELECT 1`` (the baseline: chDB and Python loaded), sends a 1.1 MB gzip body that
decompresses to 1.1 GB as an ``INSERT … FORMAT LineAsString``, and reads ``VmHWM`` again. The body is refused
with 307 (over the 256 MiB decompressed limit, applied while decompressing into a spooled file), so the bomb's
own cost is the rise of ``VmHWM``. Target: the rise at most 256 MiB (the issue's figure was 953 MiB peak); the
baseline itself is the engine's. Exit 1 when the figure misses or cannot be produced.
"""

from __future__ import annotations

import argparse
import base64
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

from sco.stack.clickhouse_http.auth import write_users_file

BUDGET_MIB = 256
BOMB_MIB = 1100


def bomb(mib: int = BOMB_MIB) -> bytes:
    """gzip of ``mib`` MiB of zero bytes (about 1.1 MB for 1.1 GB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(mib)) + packer.flush()


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def _post(url: str, query: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/?" + urllib.parse.urlencode({"query": query}), data=body,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def measure(mib: int = BOMB_MIB) -> tuple[int, int, int, int]:
    """(baseline VmHWM KiB, peak VmHWM KiB, bomb size in bytes, the bomb's HTTP status) of a fresh server."""
    users = write_users_file(Path(tempfile.mkdtemp(prefix="sco-bomb-")) / "users.json", {"w": ("pw", "default")})
    server = subprocess.Popen([sys.executable, "-m", "sco.stack.clickhouse_http", "-", "0", "--users-file",
                               str(users)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        auth = {"Authorization": "Basic " + base64.b64encode(b"w:pw").decode()}
        assert _post(url, "CREATE TABLE t (s String) ENGINE = Null", b"", auth)[0] == 200
        assert _post(url, "SELECT 1", b"", auth) == (200, b"1\n")
        baseline = vm_hwm_kib(server.pid)
        body = bomb(mib)
        status, _ = _post(url, "INSERT INTO t FORMAT LineAsString", body, {**auth, "Content-Encoding": "gzip"})
        return baseline, vm_hwm_kib(server.pid), len(body), status
    finally:
        server.terminate()
        server.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clickhouse_bomb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=BOMB_MIB, help="decompressed size of the bomb (MiB)")
    args = parser.parse_args(argv)
    try:
        baseline, peak, size, status = measure(args.mib)
    except Exception as exc:  # no figure: say why and fail
        print(f"FAIL: no figure ({exc})")
        return 1
    rise_mib = (peak - baseline) / 1024
    ok = status == 500 and rise_mib <= BUDGET_MIB
    print(f"bomb: {size / 1e6:.2f} MB gzip -> {args.mib} MiB; HTTP {status} (307 expected: refused)")
    print(f"VmHWM baseline {baseline / 1024:.0f} MiB, after the bomb {peak / 1024:.0f} MiB: rise {rise_mib:.0f} MiB "
          f"({peak / baseline:.2f}x baseline); target rise <= {BUDGET_MIB} MiB: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
