"""The Kubernetes path against the API double (real paths and status codes): taint + cordon, evictions
through the Eviction API honouring a PodDisruptionBudget (429 retries), and the local path after 800 ms."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.drain.kube import NOT_READY_TAINT, READY_LABEL, RECLAIM_TAINT, KubeAdapter
from agent.drain.local import RecordingActuator
from agent.model import STARTED_AT
from agent.notice.messages import parse_notice
from agent.runtime import Agent
from sco.demo.kubeapi import KubeApiDouble
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, notice_doc, workload_entry
from tests.agent.kube_extras import AuthRecordingKubeApi
from tests.support.wait import wait_for

NODE = node_identity(node="kn1", instance="i-kn1", scheduler="kubernetes", partition="r1/k8s-batch")


@pytest.fixture(autouse=True)
def _nodes(request: pytest.FixtureRequest) -> None:
    """Nodes ``kn1`` (reclaimable) and ``kn2`` in the Kubernetes API double, for every test that uses it."""
    if "kube" in request.fixturenames:
        kube: KubeApiDouble = request.getfixturevalue("kube")
        kube.put_object("Node", {"metadata": {"name": "kn1", "labels": {}},
                                 "spec": {"taints": [{"key": "reclaimable", "effect": "NoSchedule"}]}})
        kube.put_object("Node", {"metadata": {"name": "kn2"}, "spec": {}})


def pod(name: str, node: str, workload: str | None = "web", app: str = "web", ready: bool = True) -> dict[str, Any]:
    labels = {"app": app}
    if workload:
        labels.update({"sco.io/contract": workload, "sco.io/contract-version": "1"})
    return {"metadata": {"name": name, "namespace": "team", "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def run_notice(tmp_path: Path, kube: KubeApiDouble, workloads: list[dict[str, Any]],
               actuator: RecordingActuator | None = None, during: Any = None,
               bundle_keys: Any = None) -> tuple[Agent, float, RecordingActuator]:
    keys = new_keys()
    bundle = make_bundle(bundle_keys or keys, NODE.partition, 1, workloads)
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, bundle)
    actuator = actuator or RecordingActuator()

    async def run() -> tuple[Agent, float]:
        agent = Agent(cfg, ud, pub, KubeAdapter(kube.url, "kn1", token="node-bound-token"), actuator)
        await agent.start(connect=False)
        received = time.monotonic()
        agent.on_notice(parse_notice(notice_doc(NODE.instance), "nats", received))
        if during is not None:
            await asyncio.to_thread(during)
        await asyncio.wait_for(asyncio.gather(*agent.drains), 20)
        await agent.stop()
        return agent, received

    agent, received = asyncio.run(run())
    return agent, received, actuator


def spooled(agent: Agent) -> list[dict[str, Any]]:
    return [e.read() for e in agent.spool.head(1000)]


def test_a_notice_taints_and_cordons_the_node_and_evicts_its_contracted_pods(tmp_path: Path,
                                                                               kube: KubeApiDouble) -> None:
    kube.put_object("Pod", pod("web-1", "kn1"))
    kube.put_object("Pod", pod("web-2", "kn1"))
    kube.put_object("Pod", pod("other", "kn2"))
    ds = pod("proxy", "kn1", workload=None, app="proxy")
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "kube-proxy", "apiVersion": "apps/v1",
                                          "uid": "u"}]
    kube.put_object("Pod", ds)
    agent, received, actuator = run_notice(tmp_path, kube, [workload_entry("web", budget=5, scheduler="kubernetes")])
    node = kube.get_object("Node", "kn1")
    assert node is not None and node["spec"]["unschedulable"] is True
    taints = {t["key"]: t for t in node["spec"]["taints"]}
    assert taints[RECLAIM_TAINT]["effect"] == "NoSchedule" and "reclaimable" in taints  # existing taint kept
    patches = kube.requests_matching("PATCH", r"^/api/v1/nodes/kn1$")
    assert patches and patches[0].time - time.time() + time.monotonic() - received < 2.0
    evictions = kube.requests_matching("POST", r"/pods/[^/]+/eviction$")
    assert sorted(r.path.split("/")[-2] for r in evictions) == ["web-1", "web-2"]  # not the DaemonSet pod
    graces = {r.body["deleteOptions"]["gracePeriodSeconds"] for r in evictions}
    assert graces <= {4, 5}  # the whole seconds left of the 5 s budget: the kill lands before the deadline
    assert {p["metadata"]["name"] for p in kube.list_objects("Pod")} == {"other", "proxy"}
    assert not actuator.calls and agent.reports[0].path == "scheduler"
    drained = [e for e in spooled(agent) if e["kind"] == "drained"]
    assert drained and drained[0]["attributes"]["remaining"] == 0 and drained[0]["workload"] == "web"


def test_a_pods_start_time_reaches_its_unit_and_a_pod_not_yet_started_has_none(kube: KubeApiDouble) -> None:
    running = pod("web-1", "kn1")
    running["status"]["startTime"] = "2026-11-29T10:15:00Z"
    waiting = pod("web-2", "kn1")
    waiting["status"] = {"phase": "Pending"}
    kube.put_object("Pod", running)
    kube.put_object("Pod", waiting)
    units = {u.unit_id: u for u in KubeAdapter(kube.url, "kn1", token="t").units()}
    assert units["team/web-1"].attributes[STARTED_AT] == "2026-11-29T10:15:00Z"
    assert units["team/web-1"].started_at() == datetime(2026, 11, 29, 10, 15, tzinfo=UTC)
    assert STARTED_AT not in units["team/web-2"].attributes and units["team/web-2"].started_at() is None


def test_an_eviction_refused_by_a_pod_disruption_budget_is_retried_on_429_until_it_is_allowed(
        tmp_path: Path, kube: KubeApiDouble) -> None:
    kube.put_object("Pod", pod("web-1", "kn1"))
    kube.put_object("Pod", pod("web-2", "kn2"))
    kube.put_object("PodDisruptionBudget", {"metadata": {"name": "web", "namespace": "team"},
                                            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})

    def replacement_becomes_ready() -> None:
        # the scheduler starts a replacement elsewhere once the budget has refused an eviction: waited for (not a
        # 1.5 s sleep that a loaded machine may spend before the first eviction), so a 429 always comes first
        wait_for(lambda: any(r.status == 429 for r in kube.requests_matching("POST", r"/pods/web-1/eviction$")),
                 60, what="the PodDisruptionBudget refused the first eviction (429)")
        kube.put_object("Pod", pod("web-3", "kn2"))

    agent, _, actuator = run_notice(tmp_path, kube, [workload_entry("web", budget=8, scheduler="kubernetes")],
                                    during=replacement_becomes_ready)
    statuses = [r.status for r in kube.requests_matching("POST", r"/pods/web-1/eviction$")]
    assert statuses[0] == 429 and statuses.count(429) >= 1 and statuses[-1] == 201
    assert kube.get_object("Pod", "web-1", "team") is None
    assert not actuator.calls and agent.reports[0].workloads["web@1"]["retries"] >= 1
    assert [e["kind"] for e in spooled(agent)].count("drained") == 1


def test_a_budget_still_blocking_when_the_drain_budget_is_spent_drains_locally_and_records_an_overrun(
        tmp_path: Path, kube: KubeApiDouble) -> None:
    kube.put_object("Pod", pod("web-1", "kn1"))
    kube.put_object("PodDisruptionBudget", {"metadata": {"name": "web", "namespace": "team"},
                                            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    actuator = RecordingActuator(units=None)  # the kubelet path cannot count pods
    agent, received, actuator = run_notice(tmp_path, kube, [workload_entry("web", budget=2, scheduler="kubernetes")],
                                           actuator)
    assert actuator.calls and actuator.calls[0][0] == "start" and actuator.calls[0][1] - received < 2.0
    assert len(kube.requests_matching("POST", r"/pods/web-1/eviction$")) >= 1
    kinds = [e["kind"] for e in spooled(agent)]
    assert "drain-local" in kinds and agent.reports[0].path == "local"


@pytest.mark.slow  # seconds of real API latency
def test_with_1_s_of_api_latency_the_local_path_is_taken_after_800_ms(tmp_path: Path, kube: KubeApiDouble) -> None:
    kube.put_object("Pod", pod("web-1", "kn1"))
    kube.set_latency(1.0)
    actuator = RecordingActuator(units=0)
    agent, received, actuator = run_notice(tmp_path, kube, [workload_entry("web", budget=5, scheduler="kubernetes")],
                                           actuator)
    start = actuator.calls[0]
    assert start[0] == "start" and 0.78 <= start[1] - received < 1.3
    assert "did not answer" in start[3]
    assert agent.reports[0].path == "local" and agent.metrics.value("sco_agent_local_drains_total") == 1
    local = [e for e in spooled(agent) if e["kind"] == "drain-local"]
    assert local and 780 <= local[0]["attributes"]["at_ms"] < 1300


def test_without_a_valid_contract_the_node_is_labelled_not_ready_and_tainted_until_one_verifies(
        tmp_path: Path, kube: KubeApiDouble) -> None:
    keys, other = new_keys(), new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(other, NODE.partition, 1, [workload_entry("w")]))
    adapter = KubeAdapter(kube.url, "kn1", token="t")

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        agent = Agent(cfg, ud, pub, adapter, RecordingActuator())
        await agent.start(connect=False)
        before = kube.get_object("Node", "kn1") or {}
        agent.bundles.offer(*make_bundle(keys, NODE.partition, 1, [workload_entry("w")]), "test")
        await agent._apply_readiness()
        after = kube.get_object("Node", "kn1") or {}
        await agent.stop()
        return before, after

    before, after = asyncio.run(run())
    assert before["metadata"]["labels"][READY_LABEL] == "false"
    assert NOT_READY_TAINT in {t["key"] for t in before["spec"]["taints"]}
    assert after["metadata"]["labels"][READY_LABEL] == "true"
    assert {t["key"] for t in after["spec"]["taints"]} == {"reclaimable"}


def test_every_request_carries_the_node_bound_token_and_touches_only_its_own_node(tmp_path: Path) -> None:
    api = AuthRecordingKubeApi()
    try:
        api.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})
        api.put_object("Node", {"metadata": {"name": "kn2"}, "spec": {}})
        api.put_object("Pod", pod("web-1", "kn1"))
        api.put_object("Pod", pod("web-2", "kn2"))
        agent, _, _ = run_notice(tmp_path, api, [workload_entry("web", budget=3, scheduler="kubernetes")])
        seen = list(api.auth)
        other = api.get_object("Node", "kn2") or {}
    finally:
        api.stop()
    assert seen and all(auth == "Bearer node-bound-token" for _, _, auth in seen)
    paths = {(method, path.split("?")[0]) for method, path, _ in seen}
    assert paths == {("GET", "/api/v1/nodes/kn1"), ("PATCH", "/api/v1/nodes/kn1"), ("GET", "/api/v1/pods"),
                     ("POST", "/api/v1/namespaces/team/pods/web-1/eviction")}
    assert all("fieldSelector=spec.nodeName%3Dkn1" in path for method, path, _ in seen if "/pods?" in path)
    assert "unschedulable" not in (other.get("spec") or {}) and agent.reports[0].path == "scheduler"


def test_after_a_lapsed_advisory_the_node_is_uncordoned_and_only_the_reclaim_taint_removed(kube: KubeApiDouble) -> None:
    adapter = KubeAdapter(kube.url, "kn1", token="node-bound-token")
    adapter.mark_unschedulable("sco advisory a-1")
    adapter.mark_schedulable("sco advisory a-1 lapsed without a reclaim")
    node = kube.get_object("Node", "kn1") or {}
    assert node["spec"]["unschedulable"] is False
    assert {t["key"] for t in node["spec"]["taints"]} == {"reclaimable"}  # the pool's own taint stays
    assert "sco.io/drain-reason" not in node["metadata"].get("annotations", {})
