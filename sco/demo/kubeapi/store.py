"""The in-memory object store behind :class:`sco.demo.kubeapi.KubeApiDouble`: resources, routing of API
paths, the verbs and their status codes. See the server module's docstring for the behaviour."""

from __future__ import annotations

import copy
import secrets
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from sco.demo.kubeapi.evict import EvictionMixin
from sco.demo.kubeapi.patch import apply_json_patch, merge_patch
from sco.demo.kubeapi.selection import match_fields, match_label_selector
from sco.errors import KubeApiError as ApiError

__all__ = ["ApiError", "KubeStore", "Obj", "RecordedRequest", "Resource"]

Obj = dict[str, Any]

@dataclass(frozen=True)
class Resource:
    """One served resource: ``prefix`` is ``/api/v1`` or ``/apis/<group>/<version>``."""

    prefix: str
    plural: str
    kind: str
    namespaced: bool
    store: str  # shared key across versions of the same resource

    @property
    def api_version(self) -> str:
        """The resource's ``apiVersion``: ``v1`` or ``<group>/<version>``."""
        return "v1" if self.prefix == "/api/v1" else self.prefix.removeprefix("/apis/")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str
    time: float
    status: int = 0
    body: Any = None



@dataclass
class _Route:
    resource: Resource
    namespace: str | None  # None: all namespaces (list only)
    name: str | None
    subresource: str | None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def not_found(res: Resource, name: str) -> ApiError:
    """The 404 ``ApiError`` Kubernetes answers for a missing object of ``res``."""
    group = res.prefix.removeprefix("/apis/").split("/")[0] if res.prefix != "/api/v1" else ""
    what = f"{res.plural}.{group}" if group else res.plural
    return ApiError(404, f'{what} "{name}" not found', details={"name": name, "kind": res.plural})


