"""PodDisruptionBudget-aware eviction for the Kubernetes API double (``pods/{name}/eviction``)."""

from __future__ import annotations

import threading
from typing import Any

from sco.demo.kubeapi.selection import match_labels_expr

__all__ = ["EvictionMixin"]

Obj = dict[str, Any]


class EvictionMixin:
    _lock: threading.RLock
    _objects: dict[tuple[str, str, str], Obj]

    def _resource_for(self, kind_or_plural: str) -> Any:
        raise NotImplementedError

    def _delete(self, res: Any, key: tuple[str, str, str], options: Obj, q: dict[str, str]) -> Obj:
        raise NotImplementedError

    def _not_found(self, res: Any, name: str) -> Exception:
        raise NotImplementedError

    @staticmethod
    def _healthy(pod: Obj) -> bool:
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return status.get("phase") == "Running" and ready and not pod["metadata"].get("deletionTimestamp")

    def _evict(self, res: Any, key: tuple[str, str, str]) -> tuple[int, Obj]:
        if key not in self._objects:
            raise self._not_found(res, key[2])
        pod = self._objects[key]
        labels = pod["metadata"].get("labels") or {}
        pdb_res = self._resource_for("PodDisruptionBudget")
        pdbs = [
            o
            for (store, ns, _), o in sorted(self._objects.items())
            if store == pdb_res.store
            and ns == key[1]
            and (o.get("spec") or {}).get("selector") is not None
            and match_labels_expr(o["spec"]["selector"], labels)
        ]
        if len(pdbs) > 1:
            raise _api_error(
                500,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
        if pdbs and self._healthy(pod) and not self._pdb_allows(pdbs[0], key[1]):
            name = pdbs[0]["metadata"]["name"]
            raise _api_error(
                429,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                details={
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {name} needs more healthy pods to allow this eviction",
                        }
                    ]
                },
            )
        self._delete(res, key, {}, {})
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _pdb_allows(self, pdb: Obj, ns: str) -> bool:
        spec = pdb.get("spec") or {}
        selector = spec.get("selector") or {}
        pods = [
            o
            for (store, pns, _), o in self._objects.items()
            if store == "core/pods" and pns == ns and match_labels_expr(selector, o["metadata"].get("labels") or {})
        ]
        expected = len(pods)
        healthy = sum(1 for p in pods if self._healthy(p))

        def scaled(value: Any) -> int:
            if isinstance(value, str) and value.endswith("%"):
                return -(-int(value[:-1]) * expected // 100)
            return int(value)

        if "minAvailable" in spec:
            return healthy - 1 >= scaled(spec["minAvailable"])
        if "maxUnavailable" in spec:
            return (expected - healthy) + 1 <= scaled(spec["maxUnavailable"])
        return True


def _api_error(code: int, message: str, details: Obj | None = None) -> Exception:
    from sco.errors import KubeApiError as ApiError

    return ApiError(code, message, details=details)
