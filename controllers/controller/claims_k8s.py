"""Kubernetes claim source through the real ``kubernetes`` client: pods that carry the contract labels
(``sco.io/contract``, ``sco.io/contract-version``) and tolerate the reclaimable taint, pending or running;
nodes carrying the reclaimable taint with no such pod are reported idle. Pods that tolerate the taint but
name no contract are listed too, so that they are refused with an event rather than silently placed."""

from __future__ import annotations

import re
from typing import Any

from contracts.admission import CONTRACT_LABEL, CONTRACT_VERSION_LABEL
from contracts.admission import RECLAIMABLE_TAINT as ADMISSION_TAINT

from .claims import WorkItem

__all__ = ["RECLAIMABLE_TAINT", "VERSION_LABEL", "WORKLOAD_LABEL", "KubernetesSource", "pod_item",
           "quantity_cpu", "quantity_gib"]

# one vocabulary with admission (ADR-04) and the agent: contracts.admission
RECLAIMABLE_TAINT = ADMISSION_TAINT
WORKLOAD_LABEL = CONTRACT_LABEL
VERSION_LABEL = CONTRACT_VERSION_LABEL
_QTY = re.compile(r"^(\d+(?:\.\d+)?)([a-zA-Z]*)$")
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "k": 10**3, "M": 10**6, "G": 10**9,
        "T": 10**12, "": 1}


def quantity_cpu(q: str | None) -> float:
    """A Kubernetes CPU quantity (``500m``, ``2``) in cores."""
    if not q:
        return 0.0
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def quantity_gib(q: str | None) -> float:
    """A Kubernetes memory quantity (``8Gi``, ``512M``) in GiB."""
    m = _QTY.match(q or "")
    return float(m.group(1)) * _BIN.get(m.group(2), 1) / 2**30 if m else 0.0


def _tolerates(tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations or []:
        key = t.get("key")
        if key == RECLAIMABLE_TAINT or (key in (None, "") and t.get("operator") == "Exists"):
            return True
    return False


def pod_item(pod: dict[str, Any]) -> WorkItem | None:
    """A pod (as a plain dict, API field names) as a work item, or None when it is not reclaimable work."""
    spec, meta, status = pod.get("spec") or {}, pod.get("metadata") or {}, pod.get("status") or {}
    phase = status.get("phase")
    if phase not in ("Pending", "Running") or meta.get("deletionTimestamp"):
        return None
    if not _tolerates(spec.get("tolerations") or []):
        return None
    labels = meta.get("labels") or {}
    workload, version = labels.get(WORKLOAD_LABEL), labels.get(VERSION_LABEL)
    ref = f"{workload}@{version}" if workload and version else None
    cpu = mem = 0.0
    for c in spec.get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += quantity_cpu(req.get("cpu"))
        mem += quantity_gib(req.get("memory"))
    return WorkItem(source="kubernetes", item_id=f"{meta.get('namespace')}/{meta.get('name')}", contract_ref=ref,
                    vcpu=max(cpu, 0.001), memory_gib=mem, state="running" if phase == "Running" else "pending",
                    node=spec.get("nodeName") or "")


class KubernetesSource:
    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.api_client = api_client

    def _pods(self) -> list[dict[str, Any]]:
        resp = self.core.list_pod_for_all_namespaces(_preload_content=False)
        import json

        items: list[dict[str, Any]] = json.loads(resp.data).get("items", [])
        return items

    def work(self) -> list[WorkItem]:
        """Pending and running contracted (or uncontracted) work in reclaimable partitions."""
        return [item for pod in self._pods() if (item := pod_item(pod)) is not None]

    def idle_nodes(self) -> set[str]:
        """Names of nodes the scheduler reports idle (no work), for the orphan rule."""
        import json

        nodes = json.loads(self.core.list_node(_preload_content=False).data).get("items", [])
        busy = {i.node for i in self.work() if i.node}
        out = set()
        for n in nodes:
            taints = (n.get("spec") or {}).get("taints") or []
            if any(t.get("key") == RECLAIMABLE_TAINT for t in taints):
                name = n["metadata"]["name"]
                if name not in busy:
                    out.add(name)
        return out
