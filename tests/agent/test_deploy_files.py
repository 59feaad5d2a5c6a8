"""deploy/agent/: the hardened unit, the cloud-init snippet, the Kubernetes identity and policy, the kubelet
graceful-shutdown configuration."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from agent.config import AgentConfig, parse_userdata, userdata_document
from tests.agent.helpers import make_bundle, new_keys, node_identity, workload_entry
from tests.support.paths import REPO

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


def test_the_cloud_init_snippet_writes_user_data_the_agent_boots_from() -> None:
    text = (DEPLOY / "cloud-init.yaml").read_text()
    assert text.startswith("#cloud-config")
    keys = new_keys()
    node = node_identity()
    raw, sig = make_bundle(keys, node.partition, 1, [workload_entry("etl")])
    doc = userdata_document(node, raw, sig, ["nats://relay:4222"], "http://169.254.169.254/sco/v1/notices")
    rendered = text.replace("${AGENT_USERDATA_B64}", base64.b64encode(json.dumps(doc).encode()).decode()) \
        .replace("${NATS_TOKEN_B64}", base64.b64encode(b"token").decode())
    config = yaml.safe_load(rendered)
    files = {f["path"]: f for f in config["write_files"]}
    written = files[str(AgentConfig().userdata)]
    assert written["permissions"] == "0600"
    parsed = parse_userdata(base64.b64decode(written["content"]))
    assert parsed.bundle == raw and parsed.node == node
    assert ["systemctl", "enable", "--now", "sco-agent.service"] in config["runcmd"]


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
