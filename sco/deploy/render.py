"""``sco deploy render``: everything one region's Kubernetes install needs, in one directory that
``kubectl apply -k DIR`` installs.

* the kustomize bases of ``deploy/kubernetes`` (copied, so the directory stands alone) and an overlay naming
  the image and its tag, one controller per partition the compiled bundles hold, the region for the exclusion
  watcher, and a migrate Job named after the release (a Job's template is immutable: re-applying a new release
  under the old name is refused; ``sco-migrate-<release>`` is a new Job that runs once);
* the Secrets each component reads (``sco-<component>-stores``: its store URLs from the stack's credentials),
  the distributor's table of who may fetch, and the metrics token every scrape sends;
* the ConfigMaps: ``compiler.yaml`` of the contract repository, and per partition its signed bundles with the
  signing (and governance) public keys;
* per Slurm partition, its controller reads claims through the cluster's slurmrestd (``--slurm-rest-url``; the image
  has no Slurm client) with the JWT of Secret ``sco-slurm-token-<region>-<cluster>`` (key ``token``: minted on the
  Slurm side and rotated by the operator, never rendered), and a NetworkPolicy lets it reach that address and port;
* ``nats-values.yaml`` for the official NATS chart: ``deploy/helm/nats-values.yaml`` with the stack's users, their
  bcrypt hashes and subject permissions (``sco.stack.credentials``), for ``helm upgrade … -f`` (not applied by
  kustomize);
* ``clickhouse-users-secret.yaml``: the Secret ``sco-clickhouse-users`` in ``sco-stores`` that the
  ClickHouseInstallation (deploy/stores/clickhouse-chi.yaml) reads its users' passwords from, as SHA-256 (for
  ``kubectl apply -f`` before ``kubectl apply -k deploy/stores``).

``plan`` is pure (file name -> text from the inputs); ``write`` puts the files down (the Secrets 0600).
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import RenderError

__all__ = ["BASES", "CLICKHOUSE_USERS_SECRET", "SECRETS", "STORES_NAMESPACE", "RenderError", "RenderInput", "job_name",
           "plan", "slurm_token_secret", "slurmrestd_egress", "write"]

BASES = ("base", "controller", "monitoring")
STORES_NAMESPACE = "sco-stores"  # deploy/stores/namespace.yaml
CLICKHOUSE_USERS_SECRET = "sco-clickhouse-users"  # deploy/stores/clickhouse-chi.yaml's secretKeyRef
# Secret -> environment variable -> (component in stack.json "components", store); "@owner" is the stack's
# administrative URL of the store (the owner role of PostgreSQL, ClickHouse's `sco` user)
SECRETS: dict[str, dict[str, tuple[str, str]]] = {
    "sco-controller-stores": {"SCO_POSTGRES_URL": ("controller", "postgres"), "SCO_NATS_URL": ("controller", "nats")},
    "sco-exclusion-watcher-stores": {"SCO_POSTGRES_URL": ("controller", "postgres"),
                                     "SCO_NATS_URL": ("controller", "nats")},  # its durable: the controller's
    "sco-ingest-stores": {"SCO_NATS_URL": ("ingest", "nats"), "SCO_CLICKHOUSE_URL": ("ingest", "clickhouse")},
    "sco-outbox-relay-stores": {"SCO_POSTGRES_URL": ("relay", "postgres"), "SCO_NATS_URL": ("relay", "nats"),
                                "SCO_CLICKHOUSE_URL": ("relay", "clickhouse")},
    "sco-analytics-stores": {"SCO_POSTGRES_URL": ("analytics", "postgres"),
                             "SCO_CLICKHOUSE_URL": ("analytics", "clickhouse")},
    "sco-owner-stores": {"SCO_POSTGRES_URL": ("@owner", "postgres"), "SCO_CLICKHOUSE_URL": ("@owner", "clickhouse")},
    "sco-rollout-stores": {"SCO_CLICKHOUSE_URL": ("reports", "clickhouse")},
}
_BUNDLE_FILES = ("controller-bundle.json", "controller-bundle.json.sig", "controller-bundle.json.governance.sig",
                 "agent-bundle.json", "agent-bundle.json.sig")
_NAME = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class RenderInput:
    """What a render reads, already loaded (``sco.commands.deploy`` reads the files)."""

    region: str
    image: str  # repository, e.g. registry.example.org/sco
    release: str  # the image tag; also names the migrate Job
    stack: Mapping[str, Any]  # $SCO_HOME/stack.json
    distributor_credentials: str  # $SCO_HOME/credentials.json, the distributor's table
    metrics_token: str
    compiler_settings: str  # compiler.yaml of the contract repository
    bundles: Mapping[str, Mapping[str, str]]  # cluster -> file name -> text (the compile's <region>/<cluster>)
    public_keys: Mapping[str, str]  # bundle-signing.pub and governance.pub
    kubernetes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # base -> file -> text
    nats_values: str = ""  # deploy/helm/nats-values.yaml
    nats_users: tuple[Mapping[str, Any], ...] = ()  # {user, password (bcrypt), permissions}
    clickhouse_password_hashes: Mapping[str, str] = field(default_factory=dict)  # user -> SHA-256 hex
    slurm_rest: Mapping[str, str] = field(default_factory=dict)  # Slurm cluster -> its slurmrestd base URL
    slurm_user: str = "sco"  # the Slurm user the partitions' tokens are minted for


def job_name(release: str) -> str:
    """``sco-migrate-<release>`` as a Kubernetes name (lower case, dashes, at most 63 characters)."""
    slug = _NAME.sub("-", release.lower()).strip("-")
    if not slug:
        raise RenderError(f"DEP001: release {release!r} has no letter or digit to name the migrate Job with")
    return f"sco-migrate-{slug}"[:63].rstrip("-")


def _url(stack: Mapping[str, Any], component: str, store: str, secret: str) -> str:
    if component == "@owner":
        url = (stack.get("services", {}).get(store) or {}).get("url")
    else:
        url = (stack.get("components", {}).get(component) or {}).get(store)
    if not url:
        raise RenderError(f"DEP002: the stack has no {store} URL for {component.lstrip('@')} (Secret {secret}); run "
                          "`sco up` (or give the store's URL, SCO_<STORE>_URL, before it) and render again")
    return str(url)


def _doc(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False, width=1000)


def secrets(inp: RenderInput) -> str:
    """Every Secret of the install, as one multi-document YAML text (``stringData``)."""
    docs = []
    for name, env in SECRETS.items():
        data = {var: _url(inp.stack, comp, store, name) for var, (comp, store) in env.items()}
        docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
                     "stringData": data})
    docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sco-distributor-home"},
                 "type": "Opaque", "stringData": {"credentials.json": inp.distributor_credentials}})
    docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sco-metrics-token"}, "type": "Opaque",
                 "stringData": {"token": inp.metrics_token}})
    return "---\n".join(_doc(d) for d in docs)


def configmaps(inp: RenderInput) -> str:
    """The compiler settings and one bundle ConfigMap per partition."""
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sco-compiler-settings"},
             "data": {"compiler.yaml": inp.compiler_settings}}]
    for key, flag in (("bundle-signing.pub", "--pubkey"), ("governance.pub", "--governance-pubkey")):
        if key not in inp.public_keys:
            raise RenderError(f"DEP003: no {key}: give {flag} (the controllers verify the bundles with it)")
    for cluster, files in sorted(inp.bundles.items()):
        missing = [f for f in ("controller-bundle.json", "controller-bundle.json.sig") if f not in files]
        if missing:
            raise RenderError(f"DEP004: partition {inp.region}/{cluster} has no {', '.join(missing)}; "
                              "compile the contract repository (`sco contracts compile … --out`) and render again")
        data = {k: v for k, v in files.items() if k in _BUNDLE_FILES} | dict(inp.public_keys)
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"sco-bundle-{inp.region}-{cluster}"}, "data": data})
    return "---\n".join(_doc(d) for d in docs)


_TOKEN_DIR = "/etc/sco/slurm"


def slurm_token_secret(region: str, cluster: str) -> str:
    """The Secret holding a Slurm partition's slurmrestd token (key ``token``), created by the operator."""
    return f"sco-slurm-token-{region}-{cluster}"


