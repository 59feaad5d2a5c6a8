"""``sco deploy render``: a region's whole install from a stack's credentials, the contract repository and its
compiled bundles; it builds with ``kubectl kustomize``, validates against the Kubernetes schema, holds the
stack's URLs in the Secrets each component reads, and a second release's render names its migrate Job apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sco.deploy.render import SECRETS, RenderError, job_name, slurm_token_secret, slurmrestd_egress
from sco.stack import credentials as creds_mod
from testkit.paths import REPO

K8S_VERSION = "1.32"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A stack home (credentials and stack.json as `sco up` writes them), keys, the example contracts compiled."""
    root = tmp_path_factory.mktemp("render")
    home = root / "home"
    home.mkdir()
    creds = creds_mod.load_or_create(home)
    ports = {"postgres": 15432, "nats": 14222, "clickhouse": 18123}
    stack = {"version": 1, "services": {
        "postgres": {"url": creds_mod.pg_url(creds_mod.PG_OWNER, creds.postgres[creds_mod.PG_OWNER], 15432),
                     "managed": True, "port": 15432},
        "clickhouse": {"url": creds_mod.clickhouse_url("sco", creds.clickhouse["sco"], 18123), "managed": True,
                       "port": 18123}},
        "components": creds_mod.component_urls(creds, ports)}
    (home / "stack.json").write_text(json.dumps(stack))
    keys = root / "keys"
    subprocess.run([sys.executable, "-m", "sco", "keys", "init", "--dir", str(keys)], check=True, cwd=REPO,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "sco", "contracts", "compile", str(REPO / "deploy" / "contracts"), "--out",
                    str(root / "compiled"), "--key", str(keys / "signing.key.pem"), "--governance-key",
                    str(keys / "governance.key.pem")], check=True, cwd=REPO, capture_output=True)
    return {"root": root, "home": home, "keys": keys, "compiled": root / "compiled"}


SLURMRESTD = "slurm-hpc=http://10.40.0.10:6820"


