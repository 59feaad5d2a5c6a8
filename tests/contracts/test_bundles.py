"""Signed bundles: canonicalisation, verification, tampering, the governance rule (ADR-03, 15, 30)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.bundle import AGENT_BUNDLE, CONTROLLER_BUNDLE, GOVERNED_FIELDS, GovernanceError, publish
from contracts.bundle_verify import BundleError, verify_bundle
from contracts.canonical import CanonicalError, canonical_bytes
from contracts.compiler import check_repo
from contracts.signing import generate_keypair, load_private_key, load_public_key, sign_blob, verify_blob
from testkit.builders import base
from tests.contracts.helpers import EXAMPLES, to_yaml, write_repo
from tests.support.cli import Result, sco

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One key pair for the module (the tests only read it)."""
    root = tmp_path_factory.mktemp("bundle-keys")
    result = sco("keys", "init", "--dir", str(root / "keys"))
    assert result.returncode == 0, result.stderr
    return root / "keys"


@pytest.fixture(scope="module")
def compiled_once(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "bundles"
    result = sco("contracts", "compile", str(EXAMPLES), "--out", str(out), "--key", str(keys / "signing.key.pem"),
                 "--governance-key", str(keys / "governance.key.pem"))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def published(tmp_path: Path, compiled_once: Path) -> Path:
    """The example repository's bundles, compiled once per module; each test gets its own copy to tamper with."""
    return Path(shutil.copytree(compiled_once, tmp_path / "bundles"))


# canonicalisation -------------------------------------------------------------------------------------

def test_key_order_and_whitespace_do_not_change_the_canonical_bytes_or_the_signature() -> None:
    a = json.loads('{"b": 1, "a": {"y": [1, 2], "x": "é"}}')
    b = json.loads('{\n  "a" : {"x":"é",   "y":[1,2]},\n "b":1 }')
    assert canonical_bytes(a) == canonical_bytes(b) == '{"a":{"x":"é","y":[1,2]},"b":1}'.encode()
    pair = generate_keypair()
    signature = sign_blob(canonical_bytes(a), load_private_key(pair.private_pem))
    verify_blob(canonical_bytes(b), signature, load_public_key(pair.public_pem))


def test_floats_have_no_canonical_form() -> None:
    with pytest.raises(CanonicalError, match=r"a\.b = 0\.1 is a float"):
        canonical_bytes({"a": {"b": 0.1}})


# verify -----------------------------------------------------------------------------------------------

def test_a_fresh_bundle_verifies(published: Path, keys: Path) -> None:
    for name in (AGENT_BUNDLE, CONTROLLER_BUNDLE):
        result = sco("contracts", "verify", str(published / "r1" / "slurm-hpc" / name), "--key",
                     str(keys / "signing.pub.pem"), "--governance-key", str(keys / "governance.pub.pem"))
        assert result.returncode == 0 and result.stdout.startswith("OK "), result.stdout


def test_a_bundle_with_one_byte_changed_is_refused(published: Path, keys: Path) -> None:
    path = published / "r1" / "slurm-hpc" / AGENT_BUNDLE
    raw = bytearray(path.read_bytes())
    index = raw.index(b'"drain_budget_s":90') + len(b'"drain_budget_s":9')
    raw[index] = ord("9")  # 90 s -> 99 s
    path.write_bytes(bytes(raw))
    result = sco("contracts", "verify", str(path), "--key", str(keys / "signing.pub.pem"))
    assert result.returncode == 1 and result.stdout.startswith("REFUSED") and "changed after signing" in result.stdout


def test_a_bundle_signed_by_another_key_is_refused(published: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert sco("keys", "init", "--dir", str(other)).returncode == 0
    path = published / "r1" / "k8s-prod" / AGENT_BUNDLE
    result = sco("contracts", "verify", str(path), "--key", str(other / "signing.pub.pem"))
    assert result.returncode == 1 and "REFUSED" in result.stdout


def test_a_missing_or_garbled_signature_is_refused(published: Path, keys: Path) -> None:
    path = published / "r1" / "k8s-prod" / AGENT_BUNDLE
    sig = path.with_name(path.name + ".sig")
    sig.write_text("not base64 !!")
    with pytest.raises(BundleError, match="not base64"):
        verify_bundle(path, keys / "signing.pub.pem")
    sig.unlink()
    with pytest.raises(BundleError, match="no signature file"):
        verify_bundle(path, keys / "signing.pub.pem")


def test_openssl_verifies_our_signatures_as_cosign_would(published: Path, keys: Path, tmp_path: Path) -> None:
    """cosign verify-blob --key checks an ECDSA-P256/SHA-256 DER signature over the blob; so does openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    path = published / "r1" / "k8s-prod" / CONTROLLER_BUNDLE
    der = tmp_path / "sig.der"
    der.write_bytes(base64.b64decode(path.with_name(path.name + ".sig").read_bytes()))
    ok = subprocess.run([openssl, "dgst", "-sha256", "-verify", str(keys / "signing.pub.pem"), "-signature",
                         str(der), str(path)], capture_output=True, text=True)
    assert ok.returncode == 0 and "Verified OK" in ok.stdout
    bad = subprocess.run([openssl, "dgst", "-sha256", "-verify", str(keys / "governance.pub.pem"), "-signature",
                          str(der), str(path)], capture_output=True, text=True)
    assert bad.returncode != 0


def test_cosign_verify_blob_accepts_our_signatures_when_cosign_is_installed(published: Path, keys: Path) -> None:
    cosign = shutil.which("cosign")
    if cosign is None:
        pytest.skip("cosign is not installed here; the openssl test checks the same format")
    path = published / "r1" / "k8s-prod" / AGENT_BUNDLE
    result = subprocess.run([cosign, "verify-blob", "--key", str(keys / "signing.pub.pem"), "--signature",
                             str(path.with_name(path.name + ".sig")), "--insecure-ignore-tlog=true", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# bundle content ---------------------------------------------------------------------------------------

def test_the_agent_bundle_holds_only_interruption_critical_fields(published: Path) -> None:
    payload = json.loads((published / "r1" / "k8s-prod" / AGENT_BUNDLE).read_text())
    entry = payload["workloads"]["spark-etl-nightly@3"]
    assert set(entry) == {"workload", "version", "tier", "scheduler", "drain_budget_s", "drain_signal",
                          "advisory_drain", "checkpoint_mode", "framework", "checkpoint_interval_min", "restart",
                          "requeue", "max_unit_length_min"}
    for field in (*GOVERNED_FIELDS, "eligible", "resources", "deadline"):
        assert field not in json.dumps(entry)
    controller = json.loads((published / "r1" / "k8s-prod" / CONTROLLER_BUNDLE).read_text())
    assert controller["workloads"]["spark-etl-nightly@3"]["floor_pct"] == 30


def test_bundles_are_split_per_partition(published: Path) -> None:
    slurm = json.loads((published / "r1" / "slurm-hpc" / AGENT_BUNDLE).read_text())
    k8s = json.loads((published / "r1" / "k8s-prod" / AGENT_BUNDLE).read_text())
    assert {e["scheduler"] for e in slurm["workloads"].values()} == {"slurm"}
    assert {e["scheduler"] for e in k8s["workloads"].values()} == {"kubernetes"}
    assert len(slurm["workloads"]) + len(k8s["workloads"]) == 14


def test_recompiling_an_unchanged_repository_keeps_the_published_bytes(published: Path, keys: Path) -> None:
    path = published / "r1" / "slurm-hpc" / CONTROLLER_BUNDLE
    before = path.read_bytes()
    result = sco("contracts", "compile", str(EXAMPLES), "--out", str(published), "--key",
                 str(keys / "signing.key.pem"))
    assert result.returncode == 0 and "unchanged" in result.stdout
    assert path.read_bytes() == before


# governance (ADR-30) ------------------------------------------------------------------------------------

def _compile(repo: Path, out: Path, keys: Path, governance: bool) -> Result:
    args = ["contracts", "compile", str(repo), "--out", str(out), "--key", str(keys / "signing.key.pem")]
    if governance:
        args += ["--governance-key", str(keys / "governance.key.pem")]
    return sco(*args)


@pytest.mark.parametrize(
    ("field", "value"),
    [("floor_pct", 20), ("fallback", {"spend_cap_24h_eur": 999, "approver": "budget@example.org"}),
     ("fallback", {"spend_cap_24h_eur": 100, "approver": "someone-else@example.org"})],
    ids=["floor", "spend-cap", "approver"],
)
def test_changing_a_governed_field_without_the_governance_key_fails_and_writes_nothing(
        tmp_path: Path, keys: Path, field: str, value: object) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": to_yaml(base("T2"))})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    bundle = out / "r1" / "slurm-hpc" / CONTROLLER_BUNDLE
    before = bundle.read_bytes()
    (repo / "w.yaml").write_text(to_yaml(base("T2", **{field: value})))
    refused = _compile(repo, out, keys, governance=False)
    assert refused.returncode == 1 and "governance" in refused.stderr and "test-workload." in refused.stderr
    assert bundle.read_bytes() == before
    accepted = _compile(repo, out, keys, governance=True)
    assert accepted.returncode == 0 and "countersigned" in accepted.stdout
    ok = sco("contracts", "verify", str(bundle), "--key", str(keys / "signing.pub.pem"), "--governance-key",
             str(keys / "governance.pub.pem"))
    assert ok.returncode == 0 and "governance signature verified" in ok.stdout
    without = sco("contracts", "verify", str(bundle), "--key", str(keys / "signing.pub.pem"))
    assert without.returncode == 1 and "--governance-key" in without.stdout


def test_a_routine_change_needs_no_governance_signature(tmp_path: Path, keys: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"w.yaml": to_yaml(base("T2"))})
    out = tmp_path / "out"
    assert _compile(repo, out, keys, governance=True).returncode == 0
    (repo / "w.yaml").write_text(to_yaml(base("T2", drain_budget_s=80, version=2)))
    result = _compile(repo, out, keys, governance=False)
    assert result.returncode == 0 and "generation 2" in result.stdout
    assert not (out / "r1" / "slurm-hpc" / (CONTROLLER_BUNDLE + ".governance.sig")).exists()


def test_a_governance_signature_by_the_wrong_key_is_refused(tmp_path: Path, keys: Path) -> None:
    result = check_repo(EXAMPLES)
    out = tmp_path / "out"
    wrong = generate_keypair()
    publish(result.workloads, out, load_private_key(keys / "signing.key.pem"), NOW,
            load_private_key(wrong.private_pem))
    with pytest.raises(BundleError, match="governance signature"):
        verify_bundle(out / "r1" / "k8s-prod" / CONTROLLER_BUNDLE, keys / "signing.pub.pem",
                      keys / "governance.pub.pem")


def test_publishing_without_the_governance_key_raises_a_governance_error_listing_the_changes(keys: Path,
                                                                                             tmp_path: Path) -> None:
    result = check_repo(EXAMPLES)
    with pytest.raises(GovernanceError) as info:
        publish(result.workloads, tmp_path / "out", load_private_key(keys / "signing.key.pem"), NOW)
    fields = {(c["workload"], c["field"]) for c in info.value.changes}
    assert ("risk-batch-eod", "floor_pct") in fields and ("ci-runners", "floor_pct") not in fields
    assert not (tmp_path / "out").exists()


def test_keys_init_refuses_to_overwrite(keys: Path) -> None:
    again = sco("keys", "init", "--dir", str(keys))
    assert again.returncode == 2 and "--force" in again.stderr