def _slurm_ops(region: str, cluster: str, url: str, user: str) -> list[dict[str, Any]]:
    args = ("--slurm-rest-url", url, "--slurm-user", user, "--slurm-token-file", f"{_TOKEN_DIR}/token")
    spec = "/spec/template/spec"
    return [*({"op": "add", "path": f"{spec}/containers/0/args/-", "value": v} for v in args),
            {"op": "add", "path": f"{spec}/containers/0/volumeMounts/-",
             "value": {"name": "slurm-token", "mountPath": _TOKEN_DIR, "readOnly": True}},
            {"op": "add", "path": f"{spec}/volumes/-", "value": {"name": "slurm-token", "secret": {
                "secretName": slurm_token_secret(region, cluster), "defaultMode": 0o400}}}]


def slurmrestd_egress(region: str, cluster: str, url: str) -> dict[str, Any]:
    """The NetworkPolicy letting the partition's controller reach its slurmrestd: the URL's port, and its address
    when the URL names one (a host name resolves outside the policy's reach: the port alone then)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RenderError(f"DEP008: the slurmrestd URL {url!r} of partition {region}/{cluster} is not http(s)://host"
                          "[:port]; give --slurm-rest-url <cluster>=http://<slurmrestd host>:6820")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port}]}
    try:
        address = ipaddress.ip_address(parts.hostname)
        rule = {"to": [{"ipBlock": {"cidr": f"{address}/{address.max_prefixlen}"}}], **rule}
    except ValueError:
        pass
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "controller-slurmrestd"},
            "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "sco-controller"}},
                     "policyTypes": ["Egress"], "egress": [rule]}}


def _partition(region: str, cluster: str, kubernetes_claims: bool, slurm_rest: str = "",
               slurm_user: str = "sco") -> str:
    ops = [{"op": "replace", "path": "/spec/template/spec/containers/0/args/3", "value": f"{region}/{cluster}"},
           {"op": "replace", "path": "/spec/template/spec/containers/0/args/5", "value": region},
           {"op": "replace", "path": "/spec/template/spec/volumes/1/configMap/name",
            "value": f"sco-bundle-{region}-{cluster}"}]
    if kubernetes_claims:
        ops += [{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": v}
                for v in ("--claims-from", "kubernetes")]
    else:
        ops += _slurm_ops(region, cluster, slurm_rest, slurm_user)
    resources = ["../../bases/controller", *([] if kubernetes_claims else ["slurmrestd-egress.yaml"])]
    return _doc({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                 "resources": resources, "nameSuffix": f"-{cluster}",
                 "labels": [{"pairs": {"sco.example.org/partition": cluster}, "includeSelectors": True}],
                 "patches": [{"target": {"kind": "Deployment", "name": "sco-controller"}, "patch": _doc(ops)}]})


def _schedulers(files: Mapping[str, str]) -> set[str]:
    """The schedulers the partition's contracts name (``kubernetes``: claims are the cluster's pods)."""
    try:
        workloads = yaml.safe_load(files.get("controller-bundle.json", "{}")).get("workloads") or {}
        return {str(w.get("scheduler")) for w in workloads.values() if isinstance(w, dict)}
    except (yaml.YAMLError, AttributeError):
        return set()


def overlay(inp: RenderInput) -> str:
    """The region's kustomization: the bases, the partitions, the Secrets and ConfigMaps, the image and tag."""
    watcher = [{"op": "replace", "path": "/spec/template/spec/containers/0/args/3", "value": inp.region}]
    migrate = [{"op": "replace", "path": "/metadata/name", "value": job_name(inp.release)}]
    return ("# Rendered by `sco deploy render`: apply with `kubectl apply -k` this directory.\n" + _doc({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "sco",
        "resources": ["bases/base", *[f"partitions/{c}" for c in sorted(inp.bundles)], "secrets.yaml",
                      "configmaps.yaml"],
        "components": ["bases/monitoring"],
        "images": [{"name": "sco", "newName": inp.image, "newTag": inp.release}],
        "patches": [{"target": {"kind": "Deployment", "name": "sco-exclusion-watcher"}, "patch": _doc(watcher)},
                    {"target": {"kind": "Job", "name": "sco-migrate"}, "patch": _doc(migrate)}]}))


