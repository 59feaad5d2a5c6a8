"""The front end's peak memory under a gzip bomb: ``python -m bench.clickhouse_bomb``.

Starts ``python -m sco.stack.clickhouse_http`` (in-memory engine, a users file of its own): the guard, which owns
the port and decodes request bodies, and its child the engine, which holds chDB (:mod:`sco.stack.clickhouse_http.
frontdoor`). After ``SELECT 1`` it reads both processes' ``VmHWM`` (the baselines), sends a 1.1 MB gzip body that
decompresses to 1.1 GB as an ``INSERT … FORMAT LineAsString``, and reads ``VmHWM`` again. The guard refuses the
body with 307 (over the 256 MiB decompressed limit, applied while decompressing into a spooled file) before the
engine sees a byte of it. Target: the guard's peak ``VmHWM`` — the whole memory of the process that handles the
untrusted bytes — at most 256 MiB (the issue's figure was 953 MiB; one process with chDB in it peaked at ~401
MiB); the engine's rise is printed beside it. Exit 1 when the figure misses or cannot be produced.
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
from dataclasses import dataclass
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


def _children(task: Path) -> list[str]:
    """The child pids one thread of the guard started; none when the thread ended since the listing."""
    try:
        return (task / "children").read_text().split()
    except FileNotFoundError:
        return []


def engine_pid(guard: int) -> int:
    """The guard's child: the engine."""
    children = [int(pid) for task in Path(f"/proc/{guard}/task").iterdir() for pid in _children(task)]
    if len(children) != 1:
        raise RuntimeError(f"the guard {guard} has {len(children)} children, not the one engine")
    return children[0]


def _post(url: str, query: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/?" + urllib.parse.urlencode({"query": query}), data=body,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@dataclass(frozen=True)
class Figures:
    guard_before_kib: int
    guard_peak_kib: int
    engine_before_kib: int
    engine_after_kib: int
    bomb_bytes: int
    status: int
    reply: bytes

    @property
    def engine_rise_mib(self) -> float:
        return (self.engine_after_kib - self.engine_before_kib) / 1024

    @property
    def refused(self) -> bool:
        """Refused with ClickHouse's 307 (HTTP 500), nothing run."""
        return self.status == 500 and b"TOO_LARGE_SIZE_COMPRESSED" in self.reply

    @property
    def passed(self) -> bool:
        return self.refused and self.guard_peak_kib / 1024 <= BUDGET_MIB


def measure(mib: int = BOMB_MIB) -> Figures:
    """The guard's and the engine's ``VmHWM`` before and after the bomb, and its reply, from a fresh server."""
    users = write_users_file(Path(tempfile.mkdtemp(prefix="sco-bomb-")) / "users.json", {"w": ("pw", "default")})
    server = subprocess.Popen([sys.executable, "-m", "sco.stack.clickhouse_http", "-", "0", "--users-file",
                               str(users)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        auth = {"Authorization": "Basic " + base64.b64encode(b"w:pw").decode()}
        assert _post(url, "CREATE TABLE t (s String) ENGINE = Null", b"", auth)[0] == 200
        assert _post(url, "SELECT 1", b"", auth) == (200, b"1\n")
        engine = engine_pid(server.pid)
        guard_before, engine_before = vm_hwm_kib(server.pid), vm_hwm_kib(engine)
        body = bomb(mib)
        status, reply = _post(url, "INSERT INTO t FORMAT LineAsString", body, {**auth, "Content-Encoding": "gzip"})
        return Figures(guard_before, vm_hwm_kib(server.pid), engine_before, vm_hwm_kib(engine), len(body), status,
                       reply)
    finally:
        server.terminate()
        server.wait(timeout=60)
        if server.stdout is not None:
            server.stdout.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clickhouse_bomb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=BOMB_MIB, help="decompressed size of the bomb (MiB)")
    args = parser.parse_args(argv)
    try:
        got = measure(args.mib)
    except Exception as exc:  # no figure: say why and fail
        print(f"FAIL: no figure ({exc})")
        return 1
    print(f"bomb: {got.bomb_bytes / 1e6:.2f} MB gzip -> {args.mib} MiB; HTTP {got.status} "
          f"({'refused with 307' if got.refused else 'NOT refused with 307'}: {got.reply[:120]!r})")
    print(f"guard VmHWM: {got.guard_before_kib / 1024:.0f} MiB before, {got.guard_peak_kib / 1024:.0f} MiB peak; "
          f"target peak <= {BUDGET_MIB} MiB: {'PASS' if got.passed else 'FAIL'}")
    print(f"engine VmHWM: {got.engine_before_kib / 1024:.0f} MiB before, {got.engine_after_kib / 1024:.0f} MiB after: "
          f"rise {got.engine_rise_mib:.0f} MiB (the engine never sees the body)")
    return 0 if got.passed else 1


if __name__ == "__main__":
    sys.exit(main())
