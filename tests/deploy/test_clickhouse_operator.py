"""ClickHouse on Kubernetes through the Altinity operator: the Keeper ensemble and the cluster ``sco`` validate
against the fields the operator's CRDs declare (an excerpt checked in beside this file, unknown fields refused),
their pod, volume and Service templates against the Kubernetes schema, and the cluster carries the local stack's
users with the grants and profiles of deploy/clickhouse/users.xml, hashed passwords from a Secret, no
LoadBalancer and no way in but from SCO's namespace."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from sco.stack.credentials import CH_USERS
from stores.clickhouse_cluster import render_migrations
from testkit.paths import REPO

STORES = REPO / "deploy" / "stores"
EXCERPT = Path(__file__).with_name("altinity_crd_excerpt.yaml")
K8S_VERSION = "1.32"
USERS_XML = ET.parse(REPO / "deploy" / "clickhouse" / "users.xml").getroot()
# the front end's profile names (CH_USERS) -> the profiles of users.xml
PROFILES = {"default": "sco_default", "readonly": "sco_readonly"}
SECRET = "sco-clickhouse-users"


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((STORES / name).read_text())
    return doc


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The CRD's structural schema as JSON Schema that refuses a field it does not declare (the API server would
    prune it silently), except under x-kubernetes-preserve-unknown-fields."""
    out = {k: v for k, v in schema.items() if k not in ("properties", "items")}
    if "properties" in schema:
        out["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if "items" in schema:
        out["items"] = _strict(schema["items"])
    return out


def _validate_against_crd(doc: dict[str, Any]) -> None:
    excerpt = yaml.safe_load(EXCERPT.read_text())[doc["kind"]]
    assert doc["apiVersion"] == excerpt["apiVersion"]
    jsonschema.validate(doc["spec"], _strict(excerpt["spec"]))


@pytest.mark.parametrize("name", ["clickhouse-keeper.yaml", "clickhouse-chi.yaml"])
def test_the_installation_validates_against_the_fields_the_operators_crd_declares(name: str) -> None:
    _validate_against_crd(_load(name))


def test_a_field_the_crd_does_not_declare_is_refused() -> None:
    doc = _load("clickhouse-chi.yaml")
    broken = copy.deepcopy(doc)
    broken["spec"]["configuration"]["clusters"][0]["layout"]["replicaCount"] = 2  # replicasCount misspelt
    with pytest.raises(jsonschema.ValidationError, match="replicaCount"):
        _validate_against_crd(broken)
    broken = copy.deepcopy(doc)
    broken["spec"]["templates"]["volumeClaimTemplates"][0]["reclaimPolicy"] = "Keep"  # not in the CRD's enum
    with pytest.raises(jsonschema.ValidationError, match="Keep"):
        _validate_against_crd(broken)


@pytest.mark.parametrize("name", ["clickhouse-keeper.yaml", "clickhouse-chi.yaml"])
def test_the_pod_volume_and_service_templates_validate_against_the_kubernetes_schema(name: str) -> None:
    templates = _load(name)["spec"]["templates"]
    for pod in templates["podTemplates"]:
        spec = pod["spec"]
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod["name"]},
                                      "spec": spec}, K8S_VERSION, strict=True)
        assert spec["securityContext"]["runAsNonRoot"] is True
        for container in spec["containers"]:
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    for claim in templates["volumeClaimTemplates"]:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "metadata": {"name": claim["name"]}, "spec": claim["spec"]}, K8S_VERSION,
                                     strict=True)
        assert claim["reclaimPolicy"] == "Retain"  # deleting the installation keeps the data
    for service in templates.get("serviceTemplates", []):
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Service", "metadata": {"name": service["name"]},
                                      "spec": service["spec"]}, K8S_VERSION, strict=True)
        assert service["spec"]["type"] == "ClusterIP"


def test_the_cluster_is_one_shard_of_two_replicas_on_a_keeper_ensemble_of_three() -> None:
    keeper, chi = _load("clickhouse-keeper.yaml"), _load("clickhouse-chi.yaml")
    (keeper_cluster,) = keeper["spec"]["configuration"]["clusters"]
    assert keeper_cluster["layout"]["replicasCount"] == 3
    (cluster,) = chi["spec"]["configuration"]["clusters"]
    assert cluster["layout"] == {"shardsCount": 1, "replicasCount": 2}
    assert cluster["secret"] == {"auto": "true"}  # replicas talk to each other with a secret, not as a user
    # the Service the operator keeps on the ready keepers is keeper-<name>, on the client port configured
    (node,) = chi["spec"]["configuration"]["zookeeper"]["nodes"]
    assert node == {"host": f"keeper-{keeper['metadata']['name']}",
                    "port": int(keeper["spec"]["configuration"]["settings"]["keeper_server/tcp_port"])}
    # the schema rendered for the cluster (`sco clickhouse migrate --cluster sco`) names this cluster; the
    # operator defines the {shard} and {replica} macros it uses
    ddl = "\n".join(s for _, group in render_migrations(cluster["name"]) for s in group)
    assert "ON CLUSTER sco" in ddl and "{shard}" in ddl and "{replica}" in ddl
    for doc in (keeper, chi):
        (pod,) = doc["spec"]["templates"]["podTemplates"]
        assert pod["podDistribution"][0]["topologyKey"] == "kubernetes.io/hostname"  # one per node


