"""The Kubernetes side of plugpool: a small ``Cluster`` protocol and its production adapter on the real
``kubernetes`` client. Objects are plain dicts (the API's JSON): responses are read with
``_preload_content=False`` so new or alpha fields survive untouched."""

from __future__ import annotations

import json
from typing import Any, Protocol

from ..errors import KubeError

__all__ = ["Cluster", "KubeError", "KubernetesCluster", "Obj"]

Obj = dict[str, Any]


class Cluster(Protocol):
    def list_nodes(self) -> list[Obj]:
        """Every node of the cluster."""

    def get_node(self, name: str) -> Obj | None:
        """The named node, or None."""

    def delete_node(self, name: str) -> None:
        """Delete the node (one already gone is no error)."""

    def create_pod(self, namespace: str, pod: Obj) -> None:
        """Create the pod in ``namespace`` (one that exists is no error)."""

    def get_pod(self, namespace: str, name: str) -> Obj | None:
        """The named pod, or None."""

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete the pod (one already gone is no error)."""

    def list_resource_slices(self) -> list[Obj]:
        """Every DRA ResourceSlice of the cluster."""

    def get_config_map(self, namespace: str, name: str) -> Obj | None:
        """The named ConfigMap, or None."""

    def put_config_map(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Create or replace the ConfigMap's data."""


class KubernetesCluster:
    """The production adapter. ``configuration`` is a ``kubernetes.client.Configuration``; None loads the
    in-cluster service account (or ~/.kube/config outside a cluster)."""

    def __init__(self, configuration: Any = None, timeout: float = 5.0) -> None:
        from kubernetes import client, config

        if configuration is None:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            configuration = client.Configuration.get_default_copy()
        self._api = client.ApiClient(configuration)
        self._core = client.CoreV1Api(self._api)
        self._resource = client.ResourceV1Api(self._api)
        self._timeout = timeout

    def close(self) -> None:
        """Close the API client."""
        self._api.close()

    def _call(self, fn: Any, *args: Any, missing_ok: bool = False, exists_ok: bool = False, **kw: Any) -> Any:
        from kubernetes.client.rest import ApiException

        try:
            resp = fn(*args, _preload_content=False, _request_timeout=self._timeout, **kw)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            if exists_ok and exc.status == 409:
                return None
            raise KubeError(f"{fn.__name__}{args}: HTTP {exc.status} {exc.reason}", exc.status) from exc
        except Exception as exc:  # connection refused, timeout: urllib3 errors
            raise KubeError(f"{fn.__name__}{args}: {exc.__class__.__name__}: {exc}") from exc
        return json.loads(resp.data) if resp.data else {}

    def list_nodes(self) -> list[Obj]:
        """Every node of the cluster."""
        return list(self._call(self._core.list_node).get("items") or [])

    def get_node(self, name: str) -> Obj | None:
        """The named node, or None."""
        found: Obj | None = self._call(self._core.read_node, name, missing_ok=True)
        return found

    def delete_node(self, name: str) -> None:
        """Delete the node (one already gone is no error)."""
        self._call(self._core.delete_node, name, missing_ok=True)

    def create_pod(self, namespace: str, pod: Obj) -> None:
        """Create the pod in ``namespace`` (one that exists is no error)."""
        self._call(self._core.create_namespaced_pod, namespace, pod, exists_ok=True)

    def get_pod(self, namespace: str, name: str) -> Obj | None:
        """The named pod, or None."""
        found: Obj | None = self._call(self._core.read_namespaced_pod, name, namespace, missing_ok=True)
        return found

    def delete_pod(self, namespace: str, name: str) -> None:
        """A force delete (grace 0): the node is powered off, no kubelet will confirm a graceful one."""
        self._call(self._core.delete_namespaced_pod, name, namespace, grace_period_seconds=0, missing_ok=True)

    def list_resource_slices(self) -> list[Obj]:
        """Every DRA ResourceSlice of the cluster."""
        return list(self._call(self._resource.list_resource_slice).get("items") or [])

    def get_config_map(self, namespace: str, name: str) -> Obj | None:
        """The named ConfigMap, or None."""
        found: Obj | None = self._call(self._core.read_namespaced_config_map, name, namespace, missing_ok=True)
        return found

    def put_config_map(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Create or replace the ConfigMap's data."""
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        if self.get_config_map(namespace, name) is None:
            self._call(self._core.create_namespaced_config_map, namespace, body)
        else:
            self._call(self._core.replace_namespaced_config_map, name, namespace, body)
