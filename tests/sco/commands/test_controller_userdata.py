"""``sco controller user-data`` prints what the controller sends at launch; the real cloud-init renders it
(deploy/testbed/cloudinit/up) and ``sco-agent check`` accepts the files it writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.paths import REPO
from tests.support import cloudinit
from tests.support.cli import sco

INSTANCE = "6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example contracts compiled and signed by `sco contracts compile`, as an operator would."""
    tmp = tmp_path_factory.mktemp("compiled")
    assert sco("keys", "init", "--dir", str(tmp / "keys")).returncode == 0
    done = sco("contracts", "compile", str(REPO / "deploy" / "contracts"), "--out", str(tmp / "out"),
               "--key", str(tmp / "keys" / "signing.key.pem"),
               "--governance-key", str(tmp / "keys" / "governance.key.pem"), cwd=tmp)
    assert done.returncode == 0, done.stderr
    yield tmp


def user_data(compiled: Path, partition: str, *extra: str) -> Any:
    return sco("controller", "user-data", "--partition", partition, "--bundles", str(compiled / "out"),
               "--pubkey", str(compiled / "keys" / "signing.pub.pem"),
               "--governance-key", str(compiled / "keys" / "governance.pub.pem"), *extra)


AGENT = ("--agent-nats-url", "nats://relay.h1.r1:4222", "--agent-credentials", "stack",
         "--metadata-url", "http://169.254.169.254/metadata/{instance}", "--distributor-url", "https://bundles.r1:8443",
         "--pool", "r1-hall-a-gp-small")