def _users(chi: dict[str, Any]) -> dict[str, dict[str, Any]]:
    users: dict[str, dict[str, Any]] = {}
    for key, value in chi["spec"]["configuration"]["users"].items():
        user, field = key.split("/", 1)
        users.setdefault(user, {})[field] = value
    return users


def _xml_grants(profile: str) -> list[str]:
    for user in USERS_XML.iterfind("users/*"):
        if user.findtext("profile") == profile:
            return [q.text or "" for q in user.iter("query")]
    raise AssertionError(f"no user of profile {profile} in users.xml")


def test_the_cluster_has_the_stacks_users_with_the_grants_of_users_xml() -> None:
    users = _users(_load("clickhouse-chi.yaml"))
    assert set(users) == set(CH_USERS)
    for name, fields in users.items():
        profile = PROFILES[CH_USERS[name]]
        assert fields["profile"] == profile and fields["access_management"] == 0 and fields["quota"] == "default"
        grants = fields["grants/query"]
        extra = [g for g in grants if g not in _xml_grants(profile)]
        assert grants[:len(_xml_grants(profile))] == _xml_grants(profile), name
        # DDL ON CLUSTER (the migrations as sco, the dbt marts as analytics) needs the CLUSTER grant, nothing more
        assert extra == (["GRANT CLUSTER ON *.*"] if name in ("sco", "analytics") else []), name


def test_every_password_is_a_sha256_from_the_secret_and_no_user_is_reachable_from_anywhere() -> None:
    text = (STORES / "clickhouse-chi.yaml").read_text()
    users = _users(yaml.safe_load(text))
    for name, fields in users.items():
        assert fields["password_sha256_hex"] == {"valueFrom": {"secretKeyRef": {"name": SECRET, "key": name}}}
        assert not {"password", "password_double_sha1_hex", "k8s_secret_password"} & set(fields), name
        for cidr in fields["networks/ip"]:
            assert not re.match(r"(0\.0\.0\.0/0|::/0|127\.|::1)", cidr), (name, cidr)
    assert not re.search(r"password_sha256_hex:\s*[0-9a-f]{64}", text)


def _canonical(element: ET.Element) -> str:
    for node in element.iter():
        node.text = (node.text or "").strip() or None
        node.tail = None
    return ET.tostring(element, encoding="unicode")


def test_the_profiles_and_their_constraints_are_the_ones_of_users_xml() -> None:
    files = _load("clickhouse-chi.yaml")["spec"]["configuration"]["files"]
    shipped = ET.fromstring(files["users.d/sco-profiles.xml"]).find("profiles")
    local = USERS_XML.find("profiles")
    assert shipped is not None and local is not None
    assert _canonical(shipped) == _canonical(local)
    assert set(PROFILES.values()) == {p.tag for p in local}


def test_only_scos_namespace_reaches_clickhouse_and_only_on_its_http_port() -> None:
    policies = {p["metadata"]["name"]: p for p in yaml.safe_load_all((STORES / "clickhouse-network.yaml").read_text())}
    for policy in policies.values():
        kubernetes_validate.validate(policy, K8S_VERSION, strict=True)
    base = yaml.safe_load((REPO / "deploy" / "kubernetes" / "base" / "kustomization.yaml").read_text())
    chi = policies["clickhouse-in"]
    assert chi["spec"]["podSelector"]["matchLabels"] == {"clickhouse.altinity.com/chi": "sco"}
    (from_sco,) = [rule for rule in chi["spec"]["ingress"]
                   if rule["from"][0].get("namespaceSelector", {}).get("matchLabels", {})
                   .get("kubernetes.io/metadata.name") == base["namespace"]]
    assert from_sco["ports"] == [{"protocol": "TCP", "port": 8123}]
    keeper = policies["keeper-in"]
    assert keeper["spec"]["podSelector"]["matchLabels"] == {"clickhouse-keeper.altinity.com/chk": "sco"}
    assert not any("namespaceSelector" in peer and peer["namespaceSelector"]["matchLabels"]
                   ["kubernetes.io/metadata.name"] == base["namespace"]
                   for rule in keeper["spec"]["ingress"] for peer in rule["from"])