class KubeStore(EvictionMixin):
    """Objects by (store, namespace, name); one resourceVersion counter; thread-safe."""

    def _not_found(self, res: Any, name: str) -> Exception:
        return not_found(res, name)

    def __init__(self, *, graceful_pod_deletion: bool = False, require_namespaces: bool = False) -> None:
        self.graceful_pod_deletion = graceful_pod_deletion
        self.require_namespaces = require_namespaces
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._rv = 0
        self._resources: list[Resource] = []
        for prefix, plural, kind, namespaced in [
            ("/api/v1", "nodes", "Node", False),
            ("/api/v1", "namespaces", "Namespace", False),
            ("/api/v1", "pods", "Pod", True),
            ("/api/v1", "configmaps", "ConfigMap", True),
            ("/api/v1", "events", "Event", True),
            ("/api/v1", "services", "Service", True),
            ("/apis/resource.k8s.io/v1", "resourceslices", "ResourceSlice", False),
            ("/apis/resource.k8s.io/v1beta1", "resourceslices", "ResourceSlice", False),
            ("/apis/resource.k8s.io/v1beta2", "resourceslices", "ResourceSlice", False),
            ("/apis/policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
            ("/apis/coordination.k8s.io/v1", "leases", "Lease", True),
        ]:
            self.register_resource(prefix, plural, kind, namespaced)

    def register_resource(self, prefix: str, plural: str, kind: str, namespaced: bool) -> None:
        """Serve one more resource under ``prefix``."""
        store = f"{prefix.removeprefix('/apis/').split('/')[0] if prefix != '/api/v1' else 'core'}/{plural}"
        self._resources.append(Resource(prefix, plural, kind, namespaced, store))

    def _resource_for(self, kind_or_plural: str) -> Resource:
        for res in self._resources:
            if kind_or_plural in (res.kind, res.plural, res.store):
                return res
        raise KeyError(f"unknown resource {kind_or_plural!r}")

    def put_object(self, kind: str, obj: Obj) -> Obj:
        """Create or replace an object directly (``kind`` is a Kind, plural or store key)."""
        res = self._resource_for(kind)
        with self._lock:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            ns = meta.get("namespace", "default") if res.namespaced else ""
            if res.namespaced:
                meta["namespace"] = ns
            key = (res.store, ns, meta["name"])
            old = self._objects.get(key)
            self._stamp(res, obj, old)
            self._store(key, obj)
            return copy.deepcopy(self._objects.get(key, obj))

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """A copy of the named object, or None."""
        res = self._resource_for(kind)
        with self._lock:
            found = self._objects.get((res.store, (namespace or "default") if res.namespaced else "", name))
            return copy.deepcopy(found) if found is not None else None

    def delete_object(self, kind: str, name: str, namespace: str | None = None) -> bool:
        """Remove an object at once, whatever its finalizers (the kubelet or a controller finishing)."""
        res = self._resource_for(kind)
        with self._lock:
            key = (res.store, (namespace or "default") if res.namespaced else "", name)
            return self._objects.pop(key, None) is not None

    def list_objects(self, kind: str, namespace: str | None = None) -> list[Obj]:
        """Copies of every object of ``kind`` (in ``namespace`` when given)."""
        res = self._resource_for(kind)
        with self._lock:
            return [
                copy.deepcopy(o)
                for (store, ns, _), o in sorted(self._objects.items())
                if store == res.store and (namespace is None or ns == namespace)
            ]

    # ----------------------------------------------------------------- store internals
    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _stamp(self, res: Resource, obj: Obj, old: Obj | None) -> None:
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind
        meta = obj["metadata"]
        if old is not None:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            meta["generation"] = old["metadata"].get("generation", 1) + (1 if obj.get("spec") != old.get("spec") else 0)
            if "deletionTimestamp" in old["metadata"]:
                meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
        else:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", _now())
            meta.setdefault("generation", 1)
            if res.kind == "Pod":
                obj.setdefault("status", {}).setdefault("phase", "Pending")
            if res.kind == "Namespace":
                obj.setdefault("status", {}).setdefault("phase", "Active")
        meta["resourceVersion"] = self._next_rv()

    def _store(self, key: tuple[str, str, str], obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj

    # ----------------------------------------------------------------- routing
    def _route(self, path: str) -> _Route:
        parts = [unquote(p) for p in path.strip("/").split("/")]

        def tail(items: list[str]) -> tuple[str | None, str | None]:
            padded = [*items, None, None]
            return padded[0], padded[1]

        matches = []
        for res in self._resources:
            pre = res.prefix.strip("/").split("/")
            if parts[: len(pre)] == pre:
                matches.append((res, parts[len(pre) :]))
        for res, rest in matches:  # namespaced paths first: /api/v1/namespaces/{ns}/{plural}/...
            if res.namespaced and 3 <= len(rest) <= 5 and rest[0] == "namespaces" and rest[2] == res.plural:
                return _Route(res, rest[1], *tail(rest[3:]))
        for res, rest in matches:
            if rest and rest[0] == res.plural and len(rest) <= 3 and not (res.namespaced and len(rest) > 1):
                return _Route(res, None if res.namespaced else "", *tail(rest[1:]))
        raise ApiError(404, f"the server could not find the requested resource ({path})")

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any, ctype: str) -> tuple[int, Obj]:
        """Serve one API request; its HTTP status and body."""
        route = self._route(path)
        res, ns, name, sub = route.resource, route.namespace, route.name, route.subresource
        q = {k: v[-1] for k, v in query.items()}
        with self._lock:
            if (
                ns
                and self.require_namespaces
                and method in ("POST", "PUT")
                and res.kind != "Namespace"
                and ("core/namespaces", "", ns) not in self._objects
            ):
                raise ApiError(404, f'namespaces "{ns}" not found', details={"name": ns, "kind": "namespaces"})
            if name is None:
                if method == "GET":
                    return 200, self._list(res, ns, q)
                if method == "POST":
                    return 201, self._create(res, ns or "", body)
                if method == "DELETE":
                    return 200, self._delete_collection(res, ns, q)
                raise ApiError(405, f"method {method} not allowed on a collection")
            if sub not in (None, "status", "eviction"):
                raise ApiError(404, f"the server could not find the requested resource ({path})")
            key = (res.store, ns or "", name)
            if sub == "eviction":
                if method != "POST" or res.kind != "Pod":
                    raise ApiError(405, "eviction is POST on pods only")
                return self._evict(res, key)
            if method == "GET":
                if key not in self._objects:
                    raise not_found(res, name)
                return 200, copy.deepcopy(self._objects[key])
            if method == "PUT":
                return 200, self._replace(res, key, body)
            if method == "PATCH":
                return self._patch(res, key, body, ctype)
            if method == "DELETE":
                return 200, self._delete(res, key, body or {}, q)
        raise ApiError(405, f"method {method} not allowed")

    def _select(self, res: Resource, ns: str | None, q: dict[str, str]) -> list[tuple[tuple[str, str, str], Obj]]:
        out = []
        for key, obj in sorted(self._objects.items()):
            if key[0] != res.store or (ns is not None and ns != "" and key[1] != ns):
                continue
            if not match_label_selector(q.get("labelSelector", ""), obj["metadata"].get("labels") or {}):
                continue
            if not match_fields(q.get("fieldSelector", ""), obj):
                continue
            out.append((key, obj))
        return out

    def _list(self, res: Resource, ns: str | None, q: dict[str, str]) -> Obj:
        items = [copy.deepcopy(o) for _, o in self._select(res, ns, q)]
        if str(q.get("watch", "")).lower() in ("true", "1"):
            return {"__watch__": [{"type": "ADDED", "object": o} for o in items]}
        return {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": {"resourceVersion": str(self._rv)},
            "items": items,
        }

    def _create(self, res: Resource, ns: str, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "the body of a create must be an object")
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, f"{res.kind} is invalid: metadata.name: Required value")
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        if res.namespaced:
            if meta.get("namespace") not in (None, ns):
                raise ApiError(400, "the namespace of the object does not match the namespace of the request")
            meta["namespace"] = ns
        meta.pop("resourceVersion", None)
        key = (res.store, ns if res.namespaced else "", meta["name"])
        if key in self._objects:
            raise ApiError(
                409,
                f'{res.plural} "{meta["name"]}" already exists',
                reason="AlreadyExists",
                details={"name": meta["name"], "kind": res.plural},
            )
        self._stamp(res, obj, None)
        self._objects[key] = obj
        return copy.deepcopy(obj)

    def _conflict(self, res: Resource, name: str) -> ApiError:
        return ApiError(
            409,
            f'Operation cannot be fulfilled on {res.plural} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            details={"name": name, "kind": res.plural},
        )

    def _write(self, res: Resource, key: tuple[str, str, str], obj: Obj) -> Obj:
        old = self._objects[key]
        rv = obj.get("metadata", {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise self._conflict(res, key[2])
        obj.setdefault("metadata", {})["name"] = key[2]
        if res.namespaced:
            obj["metadata"]["namespace"] = key[1]
        self._stamp(res, obj, old)
        self._store(key, obj)
        return copy.deepcopy(obj)

    def _replace(self, res: Resource, key: tuple[str, str, str], body: Any) -> Obj:
        if key not in self._objects:
            raise not_found(res, key[2])
        if not isinstance(body, dict):
            raise ApiError(400, "the body of a replace must be an object")
        return self._write(res, key, copy.deepcopy(body))

    def _patch(self, res: Resource, key: tuple[str, str, str], body: Any, ctype: str) -> tuple[int, Obj]:
        ctype = ctype.split(";")[0].strip().lower()
        exists = key in self._objects
        if ctype.startswith("application/apply-patch") and not exists:
            obj = body if isinstance(body, dict) else {}
            obj.setdefault("metadata", {})["name"] = key[2]
            return 201, self._create(res, key[1], obj)
        if not exists:
            raise not_found(res, key[2])
        current = copy.deepcopy(self._objects[key])
        if ctype == "application/json-patch+json":
            if not isinstance(body, list):
                raise ApiError(400, "a json patch must be a list of operations")
            patched = apply_json_patch(current, body)
        elif ctype in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ):
            if not isinstance(body, dict):
                raise ApiError(400, "a merge patch must be an object")
            patched = merge_patch(current, body)
        else:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types "
                f"include: application/json-patch+json, application/merge-patch+json, "
                f"application/apply-patch+yaml (got {ctype!r})",
            )
        if not isinstance(patched, dict):
            raise ApiError(422, "the patch does not leave an object")
        rv_in_patch = body.get("metadata", {}).get("resourceVersion") if isinstance(body, dict) else None
        if not rv_in_patch:
            patched.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
        return 200, self._write(res, key, patched)

    def _delete(self, res: Resource, key: tuple[str, str, str], options: Obj, q: dict[str, str]) -> Obj:
        if key not in self._objects:
            raise not_found(res, key[2])
        obj = self._objects[key]
        grace = options.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
        keep = bool(obj["metadata"].get("finalizers"))
        if (
            res.kind == "Pod"
            and self.graceful_pod_deletion
            and (obj.get("spec") or {}).get("nodeName")
            and str(grace) != "0"
        ):
            keep = True
        if keep:
            if "deletionTimestamp" not in obj["metadata"]:
                obj["metadata"]["deletionTimestamp"] = _now()
                obj["metadata"]["deletionGracePeriodSeconds"] = int(grace) if grace is not None else 30
                obj["metadata"]["resourceVersion"] = self._next_rv()
            return copy.deepcopy(obj)
        del self._objects[key]
        if res.kind == "Namespace":
            for other in [k for k in self._objects if k[1] == key[2] and k[0] != "core/namespaces"]:
                del self._objects[other]
        return copy.deepcopy(obj)

    def _delete_collection(self, res: Resource, ns: str | None, q: dict[str, str]) -> Obj:
        items = [self._delete(res, key, {}, q) for key, _ in self._select(res, ns, q)]
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": {}, "items": items}
