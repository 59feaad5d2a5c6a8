"""Each long-running `sco` process serves its own metrics endpoint (--metrics-port, bearer token): the tests run
the real processes — a controller on the simulated region, the event ingest, the outbox relay, the exclusion
watcher — scrape them and parse the exposition strictly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from contracts.events import Event
from stores import nats as sco_nats
from stores import outbox, postgres
from testkit.builders import PARTITION
from testkit.nats import NatsProcess
from testkit.paths import REPO
from tests.controllers.controller.test_process_faults import _bundle, region_url  # noqa: F401 (a fixture)
from tests.stores.helpers import make_event
from tests.support.exposition import Exposition, parse
from tests.support.ports import free_port

pytestmark = [pytest.mark.services, pytest.mark.slow]
TOKEN = "process-metrics-token-0123456789"


@pytest.fixture
def token(tmp_path: Path) -> Path:
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o600)
    return tmp_path / "token"


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], Path]]]:
    """Start ``sco …`` with JSON logs (``SCO_LOG_FORMAT=json``, as the manifests run it); afterwards every line
    it logged (stderr) must be a JSON object naming its time, level and component."""
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def run(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out, (tmp_path / f"{name}.err").open("wb") as err:
            p = subprocess.Popen([sys.executable, "-m", "sco", *args], cwd=REPO, stdout=out, stderr=err,
                                 env={**os.environ, "SCO_LOG_FORMAT": "json"})
        started.append((p, log))
        return p, log

    yield run
    for p, _ in started:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p, _ in started:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(15)   # reaped: a Popen left running warns when collected, in whichever test that happens
    for _, log in started:
        lines = log.with_suffix(".err").read_text().splitlines()
        assert lines, f"{log.stem} logged nothing"
        for line in lines:
            record = json.loads(line)
            assert {"time", "level", "component", "message"} <= record.keys(), line


def _scrape(port: int) -> Exposition | None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return parse(resp.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def _until(port: int, ok: Callable[[Exposition], bool], log: Path, limit: float = 240) -> Exposition:
    deadline = time.monotonic() + limit
    while True:
        doc = _scrape(port)
        try:
            if doc is not None and ok(doc):
                return doc
        except KeyError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"metrics never satisfied the condition; last scrape: "
                                 f"{doc.samples[:40] if doc else None}\n{log.read_text()[-3000:]}"
                                 f"{log.with_suffix('.err').read_text()[-3000:]}")
        time.sleep(0.3)


def test_the_controller_exports_its_passes_contracts_and_budget(tmp_path: Path, region_url: str,  # noqa: F811
                                                                pg_migrated_url: str, token: Path,
                                                                spawn: Callable[..., tuple[Any, Path]]) -> None:
    bundle = _bundle(tmp_path)
    items = [{"source": "slurm", "item_id": f"e{n}", "contract_ref": "etl@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for n in range(6)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    port = free_port()
    _, log = spawn("controller", "controller", "run", "--partition", PARTITION, "--bundle", str(bundle[0]),
                   "--pubkey", str(bundle[1]), "--governance-key", str(bundle[2]), "--sim-url", region_url,
                   "--postgres", pg_migrated_url, "--claims-file", str(tmp_path / "claims.json"), "--interval", "0.2",
                   "--recovery-share", "1", "--holder", "metrics-0", "--metrics-port", str(port),
                   "--metrics-token-file", str(token))
    doc = _until(port, lambda d: d.value("sco_controller_instances_launched_total") > 0, log)
    labels = {"region": "r1", "partition": PARTITION}
    assert doc.value("sco_controller_passes_total", role="leader", **labels) >= 3  # two read-only, then acting
    assert doc.value("sco_controller_leader", holder="metrics-0") == 1
    assert doc.value("sco_contract_info", workload="etl") == 1
    assert doc.series("sco_contract_info")[0]["owner"] and doc.value("sco_controller_breaker_open") == 0
    assert doc.value("sco_controller_token_budget_rate_per_second") > 0
    assert doc.value("sco_controller_token_budget_spent_total") >= doc.value("sco_controller_instances_launched_total")
    assert doc.value("sco_controller_actions_total", kind="place") > 0
    assert doc.value("sco_controller_interruption_rate_pct_per_hour", workload="etl") == 0
    assert doc.value("sco_contract_max_interruption_rate_pct_per_hour", workload="etl") > 0
    assert doc.value("sco_controller_rankings_age_seconds") == float("inf")  # no ranking in force in this test
    assert doc.value("sco_controller_pass_duration_seconds_count") >= 3


def test_a_metrics_port_without_a_token_is_refused_with_its_code(tmp_path: Path, region_url: str,  # noqa: F811
                                                                  pg_migrated_url: str) -> None:
    bundle = _bundle(tmp_path)
    out = subprocess.run([sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle",
                          str(bundle[0]), "--pubkey", str(bundle[1]), "--governance-key", str(bundle[2]), "--sim-url",
                          region_url, "--postgres", pg_migrated_url, "--passes", "1", "--metrics-port",
                          str(free_port())], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "SCO_METRICS_TOKEN_FILE"})
    assert out.returncode == 2 and "MET001" in out.stderr, out.stdout + out.stderr


def test_the_ingest_exports_its_lag_and_the_events_it_acknowledged(nats_server: NatsProcess,
                                                                   clickhouse_migrated_url: str, token: Path,
                                                                   spawn: Callable[..., tuple[Any, Path]]) -> None:
    async def publish(n: int) -> None:
        nc = await sco_nats.connect(nats_server.url)
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        for i in range(n):
            await sco_nats.publish_event(js, make_event(i))
        await nc.close()

    asyncio.run(publish(25))
    port = free_port()
    _, log = spawn("ingest", "ingest", "--nats", nats_server.url, "--clickhouse", clickhouse_migrated_url,
                   "--metrics-port", str(port), "--metrics-token-file", str(token))
    doc = _until(port, lambda d: d.value("sco_ingest_events_total") == 25 and d.value("sco_ingest_lag_messages") == 0,
                 log)
    assert doc.value("sco_ingest_lag_seconds") == 0
    assert doc.value("sco_ingest_dead_letters_total", reason="invalid") == 0
    assert doc.value("sco_ledger_orchestrator_cost_eur", window="24h") == 0


def test_the_outbox_relay_exports_its_depth_and_oldest_row(nats_server: NatsProcess, pg_migrated_url: str,
                                                           clickhouse_migrated_url: str, token: Path,
                                                           spawn: Callable[..., tuple[Any, Path]]) -> None:
    with postgres.connect(pg_migrated_url, autocommit=True) as conn:
        with conn.transaction():
            for i in range(5):
                outbox.enqueue(conn, make_event(i))
        port = free_port()
        _, log = spawn("relay", "outbox", "relay", "--postgres", pg_migrated_url, "--nats", nats_server.url,
                       "--clickhouse", clickhouse_migrated_url, "--metrics-port", str(port), "--metrics-token-file",
                       str(token))
        doc = _until(port, lambda d: d.value("sco_outbox_depth_rows") == 0, log)
        assert doc.value("sco_outbox_oldest_row_age_seconds") == 0
        row = conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL").fetchone()
        assert row is not None and row[0] == 5


def test_the_exclusion_watcher_exports_the_pool_it_excluded_and_the_events_it_read(
        nats_server: NatsProcess, pg_migrated_url: str, token: Path,
        spawn: Callable[..., tuple[Any, Path]]) -> None:
    start = datetime.now(UTC) - timedelta(minutes=10)

    async def publish() -> None:
        nc = await sco_nats.connect(nats_server.url)
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        for n in range(3):  # three waves, two minutes apart (the gap is 60 s)
            await sco_nats.publish_event(js, Event(kind="notice", time=start + timedelta(minutes=2 * n), region="r1",
                                                   pool="pool-x", instance=f"i{n}", cause="reclaimed", source="tests"))
        await nc.close()

    asyncio.run(publish())
    port = free_port()
    _, log = spawn("watcher", "controller", "watch-exclusions", "--region", "r1", "--nats", nats_server.url,
                   "--postgres", pg_migrated_url, "--metrics-port", str(port), "--metrics-token-file", str(token))
    doc = _until(port, lambda d: d.value("sco_exclusion_pool_excluded", pool="pool-x") == 1, log)
    assert doc.value("sco_exclusion_exclusions_total", region="r1") == 1
    assert doc.value("sco_exclusion_events_total") == 3
    assert doc.series("sco_exclusion_open_waves") == []  # the waves became the exclusion