def _run_render(inputs: dict[str, Path], out: Path, release: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sco", "deploy", "render", "--region", "r1", "--out", str(out),
                           "--image", "registry.internal/sco", "--release", release, "--bundles",
                           str(inputs["compiled"]), "--pubkey", str(inputs["keys"] / "signing.pub.pem"),
                           "--governance-pubkey", str(inputs["keys"] / "governance.pub.pem"),
                           "--home", str(inputs["home"]), *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def _render(inputs: dict[str, Path], release: str) -> tuple[Path, list[dict[str, Any]]]:
    out = inputs["root"] / f"out-{release}"
    run = _run_render(inputs, out, release, "--slurm-rest-url", SLURMRESTD)
    assert run.returncode == 0, run.stdout + run.stderr
    kubectl = Path(sys.executable).parent / "kubectl"
    built = subprocess.run([str(kubectl), "kustomize", str(out)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return out, [d for d in yaml.safe_load_all(built.stdout) if d]


def test_the_render_builds_and_every_object_validates(inputs: dict[str, Path]) -> None:
    import kubernetes_validate

    _, objects = _render(inputs, "0.2.0")
    for obj in objects:
        if not obj["apiVersion"].startswith("monitoring.coreos.com/"):
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    images = {c["image"] for o in objects if o["kind"] == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.internal/sco:0.2.0"}


def test_every_secret_and_configmap_a_pod_names_is_rendered(inputs: dict[str, Path]) -> None:
    _, objects = _render(inputs, "0.2.0")
    have = {(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in ("Secret", "ConfigMap")}
    wanted = set()
    for o in objects:
        spec = (o["spec"]["jobTemplate"]["spec"]["template"]["spec"] if o["kind"] == "CronJob"
                else o["spec"]["template"]["spec"] if o["kind"] in ("Deployment", "Job") else None)
        if spec is None:
            continue
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            wanted |= {("Secret", e["secretRef"]["name"]) for e in c.get("envFrom", [])}
        for v in spec.get("volumes", []):
            if "secret" in v:
                wanted.add(("Secret", v["secret"]["secretName"]))
            if "configMap" in v:
                wanted.add(("ConfigMap", v["configMap"]["name"]))
    wanted.discard(("Secret", "sco-controller-openstack"))  # the OpenStack issuer's clouds.yaml: the operator's
    wanted.discard(("Secret", slurm_token_secret("r1", "slurm-hpc")))  # minted on the Slurm side and rotated there
    assert wanted <= have, wanted - have


def test_the_secrets_hold_the_stacks_component_urls(inputs: dict[str, Path]) -> None:
    out, objects = _render(inputs, "0.2.0")
    stack = json.loads((inputs["home"] / "stack.json").read_text())
    secrets = {o["metadata"]["name"]: o["stringData"] for o in objects if o["kind"] == "Secret"}
    assert secrets["sco-ingest-stores"] == {"SCO_NATS_URL": stack["components"]["ingest"]["nats"],
                                            "SCO_CLICKHOUSE_URL": stack["components"]["ingest"]["clickhouse"]}
    assert secrets["sco-owner-stores"]["SCO_POSTGRES_URL"] == stack["services"]["postgres"]["url"]
    assert set(SECRETS) <= set(secrets)
    assert len(secrets["sco-metrics-token"]["token"]) >= 16
    assert (out / "secrets.yaml").stat().st_mode & 0o077 == 0


def test_each_partition_gets_its_controller_and_signed_bundles(inputs: dict[str, Path]) -> None:
    _, objects = _render(inputs, "0.2.0")
    controllers = {o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0]["args"] for o in objects
                   if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("sco-controller-")}
    assert sorted(controllers) == ["sco-controller-k8s-prod", "sco-controller-slurm-hpc"]
    assert controllers["sco-controller-k8s-prod"][3] == "r1/k8s-prod"
    assert controllers["sco-controller-k8s-prod"][-2:] == ["--claims-from", "kubernetes"]
    bundle = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "sco-bundle-r1-k8s-prod")
    expected = (inputs["compiled"] / "r1" / "k8s-prod" / "controller-bundle.json").read_text()
    assert bundle["data"]["controller-bundle.json"] == expected
    assert bundle["data"]["bundle-signing.pub"] == (inputs["keys"] / "signing.pub.pem").read_text()


def test_a_slurm_partitions_controller_reads_its_slurmrestd_with_the_token_secret_and_may_reach_only_it(
        inputs: dict[str, Path]) -> None:
    from sco.cli import build_parser

    _, objects = _render(inputs, "0.2.0")
    ctl = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "sco-controller-slurm-hpc")
    pod = ctl["spec"]["template"]["spec"]
    args = build_parser().parse_args(pod["containers"][0]["args"])
    assert (args.slurm_rest_url, args.slurm_user, str(args.slurm_token_file)) == (
        "http://10.40.0.10:6820", "sco", "/etc/sco/slurm/token")
    assert {"name": "slurm-token", "mountPath": "/etc/sco/slurm", "readOnly": True} in pod["containers"][0][
        "volumeMounts"]
    assert {"name": "slurm-token", "secret": {"secretName": "sco-slurm-token-r1-slurm-hpc", "defaultMode": 0o400}} in (
        pod["volumes"])
    egress = next(o["spec"] for o in objects if o["kind"] == "NetworkPolicy"
                  and o["metadata"]["name"] == "controller-slurmrestd-slurm-hpc")
    assert egress["podSelector"]["matchLabels"]["sco.example.org/partition"] == "slurm-hpc"
    assert egress["egress"] == [{"to": [{"ipBlock": {"cidr": "10.40.0.10/32"}}],
                                 "ports": [{"protocol": "TCP", "port": 6820}]}]
    k8s = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "sco-controller-k8s-prod")
    assert "--slurm-rest-url" not in k8s["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize(("extra", "code"), [
    ((), "DEP007: partition r1/slurm-hpc claims from Slurm"),
    (("--slurm-rest-url", "slurm-hpc"), "DEP010"),
    (("--slurm-rest-url", SLURMRESTD, "--slurm-rest-url", "slurm-gpu=http://x:6820"), "DEP009"),
    (("--slurm-rest-url", "slurm-hpc=10.40.0.10:6820"), "DEP008")])
def test_a_slurm_partition_without_a_usable_slurmrestd_url_is_refused_saying_how_to_fix(
        inputs: dict[str, Path], tmp_path: Path, extra: tuple[str, ...], code: str) -> None:
    run = _run_render(inputs, tmp_path / "out", "0.2.0", *extra)
    assert run.returncode == 2 and code in run.stderr, run.stderr


def test_a_slurmrestd_named_by_host_is_reached_on_its_port_alone() -> None:
    assert slurmrestd_egress("r1", "c", "https://slurmrestd.hpc.example")["spec"]["egress"] == [
        {"ports": [{"protocol": "TCP", "port": 443}]}]


def test_a_second_release_renders_a_migrate_job_of_its_own_and_nothing_else_moves(inputs: dict[str, Path]) -> None:
    import kubernetes_validate

    _, first = _render(inputs, "0.2.0")
    _, second = _render(inputs, "0.3.0-rc.1")
    for obj in second:  # the second release validates as the first does
        if not obj["apiVersion"].startswith("monitoring.coreos.com/"):
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    jobs = [{o["metadata"]["name"] for o in objs if o["kind"] == "Job"} for objs in (first, second)]
    assert jobs == [{"sco-migrate-0-2-0"}, {"sco-migrate-0-3-0-rc-1"}]
    names = [{(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] != "Job"} for objs in (first, second)]
    assert names[0] == names[1]


