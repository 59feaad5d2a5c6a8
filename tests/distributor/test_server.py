"""The distributor over real HTTP (aiohttp on a free port, the agent's own client): ETag and 304, no path
without a credential, roles, a new compile served at once, and each bundle's age as a metric (virtual clock)."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.httpwire import exchange
from distributor import Catalog, Distributor, PasswordTable, digest
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.support.exposition import parse

ISSUED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
AGENT = {"Authorization": "Basic " + base64.b64encode(b"agent.r1.i-1:pw-1").decode()}
CONTROLLER = {"Authorization": "Bearer ctl-token"}


class Running:
    """A distributor on a loop in a thread, as `sco distributor serve` runs it."""

    def __init__(self, root: Path, now: list[datetime]) -> None:
        table = PasswordTable(users={"agent.r1.i-1": (digest("pw-1"), "agent")},
                              tokens={digest("ctl-token"): ("controller", "controller")})
        self.server = Distributor(Catalog(root), table, clock=lambda: now[0])
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        port = asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", 0), self.loop).result(30)
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Running, Path, list[datetime]]]:
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/slurm-hpc", 3, [workload_entry("etl")], issued_at=ISSUED)
    write_bundle_dir(tmp_path / "r1" / "slurm-hpc", raw, sig)
    (tmp_path / "r1" / "slurm-hpc" / "controller-bundle.json").write_bytes(
        b'{"generation": 3, "issued_at": "2026-12-01T11:00:00Z", "kind": "ControllerBundle"}')
    now = [ISSUED + timedelta(minutes=10)]
    running = Running(tmp_path, now)
    yield running, tmp_path, now
    running.close()


def test_a_bundle_comes_with_an_etag_and_the_same_etag_back_is_304_without_a_body(served: tuple) -> None:
    running, root, _ = served
    status, headers, body = exchange("GET", running.url + "/r1/slurm-hpc/agent-bundle.json", headers=AGENT)
    assert status == 200 and body == (root / "r1" / "slurm-hpc" / "agent-bundle.json").read_bytes()
    etag = headers["etag"]
    assert etag.startswith('"sha256:')
    again = exchange("GET", running.url + "/r1/slurm-hpc/agent-bundle.json",
                     headers={**AGENT, "If-None-Match": etag})
    assert again[0] == 304 and again[2] == b"" and again[1]["etag"] == etag


def test_a_new_compile_is_served_at_once_under_a_new_etag(served: tuple) -> None:
    running, root, _ = served
    _, headers, _ = exchange("GET", running.url + "/r1/slurm-hpc/agent-bundle.json", headers=AGENT)
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/slurm-hpc", 4, [workload_entry("etl")], issued_at=ISSUED)
    write_bundle_dir(root / "r1" / "slurm-hpc", raw, sig)
    status, fresh, body = exchange("GET", running.url + "/r1/slurm-hpc/agent-bundle.json",
                                   headers={**AGENT, "If-None-Match": headers["etag"]})
    assert status == 200 and body == raw and fresh["etag"] != headers["etag"]


@pytest.mark.parametrize(("path", "headers", "status"), [
    ("/r1/slurm-hpc/agent-bundle.json", {}, 401),
    ("/r1/slurm-hpc/agent-bundle.json", {"Authorization": "Basic " + base64.b64encode(b"agent.r1.i-1:no").decode()},
     401),
    ("/metrics", {}, 401),
    ("/r1/slurm-hpc/controller-bundle.json", AGENT, 403),
    ("/metrics", AGENT, 403),
    ("/r1/slurm-hpc/controller-bundle.json", CONTROLLER, 200),
    ("/r1/slurm-hpc/agent-bundle.json.sig", AGENT, 200),
    ("/r1/slurm-hpc/secrets.json", CONTROLLER, 404),
    ("/r1/other/agent-bundle.json", CONTROLLER, 404),
    ("/r1/..%2f..%2fetc/agent-bundle.json", CONTROLLER, 404),
    ("/", CONTROLLER, 404),
], ids=["no-credential", "wrong-password", "metrics-anonymous", "agent-controller-bundle", "agent-metrics",
        "controller-bundle", "agent-signature", "unknown-file", "unknown-partition", "traversal", "root"])
def test_every_path_needs_a_credential_and_a_role_that_may_read_it(served: tuple, path: str,
                                                                  headers: dict[str, str], status: int) -> None:
    running, _, _ = served
    got, fields, _ = exchange("GET", running.url + path, headers=headers)
    assert got == status
    if status == 401:
        assert "Basic" in fields.get("www-authenticate", "")


def test_the_metrics_report_each_bundle_age_and_generation_on_the_injected_clock(served: tuple) -> None:
    running, _, now = served
    exchange("GET", running.url + "/r1/slurm-hpc/agent-bundle.json", headers={})  # one 401
    doc = parse(exchange("GET", running.url + "/metrics", headers=CONTROLLER)[2].decode())  # strict parse
    part = "r1/slurm-hpc"
    assert doc.value("sco_distributor_bundle_age_seconds", partition=part, kind="agent") == 600
    assert doc.value("sco_distributor_bundle_age_seconds", partition=part, kind="controller") == 4200
    assert doc.value("sco_distributor_bundle_generation", partition=part, kind="agent") == 3
    assert doc.value("sco_distributor_responses_total", code="401") == 1
    now[0] += timedelta(hours=1)
    later = parse(exchange("GET", running.url + "/metrics", headers=CONTROLLER)[2].decode())
    assert later.value("sco_distributor_bundle_age_seconds", partition=part, kind="agent") == 4200
