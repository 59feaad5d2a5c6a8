"""An in-memory Kubernetes API server double that the real ``kubernetes`` client can talk to.

No real API server can run on the test machine, so integration tests point the production adapters (the
real ``kubernetes`` Python client, or plain HTTP calls) at this double; the demo points its real ``sco-agent``
processes on simulated nodes at it (``sco.demo.userdata_agents``). One definition for both: it lives here, in
the composition root, because the demo imports it and the demo ships without the test tree. It is a real
HTTP/1.1 server on ``127.0.0.1`` and a free port, serving the real API paths, verbs, status codes and
``kind: Status`` errors for the resources below. It is not a full API server: no admission, no defaulting
beyond metadata, no authentication, no watch streams beyond a one-shot list of ``ADDED`` events.

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

The store and the verbs live in ``store`` (eviction in ``evict``, patches in ``patch``,
selectors in ``selection``); this module adds the HTTP server and the test hooks.

Use it as a context manager (``with KubeApiDouble() as kube: ...``) and ``stop()`` it when done.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sco.demo.kubeapi.store import ApiError, KubeStore, RecordedRequest

__all__ = ["ApiError", "KubeApiDouble", "RecordedRequest"]


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many clients connect at once (parallel reads); the default backlog is 5
    daemon_threads = True


@dataclass
class _Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int


class KubeApiDouble(KubeStore):
    """See the module docstring."""

    def __init__(self, *, graceful_pod_deletion: bool = False, require_namespaces: bool = False) -> None:
        super().__init__(graceful_pod_deletion=graceful_pod_deletion, require_namespaces=require_namespaces)
        self._latency: dict[str | None, float] = {}
        self._failures: list[_Failure] = []
        self.requests: list[RecordedRequest] = []
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="kube-api-double", daemon=True
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    # ----------------------------------------------------------------- lifecycle
    def stop(self) -> None:
        """Stop serving and join the server thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> KubeApiDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client_configuration(self) -> Any:
        """A ``kubernetes`` client configuration pointed at this double."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        return cfg

    # ----------------------------------------------------------------- test hooks
    def set_latency(self, seconds: float, path_regex: str | None = None) -> None:
        """Delay answers to paths matching ``path_regex`` (all when None) by ``seconds``; 0 removes it."""
        with self._lock:
            if seconds <= 0:
                self._latency.pop(path_regex, None)
            else:
                self._latency[path_regex] = seconds

    def fail_next(self, method: str, path_regex: str, status: int, times: int = 1) -> None:
        """Answer the next ``times`` matching requests with ``status``."""
        with self._lock:
            self._failures.append(_Failure(method.upper(), re.compile(path_regex), status, times))

    def requests_matching(self, method: str, path_regex: str) -> list[RecordedRequest]:
        """The recorded requests of ``method`` whose path matches ``path_regex``."""
        pattern = re.compile(path_regex)
        with self._lock:
            return [r for r in self.requests if r.method == method.upper() and pattern.search(r.path)]

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

