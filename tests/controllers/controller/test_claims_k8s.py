"""The Kubernetes claim source through the real ``kubernetes`` client against the API double: contracted pods
that tolerate the reclaimable taint are claims, pods without a contract are refused, nodes with the taint and
no such pod are idle."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from controllers.controller.claims import normalise
from controllers.controller.claims_k8s import RECLAIMABLE_TAINT, KubernetesSource
from sco.demo.kubeapi import KubeApiDouble
from testkit.builders import contract, contracts


def pod(name: str, labels: dict[str, str], phase: str = "Pending", node: str = "",
        tolerate: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x",
                                            "resources": {"requests": {"cpu": "4", "memory": "8Gi"}}}]}
    if tolerate:
        spec["tolerations"] = [{"key": RECLAIMABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "jobs", "labels": labels}, "spec": spec, "status": {"phase": phase}}


def test_contracted_pods_become_claims_uncontracted_ones_are_refused_and_idle_nodes_are_reported(
        kube: KubeApiDouble) -> None:
    etl = contract("etl", vcpu=4, mem=16)
    labels = {"sco.io/contract": "etl", "sco.io/contract-version": "1"}
    for n in range(3):
        kube.put_object("Pod", pod(f"p{n}", labels))
    kube.put_object("Pod", pod("run", labels, phase="Running", node="busy"))
    kube.put_object("Pod", pod("nolabel", {}))
    kube.put_object("Pod", pod("guaranteed-only", labels, tolerate=False))
    taint = {"spec": {"taints": [{"key": RECLAIMABLE_TAINT, "effect": "NoSchedule"}]}}
    kube.put_object("Node", {"metadata": {"name": "busy"}, **taint})
    kube.put_object("Node", {"metadata": {"name": "free"}, **taint})
    kube.put_object("Node", {"metadata": {"name": "guaranteed"}})
    source = KubernetesSource(client.ApiClient(kube.client_configuration()))
    result = normalise(source.work(), contracts(etl))
    assert [(c.workload, c.units) for c in result.claims] == [("etl", 4)]
    assert [item.item_id for item, _ in result.refusals] == ["jobs/nolabel"]
    assert source.idle_nodes() == {"free"}
