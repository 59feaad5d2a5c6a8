"""The Prometheus alert rules of deploy/monitoring (ADR-28): `promtool check rules` and `promtool test rules` pass,
every alert is tested firing and not firing, and every alert says who it is for and where its runbook is."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.paths import REPO
from tests.support.testbeds import tool

RULES = REPO / "deploy" / "monitoring" / "rules" / "sco-alerts.yml"
UNIT_TESTS = REPO / "deploy" / "monitoring" / "tests" / "sco-alerts.test.yml"
OPERATIONS = REPO / "docs" / "operations.md"
# what ADR-28 pages on, by the alert that does it
ADR28 = {"drain overruns": "SCODrainOverruns", "shortfall": "SCOTier1Shortfall", "a pool excluded": "SCOPoolExcluded",
         "breaker open": "SCOBreakerOpen", "bundle age": "SCOBundleAge", "ingest lag": "SCOIngestLag",
         "a stale ranking": "SCORankingStale", "orchestrator cost": "SCOOrchestratorCostHigh",
         "a contract breach": "SCOContractBreach"}


def _alerts() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.testbed
def test_promtool_accepts_the_rule_file() -> None:
    out = _run(tool("promtool"), "check", "rules", str(RULES))
    assert out.returncode == 0 and f"SUCCESS: {len(_alerts())} rules found" in out.stdout, out.stdout + out.stderr


@pytest.mark.testbed
def test_promtool_unit_tests_of_every_alert_pass() -> None:
    out = _run(tool("promtool"), "test", "rules", str(UNIT_TESTS))
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


@pytest.mark.testbed
def test_a_wrong_expectation_makes_promtool_fail(tmp_path: Path) -> None:
    """The unit tests can fail: the breach expected for the quiet workload too is reported as missing."""
    doc = yaml.safe_load(UNIT_TESTS.read_text())
    doc["rule_files"] = [str(RULES)]
    case = next(t for t in doc["tests"] for a in t["alert_rule_test"] if a["alertname"] == "SCOContractBreach")
    check = next(a for a in case["alert_rule_test"] if a["alertname"] == "SCOContractBreach" and a["exp_alerts"])
    wrong = dict(check["exp_alerts"][0]["exp_labels"], workload="quiet")
    check["exp_alerts"].append({"exp_labels": wrong, "exp_annotations": check["exp_alerts"][0]["exp_annotations"]})
    (tmp_path / "wrong.test.yml").write_text(yaml.safe_dump(doc))
    out = _run(tool("promtool"), "test", "rules", str(tmp_path / "wrong.test.yml"))
    assert out.returncode != 0 and "SCOContractBreach" in out.stdout + out.stderr, out.stdout + out.stderr


def test_every_alert_is_tested_both_firing_and_not_firing() -> None:
    doc = yaml.safe_load(UNIT_TESTS.read_text())
    firing: set[str] = set()
    silent: set[str] = set()
    for case in doc["tests"]:
        for check in case["alert_rule_test"]:
            (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {a["alert"] for a in _alerts()}
    assert names - firing == set(), "alerts never shown firing"
    assert names - silent == set(), "alerts never shown not firing"


def test_every_page_of_adr_28_has_its_alert() -> None:
    names = {a["alert"] for a in _alerts()}
    assert {what: name for what, name in ADR28.items() if name not in names} == {}


def test_every_alert_names_its_team_owner_summary_and_a_runbook_section_that_exists() -> None:
    headings = {line[4:].strip().lower() for line in OPERATIONS.read_text().splitlines() if line.startswith("### ")}
    for alert in _alerts():
        labels, notes = alert["labels"], alert["annotations"]
        assert labels["team"] in ("platform", "owner", "approver"), alert["alert"]
        assert labels["severity"] in ("page", "ticket"), alert["alert"]
        if labels["team"] == "platform":
            assert labels["owner"] == "platform", alert["alert"]
        else:  # the owner and approver come from the contract (sco_contract_info); routing keys on `workload`
            assert "group_left (owner, approver" in alert["expr"] and "workload" in alert["expr"], alert["alert"]
        assert notes["summary"], alert["alert"]
        assert notes["runbook_url"] == f"docs/operations.md#{alert['alert'].lower()}", alert["alert"]
        assert alert["alert"].lower() in headings, f"docs/operations.md has no '### {alert['alert']}'"
