"""Kubernetes admission in CEL (ADR-04): the one expression that both the native ValidatingAdmissionPolicy and
Kyverno's ClusterPolicy carry, loaded from the deploy/admission YAML files and evaluated by a real CEL runtime
(PyPI ``common-expression-language``, the cel-rust engine) against AdmissionReview requests, with the
ConfigMap that `sco contracts sync-admission` writes as ``params``."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from cel import evaluate

from contracts.admission import CONTRACT_LABEL, CONTRACT_VERSION_LABEL, RECLAIMABLE_TAINT
from controllers.admission import load_policy_expressions
from controllers.admission.policy import DEFAULT_DIR, POLICY_FILES

POLICY = load_policy_expressions(DEFAULT_DIR)
CONFIGMAP: dict[str, Any] = yaml.safe_load((DEFAULT_DIR / "configmap.example.yaml").read_text())
RECLAIMABLE = [{"key": RECLAIMABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]


def review(labels: dict[str, str] | None = None, tolerations: list[dict[str, str]] | None = None,
           operation: str = "CREATE") -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "trainer-0", "namespace": "research"},
                           "spec": {"containers": [{"name": "main", "image": "registry.example.org/t:1"}]}}
    if labels is not None:
        pod["metadata"]["labels"] = labels
    if tolerations is not None:
        pod["spec"]["tolerations"] = tolerations
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": "research", "operation": operation, "object": pod, "oldObject": None,
                        "userInfo": {"username": "alice"}}}


def decide(ar: dict[str, Any], params: dict[str, Any] | None = CONFIGMAP) -> str:
    """What the API server (or Kyverno) does: matchConditions / celPreconditions first, then the validation."""
    req = ar["request"]
    activation = {"object": req["object"], "oldObject": req["oldObject"], "request": req, "params": params}
    if not evaluate(POLICY.match_condition, activation):
        return "not-matched"
    return "admitted" if evaluate(POLICY.validation, activation) is True else "refused"


def contract(workload: str, version: int) -> dict[str, str]:
    return {CONTRACT_LABEL: workload, CONTRACT_VERSION_LABEL: str(version), "app": "x"}


def test_a_pod_tolerating_the_reclaimable_taint_without_a_contract_label_is_refused() -> None:
    assert decide(review({"app": "x"}, RECLAIMABLE)) == "refused"
    assert decide(review(None, RECLAIMABLE)) == "refused"


def test_a_pod_naming_an_unknown_contract_version_is_refused() -> None:
    assert decide(review(contract("recommendation-serving", 2), RECLAIMABLE)) == "refused"
    assert decide(review(contract("no-such-workload", 1), RECLAIMABLE)) == "refused"
    assert decide(review({CONTRACT_LABEL: "recommendation-serving"}, RECLAIMABLE)) == "refused"


def test_a_pod_naming_a_published_contract_version_is_admitted() -> None:
    assert "recommendation-serving.v3" in CONFIGMAP["data"]
    assert decide(review(contract("recommendation-serving", 3), RECLAIMABLE)) == "admitted"
    assert decide(review(contract("recommendation-serving", 3), RECLAIMABLE, "UPDATE")) == "admitted"


def test_a_guaranteed_pod_is_left_alone_even_when_the_configmap_is_missing() -> None:
    other = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]
    for ar in (review({"app": "x"}), review({"app": "x"}, other)):
        assert decide(ar) == "not-matched"
        assert decide(ar, params=None) == "not-matched"
        req = ar["request"]  # the validation alone admits it too
        assert evaluate(POLICY.validation, {"object": req["object"], "params": None}) is True


def test_a_wildcard_toleration_counts_as_tolerating_the_reclaimable_taint() -> None:
    assert decide(review({"app": "x"}, [{"operator": "Exists"}])) == "refused"
    assert decide(review(contract("video-transcode", 6), [{"operator": "Exists"}])) == "admitted"


def test_without_the_configmap_reclaimable_pods_fail_closed() -> None:
    assert decide(review(contract("recommendation-serving", 3), RECLAIMABLE), params=None) == "refused"
    assert decide(review(contract("recommendation-serving", 3), RECLAIMABLE), params={"metadata": {}}) == "refused"


def test_the_two_policy_files_must_carry_the_same_expression(tmp_path: Path) -> None:
    for name in POLICY_FILES.values():
        shutil.copy(DEFAULT_DIR / name, tmp_path / name)
    assert load_policy_expressions(tmp_path) == POLICY
    kyverno = tmp_path / POLICY_FILES["kyverno"]
    kyverno.write_text(kyverno.read_text().replace("'.v'", "'@'"))
    with pytest.raises(ValueError, match="validation expression differs"):
        load_policy_expressions(tmp_path)


def test_the_message_names_the_expected_labels() -> None:
    assert f"{CONTRACT_LABEL}=<workload>" in POLICY.message
    assert f"{CONTRACT_VERSION_LABEL}=<version>" in POLICY.message
    assert (POLICY.param_namespace, POLICY.param_name) == ("sco-system", CONFIGMAP["metadata"]["name"])


def test_the_spark_executor_pod_template_is_admitted() -> None:
    template = yaml.safe_load((DEFAULT_DIR.parent / "spark" / "executor-pod-template.yaml").read_text())
    ar = review(template["metadata"]["labels"], template["spec"]["tolerations"])
    assert decide(ar) == "admitted"
