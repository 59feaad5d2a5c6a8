"""The cloud-config a launch sends (controllers.controller.userdata.render): table tests of what it writes and
of every refusal; the real cloud-init runs it in test_userdata_cloudinit.py."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from controllers.controller.userdata import (
    NOVA_USER_DATA_LIMIT,
    LaunchUserData,
    MemoryAgentCredentials,
    UserDataError,
    render,
)

BASE = LaunchUserData(region="r1", partition="r1/slurm-batch", pool="r1-h1-gp-large", scheduler="slurm",
                      bundle=b'{"kind":"AgentBundle","partition":"r1/slurm-batch"}', bundle_sig=b"c2lnbmF0dXJl\n",
                      nats_urls=("nats://relay.h1.r1:4222",), nats_password="pw-of-the-launch",
                      metadata_url="http://169.254.169.254/metadata/{instance}",
                      distributor_url="https://bundles.r1:8443/")


def files(text: str) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in yaml.safe_load(text)["write_files"]}


def agent_json(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(files(text)["/etc/sco/agent-userdata.json"]["content"])
    return doc


def env(text: str) -> dict[str, str]:
    lines = files(text)["/etc/sco/agent.env"]["content"].splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_the_document_is_a_jinja_templated_cloud_config_that_enables_the_agent_unit() -> None:
    text = render(BASE)
    assert text.splitlines()[:2] == ["## template: jinja", "#cloud-config"]
    config = yaml.safe_load(text)
    assert config["runcmd"] == [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", "sco-agent.service"]]
    assert {f["permissions"] for f in config["write_files"]} == {"0600"}
    assert {f["owner"] for f in config["write_files"]} == {"root:root"}


@pytest.mark.parametrize(("field", "expected"), [
    ("instance", "{{ v1.instance_id }}"),
    ("node_name", "{{ v1.local_hostname }}"),
    ("region", "r1"),
    ("partition", "r1/slurm-batch"),
    ("pool", "r1-h1-gp-large"),
    ("scheduler", "slurm"),
    ("nats_urls", ["nats://relay.h1.r1:4222"]),
    ("metadata_url", "http://169.254.169.254/metadata/{{ v1.instance_id }}"),
    ("distributor_url", "https://bundles.r1:8443/r1/slurm-batch/"),
    ("bundle", base64.b64encode(BASE.bundle).decode()),
    ("bundle_sig", "c2lnbmF0dXJl"),
])
def test_the_agent_user_data_names_the_node_its_channels_and_carries_the_signed_bundle(field: str,
                                                                                       expected: Any) -> None:
    assert agent_json(render(BASE))[field] == expected


@pytest.mark.parametrize(("spec", "password", "env_expected"), [
    (BASE, "pw-of-the-launch", {"SCO_AGENT_NATS_PASSWORD_FILE": "/etc/sco/nats.password",
                                "SCO_AGENT_TOKEN_FILES": "/etc/sco/nats.password"}),
    (replace(BASE, scheduler="kubernetes"), "pw-of-the-launch", {
        "SCO_AGENT_NATS_PASSWORD_FILE": "/etc/sco/nats.password",
        "SCO_AGENT_TOKEN_FILES": "/etc/sco/nats.password:/var/run/secrets/sco-agent/token"}),
    (replace(BASE, nats_urls=(), nats_password=None), None, {}),
    (replace(BASE, nats_urls=(), nats_password=None, scheduler="kubernetes"), None,
     {"SCO_AGENT_TOKEN_FILES": "/var/run/secrets/sco-agent/token"}),
], ids=["slurm", "kubernetes", "metadata-poll-only", "kubernetes-metadata-poll-only"])
def test_the_nats_password_is_its_own_file_named_by_the_unit_environment_and_removed_after_a_drain(
        spec: LaunchUserData, password: str | None, env_expected: dict[str, str]) -> None:
    text = render(spec)
    written = files(text).get("/etc/sco/nats.password")
    assert (base64.b64decode(written["content"]).decode() if written else None) == password
    assert env(text) == env_expected
    if password:
        assert password not in text, "the password travels base64-encoded, never as template text"


def test_without_a_metadata_or_distributor_url_the_agent_is_told_none() -> None:
    doc = agent_json(render(replace(BASE, metadata_url=None, distributor_url=None)))
    assert doc["metadata_url"] is None and doc["distributor_url"] is None


@pytest.mark.parametrize(("change", "code", "field"), [
    ({"scheduler": "nomad"}, "userdata-scheduler", "scheduler"),
    ({"nats_password": None}, "userdata-nats-credential", "nats_password"),
    ({"nats_urls": ("nats://agent:secret@relay:4222",)}, "userdata-nats-url-credentials", "nats_urls"),
    ({"metadata_url": "http://169.254.169.254/metadata"}, "userdata-metadata-url", "metadata_url"),
    ({"distributor_url": "bundles.r1:8443"}, "userdata-distributor-url", "distributor_url"),
    ({"pool": "p-{{ 7*7 }}"}, "userdata-template-text", "pool"),
    ({"metadata_url": "http://m/{% if x %}{instance}"}, "userdata-template-text", "metadata_url"),
    ({"bundle": b"x" * NOVA_USER_DATA_LIMIT}, "userdata-too-large", "bundle"),
])
def test_unusable_input_is_refused_with_a_stable_code_naming_the_field(change: dict[str, Any], code: str,
                                                                      field: str) -> None:
    with pytest.raises(UserDataError) as err:
        render(replace(BASE, **change))
    assert err.value.code == code and err.value.field == field
    assert code in str(err.value) and field in str(err.value)


def test_the_memory_credentials_remember_each_instance_password() -> None:
    creds = MemoryAgentCredentials()
    creds.mint("r1", "i-1", "pw")
    creds.mint("r1", "i-2", "pw")
    assert creds.minted == {("r1", "i-1"): "pw", ("r1", "i-2"): "pw"}