def nats_values(inp: RenderInput) -> str:
    """The NATS chart's values with the stack's users merged into the server configuration."""
    values = yaml.safe_load(inp.nats_values) or {}
    merge = values.setdefault("config", {}).setdefault("merge", {})
    merge["authorization"] = {"users": [dict(u) for u in inp.nats_users]}
    return ("# Rendered by `sco deploy render` from deploy/helm/nats-values.yaml and the stack's NATS users\n"
            "# (bcrypt hashes, never a password): helm upgrade --install nats nats/nats -n sco-stores -f this file\n"
            + _doc(values))


def clickhouse_users_secret(inp: RenderInput) -> str:
    """The Secret the ClickHouseInstallation's users read their ``password_sha256_hex`` from (one key per user)."""
    return ("# Rendered by `sco deploy render`: the ClickHouse users' SHA-256 password hashes (never a password) for\n"
            "# deploy/stores/clickhouse-chi.yaml: kubectl apply -f this file\n"
            + _doc({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": CLICKHOUSE_USERS_SECRET, "namespace": STORES_NAMESPACE}, "type": "Opaque",
                    "stringData": dict(sorted(inp.clickhouse_password_hashes.items()))}))


def plan(inp: RenderInput) -> dict[str, str]:
    """Relative path -> text of every file of the rendered install."""
    if not inp.bundles:
        raise RenderError(f"DEP005: no partition of region {inp.region} in the compiled bundles; give --bundles, "
                          "the output directory of `sco contracts compile`")
    missing = [b for b in BASES if b not in inp.kubernetes]
    if missing:
        raise RenderError(f"DEP006: deploy/kubernetes/{missing[0]} not found; give --kubernetes, the deploy/kubernetes "
                          "directory of the release")
    files = {f"bases/{base}/{name}": text for base in BASES for name, text in inp.kubernetes[base].items()}
    files["kustomization.yaml"] = overlay(inp)
    files["secrets.yaml"] = secrets(inp)
    files["configmaps.yaml"] = configmaps(inp)
    if inp.nats_values:
        files["nats-values.yaml"] = nats_values(inp)
    if inp.clickhouse_password_hashes:
        files["clickhouse-users-secret.yaml"] = clickhouse_users_secret(inp)
    unknown = sorted(set(inp.slurm_rest) - set(inp.bundles))
    if unknown:
        raise RenderError(f"DEP009: --slurm-rest-url names {', '.join(unknown)}, not a partition of region "
                          f"{inp.region} in the compiled bundles ({', '.join(sorted(inp.bundles))})")
    for cluster, bundle in inp.bundles.items():
        kube = _schedulers(bundle) == {"kubernetes"}
        url = inp.slurm_rest.get(cluster, "")
        if not kube and not url:
            raise RenderError(f"DEP007: partition {inp.region}/{cluster} claims from Slurm and its controller runs "
                              "without a Slurm client: give --slurm-rest-url "
                              f"{cluster}=http://<its slurmrestd>:6820 (docs/operations.md)")
        files[f"partitions/{cluster}/kustomization.yaml"] = _partition(inp.region, cluster, kube, url,
                                                                       inp.slurm_user)
        if not kube:
            files[f"partitions/{cluster}/slurmrestd-egress.yaml"] = _doc(slurmrestd_egress(inp.region, cluster, url))
    return files


def write(files: Mapping[str, str], out: Path) -> list[Path]:
    """Write ``files`` under ``out`` (created); the Secrets file is readable by its owner only."""
    written = []
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel in ("secrets.yaml", "nats-values.yaml", "clickhouse-users-secret.yaml"):
            path.chmod(0o600)
        written.append(path)
    return written
