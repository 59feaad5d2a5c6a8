"""The Kubernetes API double answers the real ``kubernetes`` client as an API server would."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sco.demo.kubeapi import KubeApiDouble


@pytest.fixture
def core(kube: KubeApiDouble) -> Iterator[client.CoreV1Api]:
    api = client.ApiClient(kube.client_configuration())
    yield client.CoreV1Api(api)
    api.close()


def _pod(name: str, node: str = "n1", labels: dict[str, str] | None = None, ready: bool = True) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def test_nodes_are_created_read_patched_listed_and_deleted_with_real_status_codes(
    core: client.CoreV1Api,
) -> None:
    created = core.create_node({"metadata": {"name": "n1", "labels": {"pool": "a"}}})
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as exc:
        core.create_node({"metadata": {"name": "n1"}})
    assert exc.value.status == 409 and '"reason": "AlreadyExists"' in exc.value.body
    core.patch_node("n1", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    core.patch_node("n1", [{"op": "add", "path": "/metadata/labels/extra", "value": "yes"}])
    node = core.read_node("n1")
    assert node.spec.taints[0].key == "k" and node.metadata.labels == {"pool": "a", "extra": "yes"}
    core.create_node({"metadata": {"name": "n2"}})
    assert [n.metadata.name for n in core.list_node(label_selector="pool=a").items] == ["n1"]
    assert [n.metadata.name for n in core.list_node(label_selector="!pool").items] == ["n2"]
    core.delete_node("n1")
    with pytest.raises(ApiException) as exc:
        core.read_node("n1")
    assert exc.value.status == 404 and '"kind": "Status"' in exc.value.body


def test_a_stale_resource_version_on_replace_is_a_conflict(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    first = core.read_namespaced_config_map("cm", "default")
    first.data = {"a": "2"}
    core.replace_namespaced_config_map("cm", "default", first)
    first.data = {"a": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("cm", "default", first)
    assert exc.value.status == 409


def test_pods_are_selected_by_node_name_and_phase_across_namespaces(
    kube: KubeApiDouble, core: client.CoreV1Api
) -> None:
    kube.put_object("Pod", _pod("a", node="n1"))
    kube.put_object("Pod", {**_pod("b", node="n2"), "metadata": {"name": "b", "namespace": "other"}})
    on_n2 = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2").items
    assert [(p.metadata.namespace, p.metadata.name) for p in on_n2] == [("other", "b")]
    running = core.list_namespaced_pod("default", field_selector="status.phase=Running").items
    assert [p.metadata.name for p in running] == ["a"]


def test_an_eviction_that_would_violate_a_pdb_answers_429_and_otherwise_deletes_the_pod(
    kube: KubeApiDouble, core: client.CoreV1Api
) -> None:
    for name in ("w1", "w2"):
        kube.put_object("Pod", _pod(name, labels={"app": "web"}))
    kube.put_object(
        "PodDisruptionBudget",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="w1", namespace="default"))
    core.create_namespaced_pod_eviction("w1", "default", body)
    assert kube.get_object("Pod", "w1") is None
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="w2", namespace="default"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_eviction("w2", "default", body)
    assert exc.value.status == 429 and "TooManyRequests" in exc.value.body
    assert kube.get_object("Pod", "w2") is not None


def test_resource_slices_and_pdbs_are_served_on_their_group_paths(kube: KubeApiDouble) -> None:
    api = client.ApiClient(kube.client_configuration())
    resource = client.ResourceV1Api(api)
    resource.create_resource_slice(
        {
            "metadata": {"name": "s1"},
            "spec": {
                "nodeName": "n1",
                "driver": "gpu",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            },
        }
    )
    assert [s.metadata.name for s in resource.list_resource_slice(field_selector="spec.nodeName=n1").items] == ["s1"]
    policy = client.PolicyV1Api(api)
    assert policy.list_namespaced_pod_disruption_budget("default").items == []
    api.close()


def test_injected_failures_latency_and_the_request_log(kube: KubeApiDouble, core: client.CoreV1Api) -> None:
    kube.fail_next("GET", r"/api/v1/nodes$", 503)
    with pytest.raises(ApiException) as exc:
        core.list_node()
    assert exc.value.status == 503
    assert core.list_node().items == []
    kube.set_latency(0.2, r"/api/v1/nodes")
    start = time.monotonic()
    core.list_node()
    assert time.monotonic() - start >= 0.2
    assert [r.status for r in kube.requests_matching("GET", "/api/v1/nodes$")] == [503, 200, 200]


def test_finalizers_and_graceful_pod_deletion_keep_the_object_until_the_kubelet_removes_it() -> None:
    with KubeApiDouble(graceful_pod_deletion=True) as kube:
        api = client.ApiClient(kube.client_configuration())
        core = client.CoreV1Api(api)
        kube.put_object("Pod", _pod("p"))
        core.delete_namespaced_pod("p", "default")
        pod = kube.get_object("Pod", "p")
        assert pod is not None and pod["metadata"]["deletionTimestamp"]
        core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
        assert kube.get_object("Pod", "p") is None
        api.close()


def test_max_unavailable_percentages_and_unhealthy_pods_follow_the_eviction_rules(
    kube: KubeApiDouble, core: client.CoreV1Api
) -> None:
    for name in ("a", "b", "c", "d"):
        kube.put_object("Pod", _pod(name, labels={"app": "db"}, ready=name != "d"))
    kube.put_object(
        "PodDisruptionBudget",
        {
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "maxUnavailable": "25%",
                "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
            },
        },
    )

    def evict(name: str) -> int:
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default"))
        try:
            core.create_namespaced_pod_eviction(name, "default", body)
        except ApiException as exc:
            return int(exc.status)
        return 201

    assert evict("a") == 429  # d is already unavailable: 1 of 4 = 25 %
    assert evict("d") == 201  # an unhealthy pod is always evictable
    assert evict("a") == 201  # now 0 of 3 unavailable, ceil(25 % of 3) = 1 allowed


def test_merge_patch_removes_keys_with_null_and_a_watch_lists_added_events(
    kube: KubeApiDouble, core: client.CoreV1Api
) -> None:
    core.create_node({"metadata": {"name": "n1", "labels": {"a": "1", "b": "2"}}})
    api = core.api_client
    api.call_api(
        "/api/v1/nodes/{name}",
        "PATCH",
        path_params={"name": "n1"},
        header_params={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"a": None}}},
        _preload_content=False,
    )
    assert core.read_node("n1").metadata.labels == {"b": "2"}
    resp = core.list_node(watch=True, _preload_content=False)
    assert json.loads(resp.data.splitlines()[0])["type"] == "ADDED"
