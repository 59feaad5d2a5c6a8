"""The Alertmanager route tree generated from the contracts (contracts.alerting): owner and approver alerts go to
the people the contract names, everything else to the platform, and the file is the same for the same contracts."""

from __future__ import annotations

import pytest
import yaml

from contracts.alerting import PLATFORM, AlertRoutingError, alertmanager_config, render_routes
from contracts.schema import Contract
from testkit.builders import base
from tests.contracts.helpers import compile_doc

HOOK = "https://incidents.example.org/alertmanager"


def _contract(**fields: object) -> Contract:
    w, findings = compile_doc(base("T2", **fields))
    assert w is not None, findings
    return w.contract


def _receiver(config: dict[str, object], **labels: str) -> str:
    """The receiver Alertmanager picks for ``labels`` (first match, no `continue` in this tree)."""
    route = config["route"]
    assert isinstance(route, dict)
    for child in route["routes"]:
        wanted = dict(m.split("=", 1) for m in child["matchers"])
        if all(labels.get(k) == v.strip('"') for k, v in wanted.items()):
            return str(child["receiver"])
    return str(route["receiver"])


def test_a_breach_goes_to_the_contracts_owner_and_spend_to_its_approver() -> None:
    config = alertmanager_config([_contract(workload="genomics", owner="priya@example.org")], HOOK)
    assert _receiver(config, team="owner", workload="genomics") == "owner:priya@example.org"
    assert _receiver(config, team="approver", workload="genomics") == "approver:budget@example.org"
    hooks = {r["name"]: r["webhook_configs"][0]["url"] for r in config["receivers"]}
    assert hooks["owner:priya@example.org"] == f"{HOOK}/owner/priya@example.org"


def test_platform_alerts_and_owner_alerts_of_unknown_workloads_go_to_the_platform() -> None:
    config = alertmanager_config([_contract(workload="genomics")], HOOK)
    assert _receiver(config, team="platform", workload="genomics") == PLATFORM
    assert _receiver(config, team="owner", workload="someone-else") == PLATFORM


def test_the_newest_version_of_a_workload_decides_its_owner() -> None:
    old = _contract(workload="etl", version=1, owner="old@example.org")
    new = _contract(workload="etl", version=2, owner="new@example.org")
    assert _receiver(alertmanager_config([new, old], HOOK), team="owner", workload="etl") == "owner:new@example.org"


def test_the_same_contracts_in_any_order_give_the_same_bytes() -> None:
    a, b = _contract(workload="aaa", owner="x@example.org"), _contract(workload="bbb", owner="y@example.org")
    text = render_routes([a, b], HOOK)
    assert text == render_routes([b, a], HOOK)
    assert yaml.safe_load(text)["route"]["receiver"] == PLATFORM


def test_owners_shared_by_workloads_get_one_receiver() -> None:
    config = alertmanager_config([_contract(workload="aaa", owner="x@example.org"),
                                  _contract(workload="bbb", owner="x@example.org")], HOOK)
    names = [r["name"] for r in config["receivers"]]
    assert names.count("owner:x@example.org") == 1 and len(names) == len(set(names))


@pytest.mark.parametrize("hook", ["ftp://x/y", "incidents", "https://x.example.org/a?b=1"])
def test_a_webhook_alertmanager_cannot_use_is_refused_with_its_code(hook: str) -> None:
    with pytest.raises(AlertRoutingError, match="ALR001"):
        alertmanager_config([_contract()], hook)
