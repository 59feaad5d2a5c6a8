"""`sco contracts compile` writes the Alertmanager route tree (alertmanager-routes.yml) from the example contract
repository; Debian's amtool accepts it (`amtool check-config`) and routes every example workload's owner and
approver alerts to the people its contract names, and platform alerts to the platform (`amtool config routes
test --verify.receivers`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from contracts.alerting import ROUTES_FILE
from testkit.paths import REPO
from tests.support.cli import sco
from tests.support.testbeds import tool

EXAMPLES = REPO / "deploy" / "contracts"
HOOK = "http://127.0.0.1:9/incidents"


def _examples() -> list[dict[str, object]]:
    docs = [yaml.safe_load(p.read_text()) for p in sorted((EXAMPLES / "workloads").glob("*.yaml"))]
    return [d for d in docs if isinstance(d, dict)]


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("routes")
    assert sco("keys", "init", "--dir", str(tmp / "keys")).returncode == 0
    out = sco("contracts", "compile", str(EXAMPLES), "--out", str(tmp / "out"), "--key",
              str(tmp / "keys" / "signing.key.pem"), "--governance-key", str(tmp / "keys" / "governance.key.pem"),
              "--alert-webhook", HOOK)
    assert out.returncode == 0, out.stdout + out.stderr
    return tmp / "out" / ROUTES_FILE


def _route(config: Path, receiver: str, *labels: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("amtool"), "config", "routes", "test", f"--config.file={config}",
                           f"--verify.receivers={receiver}", *labels], capture_output=True, text=True, timeout=60)


def test_compiling_twice_writes_the_same_route_file(routes: Path, tmp_path: Path) -> None:
    keys = routes.parent.parent / "keys"
    again = sco("contracts", "compile", str(EXAMPLES), "--out", str(tmp_path / "out"), "--key",
                str(keys / "signing.key.pem"), "--governance-key", str(keys / "governance.key.pem"),
                "--alert-webhook", HOOK)
    assert again.returncode == 0 and (tmp_path / "out" / ROUTES_FILE).read_bytes() == routes.read_bytes()


def test_a_bad_webhook_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = sco("contracts", "compile", str(EXAMPLES), "--out", str(tmp_path / "out"), "--alert-webhook", "incidents")
    assert out.returncode != 0 and "ALR001" in out.stderr and not (tmp_path / "out").exists(), out.stderr


@pytest.mark.testbed
def test_amtool_accepts_the_generated_configuration(routes: Path) -> None:
    out = subprocess.run([tool("amtool"), "check-config", str(routes)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


@pytest.mark.testbed
@pytest.mark.parametrize("doc", _examples(), ids=lambda d: str(d["workload"]))
def test_every_example_workloads_alerts_reach_the_people_its_contract_names(routes: Path,
                                                                              doc: dict[str, object]) -> None:
    workload, owner = str(doc["workload"]), str(doc["owner"])
    fallback = doc.get("fallback")
    approver = str(fallback.get("approver") or owner) if isinstance(fallback, dict) else owner
    for receiver, labels in ((f"owner:{owner}", ["alertname=SCOContractBreach", "team=owner"]),
                             (f"approver:{approver}", ["alertname=SCOFallbackSpendAtCap", "team=approver"]),
                             ("platform", ["alertname=SCOTier1Shortfall", "team=platform"])):
        out = _route(routes, receiver, *labels, f"workload={workload}")
        assert out.returncode == 0, f"{workload} {labels}: {out.stdout}{out.stderr}"


@pytest.mark.testbed
def test_amtool_reports_a_wrong_receiver_so_the_route_tests_can_fail(routes: Path) -> None:
    out = _route(routes, "platform", "team=owner", "workload=genomics-align")
    assert out.returncode != 0 and "owner:priya.nair@example.org" in out.stdout + out.stderr


@pytest.mark.testbed
def test_an_owner_alert_for_a_workload_no_contract_names_goes_to_the_platform(routes: Path) -> None:
    assert _route(routes, "platform", "team=owner", "workload=not-a-contract").returncode == 0


def test_a_route_file_written_inside_the_contract_repository_is_not_read_as_a_contract(routes: Path,
                                                                                      tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES, repo)
    keys = routes.parent.parent / "keys"
    args = ("contracts", "compile", str(repo), "--out", str(repo / "published"), "--key", str(keys / "signing.key.pem"),
            "--governance-key", str(keys / "governance.key.pem"), "--alert-webhook", HOOK)
    first, second = sco(*args), sco(*args)
    assert first.returncode == 0 and second.returncode == 0, second.stdout + second.stderr
    assert (repo / "published" / ROUTES_FILE).read_bytes() == routes.read_bytes()
