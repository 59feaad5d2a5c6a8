"""Read the CEL expressions out of the two Kubernetes policy files in ``deploy/admission/`` and check that the
native ValidatingAdmissionPolicy and Kyverno's ClusterPolicy carry the same rule (ADR-04: "two admission
implementations to keep in step" — here they share one expression and this check keeps them so)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["DEFAULT_DIR", "POLICY_FILES", "PolicyExpressions", "load_policy_expressions"]

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "deploy" / "admission"
POLICY_FILES = {"vap": "validating-admission-policy.yaml", "binding": "validating-admission-policy-binding.yaml",
                "kyverno": "kyverno-clusterpolicy.yaml"}


@dataclass(frozen=True)
class PolicyExpressions:
    validation: str  # the one expression both engines evaluate
    match_condition: str  # scopes the policy to pods that tolerate the reclaimable taint
    message: str
    param_name: str
    param_namespace: str


def _load(path: Path, kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    for doc in docs:
        if doc.get("kind") == kind:
            found: dict[str, Any] = doc
            return found
    raise ValueError(f"{path}: no {kind} document")


def load_policy_expressions(directory: Path = DEFAULT_DIR) -> PolicyExpressions:
    """The expressions, after checking that both policies (and the binding) agree; raises ValueError naming
    the field that differs."""
    vap = _load(directory / POLICY_FILES["vap"], "ValidatingAdmissionPolicy")["spec"]
    binding = _load(directory / POLICY_FILES["binding"], "ValidatingAdmissionPolicyBinding")["spec"]
    rule = _load(directory / POLICY_FILES["kyverno"], "ClusterPolicy")["spec"]["rules"][0]
    cel = rule["validate"]["cel"]
    pairs = {
        "validation expression": (vap["validations"][0]["expression"], cel["expressions"][0]["expression"]),
        "match condition": (vap["matchConditions"][0]["expression"], rule["celPreconditions"][0]["expression"]),
        "message": (vap["validations"][0]["message"], cel["expressions"][0]["message"]),
        "paramKind": (vap["paramKind"], cel["paramKind"]),
        "paramRef": (binding["paramRef"], cel["paramRef"]),
    }
    for what, (native, kyverno) in pairs.items():
        if native != kyverno:
            raise ValueError(f"the {what} differs between {POLICY_FILES['vap']} (or the binding) and "
                             f"{POLICY_FILES['kyverno']}: keep one rule in both files")
    if binding["policyName"] != _load(directory / POLICY_FILES["vap"], "ValidatingAdmissionPolicy")["metadata"]["name"]:
        raise ValueError("the binding's policyName does not name the ValidatingAdmissionPolicy")
    return PolicyExpressions(vap["validations"][0]["expression"], vap["matchConditions"][0]["expression"],
                             vap["validations"][0]["message"], binding["paramRef"]["name"],
                             binding["paramRef"]["namespace"])
