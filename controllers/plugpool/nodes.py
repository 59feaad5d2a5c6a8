"""Reading Node objects (providerID matching, readiness, the cluster-autoscaler taint) and writing the two
objects plugpool creates: the one-shot poweroff pod and the template Node of a group."""

from __future__ import annotations

import logging
from typing import Any

from .config import NodeGroupConfig, PlugPoolConfig, PowerOffConfig

__all__ = [
    "TO_BE_DELETED_TAINT",
    "has_delete_taint",
    "is_ready",
    "match_nodes",
    "poweroff_pod",
    "poweroff_pod_name",
    "template_node",
]

log = logging.getLogger("plugpool.nodes")

Obj = dict[str, Any]
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
MANAGED_BY = "app.kubernetes.io/managed-by"


def has_delete_taint(node: Obj) -> bool:
    """True when cluster-autoscaler has tainted the node for deletion."""
    return any(t.get("key") == TO_BE_DELETED_TAINT for t in (node.get("spec") or {}).get("taints") or [])


def is_ready(node: Obj) -> bool:
    """True when the node's Ready condition is True."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def match_nodes(config: PlugPoolConfig, nodes: list[Obj]) -> dict[str, Obj]:
    """Configured node name -> its Node object. A Node matches by spec.providerID (prefix + name); by name only
    when it has no providerID. A Node named like a configured machine whose providerID has another form is a
    configuration error: it is logged and not matched."""
    names = {n.name for _, n in config.all_nodes}
    prefix = config.provider_id_prefix
    out: dict[str, Obj] = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name", "")
        pid = (node.get("spec") or {}).get("providerID") or ""
        if pid:
            if pid.startswith(prefix) and pid[len(prefix) :] in names:
                out[pid[len(prefix) :]] = node
            elif name in names:
                log.error(
                    "configuration error: node %s has spec.providerID %r, expected %r; set providerIDPrefix to "
                    "the prefix your distribution uses",
                    name,
                    pid,
                    config.provider_id(name),
                )
        elif name in names:
            out[name] = node
    return out


def poweroff_pod_name(node: str) -> str:
    """The name of the pod that powers the node off."""
    return f"plugpool-poweroff-{node}"[:253]


def poweroff_pod(node_name: str, power_off: PowerOffConfig) -> Obj:
    """The one-shot privileged pod that runs ``systemctl poweroff`` in the host's namespaces on ``node_name``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": poweroff_pod_name(node_name),
            "namespace": power_off.namespace,
            "labels": {MANAGED_BY: "plugpool", "plugpool/poweroff-node": node_name[:63]},
        },
        "spec": {
            "nodeName": node_name,  # bypasses the scheduler: the node is tainted and cordoned
            "hostPID": True,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "poweroff",
                    "image": power_off.image,
                    "command": [
                        "nsenter",
                        "--target",
                        "1",
                        "--mount",
                        "--uts",
                        "--ipc",
                        "--net",
                        "--pid",
                        "--",
                        "systemctl",
                        "poweroff",
                    ],
                    "securityContext": {"privileged": True},
                    "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}},
                }
            ],
        },
    }


def template_node(config: PlugPoolConfig, group: NodeGroupConfig) -> Obj:
    """What a machine of ``group`` offers once it has joined: cluster-autoscaler's scale-up-from-zero model."""
    name = f"plugpool-template-{group.id}"
    t = group.template
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name, **t.labels}
    resources = {"cpu": t.cpu, "memory": t.memory, "pods": t.pods}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": config.provider_id(name), "taints": [dict(x) for x in t.taints]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
