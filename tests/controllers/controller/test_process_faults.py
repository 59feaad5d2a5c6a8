"""Fault tests with real processes: the controller (`sco controller run`) is SIGKILLed in the middle of acting
on its plan and restarted; the simulated region (`sco sim region serve`) and PostgreSQL keep running. The
restarted process must do two read-only cycles and then converge on the plan without a duplicate launch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from contracts.bundle import publish
from contracts.signing import generate_keypair, load_private_key
from controllers.controller.rebuild import ownership
from controllers.providers.simulated import SimulatedProvider
from testkit.builders import PARTITION, base
from testkit.paths import REPO
from tests.contracts.helpers import compile_doc
from tests.support.ports import free_port


@pytest.fixture
def region_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    with (tmp_path / "region.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sco", "sim", "region", "serve", "--no-auth", "--port", str(port), "--nats", "none",
             "--seed", "7", "--set", "reclaim_rate_pct_h=0", "--set", "hall_reclaims_per_30d=0", "--set",
             "bursts_per_aggregate_day=0"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            SimulatedProvider(url, region="r1").quota_headroom()
            break
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError((tmp_path / "region.log").read_text()) from None
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


def _bundle(tmp: Path) -> tuple[Path, Path, Path]:
    signing, governance = generate_keypair(), generate_keypair()
    docs = [base("T3", workload="etl", partition=PARTITION, resources={"vcpu": 4, "memory_gib": 16}),
            base("T1", workload="train", partition=PARTITION, resources={"vcpu": 4, "memory_gib": 16})]
    compiled = []
    for d in docs:
        w, findings = compile_doc(d)
        assert w is not None, findings
        compiled.append(w)
    out = tmp / "bundles"
    publish(compiled, out, load_private_key(signing.private_pem), datetime.now(UTC),
            load_private_key(governance.private_pem))
    (tmp / "signing.pub").write_bytes(signing.public_pem)
    (tmp / "governance.pub").write_bytes(governance.public_pem)
    return out / "r1" / "slurm-hpc" / "controller-bundle.json", tmp / "signing.pub", tmp / "governance.pub"


def _controller(tmp: Path, region_url: str, pg: str, bundle: tuple[Path, Path, Path], log: str, passes: int = 0
                ) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle", str(bundle[0]),
            "--pubkey", str(bundle[1]), "--governance-key", str(bundle[2]), "--sim-url", region_url, "--postgres", pg,
            "--claims-file", str(tmp / "claims.json"), "--interval", "0.2", "--recovery-share", "1",
            "--region-budget", "3", "--holder", "controller-0"]
    if passes:
        args += ["--passes", str(passes)]
    with (tmp / log).open("wb") as out:
        return subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "SCO_DEBUG": "1"})


def test_killing_the_controller_mid_plan_and_restarting_gives_two_read_only_cycles_and_no_duplicates(
        tmp_path: Path, region_url: str, pg_migrated_url: str) -> None:
    bundle = _bundle(tmp_path)
    items = [{"source": "slurm", "item_id": f"e{n}", "contract_ref": "etl@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for n in range(120)]
    items += [{"source": "slurm", "item_id": f"t{n}", "contract_ref": "train@1", "vcpu": 4, "memory_gib": 16,
               "state": "pending"} for n in range(90)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    region = SimulatedProvider(region_url, region="r1")
    first = _controller(tmp_path, region_url, pg_migrated_url, bundle, "first.log")
    deadline = time.monotonic() + 60
    while len(region.list_instances()) < 6:
        assert first.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # mid-plan: the budget (3 calls/s) spreads the launches over seconds
    first.wait(10)
    at_kill = len(region.list_instances())
    conn = psycopg.connect(pg_migrated_url, autocommit=True)
    plans = {r[0]: json.loads(r[1]) for r in conn.execute("SELECT workload, plan::text FROM plans WHERE in_force")}
    wanted = Counter({(w, a["pool"], a["purpose"]): a["instances"] for w, p in plans.items() for a in p["allocations"]})
    assert 0 < at_kill < sum(wanted.values()), "the kill must land between the first and the last launch"
    row = conn.execute("SELECT coalesce(max(id), 0) FROM controller_cycles").fetchone()
    assert row is not None
    before = row[0]

    second = _controller(tmp_path, region_url, pg_migrated_url, bundle, "second.log", passes=60)
    assert second.wait(120) == 0, (tmp_path / "second.log").read_text()
    cycles = conn.execute("SELECT read_only, launched FROM controller_cycles WHERE id > %s ORDER BY id",
                          (before,)).fetchall()
    assert [ro for ro, _ in cycles[:3]] == [True, True, False] and cycles[0][1] == cycles[1][1] == 0
    slots = Counter((i.owner.workload, i.pool_id, i.metadata["sco_purpose"]) for i in region.list_instances()
                    if i.owner)
    assert slots == wanted, "each slot holds exactly what the plan asks: no duplicate launch"
    conn.close()


def test_dropping_the_database_then_sco_controller_rebuild_restores_ownership_from_tags(
        tmp_path: Path, region_url: str, postgres_server: Any) -> None:
    bundle = _bundle(tmp_path)
    items = [{"source": "slurm", "item_id": f"e{n}", "contract_ref": "etl@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for n in range(40)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    url = postgres_server.create_database()
    name = url.rsplit("/", 1)[1]
    first = _controller(tmp_path, region_url, url, bundle, "first.log", passes=25)
    assert first.wait(120) == 0, (tmp_path / "first.log").read_text()
    with psycopg.connect(url, autocommit=True) as conn:
        before = ownership(conn, "r1")
    assert before and len(before) == len(SimulatedProvider(region_url, region="r1").list_instances())
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    out = subprocess.run([sys.executable, "-m", "sco", "controller", "rebuild", "--sim-url", region_url,
                          "--postgres", url], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and f"rebuilt {len(before)} instance(s)" in out.stdout, out.stdout + out.stderr
    with psycopg.connect(url, autocommit=True) as conn:
        assert ownership(conn, "r1") == before
    again = subprocess.run([sys.executable, "-m", "sco", "controller", "rebuild", "--sim-url", region_url,
                            "--postgres", url], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert again.returncode != 0 and "already holds" in again.stderr


def test_an_orderly_stop_hands_the_lease_over_at_once(tmp_path: Path, region_url: str, pg_migrated_url: str) -> None:
    bundle = _bundle(tmp_path)
    (tmp_path / "claims.json").write_text("[]")
    first = _controller(tmp_path, region_url, pg_migrated_url, bundle, "first.log")
    deadline = time.monotonic() + 60
    while "pass 1:" not in (tmp_path / "first.log").read_text():
        assert first.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    assert first.wait(20) == 0
    assert "released the lease" in (tmp_path / "first.log").read_text()
    with psycopg.connect(pg_migrated_url) as conn:
        row = conn.execute("SELECT lease_until < now() FROM partition_leases").fetchone()
    assert row == (True,)  # a standby takes the partition on its next pass, not after the 15 s expiry
