"""Drain through the Kubernetes API with a handful of plain HTTPS calls.

No client library: the agent stays under 40 MiB. Authenticates with the node-bound ServiceAccount token; the
ValidatingAdmissionPolicy in deploy/agent/ lets that token taint/cordon and evict on its own node only.

Calls: ``GET``/``PATCH`` (merge patch) ``/api/v1/nodes/<node>``; ``GET /api/v1/pods?fieldSelector=
spec.nodeName=<node>``; ``POST /api/v1/namespaces/<ns>/pods/<pod>/eviction`` (policy/v1 Eviction with
``deleteOptions.gracePeriodSeconds`` = what is left of the drain budget; 429 = a PodDisruptionBudget refuses for now).
Pods name their contract with the labels ``sco.io/contract`` and ``sco.io/contract-version`` (contracts.admission).
A pod's ``status.startTime`` (RFC 3339 UTC) becomes ``Unit.attributes["started_at"]``.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import quote

from contracts.admission import CONTRACT_LABEL, CONTRACT_VERSION_LABEL

from ..errors import KubeError
from ..httpwire import request
from ..model import STARTED_AT, Contract, Unit, format_time, time_or_none
from .adapters import EVICT_BLOCKED, EVICT_DONE, EVICT_GONE

__all__ = ["NOT_READY_TAINT", "READY_LABEL", "RECLAIM_TAINT", "KubeAdapter", "KubeError"]

RECLAIM_TAINT = "sco.io/reclaim"
NOT_READY_TAINT = "sco.io/no-contract"
READY_LABEL = "sco.io/agent-ready"
WORKLOAD_LABEL = CONTRACT_LABEL  # one vocabulary with admission and the controller (contracts.admission)
VERSION_LABEL = CONTRACT_VERSION_LABEL


class KubeAdapter:
    """The ``SchedulerAdapter`` for Kubernetes: taint, cordon, list pods and evict on this node only."""

    name = "kubernetes"

    def __init__(self, api: str, node_name: str, token: str | None = None, ca_file: Path | None = None,
                 timeout_s: float = 10.0) -> None:
        """Talk to ``api`` about ``node_name`` with the node-bound ``token``, trusting ``ca_file``."""
        self.api = api.rstrip("/")
        self.node = node_name
        self.token = token
        self.timeout = timeout_s
        self.context: ssl.SSLContext | None = None
        if self.api.startswith("https://"):
            self.context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)

    @classmethod
    def from_files(cls, api: str, node_name: str, token_file: Path, ca_file: Path | None) -> KubeAdapter:
        """Read the token from ``token_file`` (an unreadable one is not fatal: the local path needs none)."""
        try:
            token = token_file.read_text().strip()
        except OSError:
            token = None  # not fatal at boot: the local path does not need it
        return cls(api, node_name, token, ca_file)

    def _request(self, method: str, path: str, body: Any = None,
                 ctype: str = "application/json") -> tuple[int, dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = ctype
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            status, raw = request(method, self.api + path, data, headers, self.timeout, self.context)
        except OSError as exc:
            raise KubeError(f"{method} {path}: {exc}") from None
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"message": raw[:200].decode(errors="replace")}
        return status, doc if isinstance(doc, dict) else {}

    def _ok(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> dict[str, Any]:
        status, doc = self._request(method, path, body, ctype)
        if status >= 300:
            raise KubeError(f"{method} {path} answered {status}: {doc.get('message', '')}", status)
        return doc

    def _patch_node(self, taints: list[dict[str, Any]], extra_spec: dict[str, Any],
                    metadata: dict[str, Any]) -> None:
        body = {"metadata": metadata, "spec": {**extra_spec, "taints": taints}}
        self._ok("PATCH", f"/api/v1/nodes/{self.node}", body, "application/merge-patch+json")

    def _taints(self) -> list[dict[str, Any]]:
        node = self._ok("GET", f"/api/v1/nodes/{self.node}")
        return list((node.get("spec") or {}).get("taints") or [])

    def mark_unschedulable(self, reason: str) -> None:
        """Taint ``sco.io/reclaim=notice:NoSchedule`` and cordon (``spec.unschedulable``)."""
        taints = [t for t in self._taints() if t.get("key") != RECLAIM_TAINT]
        taints.append({"key": RECLAIM_TAINT, "value": "notice", "effect": "NoSchedule"})
        self._patch_node(taints, {"unschedulable": True}, {"annotations": {"sco.io/drain-reason": reason[:200]}})

    def mark_schedulable(self, reason: str) -> None:
        """Remove the ``sco.io/reclaim`` taint and uncordon (an advisory lapsed without a reclaim)."""
        taints = [t for t in self._taints() if t.get("key") != RECLAIM_TAINT]
        self._patch_node(taints, {"unschedulable": False}, {"annotations": {"sco.io/drain-reason": None,
                                                                           "sco.io/resumed-reason": reason[:200]}})

    def units(self) -> list[Unit]:
        """The pods on this node, less DaemonSet, mirror and finished pods."""
        selector = quote(f"spec.nodeName={self.node}")
        doc = self._ok("GET", f"/api/v1/pods?fieldSelector={selector}")
        units = []
        for pod in doc.get("items") or []:
            meta = pod.get("metadata") or {}
            if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
                continue
            if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
                continue
            status = pod.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            labels = meta.get("labels") or {}
            ref = None
            if labels.get(WORKLOAD_LABEL):
                ref = f"{labels[WORKLOAD_LABEL]}@{labels.get(VERSION_LABEL, '')}"
            attrs: dict[str, str] = {}
            start = time_or_none(status.get("startTime"))
            if start is not None:  # a pod not yet started by the kubelet has no startTime
                attrs[STARTED_AT] = format_time(start)
            units.append(Unit(f"{meta.get('namespace', 'default')}/{meta.get('name')}", ref,
                              namespace=meta.get("namespace", "default"), attributes=attrs))
        return units

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        """policy/v1 Eviction with ``deleteOptions.gracePeriodSeconds = grace_s``; 429 -> EVICT_BLOCKED."""
        ns, _, name = unit.unit_id.partition("/")
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns},
                "deleteOptions": {"gracePeriodSeconds": int(grace_s)}}
        status, doc = self._request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", body)
        if status in (200, 201):
            return EVICT_DONE
        if status == 429:
            return EVICT_BLOCKED
        if status == 404:
            return EVICT_GONE
        raise KubeError(f"eviction of {unit.unit_id} answered {status}: {doc.get('message', '')}", status)

    def finish(self, unit: Unit, contract: Contract) -> None:
        """Nothing to do: the kubelet ends the pod at the end of the eviction's grace period."""
        return  # the kubelet ends the pod at the end of the eviction's grace period

    def set_ready(self, ready: bool, reason: str) -> None:
        """Label ``sco.io/agent-ready`` and, when not ready, taint ``sco.io/no-contract:NoSchedule``."""
        taints = [t for t in self._taints() if t.get("key") != NOT_READY_TAINT]
        if not ready:
            taints.append({"key": NOT_READY_TAINT, "value": "true", "effect": "NoSchedule"})
        self._patch_node(taints, {}, {"labels": {READY_LABEL: "true" if ready else "false"},
                                      "annotations": {"sco.io/agent-not-ready-reason": reason[:200] or None}})
