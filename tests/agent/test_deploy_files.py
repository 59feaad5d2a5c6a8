"""deploy/agent/: the hardened unit, the cloud-init snippet, the Kubernetes identity and policy, the kubelet
graceful-shutdown configuration."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.config import AgentConfig, parse_userdata
from testkit.paths import REPO
from tests.agent.helpers import make_bundle, new_keys, node_identity, workload_entry

DEPLOY = REPO / "deploy" / "agent"


def unit_settings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (DEPLOY / "sco-agent.service").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_the_unit_is_hardened_and_writes_only_its_state_directory() -> None:
    s = unit_settings()
    assert s["NoNewPrivileges"] == ["yes"] and s["ProtectSystem"] == ["strict"]
    assert s["ReadWritePaths"] == ["/var/lib/sco"] and s["StateDirectory"] == ["sco"]
    assert set(s["CapabilityBoundingSet"][0].split()) == {"CAP_KILL", "CAP_SYS_PTRACE"}
    assert s["ExecStart"][0].endswith("sco-agent run") and s["Restart"] == ["always"]
    assert "SCO_AGENT_USERDATA=" + str(AgentConfig().userdata) in s["Environment"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit_and_rates_its_exposure_ok(tmp_path: Path) -> None:
    unit = tmp_path / "sco-agent.service"
    unit.write_text((DEPLOY / "sco-agent.service").read_text().replace("/opt/sco-agent/bin/sco-agent", "/bin/true"))
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert not [line for line in verify.stderr.splitlines() if "sco-agent" in line], verify.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", str(unit)],
                              capture_output=True, text=True)
    level = re.search(r"Overall exposure level for sco-agent.service: ([0-9.]+)", security.stdout)
    assert level and float(level.group(1)) <= 3.0, security.stdout[-500:]


def test_the_cloud_init_example_has_the_shape_the_controller_renders() -> None:
    from controllers.controller.userdata import LaunchUserData, render

    keys = new_keys()
    node = node_identity()
    raw, sig = make_bundle(keys, node.partition, 1, [workload_entry("etl")])
    real = render(LaunchUserData(region=node.region, partition=node.partition, pool=node.pool,
                                 scheduler=node.scheduler, bundle=raw, bundle_sig=sig,
                                 nats_urls=("nats://relay:4222",), nats_password="pw"))
    example = (DEPLOY / "cloud-init.yaml").read_text()
    assert example.splitlines()[:2] == real.splitlines()[:2] == ["## template: jinja", "#cloud-config"]

    def shape(text: str) -> dict[str, Any]:
        config = yaml.safe_load(text)
        return {"files": [(f["path"], f["permissions"], f.get("encoding")) for f in config["write_files"]],
                "env": next(f["content"] for f in config["write_files"] if f["path"] == "/etc/sco/agent.env"),
                "runcmd": config["runcmd"]}

    assert shape(example) == shape(real)
    written = {f["path"]: f for f in yaml.safe_load(real)["write_files"]}[str(AgentConfig().userdata)]
    parsed = parse_userdata(written["content"].replace("{{ v1.instance_id }}", node.instance)
                            .replace("{{ v1.local_hostname }}", node.node_name).encode())
    assert parsed.bundle == raw and parsed.node == node


def test_the_kubernetes_identity_grants_only_drain_verbs_and_the_policy_pins_them_to_the_own_node() -> None:
    docs = list(yaml.safe_load_all((DEPLOY / "serviceaccount.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    verbs = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert verbs == {("nodes", "get"), ("nodes", "patch"), ("pods", "list"), ("pods/eviction", "create")}
    policy, binding = yaml.safe_load_all((DEPLOY / "validating-admission-policy.yaml").read_text())
    assert policy["kind"] == "ValidatingAdmissionPolicy" and binding["spec"]["validationActions"] == ["Deny"]
    rules = {r["resources"][0] for r in policy["spec"]["matchConstraints"]["resourceRules"]}
    assert rules == {"nodes", "pods/eviction"}
    expressions = " ".join(v["expression"] for v in policy["spec"]["validations"])
    assert "object.metadata.name == variables.boundNode" in expressions
    assert "authentication.kubernetes.io/node-name" in policy["spec"]["variables"][0]["expression"]


def test_the_kubelet_grace_periods_fit_inside_the_notice() -> None:
    config = next(yaml.safe_load_all((DEPLOY / "kubelet-graceful-shutdown.yaml").read_text()))
    periods = [p["shutdownGracePeriodSeconds"] for p in config["shutdownGracePeriodByPodPriority"]]
    assert config["featureGates"]["GracefulNodeShutdownBasedOnPodPriority"] is True
    assert sum(periods) <= 118