def test_user_data_prints_the_jinja_cloud_config_of_the_partition(compiled: Path) -> None:
    out = user_data(compiled, "r1/k8s-prod", *AGENT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("## template: jinja\n#cloud-config\n")
    files = {f["path"]: f for f in yaml.safe_load(out.stdout)["write_files"]}
    doc = json.loads(files["/etc/sco/agent-userdata.json"]["content"])
    assert doc["partition"] == "r1/k8s-prod" and doc["scheduler"] == "kubernetes"
    assert doc["distributor_url"] == "https://bundles.r1:8443/r1/k8s-prod/"
    assert set(files) == {"/etc/sco/agent-userdata.json", "/etc/sco/agent.env", "/etc/sco/nats.password"}


@pytest.mark.parametrize(("args", "message"), [
    (("--partition", "r1"), "must be '<region>/<cluster>'"),
    (("--partition", "r1/nowhere"), "compile it with `sco contracts compile --out`"),
    (("--partition", "r1/slurm-hpc", "--workload", "nope"), "--workload 'nope' is not in r1/slurm-hpc"),
    (("--partition", "r1/slurm-hpc", "--agent-nats-url", "nats://relay:4222"), "needs --agent-credentials"),
    (("--partition", "r1/slurm-hpc", "--metadata-url", "http://m/metadata"), "userdata-metadata-url"),
])
def test_bad_options_are_one_line_errors_naming_the_fix(compiled: Path, args: tuple[str, ...], message: str) -> None:
    out = sco("controller", "user-data", "--bundles", str(compiled / "out"),
              "--pubkey", str(compiled / "keys" / "signing.pub.pem"),
              "--governance-key", str(compiled / "keys" / "governance.pub.pem"), *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.testbed
@pytest.mark.parametrize("partition", ["r1/slurm-hpc", "r1/k8s-prod"])
def test_cloud_init_validates_and_renders_it_and_the_agent_accepts_the_files_it_writes(
        compiled: Path, tmp_path: Path, partition: str) -> None:
    out = user_data(compiled, partition, *AGENT)
    assert out.returncode == 0, out.stderr
    rendered = cloudinit.render(out.stdout, cloudinit.instance_data(INSTANCE, "node-7"), tmp_path)
    assert rendered.startswith("#cloud-config") and "{{" not in rendered
    valid = cloudinit.schema(rendered, tmp_path)
    assert valid.returncode == 0 and "Valid cloud-config" in valid.stdout, valid.stdout + valid.stderr
    files = cloudinit.lay_out(rendered, tmp_path / "root")
    check = cloudinit.agent_check(files, compiled / "keys" / "signing.pub.pem", tmp_path / "state")
    assert check.returncode == 0, check.stderr
    assert f"ok: {partition} generation 1" in check.stdout
    assert f"instance {INSTANCE}, name node-7" in check.stdout
    assert f"as agent.r1.{INSTANCE}" in check.stdout
    assert f"metadata http://169.254.169.254/metadata/{INSTANCE}" in check.stdout
    assert f"distributor https://bundles.r1:8443/{partition}/" in check.stdout
    assert oct(files["/etc/sco/nats.password"].stat().st_mode & 0o777) == "0o600"


@pytest.mark.testbed
def test_a_node_whose_instance_data_lacks_a_variable_is_refused_by_the_agent_check(compiled: Path,
                                                                                  tmp_path: Path) -> None:
    out = user_data(compiled, "r1/slurm-hpc", *AGENT)
    data = cloudinit.instance_data(INSTANCE, "node-7")
    del data["v1"]["local_hostname"]
    rendered = cloudinit.render(out.stdout, data, tmp_path)
    files = cloudinit.lay_out(rendered, tmp_path / "root")
    check = cloudinit.agent_check(files, compiled / "keys" / "signing.pub.pem", tmp_path / "state")
    assert check.returncode == 2 and "'node_name'" in check.stderr and "did not render" in check.stderr


@pytest.mark.testbed
def test_cloud_init_refuses_a_document_that_breaks_the_cloud_config_schema(tmp_path: Path) -> None:
    refused = cloudinit.schema("#cloud-config\nwrite_files:\n  - path: /etc/sco/x\n    permissions: [0600]\n",
                               tmp_path)
    assert refused.returncode != 0 and "permissions" in refused.stdout + refused.stderr


def test_the_agent_version_options_make_the_rollout_and_refuse_bad_values_in_one_line(tmp_path: Path) -> None:
    import argparse
    from decimal import Decimal

    from controllers.controller import AgentImage
    from sco.cli import CliError
    from sco.commands.controller_userdata import add_agent_version_options, agent_rollout

    parser = argparse.ArgumentParser()
    add_agent_version_options(parser)
    assert agent_rollout(parser.parse_args([])) is None
    rollout = agent_rollout(parser.parse_args(["--agent-image", "0.1.0=sco-agent-0.1.0",
                                               "--agent-candidate", "0.2.0=sco-agent-0.2.0"]))
    assert rollout.current == AgentImage("0.1.0", "sco-agent-0.1.0") and rollout.share_pct == Decimal("5")
    assert rollout.candidate == AgentImage("0.2.0", "sco-agent-0.2.0")
    (tmp_path / "compiler.yaml").write_text("agent_canary_share_pct: 12.5\n")
    from_settings = agent_rollout(parser.parse_args(["--agent-image", "1=x", "--agent-candidate", "2=y",
                                                     "--compiler-settings", str(tmp_path / "compiler.yaml")]))
    assert from_settings.share_pct == Decimal("12.5")
    (tmp_path / "bad.yaml").write_text("agent_canary_share_pct: 120\n")
    for argv, message in [(["--agent-image", "1=x", "--compiler-settings", str(tmp_path / "bad.yaml")],
                           "bad.yaml:1: agent_canary_share_pct"),
                          (["--agent-candidate", "0.2.0=x"], "--agent-candidate needs --agent-image"),
                          (["--agent-image", "x"], "--agent-image 'x' is not VERSION=IMAGE"),
                          (["--agent-image", "1=x", "--agent-canary-share", "lots"], "'lots' is not a number"),
                          (["--agent-image", "1=x", "--agent-canary-share", "101"], "101 is not a percentage")]:
        with pytest.raises(CliError, match=message):
            agent_rollout(parser.parse_args(argv))