def test_a_release_without_a_letter_or_digit_is_refused() -> None:
    assert job_name("v1.2.3") == "sco-migrate-v1-2-3"
    with pytest.raises(RenderError, match="DEP001"):
        job_name("...")


def test_a_stack_without_a_store_says_which_and_how_to_fix(inputs: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "credentials.json").write_text((inputs["home"] / "credentials.json").read_text())
    (home / "stack.json").write_text(json.dumps({"version": 1, "services": {}, "components": {}}))
    run = subprocess.run([sys.executable, "-m", "sco", "deploy", "render", "--region", "r1", "--out",
                          str(tmp_path / "out"), "--image", "i", "--release", "1", "--bundles", str(inputs["compiled"]),
                          "--pubkey", str(inputs["keys"] / "signing.pub.pem"), "--governance-pubkey",
                          str(inputs["keys"] / "governance.pub.pem"), "--home", str(home)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "DEP002: the stack has no postgres URL for controller" in run.stderr


def test_the_nats_chart_values_carry_the_stacks_users_as_bcrypt_hashes(inputs: dict[str, Path]) -> None:
    import bcrypt

    out, _ = _render(inputs, "0.2.0")
    values = yaml.safe_load((out / "nats-values.yaml").read_text())
    users = {u["user"]: u for u in values["config"]["merge"]["authorization"]["users"]}
    creds = creds_mod.load_or_create(inputs["home"])
    assert set(creds_mod.NATS_PERMISSIONS) <= set(users)
    for name in creds_mod.NATS_PERMISSIONS:
        assert bcrypt.checkpw(creds.nats[name].encode(), users[name]["password"].encode()), name
        assert creds.nats[name] not in (out / "nats-values.yaml").read_text()
    assert values["config"]["jetstream"]["enabled"] is True  # the shipped values, kept
    assert (out / "nats-values.yaml").stat().st_mode & 0o077 == 0


def test_the_nats_users_carry_the_permissions_of_the_local_stack_with_its_denies(inputs: dict[str, Path]) -> None:
    out, _ = _render(inputs, "0.2.0")
    users = {u["user"]: u for u in yaml.safe_load((out / "nats-values.yaml").read_text())
             ["config"]["merge"]["authorization"]["users"]}
    for user in creds_mod.nats_users(creds_mod.load_or_create(inputs["home"])):
        assert users[user.name].get("permissions") == creds_mod.nats_permissions(user), user.name
    assert "permissions" not in users["admin"]
    # an empty allow-list would let nats-server allow every subject: a user allowed nothing is denied everything
    assert users["watcher"]["permissions"]["publish"] == {"deny": [">"]}
    controller = users["controller"]["permissions"]["publish"]
    assert controller["allow"] == creds_mod.NATS_PERMISSIONS["controller"][0]  # type: ignore[index]
    assert controller["deny"] == creds_mod.NATS_PUBLISH_DENY["controller"] != []
    assert "$JS.API.CONSUMER.*.SCO_EVENTS.sco-ingest" in controller["deny"]  # the ingest's durable consumer


def test_the_clickhouse_users_secret_holds_each_users_sha256_for_the_installation(inputs: dict[str, Path]) -> None:
    import hashlib

    import kubernetes_validate

    out, _ = _render(inputs, "0.2.0")
    path = out / "clickhouse-users-secret.yaml"
    secret = yaml.safe_load(path.read_text())
    kubernetes_validate.validate(secret, K8S_VERSION, strict=True)
    chi = yaml.safe_load((REPO / "deploy" / "stores" / "clickhouse-chi.yaml").read_text())
    refs = {v["valueFrom"]["secretKeyRef"]["key"]: v["valueFrom"]["secretKeyRef"]["name"]
            for k, v in chi["spec"]["configuration"]["users"].items() if k.endswith("/password_sha256_hex")}
    assert secret["metadata"] == {"name": "sco-clickhouse-users", "namespace": chi["metadata"]["namespace"]}
    assert set(refs.values()) == {secret["metadata"]["name"]} and set(refs) == set(secret["stringData"])
    creds = creds_mod.load_or_create(inputs["home"])
    for user, digest in secret["stringData"].items():
        assert digest == hashlib.sha256(creds.clickhouse[user].encode()).hexdigest(), user
        assert creds.clickhouse[user] not in path.read_text()
    assert path.stat().st_mode & 0o077 == 0
