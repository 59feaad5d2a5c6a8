"""Observable by default, as ``kubectl kustomize`` of the example overlay builds it: every Deployment has a port
named ``metrics`` that its command serves (``--metrics-port``, bound where the kubelet and Prometheus reach it,
with the token the scrape sends), liveness and readiness probes on that port, and JSON logs; the PodMonitor
scrapes each of those pods; the PrometheusRule is the one rules file, unchanged; the systemd units serve their
metrics too."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sco.deploy.monitoring import prometheus_rule_text
from testkit.paths import REPO

OVERLAY = REPO / "deploy" / "kubernetes" / "overlays" / "example-r1"
RULES = REPO / "deploy" / "monitoring" / "rules" / "sco-alerts.yml"
GENERATED = REPO / "deploy" / "kubernetes" / "monitoring" / "prometheus-rule.yaml"
# the systemd units of long-running processes (the rollout timer's pass and Dagster's are not sco metrics)
LONG_RUNNING_UNITS = ("sco-controller@.service", "sco-exclusion-watcher@.service", "sco-ingest.service",
                      "sco-outbox-relay.service", "sco-distributor.service")


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    kubectl = Path(sys.executable).parent / "kubectl"
    built = subprocess.run([str(kubectl), "kustomize", str(OVERLAY)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def _deployments(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [o for o in objects if o["kind"] == "Deployment"]
    assert len(found) == 6
    return found


def _flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_every_deployment_serves_metrics_on_a_port_named_metrics(objects: list[dict[str, Any]]) -> None:
    for dep in _deployments(objects):
        pod = dep["spec"]["template"]["spec"]
        for c in pod["containers"]:
            name = f"{dep['metadata']['name']}/{c['name']}"
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            assert "metrics" in ports, name
            assert _flag(c["args"], "--metrics-port") == str(ports["metrics"]), name
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            host = _flag(c["args"], "--metrics-host") or env.get("SCO_METRICS_HOST")
            assert host == "0.0.0.0", f"{name}: metrics bound to loopback cannot be scraped or probed"
            token = _flag(c["args"], "--metrics-token-file")
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert token and str(Path(token).parent) in mounts, name
            volume = next(v for v in pod["volumes"] if v["name"] == mounts[str(Path(token).parent)])
            assert volume["secret"]["secretName"] == "sco-metrics-token", name
            assert env.get("SCO_LOG_FORMAT") == "json", name


def test_every_deployment_has_liveness_and_readiness_probes_on_the_metrics_port(objects: list[dict[str, Any]]) -> None:
    for dep in _deployments(objects):
        for c in dep["spec"]["template"]["spec"]["containers"]:
            name = f"{dep['metadata']['name']}/{c['name']}"
            assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}, name
            assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}, name


def test_the_pod_monitor_scrapes_every_deployment_with_the_token(objects: list[dict[str, Any]]) -> None:
    (monitor,) = [o for o in objects if o["kind"] == "PodMonitor"]
    spec = monitor["spec"]
    assert monitor["metadata"]["namespace"] in spec["namespaceSelector"]["matchNames"]
    (endpoint,) = spec["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    assert endpoint["authorization"]["credentials"] == {"name": "sco-metrics-token", "key": "token"}
    for dep in _deployments(objects):
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert dep["metadata"]["namespace"] in spec["namespaceSelector"]["matchNames"]
        for expr in spec["selector"].get("matchExpressions", []):
            assert expr["operator"] == "Exists" and expr["key"] in labels, dep["metadata"]["name"]
        assert labels["app.kubernetes.io/component"].startswith("sco-")  # the job label the alerts match


def test_the_prometheus_rule_is_the_rules_file_generated_unchanged(objects: list[dict[str, Any]]) -> None:
    assert GENERATED.read_text() == prometheus_rule_text(RULES), "run `sco deploy monitoring --out " \
        "deploy/kubernetes/monitoring/prometheus-rule.yaml`"
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    assert rule["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus) is not installed")
def test_promtool_accepts_the_rule_groups_the_cluster_gets(objects: list[dict[str, Any]], tmp_path: Path) -> None:
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    check = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_every_long_running_systemd_unit_serves_metrics_and_logs_json() -> None:
    for unit in LONG_RUNNING_UNITS:
        text = (REPO / "deploy" / "systemd" / unit).read_text()
        (line,) = [x for x in text.splitlines() if x.startswith("ExecStart=")]
        args = shlex.split(line.removeprefix("ExecStart="))
        assert _flag(args, "--metrics-port"), unit
        assert _flag(args, "--metrics-token-file") or "SCO_METRICS_TOKEN_FILE" in text, unit
        assert "SCO_LOG_FORMAT=json" in text, unit


def test_every_container_of_every_pod_logs_json(objects: list[dict[str, Any]]) -> None:
    seen = 0
    for obj in objects:
        spec = (obj["spec"]["jobTemplate"]["spec"]["template"]["spec"] if obj["kind"] == "CronJob"
                else obj["spec"]["template"]["spec"] if obj["kind"] in ("Deployment", "Job") else None)
        for c in [*(spec or {}).get("initContainers", []), *(spec or {}).get("containers", [])]:
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            assert env.get("SCO_LOG_FORMAT") == "json", f"{obj['metadata']['name']}/{c['name']}"
            seen += 1
    assert seen == 9
