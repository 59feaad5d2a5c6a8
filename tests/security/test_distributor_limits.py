"""The bundle distributor is bounded by the server, not the client: a connection that drip-feeds its headers is
closed at the total deadline (``DST001``), connections past the cap get 503 at once (``DST002``) and the server
answers again as soon as they are gone; and an agent reads only its own partition's agent bundle — another
partition's is 403 (``DST003``), its region's when the mint named no partition. Every refusal is logged. Real
HTTP on a free port, as ``sco distributor serve`` runs it."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.httpwire import exchange
from distributor import Catalog, Distributor, PasswordTable, digest
from distributor.limits import Limits
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.support.wait import wait_for

ISSUED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PARTITIONS = ("r1/slurm-hpc", "r1/k8s-a", "r2/slurm-hpc")
SCOPES = {"agent.r1.i-hpc": "r1/slurm-hpc", "agent.r1.i-any": "r1"}


def _basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:pw".encode()).decode()}


class Running:
    def __init__(self, root: Path, limits: Limits) -> None:
        table = PasswordTable(users={u: (digest("pw"), "agent") for u in SCOPES}, scopes=lambda: SCOPES)
        self.server = Distributor(Catalog(root), table, limits=limits)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", 0), self.loop).result(30)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
def bundles(tmp_path: Path) -> Path:
    keys = new_keys()
    for partition in PARTITIONS:
        raw, sig = make_bundle(keys, partition, 3, [workload_entry("etl")], issued_at=ISSUED)
        write_bundle_dir(tmp_path / partition, raw, sig)
    return tmp_path


@pytest.fixture
def running(bundles: Path) -> Iterator[Running]:
    server = Running(bundles, Limits(deadline_s=1.5, max_connections=4))
    yield server
    server.close()


@pytest.fixture
def capped(bundles: Path) -> Iterator[Running]:
    """The connection cap alone: a deadline no idle connection reaches during the test, however loaded the
    machine, so none of them is freed by the deadline before the request past the cap arrives."""
    server = Running(bundles, Limits(deadline_s=600.0, max_connections=4))
    yield server
    server.close()


def _closed_within(sock: socket.socket, seconds: float, drip: bytes) -> float | None:
    """Drip a header line every 0.2 s; seconds until the server closed the connection (None: still open)."""
    started = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - started < seconds:
        try:
            sock.sendall(drip)
            if sock.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - started
    return None


def test_a_drip_fed_request_is_closed_at_the_total_deadline(running: Running,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="distributor.limits"), \
            socket.create_connection(("127.0.0.1", running.port)) as sock:
        sock.sendall(b"GET /r1/slurm-hpc/agent-bundle.json HTTP/1.1\r\nHost: x\r\n")
        closed = _closed_within(sock, 10.0, b"X-Drip: 1\r\n")
    assert closed is not None and closed < 5.0, closed
    assert running.server.gate.expired == 1 and "DST001" in caplog.text


def test_connections_past_the_cap_get_503_and_the_server_answers_once_they_are_gone(
        capped: Running, caplog: pytest.LogCaptureFixture) -> None:
    gate = capped.server.gate
    with caplog.at_level(logging.WARNING, logger="distributor.limits"):
        idle = [socket.create_connection(("127.0.0.1", capped.port)) for _ in range(4)]
        wait_for(lambda: gate.open == 4, 60, what="the server admitted the four idle connections")
        status, _, body = exchange("GET", capped.url + "/r1/slurm-hpc/agent-bundle.json",
                                   headers=_basic("agent.r1.i-hpc"))
        assert status == 503 and b"DST002" in body
        for s in idle:
            s.close()
        wait_for(lambda: gate.open == 0, 60, what="the server counted the four closes")  # not a sleep: load
    status, _, _ = exchange("GET", capped.url + "/r1/slurm-hpc/agent-bundle.json", headers=_basic("agent.r1.i-hpc"))
    assert status == 200 and "DST002" in caplog.text
    assert gate.expired == 0  # the slots were freed by the closes, not by the deadline


def test_an_agent_reads_only_its_own_partitions_bundle(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    def status(user: str, partition: str) -> int:
        return exchange("GET", f"{running.url}/{partition}/agent-bundle.json", headers=_basic(user))[0]

    with caplog.at_level(logging.WARNING, logger="distributor.server"):
        got = {(user, p): status(user, p) for user in SCOPES for p in PARTITIONS}
    assert got == {("agent.r1.i-hpc", "r1/slurm-hpc"): 200, ("agent.r1.i-hpc", "r1/k8s-a"): 403,
                   ("agent.r1.i-hpc", "r2/slurm-hpc"): 403, ("agent.r1.i-any", "r1/slurm-hpc"): 200,
                   ("agent.r1.i-any", "r1/k8s-a"): 200, ("agent.r1.i-any", "r2/slurm-hpc"): 403}
    assert "DST003 agent.r1.i-hpc" in caplog.text
