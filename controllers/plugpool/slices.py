"""DRA template snapshot: the last non-empty set of node-local ResourceSlices each machine published while it
was up, kept across power-offs in ConfigMap ``plugpool-template-slices`` (one key per machine, JSON list)."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from .config import NodeGroupConfig
from .kube import Cluster, KubeError

__all__ = ["CONFIG_MAP", "SliceStore", "device_signature", "rename_slices"]

log = logging.getLogger("plugpool.slices")
CONFIG_MAP = "plugpool-template-slices"
Obj = dict[str, Any]
# Attributes that identify one physical device rather than its kind; ignored when comparing machines.
_IDENTITY = re.compile(r"uuid|serial|pci|busid|address", re.IGNORECASE)


def _sanitise(s: Obj) -> Obj:
    meta = s.get("metadata") or {}
    kept = {"name": meta.get("name", "")}
    if meta.get("labels"):
        kept["labels"] = meta["labels"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": kept, "spec": s.get("spec")}


def device_signature(slices: list[Obj]) -> list[str]:
    """What the devices of a machine are, without what identifies one physical device."""
    out = []
    for s in slices:
        spec = s.get("spec") or {}
        for dev in spec.get("devices") or []:
            attrs = {k: v for k, v in (dev.get("attributes") or {}).items() if not _IDENTITY.search(k)}
            out.append(json.dumps([spec.get("driver"), attrs, dev.get("capacity") or {}], sort_keys=True))
    return sorted(out)


def rename_slices(slices: list[Obj], source_node: str, template_name: str) -> list[Obj]:
    """The node's ResourceSlices renamed for the template node."""
    out = []
    for i, s in enumerate(slices):
        spec = json.loads(json.dumps(s.get("spec") or {}))
        spec["nodeName"] = template_name
        pool = spec.get("pool") or {}
        if pool.get("name") in (source_node, None):
            pool["name"] = template_name
        spec["pool"] = pool
        meta = {
            "name": f"{template_name}-slice-{i}",
            **({"labels": s["metadata"]["labels"]} if (s.get("metadata") or {}).get("labels") else {}),
        }
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec})
    return out


class SliceStore:
    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._lock = threading.Lock()
        self._snapshots: dict[str, list[Obj]] = {}
        self._loaded = False
        self._warned: dict[str, tuple[str, ...]] = {}

    def load(self) -> None:
        """Read the ConfigMap once (retried on the next refresh if the API is not reachable)."""
        if self._loaded:
            return
        cm = self._cluster.get_config_map(self._namespace, CONFIG_MAP)
        with self._lock:
            for machine, raw in ((cm or {}).get("data") or {}).items():
                try:
                    self._snapshots.setdefault(machine, json.loads(raw))
                except ValueError:
                    log.warning("ConfigMap %s key %s is not JSON; ignored", CONFIG_MAP, machine)
            self._loaded = True

    def snapshot(self, machine: str) -> list[Obj]:
        """The ResourceSlices kept for the machine."""
        with self._lock:
            return list(self._snapshots.get(machine, []))

    def record(self, node_slices: dict[str, list[Obj]]) -> None:
        """``node_slices``: machine name -> its current node-local slices (only machines that are up)."""
        changed = False
        with self._lock:
            for machine, slices in node_slices.items():
                if not slices:
                    continue
                clean = sorted((_sanitise(s) for s in slices), key=lambda s: s["metadata"]["name"])
                if clean != self._snapshots.get(machine):
                    self._snapshots[machine] = clean
                    changed = True
            data = {m: json.dumps(v, sort_keys=True) for m, v in sorted(self._snapshots.items())}
        if changed:
            try:
                self._cluster.put_config_map(self._namespace, CONFIG_MAP, data)
            except KubeError as exc:
                log.warning(
                    "cannot save the DRA template snapshot in ConfigMap %s/%s: %s", self._namespace, CONFIG_MAP, exc
                )

    def template(self, group: NodeGroupConfig, template_name: str) -> list[Obj]:
        """The first machine of the group (config order) with a snapshot, renamed to the template node; warns
        once per change when the machines of the group publish different devices."""
        with self._lock:
            found = [(n.name, self._snapshots[n.name]) for n in group.nodes if self._snapshots.get(n.name)]
        if not found:
            return []
        signatures = {name: tuple(device_signature(s)) for name, s in found}
        if len(set(signatures.values())) > 1:
            key = tuple(sorted(str(v) for v in signatures.values()))
            if self._warned.get(group.id) != key:
                self._warned[group.id] = key
                log.warning(
                    "machines of group %s publish different DRA devices (%s); cluster-autoscaler assumes they are "
                    "alike, the template uses %s",
                    group.id,
                    ", ".join(signatures),
                    found[0][0],
                )
        return rename_slices(found[0][1], found[0][0], template_name)
