"""The verified bundle chain (ADR-30, DESIGN §7): the issue's governance and rollback probes, with codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contracts.bundle import CONTROLLER_BUNDLE
from contracts.canonical import canonical_bytes
from contracts.signing import load_private_key, sign_blob
from testkit.builders import base
from tests.contracts.helpers import to_yaml, write_repo
from tests.support.cli import Result, sco


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chain-keys")
    assert sco("keys", "init", "--dir", str(root / "keys")).returncode == 0
    return root / "keys"


def _compile(repo: Path, out: Path, keys: Path, governance: bool) -> Result:
    args = ["contracts", "compile", str(repo), "--out", str(out), "--key", str(keys / "signing.key.pem")]
    if governance:
        args += ["--governance-key", str(keys / "governance.key.pem")]
    return sco(*args)


def _verify(bundle: Path, keys: Path, previous: Path | None = None) -> Result:
    args = ["contracts", "verify", str(bundle), "--key", str(keys / "signing.pub.pem"),
            "--governance-key", str(keys / "governance.pub.pem")]
    return sco(*args, *(["--previous", str(previous)] if previous else []))


def _cap(cap: int, **fields: object) -> str:
    return to_yaml(base("T2", fallback={"spend_cap_24h_eur": cap, "approver": "budget@example.org"}, **fields))


def test_probe_a_an_edited_unsigned_previous_bundle_cannot_hide_a_raised_spend_cap(tmp_path: Path,
                                                                                  keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100)})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    previous = out / "r1" / "slurm-hpc" / CONTROLLER_BUNDLE
    payload = json.loads(previous.read_bytes())
    for entry in payload["workloads"].values():
        entry["spend_cap_24h_eur"] = "999"  # the baseline now "already" has the raised cap
    previous.write_bytes(canonical_bytes(payload))
    tampered = previous.read_bytes()
    (repo / "w.yaml").write_text(_cap(999))
    refused = _compile(repo, out, keys, governance=False)
    assert refused.returncode == 1 and "BND001" in refused.stderr and str(previous) in refused.stderr
    assert "Traceback" not in refused.stderr and previous.read_bytes() == tampered  # nothing written


def test_a_previous_bundle_without_its_governance_signature_is_not_a_baseline(tmp_path: Path, keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100)})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    (out / "r1" / "slurm-hpc" / (CONTROLLER_BUNDLE + ".governance.sig")).unlink()
    refused = _compile(repo, out, keys, governance=False)
    assert refused.returncode == 1 and "BND004" in refused.stderr and CONTROLLER_BUNDLE in refused.stderr


def test_a_verified_previous_bundle_still_lets_a_routine_change_through(tmp_path: Path, keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100)})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    (repo / "w.yaml").write_text(_cap(100, drain_budget_s=80))
    result = _compile(repo, out, keys, governance=False)
    assert result.returncode == 0 and "generation 2" in result.stdout, result.stderr


def test_probe_b_an_older_signed_bundle_after_a_newer_one_is_refused_by_verify_previous(tmp_path: Path,
                                                                                       keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100)})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    old = Path(shutil.copytree(out, tmp_path / "gen1"))
    (repo / "w.yaml").write_text(_cap(100, drain_budget_s=80))
    assert _compile(repo, out, keys, governance=False).returncode == 0
    for name in ("agent-bundle.json", CONTROLLER_BUNDLE):
        newer, older = out / "r1" / "slurm-hpc" / name, old / "r1" / "slurm-hpc" / name
        forward = _verify(newer, keys, previous=older)
        assert forward.returncode == 0 and "generation 2" in forward.stdout, forward.stdout
        back = _verify(older, keys, previous=newer)
        assert back.returncode == 1 and "REFUSED" in back.stdout and "BND002" in back.stdout, back.stdout
        assert _verify(older, keys).returncode == 0  # alone it is still a well-signed bundle


def test_another_partitions_bundle_is_refused_by_verify_previous(tmp_path: Path, keys: Path) -> None:
    k8s = to_yaml(base("T5", workload="other-one", scheduler="kubernetes", partition="r1/k8s-prod"))
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100), "k.yaml": k8s})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    result = _verify(out / "r1" / "k8s-prod" / CONTROLLER_BUNDLE, keys,
                     previous=out / "r1" / "slurm-hpc" / CONTROLLER_BUNDLE)
    assert result.returncode == 1 and "BND003" in result.stdout and "partition" in result.stdout


def test_verify_previous_recomputes_governed_changes_instead_of_trusting_the_payload(tmp_path: Path,
                                                                                     keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": _cap(100)})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    first = out / "r1" / "slurm-hpc" / CONTROLLER_BUNDLE
    forged = json.loads(first.read_bytes())  # signed with the signing key alone, claiming no governed change
    forged.update(generation=2, governed_changes=[], source_digest="sha256:forged")
    for entry in forged["workloads"].values():
        entry["spend_cap_24h_eur"] = "999"
    path = tmp_path / "forged" / CONTROLLER_BUNDLE
    path.parent.mkdir()
    path.write_bytes(canonical_bytes(forged))
    signature = sign_blob(canonical_bytes(forged), load_private_key(keys / "signing.key.pem"))
    path.with_name(path.name + ".sig").write_bytes(signature + b"\n")
    result = _verify(path, keys, previous=first)
    assert result.returncode == 1 and "BND004" in result.stdout and "spend_cap_24h_eur: 100 -> 999" in result.stdout
    tampered_previous = tmp_path / "tampered" / CONTROLLER_BUNDLE
    shutil.copytree(first.parent, tampered_previous.parent)
    tampered_previous.write_bytes(path.read_bytes())  # the forged payload under the old signature
    refused = _verify(path, keys, previous=tampered_previous)
    assert refused.returncode == 1 and "previous bundle" in refused.stdout and "BND001" in refused.stdout
