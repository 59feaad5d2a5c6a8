"""The controller publishes the contracts it enforces (from its verified bundle) as the contracts in force,
which the analytics, reports and breach checks read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from contracts.bundle import publish
from contracts.bundle_verify import verify_bundle
from contracts.compiler import check_repo
from contracts.signing import generate_keypair, load_private_key
from controllers.controller.store import publish_contracts_in_force
from testkit.paths import REPO

EXAMPLES = REPO / "deploy" / "contracts"


def test_the_bundles_contracts_become_the_contracts_in_force_and_republishing_changes_nothing(
        pg_migrated_url: str, tmp_path: Path) -> None:
    signing, governance = generate_keypair(), generate_keypair()
    (tmp_path / "pub.pem").write_bytes(signing.public_pem)
    (tmp_path / "gov.pem").write_bytes(governance.public_pem)
    publish(check_repo(EXAMPLES).workloads, tmp_path / "out", load_private_key(signing.private_pem),
            datetime(2026, 11, 29, tzinfo=UTC), load_private_key(governance.private_pem))
    payload = verify_bundle(tmp_path / "out" / "r1" / "slurm-hpc" / "controller-bundle.json",
                            tmp_path / "pub.pem", tmp_path / "gov.pem").payload
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        assert publish_contracts_in_force(conn, payload) == 7
        rows = {w: (v, t, p, spec) for w, v, t, p, spec in conn.execute(
            "SELECT workload, contract_version, tier, partition, spec FROM contracts_in_force")}
        assert rows["genomics-align"][:3] == ("genomics-align@5", "T2", "r1/slurm-hpc")
        assert rows["risk-batch-eod"][3]["floor_pct"] == 40
        before = conn.execute("SELECT max(effective_at) FROM contracts_in_force").fetchone()
        publish_contracts_in_force(conn, json.loads(json.dumps(payload)))  # same digest: rows untouched
        assert conn.execute("SELECT max(effective_at) FROM contracts_in_force").fetchone() == before
