"""Configuration rejection messages, `sco plugpool check`, and the deploy example."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.plugpool.config import ConfigError, credentials_from_env, parse_config
from sco.cli import main
from testkit.paths import REPO
from tests.controllers.plugpool.helpers import config_dict

EXAMPLES = REPO / "deploy" / "plugpool" / "examples"


def _base() -> dict[str, Any]:
    return config_dict({"worker-1": "http://plug-1.example", "worker-2": "http://plug-2.example"})


def _rejected(mutate: Any) -> str:
    data = _base()
    mutate(data)
    with pytest.raises(ConfigError) as exc:
        parse_config(data)
    return str(exc.value)


def test_the_spec_defaults_apply_when_left_out() -> None:
    data = _base()
    del data["listen"], data["powerOff"], data["providerIDPrefix"]
    config = parse_config(data)
    assert config.listen == "127.0.0.1:8086" and config.provider_id_prefix == "k3s://"
    assert config.power_off.not_ready_timeout == 300 and config.power_off.grace == 120
    assert config.power_off.namespace == "plugpool" and config.node_groups[0].template.pods == "110"


def test_max_size_above_the_number_of_nodes_is_rejected() -> None:
    msg = _rejected(lambda d: d["nodeGroups"][0].update(maxSize=3))
    assert "nodeGroups[0]: maxSize 3 is above the 2 node(s) listed in group 'workers'" in msg
    assert "lower maxSize to at most 2" in msg


def test_unknown_fields_are_rejected_with_their_place() -> None:
    msg = _rejected(lambda d: d["nodeGroups"][0]["nodes"][1]["plug"].update(swtich="relay"))
    assert "nodeGroups[0].nodes[1].plug.swtich: unknown field 'swtich'" in msg
    assert "powerOff.gracePeriod: unknown field" in _rejected(lambda d: d["powerOff"].update(gracePeriod="1m"))


def test_bad_quantities_and_durations_are_rejected() -> None:
    msg = _rejected(lambda d: d["nodeGroups"][0]["template"].update(memory="64GB"))
    assert "nodeGroups[0].template.memory: '64GB' is not a Kubernetes quantity" in msg
    msg = _rejected(lambda d: d["nodeGroups"][0]["template"].update(cpu="lots"))
    assert "template.cpu: 'lots' is not a Kubernetes quantity" in msg
    msg = _rejected(lambda d: d["powerOff"].update(notReadyTimeout="five minutes"))
    assert "powerOff.notReadyTimeout: 'five minutes' is not a duration" in msg


def test_two_nodes_on_one_plug_and_other_mistakes_are_rejected() -> None:
    def share(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["nodes"][1]["plug"] = copy.deepcopy(d["nodeGroups"][0]["nodes"][0]["plug"])

    assert "'worker-1' and 'worker-2' share the plug" in _rejected(share)
    assert "required field is missing" in _rejected(lambda d: d["nodeGroups"][0]["template"].pop("cpu"))
    assert "is not an http(s) URL" in _rejected(lambda d: d["nodeGroups"][0]["nodes"][0]["plug"].update(url="plug"))


def test_plug_credentials_come_from_the_environment() -> None:
    creds = credentials_from_env({"PLUGPOOL_PLUG_USERNAME": "admin", "PLUGPOOL_PLUG_PASSWORD": "pw"})
    assert creds is not None and creds.username == "admin" and "pw" not in repr(creds)
    assert credentials_from_env({}) is None
    with pytest.raises(ConfigError, match="set both PLUGPOOL_PLUG_USERNAME and PLUGPOOL_PLUG_PASSWORD"):
        credentials_from_env({"PLUGPOOL_PLUG_USERNAME": "admin"})


def test_sco_plugpool_check_prints_what_it_would_manage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLUGPOOL_PLUG_USERNAME", "admin")
    monkeypatch.setenv("PLUGPOOL_PLUG_PASSWORD", "secret")
    assert main(["plugpool", "check", "--config", str(EXAMPLES / "plugpool.yaml")]) == 0
    out = capsys.readouterr().out
    assert "group workers: size 0..2" in out and "basic auth as admin" in out and "secret" not in out
    assert "worker-1  k3s://worker-1  plug http://plug-worker-1.example/switch/Relay" in out
    assert "notReadyTimeout 300s, grace 120s" in out


def test_sco_plugpool_check_rejects_a_bad_config_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((EXAMPLES / "plugpool.yaml").read_text())
    data["nodeGroups"][0]["maxSize"] = 5
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["plugpool", "check", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "maxSize 5 is above the 2 node(s)" in err


def test_the_deploy_example_is_complete_and_consistent() -> None:
    docs = {
        (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")): d
        for f in sorted(EXAMPLES.glob("*.yaml"))
        if f.name != "plugpool.yaml"
        for d in yaml.safe_load_all(f.read_text())
    }
    assert ("Namespace", "plugpool", None) in docs
    embedded = docs[("ConfigMap", "plugpool-config", "kube-system")]["data"]["plugpool.yaml"]
    assert yaml.safe_load(embedded) == yaml.safe_load((EXAMPLES / "plugpool.yaml").read_text())
    config = parse_config(yaml.safe_load(embedded))
    cloud = yaml.safe_load(
        docs[("ConfigMap", "cluster-autoscaler-cloud-config", "kube-system")]["data"]["cloud-config"]
    )
    assert cloud["address"] == config.listen and cloud["grpc_timeout"] not in ("5s", None)
    pod = docs[("Deployment", "cluster-autoscaler", "kube-system")]["spec"]["template"]["spec"]
    names = [c["name"] for c in pod["containers"]]
    assert names == ["cluster-autoscaler", "plugpool"] and pod["nodeSelector"]
    assert "--cloud-provider=externalgrpc" in pod["containers"][0]["command"]
    env = {e["name"] for e in pod["containers"][1]["env"]}
    assert env == {"PLUGPOOL_PLUG_USERNAME", "PLUGPOOL_PLUG_PASSWORD"}
    cluster_rules = docs[("ClusterRole", "cluster-autoscaler", None)]["rules"]
    assert any("nodes" in r["resources"] and "delete" in r["verbs"] for r in cluster_rules)
    own = docs[("Role", "plugpool", config.power_off.namespace)]["rules"]
    assert any("pods" in r["resources"] and {"create", "get", "delete"} <= set(r["verbs"]) for r in own)
