"""deploy/spark: the decommissioning and fallback-storage settings agree with the example contract they are for
(Spark itself does not run on these machines; what can be checked here is checked)."""

from __future__ import annotations

import yaml

from contracts.compiler import check_repo
from testkit.paths import REPO

SPARK = REPO / "deploy" / "spark"


def _seconds(value: str) -> float:
    return float(value[:-1]) if value.endswith("s") else float(value)


def _conf() -> dict[str, str]:
    out = {}
    for line in (SPARK / "spark-defaults.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            out[key] = value.strip()
    return out


def test_executors_decommission_within_the_contracts_drain_budget_to_the_workloads_own_bucket() -> None:
    conf = _conf()
    result = check_repo(REPO / "deploy" / "contracts", None, None)
    contract = next(w.contract for w in result.workloads if w.contract.workload == "spark-etl-nightly")
    budget = contract.drain_budget_s
    assert conf["spark.decommission.enabled"] == "true"
    assert conf["spark.storage.decommission.shuffleBlocks.enabled"] == "true"
    assert _seconds(conf["spark.executor.decommission.killInterval"]) < _seconds(
        conf["spark.executor.decommission.forceKillTimeout"]) < budget
    assert conf["spark.storage.decommission.fallbackStorage.path"].startswith(f"s3a://{contract.workload}/")
    assert conf["spark.hadoop.fs.s3a.encryption.algorithm"] == "SSE-KMS"
    assert conf["spark.kubernetes.executor.label.sco.io/contract"] == contract.workload
    assert conf["spark.kubernetes.executor.label.sco.io/contract-version"] == str(contract.version)
    template = yaml.safe_load((SPARK / "executor-pod-template.yaml").read_text())
    assert template["spec"]["terminationGracePeriodSeconds"] == budget
    assert template["metadata"]["labels"] == {"sco.io/contract": contract.workload,
                                              "sco.io/contract-version": str(contract.version)}
