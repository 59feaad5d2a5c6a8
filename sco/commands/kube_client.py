"""The controller's Kubernetes API client for pod claims: a kubeconfig file when one is given, else the pod's
in-cluster configuration (its service-account token and the cluster's CA, mounted by the kubelet, and the API
address in ``KUBERNETES_SERVICE_HOST``/``_PORT``), which is how the controller runs on Kubernetes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sco.errors import CliError

__all__ = ["SERVICE_ACCOUNT", "kube_api_client"]

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def kube_api_client(kubeconfig: Path | None, environ: Mapping[str, str] | None = None,
                    service_account: Path = SERVICE_ACCOUNT) -> Any:
    """A ``kubernetes.client.ApiClient``; ``CliError`` (K8S001) outside a pod without ``--kubeconfig``."""
    from kubernetes import client, config
    from kubernetes.config.incluster_config import InClusterConfigLoader

    if kubeconfig is not None:
        return config.new_client_from_config(str(kubeconfig))
    env = dict(os.environ if environ is None else environ)
    token, ca = service_account / "token", service_account / "ca.crt"
    if not env.get("KUBERNETES_SERVICE_HOST") or not token.is_file():
        raise CliError(f"K8S001: --claims-from kubernetes needs --kubeconfig FILE, or to run in a pod (the in-cluster "
                       f"configuration: KUBERNETES_SERVICE_HOST and the service-account token {token}); give the "
                       "kubeconfig of the cluster whose pods are the claims")
    configuration = client.Configuration()
    try:
        InClusterConfigLoader(token_filename=str(token), cert_filename=str(ca),
                              environ=env).load_and_set(configuration)
    except config.ConfigException as exc:
        raise CliError(f"K8S001: the in-cluster configuration cannot be loaded: {exc}; check the pod's service "
                       "account (automountServiceAccountToken) or give --kubeconfig") from None
    return client.ApiClient(configuration)
