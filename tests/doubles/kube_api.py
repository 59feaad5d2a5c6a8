"""An in-memory Kubernetes API server double that the real ``kubernetes`` client can talk to.

No real API server can run on the test machine, so integration tests point the production adapters (the
real ``kubernetes`` Python client, or plain HTTP calls) at this double. It is a real HTTP/1.1 server on
``127.0.0.1`` and a free port, serving the real API paths, verbs, status codes and ``kind: Status`` errors
for the resources below. It is not a full API server: no admission, no defaulting beyond metadata, no
authentication, no watch streams beyond a one-shot list of ``ADDED`` events.

Resources (add more with :meth:`KubeApiDouble.register_resource`):

==========================================  =======================  ============
path                                        kind                     scope
==========================================  =======================  ============
/api/v1/nodes                               Node                     cluster
/api/v1/namespaces                          Namespace                cluster
/api/v1/namespaces/{ns}/pods                Pod                      namespaced
/api/v1/namespaces/{ns}/configmaps          ConfigMap                namespaced
/api/v1/namespaces/{ns}/events              Event                    namespaced
/api/v1/namespaces/{ns}/services            Service                  namespaced
/apis/resource.k8s.io/{v1,v1beta1,v1beta2}/resourceslices  ResourceSlice  cluster
/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets       PodDisruptionBudget  namespaced
/apis/coordination.k8s.io/v1/namespaces/{ns}/leases        Lease    namespaced
==========================================  =======================  ============

Every namespaced resource is also listable across namespaces (``/api/v1/pods``). ResourceSlices of all
served versions share one store (the double does not convert between versions).

Verbs: GET one; LIST with ``labelSelector`` (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``,
``k notin (a,b)``) and ``fieldSelector`` (any dotted path with ``=``, ``==`` or ``!=``, e.g.
``spec.nodeName=n1``, ``metadata.name=x``, ``status.phase=Running``); POST create (409 AlreadyExists,
``generateName`` honoured); PUT replace (409 Conflict on a stale ``metadata.resourceVersion``); PATCH with
``application/merge-patch+json``, ``application/strategic-merge-patch+json`` (merge semantics, lists
replaced), ``application/json-patch+json`` (RFC 6902) and ``application/apply-patch+yaml`` (merge, creates
when absent); DELETE (404 NotFound) and DELETE on a collection (with selectors). The ``status``
subresource (``.../nodes/n1/status``) reads and writes the same object.

Deletion: an object with ``metadata.finalizers`` only gets ``metadata.deletionTimestamp``; it goes when the
finalizers are removed (a PUT/PATCH that empties them). With ``graceful_pod_deletion=True`` a pod that is
bound to a node (``spec.nodeName``) and deleted with a grace period other than 0 also only gets a
``deletionTimestamp``, as a kubelet would see it; the test plays the kubelet and calls
:meth:`delete_object`. ``gracePeriodSeconds=0`` (a force delete) always removes at once.

Eviction: ``POST /api/v1/namespaces/{ns}/pods/{name}/eviction`` (a ``policy/v1`` Eviction) looks for
PodDisruptionBudgets in the pod's namespace whose selector matches the pod. A healthy pod is one with
``status.phase == Running``, a ``Ready`` condition ``True`` and no ``deletionTimestamp``. The eviction is
refused with 429 ``TooManyRequests`` (a Status with a ``DisruptionBudget`` cause) when removing the pod
would leave fewer healthy matching pods than ``minAvailable`` or more unavailable than ``maxUnavailable``
(integers or percentages, rounded up as Kubernetes does); more than one matching PDB answers 500 as the
real server does. A pod that is not healthy itself is always evictable. Otherwise the pod is deleted (the
deletion rules above apply) and 201 with a ``Success`` Status is returned.

Every object gets ``metadata.uid``, ``resourceVersion`` (one counter for the whole store),
``creationTimestamp`` and ``generation``; a Pod created without status gets ``status.phase: Pending``.

Test hooks:

* ``set_latency(seconds, path_regex=None)`` delays matching requests (0 clears the rule);
* ``fail_next(method, path_regex, status, times=1)`` answers the next matching requests with that status;
* ``requests`` is the recorded log of :class:`RecordedRequest` (method, path, query, time, status);
* ``put_object``, ``get_object``, ``delete_object``, ``list_objects`` read and write the state directly,
  bypassing hooks and the log, so a test can play the kubelet (mark a Node NotReady, finish a pod);
* ``client_configuration()`` returns a ``kubernetes.client.Configuration`` pointing at the double.

Use it as a context manager (``with KubeApiDouble() as kube: ...``) or through the ``kube_api`` pytest
fixture (``from tests.doubles.kube_api import kube_api`` in a test module or conftest).
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.doubles.kube_patch import apply_json_patch, merge_patch
from tests.doubles.kube_select import match_fields, match_label_selector, match_labels_expr

__all__ = ["ApiError", "KubeApiDouble", "RecordedRequest", "kube_api"]

Obj = dict[str, Any]

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


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
        return "v1" if self.prefix == "/api/v1" else self.prefix.removeprefix("/apis/")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str
    time: float
    status: int = 0
    body: Any = None


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many clients connect at once (parallel reads); the default backlog is 5
    daemon_threads = True


class ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None, details: Obj | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason or REASONS.get(code, "Unknown")
        self.message = message
        self.details = details

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


@dataclass
class _Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int


@dataclass
class _Route:
    resource: Resource
    namespace: str | None  # None: all namespaces (list only)
    name: str | None
    subresource: str | None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found(res: Resource, name: str) -> ApiError:
    group = res.prefix.removeprefix("/apis/").split("/")[0] if res.prefix != "/api/v1" else ""
    what = f"{res.plural}.{group}" if group else res.plural
    return ApiError(404, f'{what} "{name}" not found', details={"name": name, "kind": res.plural})


class KubeApiDouble:
    """See the module docstring."""

    def __init__(self, *, graceful_pod_deletion: bool = False, require_namespaces: bool = False) -> None:
        self.graceful_pod_deletion = graceful_pod_deletion
        self.require_namespaces = require_namespaces
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._rv = 0
        self._resources: list[Resource] = []
        self._latency: dict[str | None, float] = {}
        self._failures: list[_Failure] = []
        self.requests: list[RecordedRequest] = []
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
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="kube-api-double", daemon=True
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    # ----------------------------------------------------------------- lifecycle
    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> KubeApiDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client_configuration(self) -> Any:
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        return cfg

    # ----------------------------------------------------------------- test hooks
    def register_resource(self, prefix: str, plural: str, kind: str, namespaced: bool) -> None:
        store = f"{prefix.removeprefix('/apis/').split('/')[0] if prefix != '/api/v1' else 'core'}/{plural}"
        self._resources.append(Resource(prefix, plural, kind, namespaced, store))

    def set_latency(self, seconds: float, path_regex: str | None = None) -> None:
        with self._lock:
            if seconds <= 0:
                self._latency.pop(path_regex, None)
            else:
                self._latency[path_regex] = seconds

    def fail_next(self, method: str, path_regex: str, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.append(_Failure(method.upper(), re.compile(path_regex), status, times))

    def requests_matching(self, method: str, path_regex: str) -> list[RecordedRequest]:
        pattern = re.compile(path_regex)
        with self._lock:
            return [r for r in self.requests if r.method == method.upper() and pattern.search(r.path)]

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
                    raise _not_found(res, name)
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
            raise _not_found(res, key[2])
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
            raise _not_found(res, key[2])
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
            raise _not_found(res, key[2])
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

    # ----------------------------------------------------------------- eviction
    @staticmethod
    def _healthy(pod: Obj) -> bool:
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return status.get("phase") == "Running" and ready and not pod["metadata"].get("deletionTimestamp")

    def _evict(self, res: Resource, key: tuple[str, str, str]) -> tuple[int, Obj]:
        if key not in self._objects:
            raise _not_found(res, key[2])
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
            raise ApiError(
                500,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
        if pdbs and self._healthy(pod) and not self._pdb_allows(pdbs[0], key[1]):
            name = pdbs[0]["metadata"]["name"]
            raise ApiError(
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

    # ----------------------------------------------------------------- HTTP
    def _before(self, method: str, path: str) -> int | None:
        with self._lock:
            delay = max((s for rx, s in self._latency.items() if rx is None or re.search(rx, path)), default=0.0)
            status = None
            for f in self._failures:
                if f.times > 0 and f.method in (method, "*") and f.pattern.search(path):
                    f.times -= 1
                    status = f.status
                    break
            self._failures = [f for f in self._failures if f.times > 0]
        if delay:
            time.sleep(delay)
        return status

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                method = self.command
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                ctype = self.headers.get("Content-Type") or "application/json"
                body: Any = None
                status = 500
                try:
                    if raw:
                        body = _decode(raw, ctype)
                    injected = double._before(method, parts.path)
                    if injected is not None:
                        raise ApiError(injected, f"injected failure {injected} for {method} {parts.path}")
                    status, payload = double.handle(method, parts.path, parse_qs(parts.query), body, ctype)
                except ApiError as exc:
                    status, payload = exc.code, exc.status()
                except Exception as exc:  # a bug in the double: answer 500 rather than hang the client
                    status, payload = 500, ApiError(500, f"double error: {exc!r}").status()
                with double._lock:
                    double.requests.append(RecordedRequest(method, parts.path, parts.query, time.time(), status, body))
                if "__watch__" in payload:
                    data = b"".join(json.dumps(e).encode() + b"\n" for e in payload["__watch__"])
                else:
                    data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


def _decode(raw: bytes, ctype: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        if "yaml" in ctype:
            import yaml

            return yaml.safe_load(raw)
        raise ApiError(400, "the request body is not valid JSON") from None


@pytest.fixture
def kube_api() -> Iterator[KubeApiDouble]:
    double = KubeApiDouble()
    try:
        yield double
    finally:
        double.stop()
