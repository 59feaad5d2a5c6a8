"""The demo's cloud-config renderer (sco.demo.cloudconfig): what it renders and lays out, what it refuses, and —
on the cloud-init test bed — that it renders the controller's user-data byte for byte as the real
``cloud-init devel render`` does, and that ``sco-agent check`` accepts the files it lays out."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from controllers.controller.userdata import LaunchUserData
from controllers.controller.userdata import render as controller_render
from sco.demo.cloudconfig import CloudConfigError, instance_v1, lay_out, render
from tests.agent.helpers import make_bundle, new_keys, workload_entry
from tests.support import cloudinit

INSTANCE = "7f3c2a10-5b4e-4c6d-9e8f-0a1b2c3d4e5f"
V1 = instance_v1(INSTANCE, "node-7f3c2a10", "r1", "hall-a")


def _spec(scheduler: str = "kubernetes", **change: object) -> LaunchUserData:
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/k8s-prod", 3, [workload_entry("web", budget=3, scheduler=scheduler)])
    fields: dict[str, object] = {"region": "r1", "partition": "r1/k8s-prod", "pool": "r1-h1-gp-large",
                                 "scheduler": scheduler, "bundle": raw, "bundle_sig": sig}
    fields.update(change)
    return LaunchUserData(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("template", "expected"), [
    ("## template: jinja\n#cloud-config\na: {{ v1.instance_id }}\n", f"#cloud-config\na: {INSTANCE}\n"),
    ("## template: jinja\n#cloud-config\na: {{v1.region}}-{{   v1.local_hostname }}\n\n",
     "#cloud-config\na: r1-node-7f3c2a10\n\n"),
    ("## Template: JINJA\n#cloud-config\nno trailing newline", "#cloud-config\nno trailing newline"),
    ("#cloud-config\na: {{ v1.instance_id }}\n", "#cloud-config\na: {{ v1.instance_id }}\n"),  # not a template
])
def test_the_header_goes_and_each_v1_key_becomes_the_instance_value_byte_for_byte(template: str,
                                                                                  expected: str) -> None:
    assert render(template, V1) == expected


@pytest.mark.parametrize(("template", "code", "field"), [
    ("## template: jinja\na: {{ v1.nope }}\n", "CCF001", "v1.nope"),
    ("## template: jinja\na: {% if x %}y{% endif %}\n", "CCF002", "template"),
    ("## template: jinja\na: {{ v1.instance_id | upper }}\n", "CCF002", "template"),
    ("## template: jinja\na: {{ ds.meta_data.uuid }}\n", "CCF002", "template"),
    ("## template: jinja\na: {# a comment #}\n", "CCF002", "template"),
])
def test_jinja_beyond_the_controller_s_subset_is_refused_with_a_code_naming_it(template: str, code: str,
                                                                              field: str) -> None:
    with pytest.raises(CloudConfigError) as caught:
        render(template, V1)
    assert caught.value.code == code and caught.value.field == field
    assert str(caught.value).startswith(f"{code}: cloud-config {field} is ")


def test_the_controller_s_files_are_laid_out_under_the_root_decoded_with_their_modes(tmp_path: Path) -> None:
    text = render(controller_render(_spec(nats_urls=("nats://127.0.0.1:4222",), nats_password="pw-launch")), V1)
    files = lay_out(text, tmp_path)
    assert set(files) == {"/etc/sco/agent-userdata.json", "/etc/sco/agent.env", "/etc/sco/nats.password"}
    assert files["/etc/sco/nats.password"] == tmp_path / "etc/sco/nats.password"
    assert files["/etc/sco/nats.password"].read_bytes() == b"pw-launch"  # b64 decoded
    assert f'"instance":"{INSTANCE}"' in files["/etc/sco/agent-userdata.json"].read_text()
    assert "SCO_AGENT_NATS_PASSWORD_FILE=/etc/sco/nats.password" in files["/etc/sco/agent.env"].read_text()
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files.values())


@pytest.mark.parametrize(("config", "code"), [
    ("write_files:\n- content: x\n", "CCF003"),
    ("write_files:\n- path: /etc/x\n  append: true\n", "CCF004"),
    ("write_files:\n- path: /etc/x\n  encoding: gz+b64\n  content: x\n", "CCF005"),
    ("write_files:\n- path: /etc/x\n  encoding: b64\n  content: '***'\n", "CCF006"),
    ("write_files:\n- path: /etc/x\n  permissions: rw\n", "CCF007"),
    ("- just a list\n", "CCF008"),
    ("a: [unclosed\n", "CCF008"),
])
def test_a_file_entry_outside_the_subset_is_refused_and_nothing_is_half_written(config: str, code: str,
                                                                                tmp_path: Path) -> None:
    with pytest.raises(CloudConfigError) as caught:
        lay_out(config, tmp_path)
    assert caught.value.code == code
    assert not (tmp_path / "etc" / "x").exists()


SPECS = {
    "kubernetes, relay, metadata, distributor": dict(
        nats_urls=("nats://127.0.0.1:4222",), nats_password="pw-1",
        metadata_url="http://127.0.0.1:8090/metadata/{instance}", distributor_url="http://127.0.0.1:8091"),
    "slurm, metadata only": dict(scheduler="slurm", metadata_url="http://169.254.169.254/metadata/{instance}"),
    "no channels": {},
}


@pytest.mark.testbed
@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_controller_s_user_data_renders_as_the_real_cloud_init_renders_it_and_the_agent_checks_it(
        name: str, tmp_path: Path) -> None:
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/k8s-prod", 3, [workload_entry("web", budget=3)])
    text = controller_render(_spec(**{"bundle": raw, "bundle_sig": sig, **SPECS[name]}))
    data = cloudinit.instance_data(INSTANCE, "node-7f3c2a10", region="r1", zone="hall-a")
    theirs = cloudinit.render(text, data, tmp_path)
    ours = render(text, data["v1"])
    assert ours == theirs  # byte for byte
    assert cloudinit.schema(ours, tmp_path).returncode == 0
    files = lay_out(ours, tmp_path / "root")
    (tmp_path / "bundle.pub").write_bytes(keys.public_pem)
    checked = cloudinit.agent_check(files, tmp_path / "bundle.pub", tmp_path / "state")
    assert checked.returncode == 0, checked.stderr
    assert f"instance {INSTANCE}, name node-7f3c2a10" in checked.stdout


@pytest.mark.testbed
def test_whitespace_and_trailing_newlines_render_as_the_real_cloud_init_renders_them(tmp_path: Path) -> None:
    text = ("## template: jinja\n#cloud-config\nwrite_files:\n- path: /etc/x\n  content: |\n"
            "    {{v1.instance_id}} {{  v1.local_hostname  }} {{ v1.region }}/{{ v1.availability_zone }}\n"
            f"- path: /etc/y\n  encoding: b64\n  content: {base64.b64encode(b'{{ v1.instance_id }}').decode()}\n\n\n")
    data = cloudinit.instance_data(INSTANCE, "node-7f3c2a10", region="r1", zone="hall-a")
    assert render(text, data["v1"]) == cloudinit.render(text, data, tmp_path)
