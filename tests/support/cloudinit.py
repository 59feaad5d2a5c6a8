"""Run a cloud-config through the real cloud-init (deploy/testbed/cloudinit/up) the way a booting instance
would, lay its ``write_files`` out under a directory and ask ``sco-agent check`` whether the agent boots from
them. Shared by the rendering test and the OpenStack test that reads the user-data back through Nova."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sco.demo.cloudconfig import lay_out  # one definition: the demo lays out the same files
from testkit.paths import REPO
from tests.support.testbeds import CLOUD_INIT

__all__ = ["agent_check", "instance_data", "lay_out", "render", "schema"]


def _cloud_init() -> str:
    if CLOUD_INIT is None:
        pytest.fail("cloud-init is not installed: run deploy/testbed/cloudinit/up")
    return CLOUD_INIT


def instance_data(instance_id: str, hostname: str, region: str = "r1", zone: str = "hall-a") -> dict[str, Any]:
    """What cloud-init's OpenStack datasource records in /run/cloud-init/instance-data.json (the v1 keys)."""
    v1 = {"cloud_name": "openstack", "cloud_id": "openstack", "platform": "openstack", "subplatform":
          "metadata (http://169.254.169.254)", "instance_id": instance_id, "local_hostname": hostname,
          "region": region, "availability_zone": zone, "distro": "debian", "distro_release": "bookworm",
          "kernel_release": "6.1.0-28-amd64", "machine": "x86_64", "python_version": "3.11.2",
          "public_ssh_keys": [], "variant": "debian"}
    return {"_beta_keys": ["subplatform"], "base64_encoded_keys": [], "sensitive_keys": [], "v1": v1,
            "ds": {"meta_data": {"uuid": instance_id, "hostname": hostname, "name": hostname,
                                 "availability_zone": zone}}}


def render(user_data: str, data: dict[str, Any], tmp: Path) -> str:
    """``cloud-init devel render`` of ``user_data`` against ``data`` (an instance-data document)."""
    template, data_file = tmp / "user-data", tmp / "instance-data.json"
    template.write_text(user_data)
    data_file.write_text(json.dumps(data))
    done = subprocess.run([_cloud_init(), "devel", "render", str(template), "-i", str(data_file)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"cloud-init devel render failed: {done.stderr[-2000:]}"
    return done.stdout


def schema(config: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``cloud-init schema -c`` of a (rendered) cloud-config."""
    path = tmp / "cloud-config.yaml"
    path.write_text(config)
    return subprocess.run([_cloud_init(), "schema", "-c", str(path)], capture_output=True, text=True, timeout=120)


def agent_check(files: dict[str, Path], public_key: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """``sco-agent check`` on the laid-out files, with the environment the unit gets from ``agent.env``
    (its paths mapped under the same root)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCO_AGENT_")}
    for line in files["/etc/sco/agent.env"].read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = ":".join(str(files.get(p, p)) for p in value.split(":"))
    return subprocess.run([sys.executable, "-m", "agent.cli", "check", "--userdata",
                           str(files["/etc/sco/agent-userdata.json"]), "--public-key", str(public_key),
                           "--state-dir", str(state)], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
