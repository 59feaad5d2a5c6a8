"""The controller's bundle chain (issue 14): a verified bundle of an older generation or of another partition is
refused with a stable code, counted, and reported as a ``bundle-refused`` event; the controller does not start."""

from __future__ import annotations

import argparse
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from contracts.bundle import publish
from contracts.bundle_verify import verify_bundle
from contracts.signing import generate_keypair, load_private_key
from controllers.controller.bundle_guard import BundleGuard, judge
from sco.cli import CliError
from sco.commands.controller import _admit
from testkit.builders import PARTITION, base
from tests.contracts.helpers import compile_doc

OTHER = "r1/k8s-a"


def _signed_chain(tmp: Path) -> dict[str, dict[str, Any]]:
    """Generation 1 and 2 of PARTITION and generation 1 of OTHER, signed and verified as the controller does."""
    signing, governance = generate_keypair(), generate_keypair()
    key, gov = load_private_key(signing.private_pem), load_private_key(governance.private_pem)
    (tmp / "signing.pub").write_bytes(signing.public_pem)
    (tmp / "governance.pub").write_bytes(governance.public_pem)
    out = tmp / "out"

    def compiled(vcpu: int) -> list[Any]:
        docs = [base("T3", workload="etl", partition=PARTITION, resources={"vcpu": vcpu, "memory_gib": 16}),
                base("T3", workload="web", partition=OTHER, resources={"vcpu": 2, "memory_gib": 4})]
        return [compile_doc(d)[0] for d in docs]

    publish(compiled(4), out, key, datetime(2026, 12, 1, tzinfo=UTC), gov)
    first = tmp / "gen1"
    shutil.copytree(out, first)
    publish(compiled(8), out, key, datetime(2026, 12, 1, 1, tzinfo=UTC), gov)

    def verified(root: Path, partition: str) -> dict[str, Any]:
        path = root / partition / "controller-bundle.json"
        return verify_bundle(path, tmp / "signing.pub", tmp / "governance.pub").payload

    return {"gen1": verified(first, PARTITION), "gen2": verified(out, PARTITION), "other": verified(out, OTHER)}


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _signed_chain(tmp_path_factory.mktemp("chain"))


def test_the_two_signed_bundles_are_generations_one_and_two_of_the_partition(chain: dict[str, Any]) -> None:
    assert (chain["gen1"]["generation"], chain["gen2"]["generation"]) == (1, 2)
    assert chain["gen1"]["partition"] == chain["gen2"]["partition"] == PARTITION != chain["other"]["partition"]


@pytest.mark.parametrize(("held", "offered", "code"), [
    pytest.param(None, "gen1", None, id="the first verified bundle is taken"),
    pytest.param("gen1", "gen2", None, id="a newer generation is taken"),
    pytest.param("gen2", "gen2", None, id="the same bundle again is taken (a restart)"),
    pytest.param("gen2", "gen1", "BND002", id="an older generation is refused as a rollback"),
    pytest.param(None, "other", "BND003", id="another partition's bundle is refused even as the first"),
    pytest.param("gen1", "other", "BND003", id="another partition's bundle is refused after ours"),
])
def test_the_chain_takes_newer_bundles_of_its_partition_and_refuses_the_rest(
        chain: dict[str, Any], held: str | None, offered: str, code: str | None) -> None:
    error = judge(PARTITION, None if held is None else chain[held], chain[offered], "controller bundle x.json")
    assert (error.code if error else None) == code
    if error is not None:
        assert "controller bundle x.json" in error.message


def test_a_rollback_is_refused_counted_and_reported_and_the_held_generation_kept(
        chain: dict[str, Any], pg_migrated_url: str) -> None:
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        conn.execute("DELETE FROM controller_bundles WHERE partition = %s", (PARTITION,))
        conn.execute("DELETE FROM outbox")
        args = argparse.Namespace(partition=PARTITION, region="r1", bundle=Path("out/controller-bundle.json"))
        _admit(args, chain["gen2"], conn)
        for n in (1, 2):
            with pytest.raises(CliError, match="BND002") as err:
                _admit(args, chain["gen1"], conn)
            assert f"refused {n} time(s)" in str(err.value)
        with pytest.raises(CliError, match="BND003"):
            _admit(args, chain["other"], conn)
        guard = BundleGuard(conn, PARTITION)
        assert guard.refused == 3
        assert conn.execute("SELECT generation FROM controller_bundles WHERE partition = %s",
                            (PARTITION,)).fetchone() == (2,)
        assert guard.admit(chain["gen2"], "again") is None  # the held bundle itself still starts the controller
        events = [json.loads(bytes(p)) for (p,) in conn.execute("SELECT payload FROM outbox ORDER BY id")]
    refused = [e for e in events if e["kind"] == "bundle-refused"]
    assert [e["attributes"]["code"] for e in refused] == ["BND002", "BND002", "BND003"]
    assert refused[0]["attributes"]["offered_generation"] == 1 and refused[0]["attributes"]["held_generation"] == 2
    assert [e["attributes"]["refused_total"] for e in refused] == [1, 2, 3]
