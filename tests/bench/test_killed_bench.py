"""A bench killed by a timeout leaves no server behind: SIGTERM once its servers run, and nothing that carries
the run's marker (tests/support/leftovers.py) is left once the bench has exited."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from testkit.paths import REPO
from tests.support.leftovers import MARKER_VAR, Leftover, carrying, scan

pytestmark = pytest.mark.services  # the benches start their own nats-server(s) and PostgreSQL

# (bench, its arguments, the servers it runs once it is measuring: a word of the command line each)
BENCHES = [
    ("agent_notice_latency", ["--nodes", "20", "--auth", "on"], ["nats-server"]),
    ("fleet_sim", ["--instances", "200"], ["nats-server", "nats-server", "nats-server", "postgres"]),
]


def _servers(found: list[Leftover], wanted: list[str]) -> bool:
    names = [word for left in found for word in set(wanted) if word in left.cmdline.split()[0]]
    return all(names.count(word) >= wanted.count(word) for word in set(wanted))


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("bench", "args", "servers"), BENCHES, ids=[b[0] for b in BENCHES])
def test_a_bench_stopped_by_sigterm_stops_the_servers_it_started(bench: str, args: list[str], servers: list[str],
                                                                  tmp_path: Path) -> None:
    marker, log = uuid.uuid4().hex, tmp_path / "bench.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", f"bench.{bench}", *args], cwd=REPO, stdout=out,
                                stderr=subprocess.STDOUT,
                                env={**os.environ, MARKER_VAR: marker, "PYTHONPATH": str(REPO)})
    left: list[Leftover] = []
    try:
        deadline = time.monotonic() + 180
        while not _servers(carrying(marker, exclude={proc.pid}), servers):
            assert proc.poll() is None, f"the bench ended before its servers ran: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"{servers} never all ran: {carrying(marker)}"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # what `timeout` sends
        proc.wait(120)
        left = scan(marker, grace_s=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for each in left or carrying(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(each.pid, signal.SIGKILL)
    assert left == [], log.read_text()[-2000:]
    assert proc.returncode == 128 + signal.SIGTERM
