"""The controller's Kubernetes client in a pod: the in-cluster configuration (service-account token, the
cluster's CA, the API address from the environment), a kubeconfig when one is given, and K8S001 outside a pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from sco.commands.kube_client import kube_api_client
from sco.errors import CliError

CA = """-----BEGIN CERTIFICATE-----
MIIBszCCAVmgAwIBAgIUSCOtestcaSCOtestcaSCOtestcaSCOwCgYIKoZIzj0EAwIw
-----END CERTIFICATE-----
"""


def _service_account(tmp_path: Path) -> Path:
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("pod-token-123")
    (sa / "ca.crt").write_text(CA)
    return sa


def test_in_a_pod_the_client_talks_to_the_service_address_with_the_pods_token_and_ca(tmp_path: Path) -> None:
    sa = _service_account(tmp_path)
    api = kube_api_client(None, {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, sa)
    conf = api.configuration
    assert conf.host == "https://10.96.0.1:443"
    assert conf.auth_settings()["BearerToken"]["value"].lower() == "bearer pod-token-123"
    assert conf.ssl_ca_cert == str(sa / "ca.crt")


def test_outside_a_pod_without_a_kubeconfig_it_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(CliError, match=r"K8S001: --claims-from kubernetes needs --kubeconfig"):
        kube_api_client(None, {}, tmp_path / "none")


def test_a_kubeconfig_is_used_when_given(tmp_path: Path) -> None:
    (tmp_path / "config").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://api.example:6443'}}]\n"
        "users: [{name: u, user: {token: t0}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n")
    api = kube_api_client(tmp_path / "config", {}, tmp_path / "none")
    assert api.configuration.host == "https://api.example:6443"


def test_the_controller_command_takes_claims_from_kubernetes() -> None:
    from sco.cli import build_parser

    args = build_parser().parse_args(["controller", "run", "--partition", "r1/k8s-prod", "--bundle", "b", "--pubkey",
                                      "k", "--claims-from", "kubernetes"])
    assert args.claims_from == "kubernetes" and args.kubeconfig is None
